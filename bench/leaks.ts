// The soak's accounting of what pods leave on the host: a snapshot of every kind of object a pod makes, and the
// difference between two snapshots (what the later one holds that the earlier one did not).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CriClient } from '../src/cri/client.js';
import { parseCgroupMounts } from '../src/host/cgroups.js';
import { benchPods } from './workload.js';

const run = promisify(execFile);
const netnsDir = '/var/run/netns';
const hostLocalDir = '/var/lib/cni/networks';

export const leakKinds = ['netns', 'veths', 'host-local reservations', 'mounts', 'cgroups', 'sandboxes', 'containers', 'processes'] as const;
export type LeakKind = (typeof leakKinds)[number];
export type HostSnapshot = Record<LeakKind, string[]>;
export type LeakCounts = Record<LeakKind, number>;

/**
 * What belongs to the agent under test and its containerd, so that other work on the machine (another containerd
 * instance and its agent) is not counted: the rig's main instance and the pods the soak made.
 */
export interface Scope {
  cri: CriClient;
  /** The main containerd's socket: its shims carry it in their command line. */
  containerdAddress: string;
  /** The main instance's pod bridge: a pod's host-side veth is its port. */
  bridge: string;
  /** Its CNI networks (host-local's directories). */
  networks: string[];
  /** Mount points under these belong to it: containerd's state and root, the agent's root directory. */
  mountPrefixes: string[];
  /** The pods the soak made (their cgroups and processes). */
  podUids: Set<string>;
  /** Processes expected at this point (the live agent and its spawn helper). */
  exclude: Set<number>;
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Network namespaces no process is in: a pod's netns holds its pause process for as long as its sandbox is ready. */
function emptyNetns(): string[] {
  const inUse = new Set<string>();
  for (const pid of entries('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      inUse.add(readlinkSync(`/proc/${pid}/ns/net`));
    } catch {
      // exited, or a kernel thread
    }
  }
  return entries(netnsDir).filter((name) => {
    try {
      return !inUse.has(`net:[${statSync(join(netnsDir, name)).ino}]`);
    } catch {
      return false;
    }
  });
}

/** host-local's reservations in these networks: one file per IP (not its lock or last_reserved_ip.N). */
function reservations(networks: string[]): string[] {
  return networks.flatMap((net) =>
    entries(join(hostLocalDir, net)).filter((f) => f !== 'lock' && !f.startsWith('last_reserved_ip')).map((f) => `${net}/${f}`));
}

/** Mount points under the prefixes, each numbered by its occurrence (a mount stacked twice on one path counts twice). */
function mounts(prefixes: string[]): string[] {
  const seen = new Map<string, number>();
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean).flatMap((line) => {
    const point = line.split(' ')[4]!;
    if (!prefixes.some((p) => point.startsWith(p))) return [];
    const n = (seen.get(point) ?? 0) + 1;
    seen.set(point, n);
    return [`${point}#${n}`];
  });
}

/** A pod's UID from its cgroup's directory name: pod<uid> (cgroupfs driver) or ...-pod<uid with _>.slice (systemd). */
export function podUidOfCgroup(name: string): string | undefined {
  return /^pod([0-9a-f-]{36})$/.exec(name)?.[1] ?? /-pod([0-9a-f_]{36})\.slice$/.exec(name)?.[1]?.replaceAll('_', '-');
}

/** The cgroups of the soak's pods (pod and container levels) in every hierarchy, v1 or v2, of either driver. */
function cgroups(podUids: Set<string>): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string, depth: number, inPod: boolean) => {
    let children: Dirent[];
    try {
      children = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of children) {
      if (!e.isDirectory()) continue;
      const uid = podUidOfCgroup(e.name);
      const ours = inPod || (uid !== undefined && podUids.has(uid));
      if (ours) out.push(`${rel}/${e.name}`);
      if (depth > 0) walk(join(dir, e.name), `${rel}/${e.name}`, depth - 1, ours);
    }
  };
  for (const { mountPoint } of parseCgroupMounts(readFileSync('/proc/self/mountinfo', 'utf8'))) {
    for (const top of ['kubepods', 'kubepods.slice']) walk(join(mountPoint, top), `${mountPoint}/${top}`, 3, false);
  }
  return out;
}

