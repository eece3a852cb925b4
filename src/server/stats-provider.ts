// Reads what /stats/summary and /metrics/resource report, as kubelet's CRI stats provider does by default: containers'
// cpu, memory and writable layers from CRI ListContainerStats at each scrape; pods' cpu, memory and processes from the
// pod cgroup and their network from the sandbox's network namespace, sampled in the background every housekeeping
// interval as cAdvisor does for kubelet (a scrape serializes the latest samples); logs, volumes and the node from the
// host's cgroups and filesystems. CRI ListPodSandboxStats is not used: kubelet uses it only behind the alpha
// PodAndContainerStatsFromCRI gate, and containerd 1.6 took 1.9 s to answer it for 110 pods on the bench machine.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../core/clock.js';
import { compareStrings } from '../core/compare.js';
import type { Logger } from '../core/log.js';
import type { Container, ContainerStats, FilesystemUsage, StatsService } from '../cri/types.js';
import { podCgroupParent } from '../execution/resources.js';
import { podLogDirectory } from '../execution/runtime-config.js';
import { diskUsage, filesystemUsage, parseNetDev, processLimits, readPseudoFile, type CgroupUsage, type CgroupUsageReader, type FsUsage } from '../host/resource-usage.js';
import {
  housekeepingPlan,
  knowsContainers,
  podSampleStats,
  statsSandboxes,
  type PodSample,
  type RuntimeListing,
  type StatsSandbox,
} from './stats-housekeeping.js';
import {
  apiTime,
  cpuAndMemoryOnly,
  cpuSample,
  cpuStats,
  CpuRates,
  ephemeralStorage,
  fsStats,
  memoryStats,
  networkStats,
  type ContainerSummary,
  type FsStats,
  type MemoryStats,
  type NodeSummary,
  type PodSummary,
  type Summary,
  type VolumeStats,
} from './summary.js';

export type StatsRuntime = StatsService;

export interface StatsProviderOptions {
  nodeName: string;
  runtime: StatsRuntime;
  /** The latest relist's listing (undefined before the first): listing the runtime again per scrape would cost as much. */
  listing: () => RuntimeListing | undefined;
  /** The pods nodelet runs (their volumes). */
  pods: () => V1Pod[];
  cgroups: Pick<CgroupUsageReader, 'read' | 'pids' | 'children'>;
  /**
   * Where a cgroup named in kubelet's cgroupfs form (/kubepods/burstable/pod<uid>) is in the hierarchies: the pod cgroup
   * manager's answer, which created it (the slices of the systemd driver, the name itself with cgroupfs).
   */
  cgroupPath: (name: string) => string;
  /** kubelet's cgroupRoot, under which kubepods is. */
  cgroupRoot: string;
  /** kubelet's root dir: the node filesystem, and the pods' volumes under pods/<uid>/volumes. */
  rootDir: string;
  podLogsDir: string;
  memoryCapacityBytes: number;
  /** The node's start (boot) time, ms since the epoch. */
  nodeStartTime: number;
  /** kubelet's --housekeeping-interval: how often every pod's cgroups and network are sampled. */
  housekeepingIntervalMs: number;
  clock: Clock;
  log: Logger;
}

/** Volume plugins whose directories kubelet measures, and whether they count as local ephemeral storage. */
const volumePlugins: { key: 'emptyDir' | 'configMap' | 'secret' | 'projected' | 'downwardAPI'; dir: string }[] = [
  { key: 'emptyDir', dir: 'kubernetes.io~empty-dir' },
  { key: 'configMap', dir: 'kubernetes.io~configmap' },
  { key: 'secret', dir: 'kubernetes.io~secret' },
  { key: 'projected', dir: 'kubernetes.io~projected' },
  { key: 'downwardAPI', dir: 'kubernetes.io~downward-api' },
];

/** kubelet measures volumes once a minute (volumeStatsAggPeriod): walking them at every scrape would be the cost of it. */
const volumeStatsPeriodMs = 60_000;

