// Process figures from /proc: CPU time, RSS and its peak, the runtime's processes, and other nodelet agents on the machine.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';

const clockTicksPerSecond = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time of a process in ms: its own (user+system) and that of children it has reaped (CNI plugins, for the agent). */
export function processCpuMs(pid: number): { self: number; children: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name; utime is field 14 of the whole line.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  const tick = 1000 / clockTicksPerSecond;
  return { self: (f[11]! + f[12]!) * tick, children: (f[13]! + f[14]!) * tick };
}

/** A field of /proc/<pid>/status in MB (VmRSS, VmHWM; RssAnon and RssFile, the anonymous and file-backed parts of VmRSS). */
export function memoryMB(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
}

/** Resets the process's VmHWM to its current RSS (Linux >= 4.0), so that VmHWM then tells the peak of a window. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** A containerd's pid (from the rig's pid file) and the pids of the shims of the given sandboxes. */
export function runtimeProcesses(containerdPidFile: string, sandboxIds: Set<string>): { containerd?: number; shims: number[] } {
  let containerd: number | undefined;
  try {
    containerd = Number(readFileSync(containerdPidFile, 'utf8').trim()) || undefined;
  } catch {
    containerd = undefined;
  }
  const shims: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!basename(argv[0] ?? '').startsWith('containerd-shim')) continue;
    const id = argv[argv.indexOf('-id') + 1];
    if (argv.includes('-id') && id && sandboxIds.has(id)) shims.push(Number(entry));
  }
  return { ...(containerd ? { containerd } : {}), shims };
}

/** Own + reaped children's CPU (ms) of each pid still alive (the ones gone have no entry). */
export function cpuOf(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    try {
      const c = processCpuMs(pid);
      out.set(pid, c.self + c.children);
    } catch {
      // Gone (a pod's shim after a restart): counted only over the samples that have it at both ends.
    }
  }
  return out;
}

/** CPU between two cpuOf snapshots, over the pids present in both. */
export function cpuBetween(a: Map<number, number>, b: Map<number, number>): number {
  let sum = 0;
  for (const [pid, t] of b) if (a.has(pid)) sum += t - a.get(pid)!;
  return sum;
}

/**
 * Processes (other than `exclude`) whose command line names bin/nodelet.js (as `pgrep -f` finds them; not the short-lived
 * `nodelet pods`) or Jest. Command lines containing `ownDir` are the bench's agent and its children between fork and exec.
 */
export function otherAgentProcesses(exclude: Set<number>, ownDir?: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || exclude.has(Number(entry))) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    } catch {
      continue;
    }
    // Node processes only: a `flock ... jest` or `timeout ... node` wrapper may just be queued behind our tests lock.
    if (basename(cmdline.split(' ', 1)[0]!) !== 'node') continue;
    // A test run starts agents one after another (a gap between two is no time to start ours) and loads the CPUs.
    const testRun = /jest\/bin\/jest|\.bin\/jest/.test(cmdline);
    const agent = cmdline.includes('bin/nodelet.js') && !cmdline.includes('bin/nodelet.js pods');
    if ((agent || testRun) && !(ownDir && cmdline.includes(ownDir))) found.push(`${entry} ${cmdline.slice(0, 160)}`);
  }
  return found;
}
