// Reads what /stats/summary and /metrics/resource report, as kubelet's CRI stats provider: containers' cpu, memory and
// writable layers from CRI ListContainerStats; pods' cpu, memory, network and processes from CRI ListPodSandboxStats, or
// where the runtime does not implement it from the pod's cgroup and a sandbox process's /proc (as kubelet reads
// cAdvisor's pod cgroup); logs, volumes and the node from the host's cgroups and filesystems.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../core/log.js';
import { CriError } from '../cri/errors.js';
import type { Container, ContainerStats, FilesystemUsage, PodSandbox, PodSandboxStats, RuntimeService, StatsService } from '../cri/types.js';
import { podUidLabel } from '../execution/labels.js';
import { podCgroupParent } from '../execution/resources.js';
import { podLogDirectory } from '../execution/runtime-config.js';
import { CgroupUsageReader, diskUsage, filesystemUsage, parseNetDev, processLimits, type CgroupUsage, type FsUsage } from '../host/resource-usage.js';
import {
  apiTime,
  cpuStats,
  CpuRates,
  ephemeralStorage,
  fsStats,
  memoryStats,
  networkStats,
  type ContainerSummary,
  type FsStats,
  type MemoryStats,
  type PodSummary,
  type Summary,
  type VolumeStats,
} from './summary.js';

export type StatsRuntime = Pick<RuntimeService, 'listPodSandbox' | 'listContainers'> & StatsService;

export interface StatsProviderOptions {
  nodeName: string;
  runtime: StatsRuntime;
  /** The pods nodelet runs (their volumes). */
  pods: () => V1Pod[];
  cgroups: CgroupUsageReader;
  cgroupRoot: string;
  /** kubelet's root dir: the node filesystem, and the pods' volumes under pods/<uid>/volumes. */
  rootDir: string;
  podLogsDir: string;
  memoryCapacityBytes: number;
  /** The node's start (boot) time, ms since the epoch. */
  nodeStartTime: number;
  now: () => number;
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

const isUnimplemented = (err: unknown) => err instanceof CriError && err.grpcCode === 12;

export class StatsProvider {
  private readonly cpuRates = new CpuRates();
  private readonly du = new Map<string, { at: number; usage?: { bytes: number; inodes: number } }>();
  /** undefined until asked; false once the runtime said it does not implement ListPodSandboxStats. */
  private sandboxStats?: boolean;

  constructor(private readonly opts: StatsProviderOptions) {}

  async summary(): Promise<Summary> {
    const { opts } = this;
    const now = opts.now();
    const [sandboxes, containers, containerStats, sandboxStats, imageFs, nodeUsage, podsUsage, netDev, nodeFs, rlimit] = await Promise.all([
      opts.runtime.listPodSandbox({ state: 'SANDBOX_READY' }),
      opts.runtime.listContainers({ state: 'CONTAINER_RUNNING' }),
      opts.runtime.listContainerStats(),
      this.listSandboxStats(),
      opts.runtime.imageFsInfo().catch((err: unknown) => {
        opts.log.debug({ err }, 'ImageFsInfo failed');
        return undefined;
      }),
      opts.cgroups.read('/'),
      opts.cgroups.read(join('/', opts.cgroupRoot, 'kubepods')),
      readFile('/proc/net/dev', 'utf8').catch(() => ''),
      filesystemUsage(opts.rootDir),
      processLimits(),
    ]);
    const imageFsUsage = imageFs?.imageFilesystems[0];
    const imageFsCapacity = imageFsUsage?.mountpoint ? await filesystemUsage(imageFsUsage.mountpoint) : undefined;
    const logsFs = await filesystemUsage(opts.podLogsDir);
    const statsById = new Map(containerStats.map((s) => [s.id, s]));
    const sandboxStatsById = new Map((sandboxStats ?? []).map((s) => [s.id, s]));
    const podsByUid = new Map(opts.pods().map((p) => [p.metadata?.uid ?? '', p]));

    // One sandbox per pod, the newest ready one (a pod being re-created may briefly have two).
    const newest = new Map<string, PodSandbox>();
    for (const s of sandboxes) {
      const uid = s.labels[podUidLabel] ?? s.metadata.uid;
      const seen = newest.get(uid);
      if (!seen || seen.createdAt < s.createdAt) newest.set(uid, s);
    }
    const pods = await Promise.all(
      [...newest.values()].map((sandbox) =>
        this.podSummary(sandbox, containers.filter((c) => c.podSandboxId === sandbox.id), statsById, sandboxStatsById.get(sandbox.id), podsByUid.get(sandbox.metadata.uid), {
          now,
          rootfs: imageFsCapacity,
          logsFs,
          nodeFs,
        }),
      ),
    );
    this.cpuRates.rotate();
    return {
      node: {
        nodeName: opts.nodeName,
        systemContainers: podsUsage ? [this.systemContainer('pods', podsUsage, now)] : [],
        startTime: apiTime(opts.nodeStartTime),
        ...optional('cpu', nodeUsage?.cpuUsageNs !== undefined ? cpuStats(this.cpuRates.sample('node', now, nodeUsage.cpuUsageNs)) : undefined),
        ...optional('memory', this.nodeMemory(nodeUsage, now)),
        ...optional('network', networkStats(parseNetDev(netDev), now, '')),
        fs: fsStats(nodeFs, now, nodeFs ? { bytes: nodeFs.capacityBytes - nodeFs.availableBytes, inodes: nodeFs.inodes - nodeFs.inodesFree } : undefined),
        runtime: { ...(imageFsUsage ? { imageFs: runtimeFs(imageFsUsage, imageFsCapacity, now) } : {}) },
        rlimit: { time: apiTime(now), ...rlimit },
      },
      pods,
    };
  }