/** Pods' cgroups read between two yields to the event loop: neither housekeeping nor a scrape holds it for long. */
const podsPerTurn = 8;

/** What a full summary reads of the filesystems, once per scrape. */
interface ScrapeFilesystems {
  now: number;
  nodeFs?: FsUsage;
  logsFs?: FsUsage;
  /** The image filesystem, where containers' writable layers are. */
  rootfs?: FsUsage;
  imageFsUsage?: FilesystemUsage;
}

interface DirUsage {
  usage?: { bytes: number; inodes: number };
  fs?: FsUsage;
}

export class StatsProvider {
  private readonly cpuRates = new CpuRates();
  private readonly du = new Map<string, DirUsage & { at: number }>();
  /** The latest housekeeping sample of each listed sandbox's pod, by sandbox id. */
  private readonly samples = new Map<string, PodSample>();
  /** The collection under way: scrapes that come meanwhile share it. */
  private collecting?: Promise<Summary>;
  private collectingCpuAndMemory?: Promise<Summary>;

  constructor(private readonly opts: StatsProviderOptions) {}

  /** Housekeeping: samples every listed pod each interval until the signal aborts (the kubelet API server stops). */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, log } = this.opts;
    while (!signal.aborted) {
      const listing = this.opts.listing();
      if (listing) {
        await this.sample(statsSandboxes(listing), true).catch((err: unknown) => log.error({ err }, 'Pod stats housekeeping failed'));
      }
      await clock.sleep(this.opts.housekeepingIntervalMs, signal);
    }
  }

  /** /stats/summary: everything kubelet's summary has. Concurrent scrapes share one collection. */
  summary(): Promise<Summary> {
    this.collecting ??= this.collect(false).finally(() => {
      this.collecting = undefined;
    });
    return this.collecting;
  }

  /**
   * /metrics/resource and /stats/summary?only_cpu_and_memory=true: the node's, pods' and containers' cpu and memory and
   * none of the filesystems, as kubelet's GetCPUAndMemoryStats (a summary under way serves too).
   */
  cpuAndMemory(): Promise<Summary> {
    if (this.collecting) return this.collecting.then(cpuAndMemoryOnly);
    this.collectingCpuAndMemory ??= this.collect(true).finally(() => {
      this.collectingCpuAndMemory = undefined;
    });
    return this.collectingCpuAndMemory;
  }

  private async collect(cpuAndMemoryOnly: boolean): Promise<Summary> {
    const { opts } = this;
    const now = opts.clock.now();
    const listing = opts.listing();
    if (!listing) throw new Error('the container runtime has not been listed yet');
    const [containerStats, fsInfo] = await Promise.all([opts.runtime.listContainerStats(), cpuAndMemoryOnly ? undefined : this.filesystems(now)]);
    const nodeUsage = opts.cgroups.read('/');
    const podsUsage = opts.cgroups.read(opts.cgroupPath(join('/', opts.cgroupRoot, 'kubepods')));
    const statsById = new Map(containerStats.map((s) => [s.id, s]));
    const podsByUid = podsByUidOf(opts.pods());
    const ready = statsSandboxes(listing);
    const partial = await Promise.all(
      ready.map(({ sandbox, containers }) => {
        const m = sandbox.metadata;
        const head = { podRef: { name: m.name, namespace: m.namespace, uid: m.uid }, startTime: apiTime(sandbox.createdAt) };
        // The pods' volumes and filesystems are measured in a full summary only.
        if (!fsInfo) return { ...head, containers: containers.map((c) => this.containerCpuAndMemory(c, statsById.get(c.id), now)) };
        return this.podFsSummary(head, containers, statsById, podsByUid.get(m.uid), fsInfo);
      }),
    );
    // Pods not sampled yet (new ones) are read now; the others' cgroup figures are housekeeping's latest.
    await this.sample(ready, false, podsByUid);
    const pods = ready.map(({ sandbox }, i): PodSummary => {
      const sample = this.samples.get(sandbox.id);
      const { cpu, memory, ...rest } = sample ? podSampleStats(sample, opts.memoryCapacityBytes) : {};
      return { ...partial[i]!, ...optional('cpu', cpu), ...optional('memory', memory), ...(fsInfo ? rest : {}) };
    });
    this.cpuRates.rotate();
    const node: NodeSummary = {
      nodeName: opts.nodeName,
      systemContainers: podsUsage ? [this.systemContainer('pods', podsUsage, now)] : [],
      startTime: apiTime(opts.nodeStartTime),
      ...optional('cpu', nodeUsage?.cpuUsageNs !== undefined ? cpuStats(this.cpuRates.sample('node', now, nodeUsage.cpuUsageNs)) : undefined),
      ...optional('memory', this.nodeMemory(nodeUsage, now)),
    };
    if (!fsInfo) return { node, pods };
    const { nodeFs, imageFsUsage, rootfs } = fsInfo;
    return {
      node: {
        ...node,
        ...optional('network', networkStats(parseNetDev(readPseudoFile('/proc/net/dev') ?? ''), now, '')),
        fs: fsStats(nodeFs, now, nodeFs ? { bytes: nodeFs.capacityBytes - nodeFs.availableBytes, inodes: nodeFs.inodes - nodeFs.inodesFree } : undefined),
        runtime: { ...(imageFsUsage ? { imageFs: runtimeFs(imageFsUsage, rootfs, now) } : {}) },
        rlimit: { time: apiTime(now), ...processLimits() },
      },
      pods,
    };
  }

  /** The node's, the image's and the pod logs' filesystems. */
  private async filesystems(now: number): Promise<ScrapeFilesystems> {
    const { opts } = this;
    const [imageFs, nodeFs, logsFs] = await Promise.all([
      opts.runtime.imageFsInfo().catch((err: unknown) => {
        opts.log.debug({ err }, 'ImageFsInfo failed');
        return undefined;
      }),
      filesystemUsage(opts.rootDir),
      filesystemUsage(opts.podLogsDir),
    ]);
    const imageFsUsage = imageFs?.imageFilesystems[0];
    const rootfs = imageFsUsage?.mountpoint ? await filesystemUsage(imageFsUsage.mountpoint) : undefined;
    return { now, nodeFs, logsFs, rootfs, imageFsUsage };
  }

  private nodeMemory(usage: CgroupUsage | undefined, now: number): MemoryStats | undefined {
    // The root cgroup has no limit of its own: what the machine's memory leaves.
    return memoryStats(usage?.memory && { ...usage.memory, limitBytes: this.opts.memoryCapacityBytes }, now, this.opts.memoryCapacityBytes);
  }

  private systemContainer(name: string, usage: CgroupUsage, now: number): ContainerSummary {
    return {
      name,
      startTime: apiTime(this.opts.nodeStartTime),
      ...optional('cpu', usage.cpuUsageNs !== undefined ? cpuStats(this.cpuRates.sample(`system/${name}`, now, usage.cpuUsageNs)) : undefined),
      ...optional('memory', memoryStats(usage.memory, now, this.opts.memoryCapacityBytes)),
    };
  }

  /** A pod's summary without what its cgroups tell: containers from CRI stats, logs, volumes and ephemeral storage. */
  private async podFsSummary(
    head: Pick<PodSummary, 'podRef' | 'startTime'>,
    containers: Container[],
    statsById: Map<string, ContainerStats>,
    pod: V1Pod | undefined,
    fs: ScrapeFilesystems,
  ): Promise<PodSummary> {
    const { now } = fs;
    const logDir = podLogDirectory(this.opts.podLogsDir, { metadata: head.podRef });
    const containerSummaries = await Promise.all(
      containers.map(async (c): Promise<ContainerSummary> => {
        const s = statsById.get(c.id);
        const { usage: logs } = await this.cachedDiskUsage(join(logDir, c.metadata.name), now, false);
        return {
          ...this.containerCpuAndMemory(c, s, now),
          ...(s?.writableLayer ? { rootfs: fsStats(fs.rootfs, s.writableLayer.timestampNs / 1e6 || now, { ...opt('bytes', s.writableLayer.usedBytes), ...opt('inodes', s.writableLayer.inodesUsed) }) } : {}),
          logs: fsStats(fs.logsFs, now, logs ? { bytes: logs.bytes, inodes: logs.inodes } : undefined),
        };
      }),
    );
    const volumes = pod ? await this.volumeStats(pod, now) : [];
    const localEphemeral = volumes.filter((v) => v.localEphemeral).map((v) => v.stats);
    return {
      ...head,
      containers: containerSummaries,
      ...(volumes.length > 0 ? { volume: volumes.map((v) => v.stats) } : {}),
      'ephemeral-storage': ephemeralStorage(containerSummaries, localEphemeral, fs.nodeFs, now),
    };
  }

  /** A container's cpu and memory from its CRI stats. */
  private containerCpuAndMemory(c: Container, s: ContainerStats | undefined, now: number): ContainerSummary {
    return {
      name: c.metadata.name,
      startTime: apiTime(c.createdAt),
      ...optional('cpu', this.criCpu(`c/${c.id}`, s?.cpu)),
      ...optional('memory', criMemory(s?.memory, now)),
    };
  }

  /** Takes the samples the housekeeping plan asks for (a round: every pod; a scrape: the new ones), a few pods per turn. */
  private async sample(sandboxes: StatsSandbox[], round: boolean, podsByUid?: Map<string, V1Pod>): Promise<void> {
    const plan = housekeepingPlan(sandboxes, this.samples, round);
    for (const id of plan.drop) this.samples.delete(id);
    if (plan.read.length === 0) return;
    podsByUid ??= podsByUidOf(this.opts.pods());
    for (let i = 0; i < plan.read.length; i++) {
      if (i > 0 && i % podsPerTurn === 0) await nextTurn();
      const entry = plan.read[i]!;
      const pod = podsByUid.get(entry.sandbox.metadata.uid);
      // A pod nodelet does not run (yet) has no known cgroup parent: no figures, as before it is admitted.
      if (pod) this.samples.set(entry.sandbox.id, this.readPod(pod, entry));
    }
  }

  /**
   * What the pod's cgroup tells, as cAdvisor reads it for kubelet: its cpu and memory; its network from its sandbox's
   * (pause) process, whose network namespace it is (none for host-network pods, as kubelet); the processes of its
   * running containers' cgroups (kubelet sums its containers' counts; the pause process is not one).
   */
  private readPod(pod: V1Pod, { sandbox, containers }: StatsSandbox): PodSample {
    const { cgroups: reader, clock } = this.opts;
    const timeMs = clock.now();
    const previous = this.samples.get(sandbox.id);
    const cgroup = this.opts.cgroupPath(podCgroupParent(pod, this.opts.cgroupRoot));
    const usage = reader.read(cgroup);
    // The runtime names each child cgroup after its sandbox's or container's id (with a prefix and suffix under systemd).
    let cgroups = previous?.cgroups;
    if (!knowsContainers(cgroups, containers)) {
      const children = reader.children(cgroup);
      const sandboxDir = children.find((d) => d.includes(sandbox.id));
      const pausePid = sandboxDir !== undefined ? reader.pids(join(cgroup, sandboxDir))[0] : undefined;
      cgroups = { children, ...(pausePid !== undefined ? { pausePid } : {}) };
    }
    let processCount = 0;
    for (const c of containers) {
      const dir = cgroups.children.find((d) => d.includes(c.id));
      if (dir !== undefined) processCount += reader.pids(join(cgroup, dir)).length;
    }
    const netDev = pod.spec?.hostNetwork || cgroups.pausePid === undefined ? undefined : readPseudoFile(`/proc/${cgroups.pausePid}/net/dev`);
    return {
      timeMs,
      cgroups,
      containerIds: containers.map((c) => c.id),
      ...(usage?.cpuUsageNs !== undefined ? { cpu: cpuSample(previous?.cpu, timeMs, usage.cpuUsageNs) } : {}),
      ...(usage?.memory ? { memory: usage.memory } : {}),
      ...(usage ? { processCount } : {}),
      ...(netDev !== undefined ? { network: parseNetDev(netDev) } : {}),
    };
  }

  /** The pod's volumes kubelet measures, each with the filesystem it is on. */
  private async volumeStats(pod: V1Pod, now: number): Promise<{ stats: VolumeStats; localEphemeral: boolean }[]> {
    const uid = pod.metadata?.uid ?? '';
    const out: { stats: VolumeStats; localEphemeral: boolean }[] = [];
    await Promise.all(
      (pod.spec?.volumes ?? []).map(async (v) => {
        const plugin = volumePlugins.find((p) => v[p.key] !== undefined);
        if (!plugin) return;
        const dir = join(this.opts.rootDir, 'pods', uid, 'volumes', plugin.dir, v.name);
        const { usage, fs } = await this.cachedDiskUsage(dir, now, true);
        if (!usage) return;
        const memoryMedium = plugin.key === 'secret' || plugin.key === 'projected' || v.emptyDir?.medium === 'Memory';
        out.push({
          stats: { name: v.name, ...fsStats(fs, now, { bytes: usage.bytes, inodes: usage.inodes }) },
          // kubelet's IsLocalEphemeralVolume: emptyDir on disk, configMap, downwardAPI.
          localEphemeral: !memoryMedium && plugin.key !== 'secret' && plugin.key !== 'projected',
        });
      }),
    );
    return out.sort((a, b) => compareStrings(a.stats.name, b.stats.name));
  }

  /** A directory's disk usage (and, for a volume, its filesystem), measured at most once a volume stats period. */
  private async cachedDiskUsage(dir: string, now: number, withFs: boolean): Promise<DirUsage> {
    const cached = this.du.get(dir);
    if (cached && now - cached.at < volumeStatsPeriodMs) return cached;
    const [usage, fs] = await Promise.all([diskUsage(dir), withFs ? filesystemUsage(dir) : undefined]);
    const entry: DirUsage & { at: number } = { at: now, ...(usage ? { usage } : {}), ...(fs ? { fs } : {}) };
    this.du.set(dir, entry);
    // Entries of removed pods go once stale.
    for (const [key, e] of this.du) if (now - e.at > 2 * volumeStatsPeriodMs) this.du.delete(key);
    return entry;
  }

  /** CRI cpu usage, with usageNanoCores computed here when the runtime leaves it out (containerd 1.6 does). */
  private criCpu(key: string, cpu: ContainerStats['cpu']) {
    if (cpu?.usageCoreNanoSeconds === undefined) return undefined;
    const sample = this.cpuRates.sample(key, cpu.timestampNs / 1e6, cpu.usageCoreNanoSeconds);
    return cpuStats(cpu.usageNanoCores !== undefined && cpu.usageNanoCores > 0 ? { ...sample, usageNanoCores: cpu.usageNanoCores } : sample);
  }
}

function criMemory(m: ContainerStats['memory'], now: number): MemoryStats | undefined {
  if (m?.workingSetBytes === undefined) return undefined;
  return {
    time: apiTime(m.timestampNs / 1e6 || now),
    ...opt('availableBytes', m.availableBytes),
    ...opt('usageBytes', m.usageBytes),
    workingSetBytes: m.workingSetBytes,
    ...opt('rssBytes', m.rssBytes),
    ...opt('pageFaults', m.pageFaults),
    ...opt('majorPageFaults', m.majorPageFaults),
  };
}

function runtimeFs(usage: FilesystemUsage, fs: FsUsage | undefined, now: number): FsStats {
  return fsStats(fs, usage.timestampNs / 1e6 || now, { ...opt('bytes', usage.usedBytes), ...opt('inodes', usage.inodesUsed) });
}

function opt<K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [key]: value } as Partial<Record<K, number>>);
}

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Partial<Record<K, V>>);
}

function podsByUidOf(pods: V1Pod[]): Map<string, V1Pod> {
  return new Map(pods.map((p) => [p.metadata?.uid ?? '', p]));
}