/**
 * As "pid comm": the soak's pod processes (by their cgroup), the main containerd's shims, and spawn helpers whose agent is
 * gone (one lives exactly as long as its agent).
 */
function processes(scope: Scope): string[] {
  const out: string[] = [];
  for (const pid of entries('/proc')) {
    if (!/^\d+$/.test(pid) || scope.exclude.has(Number(pid))) continue;
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      const podUid = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split(/[\n/]/).map(podUidOfCgroup).find((u) => u !== undefined);
      let ours = podUid !== undefined && scope.podUids.has(podUid);
      if (!ours && comm.startsWith('containerd-shim')) ours = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(scope.containerdAddress);
      if (!ours && comm === 'nodelet-spawn') {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        ours = !readFileSync(`/proc/${ppid}/cmdline`, 'utf8').includes('nodelet.js');
      }
      if (ours) out.push(`${pid} ${comm}`);
    } catch {
      // exited while listed
    }
  }
  return out;
}

async function veths(bridge: string): Promise<string[]> {
  // The agent makes its bridge on the first pod's ADD: before that (a fresh machine) no veth can be on it.
  if (!existsSync(`/sys/class/net/${bridge}`)) return [];
  const { stdout } = await run('ip', ['-o', 'link', 'show', 'master', bridge, 'type', 'veth']);
  return stdout.split('\n').filter(Boolean).map((l) => l.split(':')[1]!.trim().split('@')[0]!);
}

/** What of the scope is on the host now. */
export async function hostSnapshot(scope: Scope): Promise<HostSnapshot> {
  const opts = { timeoutMs: 30_000 };
  const [sandboxes, containers] = await Promise.all([scope.cri.listPodSandbox(benchPods, opts), scope.cri.listContainers(benchPods, opts)]);
  return {
    netns: emptyNetns(),
    veths: await veths(scope.bridge),
    'host-local reservations': reservations(scope.networks),
    mounts: mounts(scope.mountPrefixes),
    cgroups: cgroups(scope.podUids),
    sandboxes: sandboxes.map((s) => `${s.id.slice(0, 12)} ${s.metadata.name} ${s.state}`),
    containers: containers.map((c) => `${c.id.slice(0, 12)} ${c.labels['io.kubernetes.pod.name'] ?? ''}/${c.metadata.name} ${c.state}`),
    processes: processes(scope),
  };
}

/** What `after` holds that `before` did not, per kind. */
export function leaksBetween(before: HostSnapshot, after: HostSnapshot): HostSnapshot {
  const out = {} as HostSnapshot;
  for (const kind of leakKinds) {
    const had = new Set(before[kind]);
    out[kind] = after[kind].filter((x) => !had.has(x));
  }
  return out;
}

export function countLeaks(leaks: HostSnapshot): LeakCounts {
  return Object.fromEntries(leakKinds.map((k) => [k, leaks[k].length])) as LeakCounts;
}

/**
 * Kills the leaked shims (entries "pid comm" of a snapshot's processes) whose bundle directory containerd has removed: a
 * shim containerd forgot (containerd's own leaks under churn, e.g. containerd/containerd#8931) that nothing else would
 * ever end. Returns the pids killed.
 */
export function killForgottenShims(leakedProcesses: string[]): number[] {
  const killed: number[] = [];
  for (const entry of leakedProcesses) {
    const [pid = '', comm = ''] = entry.split(' ');
    if (!comm.startsWith('containerd-shim')) continue;
    try {
      if (!readlinkSync(`/proc/${pid}/cwd`).endsWith(' (deleted)')) continue;
      process.kill(Number(pid), 'SIGKILL');
      killed.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}
