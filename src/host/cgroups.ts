// Pod cgroups under kubepods, created and removed as kubelet's cgroupfs driver does (--cgroups-per-qos) on cgroup v1 hosts.
import { constants } from 'node:fs';
import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** One mounted cgroup hierarchy: a v1 hierarchy with its controllers, or the v2 unified one. */
export interface CgroupHierarchy {
  mountPoint: string;
  version: 1 | 2;
  /** v1 controllers (e.g. ["cpu", "cpuacct"]) or a named hierarchy ("name=systemd"); empty for v2. */
  controllers: string[];
}

/** What a pod's own cgroup gets (kubelet's ResourceConfigForPod); unset fields keep the kernel default. */
export interface PodCgroupSettings {
  cpuShares: number;
  cpuQuota?: number;
  cpuPeriod?: number;
  memoryLimitInBytes?: number;
}

const v1Controllers = new Set([
  'cpu', 'cpuacct', 'cpuset', 'memory', 'devices', 'freezer', 'net_cls', 'net_prio', 'blkio', 'perf_event', 'hugetlb', 'pids', 'rdma', 'misc',
]);

/** The cgroup hierarchies of a /proc/<pid>/mountinfo text; a controller mounted twice is used at its shortest mount point. */
export function parseCgroupMounts(mountinfo: string): CgroupHierarchy[] {
  const byController = new Map<string, CgroupHierarchy>();
  const hierarchies: CgroupHierarchy[] = [];
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const mountPoint = before.split(' ')[4];
    const [fstype, , superOptions = ''] = after.split(' ');
    if (!mountPoint) continue;
    if (fstype === 'cgroup2') {
      if (!hierarchies.some((h) => h.version === 2)) hierarchies.push({ mountPoint, version: 2, controllers: [] });
      continue;
    }
    if (fstype !== 'cgroup') continue;
    const controllers = superOptions.split(',').filter((o) => v1Controllers.has(o) || o.startsWith('name='));
    if (controllers.length === 0) continue;
    const key = controllers.join(',');
    const previous = byController.get(key);
    if (previous && previous.mountPoint.length <= mountPoint.length) continue;
    const hierarchy: CgroupHierarchy = { mountPoint, version: 1, controllers };
    if (previous) hierarchies.splice(hierarchies.indexOf(previous), 1, hierarchy);
    else hierarchies.push(hierarchy);
    byController.set(key, hierarchy);
  }
  return hierarchies;
}

/** The QoS-level cgroups kubelet keeps (Guaranteed pods sit directly in kubepods), relative to the cgroup root. */
export const qosCgroups = ['/kubepods', '/kubepods/burstable', '/kubepods/besteffort'] as const;

/** A QoS cgroup under kubelet's cgroupRoot ("/" by default; kind's "/kubelet"). */
export function underCgroupRoot(cgroupRoot: string, path: string): string {
  return join('/', cgroupRoot, path);
}
const podCgroupPrefix = 'pod';

/** A cgroup that stays busy (live processes) after its pod's containers are gone. */
export class CgroupBusyError extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Written like runc does: write-only with truncation, never creating a missing control file.
async function writeControl(dir: string, file: string, value: number | string): Promise<void> {
  await writeFile(join(dir, file), String(value), { flag: constants.O_WRONLY | constants.O_TRUNC });
}

/**
 * Creates and removes pod cgroups. containerd/runc would create missing parents themselves, but never
 * remove them and never set pod-level limits; kubelet creates `kubepods[/<qos>]/pod<uid>` in every v1
 * hierarchy with the pod's summed limits before the sandbox starts, and destroys it once the pod is gone.
 * On a pure cgroup v2 host nothing is created here (runc creates the path); removal still applies.
 */
export class PodCgroupManager {
  private qosReady?: Promise<void>;
  /** The QoS cgroups under the cgroup root. */
  private readonly qosPaths: string[];

  constructor(
    private readonly hierarchies: CgroupHierarchy[],
    /** kubelet's cgroupRoot: kubepods is created under it. */
    private readonly cgroupRoot = '/',
  ) {
    this.qosPaths = qosCgroups.map((p) => underCgroupRoot(cgroupRoot, p));
  }

  static async detect(cgroupRoot = '/', mountinfoPath = '/proc/self/mountinfo'): Promise<PodCgroupManager> {
    return new PodCgroupManager(parseCgroupMounts(await readFile(mountinfoPath, 'utf8')), cgroupRoot);
  }

  /**
   * kubelet's check that the cgroup root exists (cgroupManager.Validate) in every hierarchy pods use: the missing
   * paths; kubelet refuses to start with any ("invalid configuration").
   */
  async missingRoot(): Promise<string[]> {
    // A v1 (or hybrid) host runs pods in its v1 controllers' hierarchies, a pure v2 host in the unified one.
    const v1 = this.v1.filter((h) => h.controllers.some((c) => v1Controllers.has(c)));
    const used = v1.length > 0 ? v1 : this.hierarchies.filter((h) => h.version === 2);
    const missing: string[] = [];
    for (const h of used) {
      const dir = join(h.mountPoint, this.cgroupRoot);
      const ok = await readdir(dir).then(() => true, () => false);
      if (!ok) missing.push(dir);
    }
    return missing;
  }

  private get v1(): CgroupHierarchy[] {
    return this.hierarchies.filter((h) => h.version === 1);
  }

  private has(h: CgroupHierarchy, controller: string): boolean {
    return h.controllers.includes(controller);
  }

  /** Creates a cgroup (and missing parents) in every v1 hierarchy, the hierarchies in parallel. */
  private async create(path: string): Promise<void> {
    await Promise.all(this.v1.map((h) => this.createIn(h, path)));
  }

