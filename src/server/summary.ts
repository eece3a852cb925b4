// kubelet's stats API (statsapi v1alpha1 Summary) assembled from what was read, and the /metrics/resource exposition
// derived from it. Pure: the reading is stats-provider.ts's.
import type { CgroupUsage, FsUsage, InterfaceUsage } from '../host/resource-usage.js';

export interface CpuStats {
  time: string;
  usageNanoCores?: number;
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface InterfaceStats {
  name: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

export interface NetworkStats extends InterfaceStats {
  time: string;
  interfaces?: InterfaceStats[];
}

export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface VolumeStats extends FsStats {
  name: string;
}

export interface ContainerSummary {
  name: string;
  startTime: string;
  cpu?: CpuStats;
  memory?: MemoryStats;
  rootfs?: FsStats;
  logs?: FsStats;
}

export interface PodSummary {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers: ContainerSummary[];
  cpu?: CpuStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  volume?: VolumeStats[];
  'ephemeral-storage'?: FsStats;
  process_stats?: { process_count: number };
}

export interface NodeSummary {
  nodeName: string;
  systemContainers?: ContainerSummary[];
  startTime: string;
  cpu?: CpuStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  fs?: FsStats;
  runtime?: { imageFs?: FsStats; containerFs?: FsStats };
  rlimit?: { time: string; maxpid?: number; curproc?: number };
}

export interface Summary {
  node: NodeSummary;
  pods: PodSummary[];
}

/** apiTime's texts by second: a scrape interleaves a few seconds (samples, start times) hundreds of times. */
const apiTimes = new Map<number, string>();
const apiTimesKept = 256;

/** kube's JSON time (metav1.Time): RFC 3339, whole seconds. */
export function apiTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  let text = apiTimes.get(second);
  if (text === undefined) {
    if (apiTimes.size >= apiTimesKept) apiTimes.clear();
    text = new Date(second * 1000).toISOString().replace('.000Z', 'Z');
    apiTimes.set(second, text);
  }
  return text;
}

/** A cumulative cpu counter at a time, and its rate since the counter's previous sample (undefined for the first). */
export interface CpuSample {
  timeMs: number;
  usageCoreNanoSeconds: number;
  usageNanoCores?: number;
}

/** A cumulative cpu counter's sample, with usageNanoCores its rate since the previous sample (none for the first). */
export function cpuSample(before: CpuSample | undefined, timeMs: number, usage: number): CpuSample {
  const dt = before ? timeMs - before.timeMs : 0;
  const rate = before && dt > 0 && usage >= before.usageCoreNanoSeconds ? Math.round(((usage - before.usageCoreNanoSeconds) / dt) * 1000) : undefined;
  return { timeMs, usageCoreNanoSeconds: usage, ...(rate !== undefined ? { usageNanoCores: rate } : {}) };
}

/** kubelet's usageNanoCores where the source gives only the counter: the rate between two scrapes' samples of the same key. */
export class CpuRates {
  private previous = new Map<string, CpuSample>();
  private current = new Map<string, CpuSample>();

  sample(key: string, timeMs: number, usage: number): CpuSample {
    const s = cpuSample(this.previous.get(key) ?? this.current.get(key), timeMs, usage);
    this.current.set(key, s);
    return s;
  }

  /** Ends a scrape: keys not sampled in it (gone containers) are dropped. */
  rotate(): void {
    this.previous = this.current;
    this.current = new Map();
  }
}

export function cpuStats(s: CpuSample | undefined): CpuStats | undefined {
  if (!s) return undefined;
  return { time: apiTime(s.timeMs), ...(s.usageNanoCores !== undefined ? { usageNanoCores: s.usageNanoCores } : {}), usageCoreNanoSeconds: s.usageCoreNanoSeconds };
}

/** Memory of a cgroup; availableBytes is what the limit (or, without one, the node's memory) leaves of the working set. */
export function memoryStats(m: CgroupUsage['memory'], timeMs: number, nodeMemoryBytes: number): MemoryStats | undefined {
  if (!m) return undefined;
  const limit = m.limitBytes ?? nodeMemoryBytes;
  return {
    time: apiTime(timeMs),
    availableBytes: Math.max(0, limit - m.workingSetBytes),
    usageBytes: m.usageBytes,
    workingSetBytes: m.workingSetBytes,
    rssBytes: m.rssBytes,
    pageFaults: m.pageFaults,
    majorPageFaults: m.majorPageFaults,
  };
}

/** kubelet's network stats: the default interface (eth0) at the top, every interface listed. */
export function networkStats(interfaces: InterfaceUsage[], timeMs: number, defaultName = 'eth0'): NetworkStats | undefined {
  const list = interfaces.filter((i) => i.name !== 'lo');
  const main = list.find((i) => i.name === defaultName) ?? list[0];
  if (!main) return undefined;
  return { time: apiTime(timeMs), ...main, interfaces: list };
}

/** A filesystem's capacity with what one user of it uses. */
export function fsStats(fs: FsUsage | undefined, timeMs: number, used?: { bytes?: number; inodes?: number }): FsStats {
  return {
    time: apiTime(timeMs),
    ...(fs ? { availableBytes: fs.availableBytes, capacityBytes: fs.capacityBytes } : {}),
    ...(used?.bytes !== undefined ? { usedBytes: used.bytes } : {}),
    ...(fs ? { inodesFree: fs.inodesFree, inodes: fs.inodes } : {}),
    ...(used?.inodes !== undefined ? { inodesUsed: used.inodes } : {}),
  };
}

/**
 * kubelet's pod ephemeral-storage: its containers' writable layers and logs and its local ephemeral volumes (emptyDir
 * on disk, configMap, downwardAPI), on the node's filesystem.
 */
export function ephemeralStorage(containers: ContainerSummary[], localVolumes: VolumeStats[], nodeFs: FsUsage | undefined, timeMs: number): FsStats {
  let bytes = 0;
  let inodes = 0;
  for (const c of containers) {
    for (const fs of [c.rootfs, c.logs]) {
      bytes += fs?.usedBytes ?? 0;
      inodes += fs?.inodesUsed ?? 0;
    }
  }
  for (const v of localVolumes) {
    bytes += v.usedBytes ?? 0;
    inodes += v.inodesUsed ?? 0;
  }
  return fsStats(nodeFs, timeMs, { bytes, inodes });
}

// ---- /metrics/resource ----

const seconds = (ns: number) => ns / 1e9;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function sample(name: string, labels: Record<string, string>, value: number, time?: string): string {
  const l = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',');
  return `${name}${l ? `{${l}}` : ''} ${value}${time ? ` ${Date.parse(time)}` : ''}\n`;
}

