// Pod cgroups under kubepods, created and removed as kubelet's cgroupfs driver does (--cgroups-per-qos): in every v1
// hierarchy on cgroup v1 (and hybrid) hosts, in the unified hierarchy with kubelet's v2 conversions on cgroup v2 hosts.
import { constants } from 'node:fs';
import { access, mkdir, readdir, readFile, rmdir, statfs, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { ProgramRunner } from './program-runner.js';

/** The cgroupfs operations the manager does: the kernel's (hostCgroupFs), or an in-memory one in unit tests. */
export interface CgroupFs {
  /** One directory; rejects with EEXIST or ENOENT (a missing parent) as fs.mkdir. */
  mkdir(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
  readFile(path: string): Promise<string>;
  /** Writes an existing control file; never creates one. */
  writeControl(path: string, value: string): Promise<void>;
  /** The names of a directory's subdirectories (child cgroups); rejects with ENOENT. */
  subdirs(path: string): Promise<string[]>;
}

export const hostCgroupFs: CgroupFs = {
  mkdir: (path) => mkdir(path),
  rmdir: (path) => rmdir(path),
  readFile: (path) => readFile(path, 'utf8'),
  // Written like runc does: write-only with truncation, never creating a missing control file.
  writeControl: (path, value) => writeFile(path, value, { flag: constants.O_WRONLY | constants.O_TRUNC }),
  subdirs: async (path) => (await readdir(path, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name),
};

/** One mounted cgroup hierarchy: a v1 hierarchy with its controllers, or the v2 unified one. */
export interface CgroupHierarchy {
  mountPoint: string;
  version: 1 | 2;
  /** v1 controllers (e.g. ["cpu", "cpuacct"]) or a named hierarchy ("name=systemd"); empty for v2. */
  controllers: string[];
}

/** What a pod's own cgroup gets (kubelet's ResourceConfigForPod, in v1 units); unset fields keep the kernel default. */
export interface PodCgroupSettings {
  /** 0 leaves the weight alone (a resize of the other settings). */
  cpuShares: number;
  cpuQuota?: number;
  cpuPeriod?: number;
  memoryLimitInBytes?: number;
  /** pids.max (kubelet's podPidsLimit, when positive). */
  pidsLimit?: number;
}

/** A pod cgroup's cpu and memory as read back (kubelet's ResourceConfig from GetPodCgroupConfig). */
export interface PodCgroupConfig {
  cpuShares: number;
  cpuQuota: number;
  cpuPeriod: number;
  memoryLimit: bigint;
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

/** Where the cgroup filesystem is mounted (libcontainer's unifiedMountpoint, kubelet's CgroupRoot). */
export const cgroupMountpoint = '/sys/fs/cgroup';
/** statfs's f_type of a cgroup2 filesystem (CGROUP2_SUPER_MAGIC). */
const cgroup2SuperMagic = 0x63677270;

/** What kubelet's cgroup version check reads of the host. */
export interface HostCgroupVersion {
  /** 2 when /sys/fs/cgroup is a cgroup2 filesystem, else 1 (a hybrid host, cgroup2 at /sys/fs/cgroup/unified, is 1). */
  version: 1 | 2;
  /** Whether the root cgroup has cpu.stat (kernel 5.8 and later; read only on cgroup v2). */
  rootCpuStat: boolean;
}

/**
 * The host's cgroup version as kubelet decides it (libcontainer's IsCgroup2UnifiedMode: statfs of /sys/fs/cgroup, a
 * failed statfs meaning cgroup v1), and on cgroup v2 whether the root's cpu.stat is there.
 */
export async function detectCgroupVersion(mountpoint = cgroupMountpoint): Promise<HostCgroupVersion> {
  const type = await statfs(mountpoint).then((s) => s.type, () => undefined);
  if (type !== cgroup2SuperMagic) return { version: 1, rootCpuStat: false };
  return { version: 2, rootCpuStat: await access(join(mountpoint, 'cpu.stat')).then(() => true, () => false) };
}

/** The QoS-level cgroups kubelet keeps (Guaranteed pods sit directly in kubepods), relative to the cgroup root. */
export const qosCgroups = ['/kubepods', '/kubepods/burstable', '/kubepods/besteffort'] as const;

/** A QoS cgroup under kubelet's cgroupRoot ("/" by default; kind's "/kubelet"). */
export function underCgroupRoot(cgroupRoot: string, path: string): string {
  return join('/', cgroupRoot, path);
}
const podCgroupPrefix = 'pod';
/** kubelet's MinShares: the cpu shares of BestEffort pods. */
const minShares = 2;

/** cpu.weight (1-10000) for v1 cpu.shares (2-262144), as kubelet converts it on cgroup v2 (libcontainer's ConvertCPUSharesToCgroupV2Value). */
export function cpuWeightFromShares(shares: number): number {
  if (shares === 0) return 0;
  return 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

/** The unified hierarchy's control files for a cgroup's settings, in the order kubelet's setResourcesV2 writes them. */
export function unifiedControls(settings: PodCgroupSettings): [file: string, value: string][] {
  const controls: [string, string][] = [];
  const weight = cpuWeightFromShares(settings.cpuShares);
  if (weight !== 0) controls.push(['cpu.weight', String(weight)]);
  if (settings.cpuPeriod !== undefined && settings.cpuQuota !== undefined && settings.cpuQuota > 0) {
    controls.push(['cpu.max', `${settings.cpuQuota} ${settings.cpuPeriod}`]);
  }
  if (settings.memoryLimitInBytes !== undefined && settings.memoryLimitInBytes > 0) controls.push(['memory.max', String(settings.memoryLimitInBytes)]);
  if (settings.pidsLimit !== undefined && settings.pidsLimit > 0) controls.push(['pids.max', String(settings.pidsLimit)]);
  return controls;
}

/** Controllers kubelet's pod cgroups need enabled on cgroup v2 (runc enables these in a container's ancestors too). */
const unifiedControllers = ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids'];

/**
 * The `cgroup.subtree_control` write that enables, in a cgroup whose available controllers are `available`
 * (cgroup.controllers) and enabled ones `enabled` (its cgroup.subtree_control), the controllers pods need; undefined
 * when nothing is missing.
 */
export function subtreeControlWrite(available: string, enabled: string): string | undefined {
  const have = new Set(enabled.split(/\s+/).filter(Boolean));
  const offered = new Set(available.split(/\s+/).filter(Boolean));
  const missing = unifiedControllers.filter((c) => offered.has(c) && !have.has(c));
  return missing.length > 0 ? missing.map((c) => `+${c}`).join(' ') : undefined;
}

/**
 * kubelet's systemd form of a cgroup name (CgroupName.ToSystemd): each component a slice named by the path so far,
 * dashes inside a component escaped to underscores: /kubepods/burstable/pod<uid> is
 * /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _>.slice.
 */
export function systemdCgroupPath(name: string): string {
  const parts = name.split('/').filter(Boolean).map((p) => p.replaceAll('-', '_'));
  return `/${parts.map((_, i) => `${parts.slice(0, i + 1).join('-')}.slice`).join('/')}`;
}

/** What a slice kubelet's systemd cgroup manager starts gets, beside its resources. */
export interface SliceSpec {
  /** The slice unit, e.g. kubepods-burstable-pod<uid>.slice. */
  unit: string;
  /** Its parent slice; undefined under the root slice. */
  parent?: string;
  settings?: PodCgroupSettings;
}

/** The systemd units the systemd driver needs: transient slices started and stopped through systemd's D-Bus API. */
export interface SystemdUnits {
  /** Starts a transient slice (StartTransientUnit); one that exists already is left as it is. */
  startSlice(spec: SliceSpec): Promise<void>;
  /** Stops a unit (StopUnit), which removes its cgroup once its processes are gone; an unknown unit is fine. */
  stopUnit(unit: string): Promise<void>;
}

/**
 * The D-Bus properties of a transient slice as kubelet's systemd manager (libcontainer) sets them: no default
 * dependencies, wanted by its parent, accounting on for the controllers pods use, and the limits in systemd's units
 * (CPUQuotaPerSecUSec is the quota scaled to one second). No Delegate: libcontainer delegates scopes only, and systemd
 * refuses it for a slice ("Delegation not available for unit type"). As busctl's arguments: name, signature, value.
 */
export function sliceProperties(spec: SliceSpec): string[][] {
  const props: string[][] = [
    ['Description', 's', `nodelet pod cgroup ${spec.unit}`],
    ...(spec.parent ? [['Wants', 'as', '1', spec.parent]] : []),
    ['DefaultDependencies', 'b', 'false'],
    ['MemoryAccounting', 'b', 'true'],
    ['CPUAccounting', 'b', 'true'],
    ['IOAccounting', 'b', 'true'],
    ['TasksAccounting', 'b', 'true'],
  ];
  const s = spec.settings;
  if (!s) return props;
  const weight = cpuWeightFromShares(s.cpuShares);
  if (weight !== 0) props.push(['CPUWeight', 't', String(weight)]);
  if (s.cpuQuota !== undefined && s.cpuQuota > 0 && s.cpuPeriod) {
    props.push(['CPUQuotaPerSecUSec', 't', String(Math.ceil((s.cpuQuota * 1_000_000) / s.cpuPeriod))]);
    props.push(['CPUQuotaPeriodUSec', 't', String(s.cpuPeriod)]);
  }
  if (s.memoryLimitInBytes !== undefined && s.memoryLimitInBytes > 0) props.push(['MemoryMax', 't', String(s.memoryLimitInBytes)]);
  if (s.pidsLimit !== undefined && s.pidsLimit > 0) props.push(['TasksMax', 't', String(s.pidsLimit)]);
  return props;
}

/**
 * systemd's Manager API called with busctl on the system bus, where runc's systemd driver reaches it too (busctl
 * cannot address systemd on its private socket: a call with a destination there fails "Invalid request descriptor").
 * busctl ships with systemd itself wherever this driver applies, and it is started through the agent's program runner
 * (the spawn helper): a D-Bus client library would be a new dependency for two calls per pod.
 */
export class BusctlSystemdUnits implements SystemdUnits {
  constructor(
    private readonly programs: ProgramRunner,
    private readonly busctl = '/usr/bin/busctl',
  ) {}

  private async call(method: string, signature: string, args: string[]): Promise<{ ok: boolean; error: string }> {
    const exit = await this.programs.run({
      path: this.busctl,
      args: ['--system', 'call', 'org.freedesktop.systemd1', '/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', method, signature, ...args],
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      input: '',
    });
    return { ok: exit.exitCode === 0, error: (exit.stderr.trim() || exit.message).replace(/^Call failed: /, '') };
  }

  async startSlice(spec: SliceSpec): Promise<void> {
    const props = sliceProperties(spec);
    const r = await this.call('StartTransientUnit', 'ssa(sv)a(sa(sv))', [spec.unit, 'replace', String(props.length), ...props.flat(), '0']);
    // org.freedesktop.systemd1.UnitExists, which busctl shows by its message only (a restarted agent finds its slices).
    if (!r.ok && !/already exists|already loaded|has a fragment file/i.test(r.error)) throw new Error(`systemd could not start ${spec.unit}: ${r.error}`);
  }

  async stopUnit(unit: string): Promise<void> {
    const r = await this.call('StopUnit', 'ss', [unit, 'replace']);
    if (!r.ok && !/not loaded|no such unit|not found/i.test(r.error)) throw new Error(`systemd could not stop ${unit}: ${r.error}`);
  }
}

/** A cgroup that stays busy (live processes) after its pod's containers are gone. */
export class CgroupBusyError extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long systemd may take to create or remove a slice's cgroup. */
const sliceTimeoutMs = 10_000;

/**
 * Creates and removes pod cgroups. containerd/runc would create missing parents themselves, but never
 * remove them and never set pod-level limits; kubelet creates `kubepods[/<qos>]/pod<uid>` with the pod's summed
 * limits before the sandbox starts, and destroys it once the pod is gone: in every v1 hierarchy on a cgroup v1 (or
 * hybrid) host, in the unified hierarchy on a cgroup v2 host, enabling the controllers pods need in each ancestor's
 * cgroup.subtree_control on the way down.
 */
export class PodCgroupManager {
  private qosReady?: Promise<void>;
  /** The QoS cgroups under the cgroup root. */
  private readonly qosPaths: string[];
  /** The hierarchies pods get cgroups in: every v1 one (named ones too) on a v1 or hybrid host, the unified one on a pure v2 host. */
  private readonly managed: CgroupHierarchy[];
  /** The hierarchies that must hold the cgroup root: the v1 ones with controllers, or the unified one. */
  private readonly rootChecked: CgroupHierarchy[];
  /** What kubepods itself gets: the node's allocatable (or capacity), kubelet's enforceNodeAllocatable. */
  private kubepods?: PodCgroupSettings;
  /** Unified cgroups whose subtree_control already enables what pods need. */
  private readonly delegating = new Set<string>();

  constructor(
    private readonly hierarchies: CgroupHierarchy[],
    /** kubelet's cgroupRoot: kubepods is created under it. */
    private readonly cgroupRoot = '/',
    private readonly fs: CgroupFs = hostCgroupFs,
    /** The systemd driver's units: pod and QoS cgroups are then slices systemd creates (cgroup v2 only). */
    private readonly systemd?: SystemdUnits,
  ) {
    this.qosPaths = qosCgroups.map((p) => underCgroupRoot(cgroupRoot, p));
    const v1 = hierarchies.filter((h) => h.version === 1);
    const withControllers = v1.filter((h) => h.controllers.some((c) => v1Controllers.has(c)));
    const unified = hierarchies.filter((h) => h.version === 2);
    this.managed = withControllers.length > 0 ? v1 : unified;
    this.rootChecked = withControllers.length > 0 ? withControllers : unified;
  }

  static async detect(cgroupRoot = '/', systemd?: SystemdUnits, mountinfoPath = '/proc/self/mountinfo'): Promise<PodCgroupManager> {
    return new PodCgroupManager(parseCgroupMounts(await readFile(mountinfoPath, 'utf8')), cgroupRoot, hostCgroupFs, systemd);
  }

  /**
   * Where the cgroup named `name` (kubelet's cgroupfs form, e.g. /kubepods/burstable/pod<uid>) is in each hierarchy,
   * relative to its mount point, as this manager creates it: the name itself, or with the systemd driver its slices
   * (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice). The same in cgroup v1 and v2.
   */
  cgroupPath(name: string): string {
    return this.systemd ? systemdCgroupPath(name) : join('/', name);
  }

  /** The directory of a cgroup name under a hierarchy's mount. */
  private dir(h: CgroupHierarchy, name: string): string {
    return join(h.mountPoint, this.cgroupPath(name));
  }

  /** The hierarchies mounted on the host (for reading cgroups' usage where the manager creates them). */
  get mounted(): readonly CgroupHierarchy[] {
    return this.hierarchies;
  }

  /** The directory name of a pod's cgroup under its QoS cgroup `qos` (a cgroup name): pod<uid>, or the systemd slice. */
  private podDirName(qos: string, uid: string): string {
    if (!this.systemd) return `${podCgroupPrefix}${uid}`;
    return basename(systemdCgroupPath(join(qos, `${podCgroupPrefix}${uid}`)));
  }

  /** The pod UID of a directory under the QoS cgroup `qos`, if it is a pod's. */
  private uidOfDir(qos: string, name: string): string | undefined {
    if (!this.systemd) return name.startsWith(podCgroupPrefix) ? name.slice(podCgroupPrefix.length) : undefined;
    const prefix = this.podDirName(qos, '');
    const slicePrefix = prefix.slice(0, -'.slice'.length);
    if (!name.startsWith(slicePrefix) || !name.endsWith('.slice')) return undefined;
    return name.slice(slicePrefix.length, -'.slice'.length).replaceAll('_', '-');
  }

  /** Whether pods get their cgroups in the unified (v2) hierarchy. */
  get unified(): boolean {
    return this.managed.some((h) => h.version === 2);
  }

  /**
   * kubelet's check that the cgroup root exists (cgroupManager.Validate) in every hierarchy pods use: the missing
   * paths; kubelet refuses to start with any ("invalid configuration").
   */
  async missingRoot(): Promise<string[]> {
    const missing: string[] = [];
    for (const h of this.rootChecked) {
      const dir = this.dir(h, this.cgroupRoot);
      const ok = await this.fs.subdirs(dir).then(() => true, () => false);
      if (!ok) missing.push(dir);
    }
    return missing;
  }

  private has(h: CgroupHierarchy, controller: string): boolean {
    return h.controllers.includes(controller);
  }

  /**
   * Creates the cgroup in one hierarchy, trying the leaf first: a pod's parents (its QoS cgroup) exist, so this is
   * one mkdir per hierarchy on the start path; missing parents are created on ENOENT. A new v1 cpuset directory
   * inherits its parent's CPUs and memory nodes; in the unified hierarchy the parent first delegates the controllers.
   */
  private async createIn(h: CgroupHierarchy, path: string, settings?: PodCgroupSettings): Promise<void> {
    if (this.systemd) return this.startSlice(this.systemd, h, path, settings);
    const dir = join(h.mountPoint, path);
    if (h.version === 2) await this.delegate(dirname(dir), h.mountPoint);
    try {
      await this.fs.mkdir(dir);
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
        const inherited = (await this.fs.readFile(join(dirname(dir), file))).trim();
        if (inherited) await this.fs.writeControl(join(dir, file), inherited);
      }
    }
  }

  /**
   * The systemd driver: the cgroup is a transient slice systemd starts in its parent slice (which it enables the
   * controllers of), as kubelet's systemd cgroup manager creates it; waits for systemd to make its directory.
   */
  private async startSlice(systemd: SystemdUnits, h: CgroupHierarchy, name: string, settings?: PodCgroupSettings): Promise<void> {
    const path = systemdCgroupPath(name);
    const parent = dirname(path);
    await systemd.startSlice({ unit: basename(path), ...(parent === '/' ? {} : { parent: basename(parent) }), ...(settings ? { settings } : {}) });
    const dir = join(h.mountPoint, path);
    for (let waited = 0; !(await this.exists(dir)); waited += 50) {
      if (waited >= sliceTimeoutMs) throw new Error(`systemd started ${basename(path)} but its cgroup ${dir} did not appear within ${sliceTimeoutMs} ms`);
      await sleep(50);
    }
  }

  private exists(dir: string): Promise<boolean> {
    return this.fs.subdirs(dir).then(() => true, () => false);
  }

  /**
   * Enables the controllers pods need in a unified cgroup's subtree_control (its children get their files), and first
   * in its ancestors up to the mount point, which offer them; once per cgroup.
   */
  private async delegate(dir: string, mountPoint = this.managed[0]?.mountPoint ?? '/'): Promise<void> {
    if (this.delegating.has(dir)) return;
    if (dir !== mountPoint && dir.startsWith(mountPoint)) await this.delegate(dirname(dir), mountPoint);
    const write = subtreeControlWrite(await this.fs.readFile(join(dir, 'cgroup.controllers')), await this.fs.readFile(join(dir, 'cgroup.subtree_control')));
    if (write) await this.fs.writeControl(join(dir, 'cgroup.subtree_control'), write);
    this.delegating.add(dir);
  }

  /** kubepods and its QoS children, once; BestEffort pods share the minimum cpu weight as kubelet sets it. */
  private ensureQosCgroups(): Promise<void> {
    this.qosReady ??= (async () => {
      const [kubepods] = this.qosPaths;
      const besteffort = underCgroupRoot(this.cgroupRoot, '/kubepods/besteffort');
      for (const path of this.qosPaths) {
        const settings = path === besteffort ? { cpuShares: minShares } : path === kubepods ? this.kubepods : undefined;
        await Promise.all(this.managed.map((h) => this.createIn(h, path, settings)));
      }
      await Promise.all(this.managed.map((h) => this.apply(h, this.dir(h, besteffort), { cpuShares: minShares })));
    })().catch((err: unknown) => {
      this.qosReady = undefined;
      throw err;
    });
    return this.qosReady;
  }

  /**
   * kubelet's enforceNodeAllocatableCgroups: the kubepods cgroup gets the node's allocatable (capacity minus
   * systemReserved and kubeReserved) with enforceNodeAllocatable [pods], else the capacity: cpu as shares (weight),
   * memory as its limit. Creates the QoS cgroups when they are missing.
   */
  async limitKubepods(settings: PodCgroupSettings): Promise<void> {
    this.kubepods = settings;
    await this.ensureQosCgroups();
    const [kubepods = '/kubepods'] = this.qosPaths;
    await Promise.all(this.managed.map((h) => this.apply(h, this.dir(h, kubepods), settings)));
  }

  /**
   * Creates the pod's cgroup named `path` (e.g. /kubepods/burstable/pod<uid>; a slice with the systemd driver) and
   * writes its settings (after systemd too, as libcontainer does: its files then hold exactly kubelet's values).
   */
  async ensurePod(path: string, settings: PodCgroupSettings): Promise<void> {
    await this.ensureQosCgroups();
    await Promise.all(
      this.managed.map(async (h) => {
        await this.createIn(h, path, settings);
        await this.apply(h, this.dir(h, path), settings);
      }),
    );
  }

  /**
   * An in-place resize of the pod's cgroup (kubelet's SetPodCgroupConfig): writes only the settings given, each in the
   * hierarchy that holds it; with the systemd driver the slice's files directly, as libcontainer's manager also does.
   */
  async resizePod(path: string, settings: Pick<PodCgroupSettings, 'cpuShares' | 'cpuQuota' | 'cpuPeriod' | 'memoryLimitInBytes'>): Promise<void> {
    await Promise.all(
      this.managed.map(async (h) => {
        const dir = this.dir(h, path);
        if (h.version === 2) {
          const controls = unifiedControls({ ...settings, cpuShares: settings.cpuShares ?? 0 });
          for (const [file, value] of controls) await this.fs.writeControl(join(dir, file), value);
          return;
        }
        if (this.has(h, 'cpu')) {
          if (settings.cpuShares !== undefined) await this.fs.writeControl(join(dir, 'cpu.shares'), String(settings.cpuShares));
          if (settings.cpuPeriod !== undefined && settings.cpuQuota !== undefined && settings.cpuQuota !== 0) await this.writeCfs(dir, settings.cpuPeriod, settings.cpuQuota);
        }
        if (this.has(h, 'memory') && settings.memoryLimitInBytes !== undefined && settings.memoryLimitInBytes > 0) {
          await this.fs.writeControl(join(dir, 'memory.limit_in_bytes'), String(settings.memoryLimitInBytes));
        }
      }),
    );
  }

  /**
   * kubelet's GetPodCgroupConfig for cpu and memory: the pod cgroup's shares (from cpu.weight on v2), CFS quota (-1:
   * none) and period, and memory limit (v1's "unlimited" is its huge number, v2's "max" -1); undefined when unreadable.
   */
  async readPod(path: string): Promise<PodCgroupConfig | undefined> {
    const read = async (h: CgroupHierarchy | undefined, file: string) => (h ? (await this.fs.readFile(join(this.dir(h, path), file))).trim() : undefined);
    try {
      const unified = this.managed.find((h) => h.version === 2);
      if (unified) {
        const [quota = 'max', period = '100000'] = (await read(unified, 'cpu.max'))!.split(/\s+/);
        const weight = Number(await read(unified, 'cpu.weight'));
        const memory = (await read(unified, 'memory.max'))!;
        return {
          cpuShares: Math.floor(((weight - 1) * 262142) / 9999) + 2,
          cpuQuota: quota === 'max' ? -1 : Number(quota),
          cpuPeriod: Number(period),
          memoryLimit: memory === 'max' ? -1n : BigInt(memory),
        };
      }
      const cpu = this.managed.find((h) => this.has(h, 'cpu'));
      const memory = this.managed.find((h) => this.has(h, 'memory'));
      return {
        cpuShares: Number(await read(cpu, 'cpu.shares')),
        cpuQuota: Number(await read(cpu, 'cpu.cfs_quota_us')),
        cpuPeriod: Number(await read(cpu, 'cpu.cfs_period_us')),
        memoryLimit: BigInt((await read(memory, 'memory.limit_in_bytes')) ?? '-1'),
      };
    } catch {
      return undefined;
    }
  }

  /** Writes the settings a hierarchy holds into the cgroup `dir`: the v1 files of its controllers, or the unified ones. */
  private async apply(h: CgroupHierarchy, dir: string, settings: PodCgroupSettings): Promise<void> {
    if (h.version === 2) {
      for (const [file, value] of unifiedControls(settings)) await this.fs.writeControl(join(dir, file), value);
      return;
    }
    if (this.has(h, 'cpu')) {
      await this.fs.writeControl(join(dir, 'cpu.shares'), String(settings.cpuShares));
      if (settings.cpuPeriod !== undefined && settings.cpuQuota !== undefined && settings.cpuQuota !== 0) {
        await this.writeCfs(dir, settings.cpuPeriod, settings.cpuQuota);
      }
    }
    if (this.has(h, 'memory') && settings.memoryLimitInBytes !== undefined && settings.memoryLimitInBytes > 0) {
      await this.fs.writeControl(join(dir, 'memory.limit_in_bytes'), String(settings.memoryLimitInBytes));
    }
    if (this.has(h, 'pids') && settings.pidsLimit !== undefined && settings.pidsLimit > 0) {
      await this.fs.writeControl(join(dir, 'pids.max'), String(settings.pidsLimit));
    }
  }

  // The kernel checks quota against the current period: one order of the two writes can be refused, the other not.
  private async writeCfs(dir: string, period: number, quota: number): Promise<void> {
    const write = (file: string, value: number) => this.fs.writeControl(join(dir, file), String(value));
    try {
      await write('cpu.cfs_period_us', period);
      await write('cpu.cfs_quota_us', quota);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
      await write('cpu.cfs_quota_us', quota);
      await write('cpu.cfs_period_us', period);
    }
  }

  /** UIDs of the pods that have a cgroup under kubepods in any hierarchy. */
  async podUids(): Promise<Set<string>> {
    const uids = new Set<string>();
    for (const h of this.hierarchies) {
      for (const qos of this.qosPaths) {
        const names = await this.fs.subdirs(this.dir(h, qos)).catch(() => []);
        for (const name of names) {
          const uid = this.uidOfDir(qos, name);
          if (uid) uids.add(uid);
        }
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
      this.hierarchies.flatMap((h) => this.qosPaths.map((qos) => this.removeCgroup(join(this.dir(h, qos), this.podDirName(qos, uid)), attempts))),
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

  /** Removes a pod's cgroup: the systemd driver stops its slice first (systemd then removes it), then what is left goes. */
  private async removeCgroup(dir: string, attempts: number): Promise<void> {
    if (this.systemd && (await this.exists(dir))) {
      await this.systemd.stopUnit(basename(dir));
      for (let waited = 0; waited < sliceTimeoutMs && (await this.exists(dir)); waited += 50) await sleep(50);
    }
    await this.removeTree(dir, attempts);
  }

  private async removeTree(dir: string, attempts: number): Promise<void> {
    let children;
    try {
      children = await this.fs.subdirs(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const name of children) await this.removeTree(join(dir, name), attempts);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.fs.rmdir(dir);
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
    const procs = await this.fs.readFile(join(dir, 'cgroup.procs')).catch(() => '');
    for (const pid of procs.split('\n').map(Number).filter((p) => Number.isInteger(p) && p > 0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}