  private async listSandboxStats(): Promise<PodSandboxStats[] | undefined> {
    if (this.sandboxStats === false) return undefined;
    try {
      const stats = await this.opts.runtime.listPodSandboxStats();
      this.sandboxStats = true;
      return stats;
    } catch (err) {
      if (!isUnimplemented(err)) throw err;
      this.opts.log.info('The container runtime does not implement ListPodSandboxStats: pod stats come from the pod cgroups');
      this.sandboxStats = false;
      return undefined;
    }
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

  private async podSummary(
    sandbox: PodSandbox,
    containers: Container[],
    statsById: Map<string, ContainerStats>,
    sandboxStats: PodSandboxStats | undefined,
    pod: V1Pod | undefined,
    fs: { now: number; rootfs?: FsUsage; logsFs?: FsUsage; nodeFs?: FsUsage },
  ): Promise<PodSummary> {
    const { now } = fs;
    const m = sandbox.metadata;
    const ref = { name: m.name, namespace: m.namespace, uid: m.uid };
    const logDir = podLogDirectory(this.opts.podLogsDir, { metadata: ref });
    const containerSummaries = await Promise.all(
      containers.map(async (c): Promise<ContainerSummary> => {
        const s = statsById.get(c.id);
        const logs = await this.cachedDiskUsage(join(logDir, c.metadata.name), now);
        return {
          name: c.metadata.name,
          startTime: apiTime(c.createdAt),
          ...optional('cpu', this.criCpu(`c/${c.id}`, s?.cpu)),
          ...optional('memory', criMemory(s?.memory, now)),
          ...(s?.writableLayer ? { rootfs: fsStats(fs.rootfs, s.writableLayer.timestampNs / 1e6 || now, { ...opt('bytes', s.writableLayer.usedBytes), ...opt('inodes', s.writableLayer.inodesUsed) }) } : {}),
          logs: fsStats(fs.logsFs, now, logs ? { bytes: logs.bytes, inodes: logs.inodes } : undefined),
        };
      }),
    );
    const volumes = pod ? await this.volumeStats(pod, now) : [];
    let cpu, memory, network, processCount: number | undefined;
    if (sandboxStats) {
      cpu = this.criCpu(`p/${m.uid}`, sandboxStats.cpu);
      memory = criMemory(sandboxStats.memory, now);
      const n = sandboxStats.network;
      if (n?.defaultInterface) network = networkStats([n.defaultInterface, ...n.interfaces].map(criInterface), n.timestampNs / 1e6 || now);
      processCount = sandboxStats.process?.processCount;
    } else if (pod) {
      const cgroup = podCgroupParent(pod, this.opts.cgroupRoot);
      const [usage, pids] = await Promise.all([this.opts.cgroups.read(cgroup), this.opts.cgroups.pids(cgroup)]);
      if (usage?.cpuUsageNs !== undefined) cpu = cpuStats(this.cpuRates.sample(`p/${m.uid}`, now, usage.cpuUsageNs));
      memory = memoryStats(usage?.memory, now, this.opts.memoryCapacityBytes);
      processCount = pids.length;
      // Any process of the pod shares the sandbox's network namespace (host-network pods report none, as kubelet).
      if (!pod.spec?.hostNetwork && pids[0] !== undefined) {
        const text = await readFile(`/proc/${pids[0]}/net/dev`, 'utf8').catch(() => '');
        network = networkStats(parseNetDev(text), now);
      }
    }
    const localEphemeral = volumes.filter((v) => v.localEphemeral).map((v) => v.stats);
    return {
      podRef: ref,
      startTime: apiTime(sandbox.createdAt),
      containers: containerSummaries,
      ...optional('cpu', cpu),
      ...optional('memory', memory),
      ...optional('network', network),
      ...(volumes.length > 0 ? { volume: volumes.map((v) => v.stats) } : {}),
      'ephemeral-storage': ephemeralStorage(containerSummaries, localEphemeral, fs.nodeFs, now),
      ...(processCount !== undefined ? { process_stats: { process_count: processCount } } : {}),
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
        const [usage, fs] = await Promise.all([this.cachedDiskUsage(dir, now), filesystemUsage(dir)]);
        if (!usage) return;
        const memoryMedium = plugin.key === 'secret' || plugin.key === 'projected' || v.emptyDir?.medium === 'Memory';
        out.push({
          stats: { name: v.name, ...fsStats(fs, now, { bytes: usage.bytes, inodes: usage.inodes }) },
          // kubelet's IsLocalEphemeralVolume: emptyDir on disk, configMap, downwardAPI.
          localEphemeral: !memoryMedium && plugin.key !== 'secret' && plugin.key !== 'projected',
        });
      }),
    );
    return out.sort((a, b) => a.stats.name.localeCompare(b.stats.name));
  }

  private async cachedDiskUsage(dir: string, now: number): Promise<{ bytes: number; inodes: number } | undefined> {
    const cached = this.du.get(dir);
    if (cached && now - cached.at < volumeStatsPeriodMs) return cached.usage;
    const usage = await diskUsage(dir);
    this.du.set(dir, { at: now, ...(usage ? { usage } : {}) });
    // Entries of removed pods go once stale.
    for (const [key, entry] of this.du) if (now - entry.at > 2 * volumeStatsPeriodMs) this.du.delete(key);
    return usage;
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

function criInterface(i: { name: string; rxBytes?: number; rxErrors?: number; txBytes?: number; txErrors?: number }) {
  return { name: i.name, rxBytes: i.rxBytes ?? 0, rxErrors: i.rxErrors ?? 0, txBytes: i.txBytes ?? 0, txErrors: i.txErrors ?? 0 };
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