const families: [string, string, 'counter' | 'gauge'][] = [
  ['container_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the container in core-seconds', 'counter'],
  ['container_memory_working_set_bytes', '[STABLE] Current working set of the container in bytes', 'gauge'],
  ['container_start_time_seconds', '[STABLE] Start time of the container since unix epoch in seconds', 'gauge'],
  ['node_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the node in core-seconds', 'counter'],
  ['node_memory_working_set_bytes', '[STABLE] Current working set of the node in bytes', 'gauge'],
  ['pod_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', 'counter'],
  ['pod_memory_working_set_bytes', '[STABLE] Current working set of the pod in bytes', 'gauge'],
  ['resource_scrape_error', '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise', 'gauge'],
  ['scrape_error', '[ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise', 'gauge'],
];

/**
 * kubelet's /metrics/resource (what metrics-server scrapes) from a summary, or from none when reading it failed: node, pod
 * and container cpu and working set with the samples' timestamps (ms), container start times, and the scrape error.
 */
export function resourceMetrics(summary: Summary | undefined): string {
  const lines = new Map<string, string[]>(families.map(([name]) => [name, []]));
  const add = (name: string, labels: Record<string, string>, value: number | undefined, time?: string) => {
    if (value !== undefined) lines.get(name)!.push(sample(name, labels, value, time));
  };
  if (summary) {
    const { node } = summary;
    add('node_cpu_usage_seconds_total', {}, node.cpu?.usageCoreNanoSeconds !== undefined ? seconds(node.cpu.usageCoreNanoSeconds) : undefined, node.cpu?.time);
    add('node_memory_working_set_bytes', {}, node.memory?.workingSetBytes, node.memory?.time);
    for (const pod of summary.pods) {
      const p = { pod: pod.podRef.name, namespace: pod.podRef.namespace };
      for (const c of pod.containers) {
        const l = { container: c.name, ...p };
        const start = Date.parse(c.startTime);
        add('container_start_time_seconds', l, start > 0 ? start / 1000 : undefined);
        add('container_cpu_usage_seconds_total', l, c.cpu?.usageCoreNanoSeconds !== undefined ? seconds(c.cpu.usageCoreNanoSeconds) : undefined, c.cpu?.time);
        add('container_memory_working_set_bytes', l, c.memory?.workingSetBytes, c.memory?.time);
      }
      add('pod_cpu_usage_seconds_total', p, pod.cpu?.usageCoreNanoSeconds !== undefined ? seconds(pod.cpu.usageCoreNanoSeconds) : undefined, pod.cpu?.time);
      add('pod_memory_working_set_bytes', p, pod.memory?.workingSetBytes, pod.memory?.time);
    }
  }
  const error = summary ? 0 : 1;
  add('resource_scrape_error', {}, error);
  add('scrape_error', {}, error);
  let text = '';
  for (const [name, help, type] of families) {
    const samples = lines.get(name)!;
    if (samples.length === 0) continue;
    text += `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${samples.join('')}`;
  }
  return text;
}

/** A summary's cpu and memory alone (what /stats/summary?only_cpu_and_memory=true and /metrics/resource serve). */
export function cpuAndMemoryOnly(s: Summary): Summary {
  const keep = (o: { cpu?: CpuStats; memory?: MemoryStats }) => ({ ...(o.cpu ? { cpu: o.cpu } : {}), ...(o.memory ? { memory: o.memory } : {}) });
  return {
    node: {
      nodeName: s.node.nodeName,
      startTime: s.node.startTime,
      ...keep(s.node),
      ...(s.node.systemContainers ? { systemContainers: s.node.systemContainers.map((c) => ({ name: c.name, startTime: c.startTime, ...keep(c) })) } : {}),
    },
    pods: s.pods.map((p) => ({ podRef: p.podRef, startTime: p.startTime, ...keep(p), containers: p.containers.map((c) => ({ name: c.name, startTime: c.startTime, ...keep(c) })) })),
  };
}
