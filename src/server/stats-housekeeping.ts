// What the stats housekeeping reads, decided without reading: kubelet takes pods' cgroup and network figures from
// cAdvisor, which samples every container in the background each --housekeeping-interval and keeps the latest samples,
// so a scrape serializes samples rather than reading cgroups. Pure: stats-provider.ts does the reading.
import type { Container, PodSandbox } from '../cri/types.js';
import { podUidLabel } from '../core/labels.js';
import type { CgroupUsage, InterfaceUsage } from '../host/resource-usage.js';
import { cpuStats, memoryStats, networkStats, type CpuSample, type PodSummary } from './summary.js';

/** kubelet's --housekeeping-interval default (cAdvisor's per-container housekeeping period). */
export const defaultHousekeepingIntervalMs = 10_000;

/** The runtime's sandboxes and containers as the latest relist found them (at most a relist period old). */
export interface RuntimeListing {
  sandboxes: PodSandbox[];
  containers: Container[];
}

/** A pod's sandbox the stats are about, with its running containers. */
export interface StatsSandbox {
  sandbox: PodSandbox;
  containers: Container[];
}

/** A pod sandbox's cgroups, found once per sandbox: its child cgroups (the sandbox's and its containers') and its pause process. */
export interface SandboxCgroups {
  children: string[];
  pausePid?: number;
}

/** What one housekeeping read of a pod's cgroups and network namespace found, and when. */
export interface PodSample {
  timeMs: number;
  cgroups: SandboxCgroups;
  /** The running containers whose processes were counted: a container not among them is new, and read at once. */
  containerIds: string[];
  cpu?: CpuSample;
  memory?: CgroupUsage['memory'];
  /** Undefined when the pod cgroup was not found. */
  processCount?: number;
  /** Undefined for host-network pods, or when the pause process is not found. */
  network?: InterfaceUsage[];
}

/** One sandbox per pod, the newest ready one (a pod being re-created may briefly have two), with its running containers. */
export function statsSandboxes(listing: RuntimeListing): StatsSandbox[] {
  const newest = new Map<string, PodSandbox>();
  for (const s of listing.sandboxes) {
    if (s.state !== 'SANDBOX_READY') continue;
    const uid = s.labels[podUidLabel] ?? s.metadata.uid;
    const seen = newest.get(uid);
    if (!seen || seen.createdAt < s.createdAt) newest.set(uid, s);
  }
  const bySandbox = new Map<string, Container[]>();
  for (const c of listing.containers) {
    if (c.state !== 'CONTAINER_RUNNING') continue;
    const list = bySandbox.get(c.podSandboxId);
    if (list) list.push(c);
    else bySandbox.set(c.podSandboxId, [c]);
  }
  return [...newest.values()].map((sandbox) => ({ sandbox, containers: bySandbox.get(sandbox.id) ?? [] }));
}

export interface HousekeepingPlan {
  /** Sandboxes to sample now. */
  read: StatsSandbox[];
  /** Cache entries of sandboxes no longer in the listing. */
  drop: string[];
}

/**
 * What to read: a housekeeping round samples every sandbox; a scrape only those never sampled or with a running
 * container the sample did not count (cAdvisor starts a new container's housekeeping at once), so that a new pod or
 * container is never missing from a summary. Either drops the samples of sandboxes gone from the listing.
 */
export function housekeepingPlan(sandboxes: StatsSandbox[], samples: ReadonlyMap<string, PodSample>, round: boolean): HousekeepingPlan {
  const listed = new Set(sandboxes.map((s) => s.sandbox.id));
  const read = round
    ? sandboxes
    : sandboxes.filter(({ sandbox, containers }) => {
        const sample = samples.get(sandbox.id);
        return !sample || containers.some((c) => !sample.containerIds.includes(c.id));
      });
  return { read, drop: [...samples.keys()].filter((id) => !listed.has(id)) };
}

/** Whether the sample's child cgroups name every running container: otherwise the pod cgroup is listed again. */
export function knowsContainers(cgroups: SandboxCgroups | undefined, containers: Container[]): cgroups is SandboxCgroups {
  return cgroups !== undefined && containers.every((c) => cgroups.children.some((d) => d.includes(c.id)));
}

/** A pod's cgroup and network figures for the summary, timed when housekeeping sampled them. */
export function podSampleStats(sample: PodSample, memoryCapacityBytes: number): Partial<PodSummary> {
  const cpu = cpuStats(sample.cpu);
  const memory = memoryStats(sample.memory, sample.timeMs, memoryCapacityBytes);
  const network = sample.network && networkStats(sample.network, sample.timeMs);
  return {
    ...(cpu ? { cpu } : {}),
    ...(memory ? { memory } : {}),
    ...(network ? { network } : {}),
    ...(sample.processCount !== undefined ? { process_stats: { process_count: sample.processCount } } : {}),
  };
}