  /**
   * Creates the cgroup in one hierarchy, trying the leaf first: a pod's parents (its QoS cgroup) exist, so this is
   * one mkdir per hierarchy on the start path; missing parents are created on ENOENT. A new cpuset directory
   * inherits its parent's CPUs and memory nodes.
   */
  private async createIn(h: CgroupHierarchy, path: string): Promise<void> {
    const dir = join(h.mountPoint, path);
    try {
      await mkdir(dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return;
      if (code !== 'ENOENT' || dirname(path) === path) throw err;
      await this.createIn(h, dirname(path));
      return this.createIn(h, path);
    }
    if (this.has(h, 'cpuset')) {
      // A new cpuset starts empty and accepts no task until it has CPUs and memory nodes.
      for (const file of ['cpuset.cpus', 'cpuset.mems']) {
        const inherited = (await readFile(join(dirname(dir), file), 'utf8')).trim();
        if (inherited) await writeControl(dir, file, inherited);
      }
    }
  }

  /** kubepods and its QoS children, once; BestEffort pods share the minimum cpu weight as kubelet sets it. */
  private ensureQosCgroups(): Promise<void> {
    this.qosReady ??= (async () => {
      for (const path of this.qosPaths) await this.create(path);
      const besteffort = underCgroupRoot(this.cgroupRoot, '/kubepods/besteffort');
      for (const h of this.v1.filter((h) => this.has(h, 'cpu'))) await writeControl(join(h.mountPoint, besteffort), 'cpu.shares', 2);
    })().catch((err: unknown) => {
      this.qosReady = undefined;
      throw err;
    });
    return this.qosReady;
  }

  /** Creates the pod's cgroup at `path` (e.g. /kubepods/burstable/pod<uid>) and applies its settings. */
  async ensurePod(path: string, settings: PodCgroupSettings): Promise<void> {
    await this.ensureQosCgroups();
    await Promise.all(
      this.v1.map(async (h) => {
        await this.createIn(h, path);
        const dir = join(h.mountPoint, path);
        if (this.has(h, 'cpu')) {
          await writeControl(dir, 'cpu.shares', settings.cpuShares);
          if (settings.cpuPeriod !== undefined && settings.cpuQuota !== undefined && settings.cpuQuota !== 0) {
            await this.writeCfs(dir, settings.cpuPeriod, settings.cpuQuota);
          }
        }
        if (this.has(h, 'memory') && settings.memoryLimitInBytes !== undefined && settings.memoryLimitInBytes > 0) {
          await writeControl(dir, 'memory.limit_in_bytes', settings.memoryLimitInBytes);
        }
      }),
    );
  }

  // The kernel checks quota against the current period: one order of the two writes can be refused, the other not.
  private async writeCfs(dir: string, period: number, quota: number): Promise<void> {
    try {
      await writeControl(dir, 'cpu.cfs_period_us', period);
      await writeControl(dir, 'cpu.cfs_quota_us', quota);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
      await writeControl(dir, 'cpu.cfs_quota_us', quota);
      await writeControl(dir, 'cpu.cfs_period_us', period);
    }
  }

  /** UIDs of the pods that have a cgroup under kubepods in any hierarchy. */
  async podUids(): Promise<Set<string>> {
    const uids = new Set<string>();
    for (const h of this.hierarchies) {
      for (const qos of this.qosPaths) {
        const entries = await readdir(join(h.mountPoint, qos), { withFileTypes: true }).catch(() => []);
        for (const e of entries) if (e.isDirectory() && e.name.startsWith(podCgroupPrefix)) uids.add(e.name.slice(podCgroupPrefix.length));
      }
    }
    return uids;
  }

  /**
   * Destroys the pod's cgroup in every hierarchy, leftover child cgroups first. Processes still inside
   * (escaped from their containers) are killed, as kubelet's pod container manager does; throws
   * CgroupBusyError when the cgroup stays busy so the caller retries later.
   */
  async removePod(uid: string, attempts = 10): Promise<void> {
    // All hierarchies at once; each settles (none is left half-removed in the background) before the first error is thrown.
    const results = await Promise.allSettled(
      this.hierarchies.flatMap((h) => this.qosPaths.map((qos) => this.removeTree(join(h.mountPoint, qos, `${podCgroupPrefix}${uid}`), attempts))),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * kubelet's cleanupOrphanedPodCgroups: removes the cgroups of pods `isKnown` does not claim (neither desired
   * nor in the runtime, e.g. left behind when nodelet stopped mid-termination). Busy cgroups are left alone,
   * their processes untouched.
   */
  async garbageCollect(isKnown: (uid: string) => boolean): Promise<{ removed: string[]; failed: { uid: string; error: string }[] }> {
    const removed: string[] = [];
    const failed: { uid: string; error: string }[] = [];
    for (const uid of await this.podUids()) {
      if (isKnown(uid)) continue;
      try {
        await this.removePod(uid, 1);
        removed.push(uid);
      } catch (err) {
        failed.push({ uid, error: err instanceof Error ? err.message : String(err) });
      }
    }
    return { removed, failed };
  }

  private async removeTree(dir: string, attempts: number): Promise<void> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const e of entries) if (e.isDirectory()) await this.removeTree(join(dir, e.name), attempts);
    for (let attempt = 1; ; attempt++) {
      try {
        await rmdir(dir);
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return;
        if (code !== 'EBUSY' || attempt >= attempts) {
          throw new CgroupBusyError(`cannot remove cgroup ${dir}: ${(err as Error).message}`, { cause: err });
        }
      }
      await this.killProcesses(dir);
      await sleep(50 * attempt);
    }
  }

  private async killProcesses(dir: string): Promise<void> {
    const procs = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
    for (const pid of procs.split('\n').map(Number).filter((p) => Number.isInteger(p) && p > 0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}
