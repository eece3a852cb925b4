// The soak's accounting of what pods leave on the host: a snapshot of every kind of object a pod makes, and the
// difference between two snapshots (what the later one holds that the earlier one did not).
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CriClient } from '../src/cri/client.js';
import { benchPods } from './workload.js';

const run = promisify(execFile);
const netnsDir = '/var/run/netns';
const hostLocalDir = '/var/lib/cni/networks';
const cgroupRoot = '/sys/fs/cgroup';
/** Processes a pod's life starts besides the pod's own (those are found by their cgroup under kubepods). */
const podHelpers = /^(containerd-shim.*|nodelet-spawn|runc|bridge|host-local|portmap|loopback|nodelet-cni.*)$/;

export const leakKinds = ['netns', 'veths', 'host-local reservations', 'mounts', 'cgroups', 'sandboxes', 'containers', 'processes'] as const;
export type LeakKind = (typeof leakKinds)[number];
export type HostSnapshot = Record<LeakKind, string[]>;
export type LeakCounts = Record<LeakKind, number>;

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** host-local's reservations: one file per IP in each network's directory (not its lock or last_reserved_ip.N). */
function reservations(): string[] {
  return entries(hostLocalDir).flatMap((net) =>
    entries(join(hostLocalDir, net)).filter((f) => f !== 'lock' && !f.startsWith('last_reserved_ip')).map((f) => `${net}/${f}`));
}

/** Mount points, each numbered by its occurrence (a mount stacked twice on one path counts twice). */
function mounts(): string[] {
  const seen = new Map<string, number>();
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean).map((line) => {
    const point = line.split(' ')[4]!;
    const n = (seen.get(point) ?? 0) + 1;
    seen.set(point, n);
    return `${point}#${n}`;
  });
}

/** Every cgroup under kubepods (QoS, pod and container levels) in every hierarchy. */
function cgroups(): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string, depth: number) => {
    let children: Dirent[];
    try {
      children = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of children) {
      if (!e.isDirectory()) continue;
      out.push(`${rel}/${e.name}`);
      if (depth > 0) walk(join(dir, e.name), `${rel}/${e.name}`, depth - 1);
    }
  };
  for (const hierarchy of entries(cgroupRoot)) walk(join(cgroupRoot, hierarchy, 'kubepods'), `${hierarchy}/kubepods`, 3);
  return out;
}

/** Pod processes (in a cgroup under kubepods) and the helpers a pod's life starts, as "pid comm", less `exclude`. */
function processes(exclude: Set<number>): string[] {
  const out: string[] = [];
  for (const pid of entries('/proc')) {
    if (!/^\d+$/.test(pid) || exclude.has(Number(pid))) continue;
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      const inPod = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').some((l) => l.split(':')[2]?.startsWith('/kubepods/'));
      if (inPod || podHelpers.test(comm)) out.push(`${pid} ${comm}`);
    } catch {
      // exited while listed
    }
  }
  return out;
}

async function veths(): Promise<string[]> {
  const { stdout } = await run('ip', ['-o', 'link', 'show', 'type', 'veth']);
  return stdout.split('\n').filter(Boolean).map((l) => l.split(':')[1]!.trim().split('@')[0]!);
}

/**
 * What is on the host now. `exclude`: processes that are expected to run at this point (the live agent and its spawn
 * helper), left out of the processes.
 */
export async function hostSnapshot(cri: CriClient, exclude: Set<number> = new Set()): Promise<HostSnapshot> {
  const opts = { timeoutMs: 30_000 };
  const [sandboxes, containers] = await Promise.all([cri.listPodSandbox(benchPods, opts), cri.listContainers(benchPods, opts)]);
  return {
    netns: entries(netnsDir),
    veths: await veths(),
    'host-local reservations': reservations(),
    mounts: mounts(),
    cgroups: cgroups(),
    sandboxes: sandboxes.map((s) => `${s.id.slice(0, 12)} ${s.metadata.name} ${s.state}`),
    containers: containers.map((c) => `${c.id.slice(0, 12)} ${c.labels['io.kubernetes.pod.name'] ?? ''}/${c.metadata.name} ${c.state}`),
    processes: processes(exclude),
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
