// Cgroup hierarchy discovery from mountinfo, and pod cgroup removal on a directory tree standing in for cgroupfs.
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  PodCgroupManager,
  cpuWeightFromShares,
  sliceProperties,
  systemdCgroupPath,
  type SliceSpec,
  type SystemdUnits,
  parseCgroupMounts,
  subtreeControlWrite,
  unifiedControls,
  type CgroupFs,
  type CgroupHierarchy,
} from '../../../src/host/cgroups.js';
import { InMemoryCgroupFs } from '../fakes/in-memory-cgroupfs.js';

const hybridMountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 23 0:32 / /mnt/elsewhere/memory rw,relatime - cgroup cgroup rw,memory
60 23 8:1 / / rw,relatime - ext4 /dev/sda1 rw`;

describe('parseCgroupMounts', () => {
  test('v1 hierarchies with their controllers, named hierarchies, the unified one; duplicates at the shortest path', () => {
    expect(parseCgroupMounts(hybridMountinfo)).toEqual<CgroupHierarchy[]>([
      { mountPoint: '/sys/fs/cgroup/cpu', version: 1, controllers: ['cpu'] },
      { mountPoint: '/sys/fs/cgroup/cpuacct', version: 1, controllers: ['cpuacct'] },
      { mountPoint: '/sys/fs/cgroup/cpuset', version: 1, controllers: ['cpuset'] },
      { mountPoint: '/sys/fs/cgroup/memory', version: 1, controllers: ['memory'] },
      { mountPoint: '/sys/fs/cgroup/systemd', version: 1, controllers: ['name=systemd'] },
      { mountPoint: '/sys/fs/cgroup/unified', version: 2, controllers: [] },
    ]);
  });

  test('combined controllers and a pure v2 host', () => {
    expect(parseCgroupMounts('30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct')).toEqual([
      { mountPoint: '/sys/fs/cgroup/cpu,cpuacct', version: 1, controllers: ['cpu', 'cpuacct'] },
    ]);
    expect(parseCgroupMounts('30 25 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate')).toEqual([
      { mountPoint: '/sys/fs/cgroup', version: 2, controllers: [] },
    ]);
  });
});

describe('PodCgroupManager.removePod', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'nodelet-cgroups-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test('removes the pod directory with leftover children in every hierarchy and QoS level, and lists pod UIDs', async () => {
    const hierarchies: CgroupHierarchy[] = [
      { mountPoint: join(root, 'memory'), version: 1, controllers: ['memory'] },
      { mountPoint: join(root, 'unified'), version: 2, controllers: [] },
    ];
    await mkdir(join(root, 'memory/kubepods/burstable/podaaa/ctr1'), { recursive: true });
    await mkdir(join(root, 'unified/kubepods/burstable/podaaa'), { recursive: true });
    await mkdir(join(root, 'memory/kubepods/podbbb'), { recursive: true });
    await mkdir(join(root, 'memory/kubepods/besteffort'), { recursive: true });
    const manager = new PodCgroupManager(hierarchies);
    expect([...(await manager.podUids())].sort()).toEqual(['aaa', 'bbb']);

    await manager.removePod('aaa');
    expect(await readdir(join(root, 'memory/kubepods/burstable'))).toEqual([]);
    expect(await readdir(join(root, 'unified/kubepods/burstable'))).toEqual([]);
    expect([...(await manager.podUids())]).toEqual(['bbb']);
    // Removing what is not there succeeds.
    await manager.removePod('aaa');
    await manager.removePod('never-existed');
  });

  test('garbage collection removes only the cgroups of pods nobody claims', async () => {
    const hierarchies: CgroupHierarchy[] = [{ mountPoint: join(root, 'cpu'), version: 1, controllers: ['cpu'] }];
    for (const dir of ['kubepods/podkept', 'kubepods/besteffort/podorphan/ctr', 'kubepods/burstable/podother']) {
      await mkdir(join(root, 'cpu', dir), { recursive: true });
    }
    const manager = new PodCgroupManager(hierarchies);
    const result = await manager.garbageCollect((uid) => uid === 'kept');
    expect(result.removed.sort()).toEqual(['orphan', 'other']);
    expect(result.failed).toEqual([]);
    expect([...(await manager.podUids())]).toEqual(['kept']);
  });
});

describe("PodCgroupManager under a cgroupRoot (kubelet's cgroupRoot, kind's /kubelet)", () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'nodelet-cgroups-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test('the root must exist in every hierarchy pods use (kubelet refuses to start otherwise)', async () => {
    const hierarchies: CgroupHierarchy[] = [
      { mountPoint: join(root, 'memory'), version: 1, controllers: ['memory'] },
      { mountPoint: join(root, 'cpu'), version: 1, controllers: ['cpu'] },
      { mountPoint: join(root, 'systemd'), version: 1, controllers: ['name=systemd'] },
    ];
    await mkdir(join(root, 'memory/kubelet'), { recursive: true });
    await mkdir(join(root, 'cpu'), { recursive: true });
    expect(await new PodCgroupManager(hierarchies, '/kubelet').missingRoot()).toEqual([join(root, 'cpu/kubelet')]);
    await mkdir(join(root, 'cpu/kubelet'));
    expect(await new PodCgroupManager(hierarchies, '/kubelet').missingRoot()).toEqual([]);
    expect(await new PodCgroupManager(hierarchies).missingRoot()).toEqual([]);
  });

  test('creates, lists and removes pods under <root>/kubepods only', async () => {
    const hierarchies: CgroupHierarchy[] = [{ mountPoint: join(root, 'pids'), version: 1, controllers: ['pids'] }];
    await mkdir(join(root, 'pids/kubelet'), { recursive: true });
    await mkdir(join(root, 'pids/kubepods/podelsewhere'), { recursive: true });
    const manager = new PodCgroupManager(hierarchies, '/kubelet');
    await manager.ensurePod('/kubelet/kubepods/burstable/podaaa', { cpuShares: 2 });
    expect(await readdir(join(root, 'pids/kubelet/kubepods'))).toEqual(expect.arrayContaining(['burstable', 'besteffort']));
    expect([...(await manager.podUids())]).toEqual(['aaa']);
    await manager.removePod('aaa');
    expect(await readdir(join(root, 'pids/kubelet/kubepods/burstable'))).toEqual([]);
    expect(await readdir(join(root, 'pids/kubepods'))).toEqual(['podelsewhere']);
  });
});

describe('PodCgroupManager on a cgroup v1 host', () => {
  test('the pod limits in the cpu, memory and pids hierarchies: pids.max from podPidsLimit, nothing without it', async () => {
    const mount = '/sys/fs/cgroup';
    const hierarchies: CgroupHierarchy[] = ['cpu', 'memory', 'pids'].map((c) => ({ mountPoint: `${mount}/${c}`, version: 1 as const, controllers: [c] }));
    // A v1 hierarchy's files, as far as the writes go: directories made, control files written.
    const dirs = new Set(hierarchies.map((h) => h.mountPoint));
    const writes = new Map<string, string>();
    const fail = (code: string) => Promise.reject(Object.assign(new Error(code), { code }));
    const fs: CgroupFs = {
      mkdir: (p) => (dirs.has(p) ? fail('EEXIST') : dirs.has(dirname(p)) ? Promise.resolve(void dirs.add(p)) : fail('ENOENT')),
      rmdir: async (p) => void dirs.delete(p),
      readFile: async (p) => writes.get(p) ?? '',
      writeControl: async (p, v) => void (dirs.has(dirname(p)) ? writes.set(p, v) : undefined),
      subdirs: async () => [],
    };
    const manager = new PodCgroupManager(hierarchies, '/', fs);
    await manager.ensurePod('/kubepods/burstable/podaaa', { cpuShares: 102, cpuQuota: 25_000, cpuPeriod: 100_000, memoryLimitInBytes: 67_108_864, pidsLimit: 128 });
    await manager.ensurePod('/kubepods/besteffort/podbbb', { cpuShares: 2 });
    const pod = (c: string, uid: string) => `${mount}/${c}/kubepods/${uid === 'aaa' ? 'burstable' : 'besteffort'}/pod${uid}`;
    expect(writes.get(`${pod('pids', 'aaa')}/pids.max`)).toBe('128');
    expect(writes.get(`${pod('memory', 'aaa')}/memory.limit_in_bytes`)).toBe('67108864');
    expect(writes.get(`${pod('cpu', 'aaa')}/cpu.cfs_quota_us`)).toBe('25000');
    expect(dirs.has(pod('pids', 'bbb'))).toBe(true);
    expect(writes.has(`${pod('pids', 'bbb')}/pids.max`)).toBe(false);
  });
});

describe('cgroup v2: kubelet conversions', () => {
  test('cpu.weight from cpu.shares (1 + ((shares - 2) * 9999) / 262142, integer)', () => {
    expect(cpuWeightFromShares(2)).toBe(1);
    expect(cpuWeightFromShares(102)).toBe(4); // 100m
    expect(cpuWeightFromShares(1024)).toBe(39); // 1 cpu
    expect(cpuWeightFromShares(262144)).toBe(10000);
    expect(cpuWeightFromShares(0)).toBe(0);
  });

  test('control files: cpu.weight, cpu.max "quota period" only with a quota, memory.max only with a limit', () => {
    expect(unifiedControls({ cpuShares: 256, cpuQuota: 25_000, cpuPeriod: 100_000, memoryLimitInBytes: 64 * 1024 * 1024 })).toEqual([
      ['cpu.weight', '10'],
      ['cpu.max', '25000 100000'],
      ['memory.max', '67108864'],
    ]);
    expect(unifiedControls({ cpuShares: 2 })).toEqual([['cpu.weight', '1']]);
    expect(unifiedControls({ cpuShares: 2, pidsLimit: 1024 })).toEqual([['cpu.weight', '1'], ['pids.max', '1024']]);
    expect(unifiedControls({ cpuShares: 1024, cpuQuota: 0, cpuPeriod: 100_000, memoryLimitInBytes: 0 })).toEqual([['cpu.weight', '39']]);
  });

  test('subtree_control enables the offered controllers pods need that are not enabled yet', () => {
    expect(subtreeControlWrite('cpuset cpu io memory hugetlb pids rdma misc', '')).toBe('+cpuset +cpu +io +memory +hugetlb +pids');
    expect(subtreeControlWrite('cpu memory pids', 'memory pids')).toBe('+cpu');
    expect(subtreeControlWrite('cpu memory', 'cpu memory')).toBeUndefined();
  });
});

describe('PodCgroupManager on a cgroup v2 host', () => {
  const mount = '/sys/fs/cgroup';
  const unified: CgroupHierarchy[] = [{ mountPoint: mount, version: 2, controllers: [] }];
  const setup = (cgroupRoot = '/') => {
    const fs = new InMemoryCgroupFs(mount, ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids', 'rdma', 'misc']);
    return { fs, manager: new PodCgroupManager(unified, cgroupRoot, fs) };
  };

  test('pod cgroups under kubepods/<qos> with the limits in v2 files, controllers enabled on the way down', async () => {
    const { fs, manager } = setup();
    expect(manager.unified).toBe(true);
    await manager.ensurePod('/kubepods/burstable/podaaa', { cpuShares: 102, cpuQuota: 25_000, cpuPeriod: 100_000, memoryLimitInBytes: 67_108_864 });
    await manager.ensurePod('/kubepods/podggg', { cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitInBytes: 33_554_432 });
    await manager.ensurePod('/kubepods/besteffort/podbbb', { cpuShares: 2 });
    const pod = `${mount}/kubepods/burstable/podaaa`;
    expect([fs.read(`${pod}/cpu.weight`), fs.read(`${pod}/cpu.max`), fs.read(`${pod}/memory.max`)]).toEqual(['4', '25000 100000', '67108864']);
    expect([fs.read(`${mount}/kubepods/podggg/cpu.max`), fs.read(`${mount}/kubepods/podggg/memory.max`)]).toEqual(['50000 100000', '33554432']);
    // BestEffort pods share the minimum weight; a BestEffort pod gets no limit.
    expect(fs.read(`${mount}/kubepods/besteffort/cpu.weight`)).toBe('1');
    expect(fs.read(`${mount}/kubepods/besteffort/podbbb/memory.max`)).toBe('max');
    // The pods' containers (created by runc under the pod) get every controller kubelet's do; rdma and misc stay off.
    for (const dir of [mount, `${mount}/kubepods`, `${mount}/kubepods/burstable`]) {
      expect(fs.read(`${dir}/cgroup.subtree_control`)).toBe('cpuset cpu io memory hugetlb pids');
    }
    expect([...(await manager.podUids())].sort()).toEqual(['aaa', 'bbb', 'ggg']);
    await manager.removePod('aaa');
    expect(fs.dirs.has(pod)).toBe(false);
    expect((await manager.garbageCollect((uid) => uid === 'ggg')).removed).toEqual(['bbb']);
    expect([...(await manager.podUids())]).toEqual(['ggg']);
  });

  test('under a cgroupRoot that must exist, with controllers already enabled left as they are', async () => {
    const { fs, manager } = setup('/kubelet');
    expect(await manager.missingRoot()).toEqual([`${mount}/kubelet`]);
    await fs.writeControl(`${mount}/cgroup.subtree_control`, '+memory +pids');
    await fs.mkdir(`${mount}/kubelet`);
    expect(await manager.missingRoot()).toEqual([]);
    await manager.ensurePod('/kubelet/kubepods/burstable/podaaa', { cpuShares: 1024, memoryLimitInBytes: 1_048_576 });
    expect(fs.read(`${mount}/cgroup.subtree_control`)).toBe('memory pids cpuset cpu io hugetlb');
    expect(fs.read(`${mount}/kubelet/kubepods/burstable/podaaa/cpu.weight`)).toBe('39');
    expect(fs.read(`${mount}/kubelet/kubepods/burstable/podaaa/memory.max`)).toBe('1048576');
    expect(fs.dirs.has(`${mount}/kubepods`)).toBe(false);
  });

  test("node allocatable enforced on kubepods: cpu weight from the allocatable cpu's shares, memory.max, pids.max", async () => {
    const { fs, manager } = setup();
    await manager.limitKubepods({ cpuShares: 2048, memoryLimitInBytes: 8 * 1024 ** 3, pidsLimit: 31000 });
    expect([fs.read(`${mount}/kubepods/cpu.weight`), fs.read(`${mount}/kubepods/memory.max`), fs.read(`${mount}/kubepods/pids.max`)]).toEqual(
      ['79', String(8 * 1024 ** 3), '31000']);
    expect(fs.dirs.has(`${mount}/kubepods/burstable`)).toBe(true);
  });
});

describe('the systemd cgroup driver', () => {
  test("kubelet's slice names: each component a slice named by the path so far, dashes escaped", () => {
    expect(systemdCgroupPath('/kubepods')).toBe('/kubepods.slice');
    expect(systemdCgroupPath('/kubepods/burstable/pod1a-2b')).toBe('/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a_2b.slice');
    expect(systemdCgroupPath('/kubepods/podx')).toBe('/kubepods.slice/kubepods-podx.slice');
    expect(systemdCgroupPath('/')).toBe('/');
  });

  test("a pod cgroup's path as each driver's manager creates it, the same in v1 and v2 hierarchies", () => {
    const units: SystemdUnits = { startSlice: () => Promise.resolve(), stopUnit: () => Promise.resolve() };
    const name = '/kubelet/kubepods/besteffort/pod1a-2b';
    for (const hierarchies of [[{ mountPoint: '/sys/fs/cgroup', version: 2, controllers: [] }], [{ mountPoint: '/sys/fs/cgroup/memory', version: 1, controllers: ['memory'] }]] as CgroupHierarchy[][]) {
      expect(new PodCgroupManager(hierarchies, '/kubelet').cgroupPath(name)).toBe(name);
      expect(new PodCgroupManager(hierarchies, '/kubelet', undefined, units).cgroupPath(name))
        .toBe('/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod1a_2b.slice');
    }
  });

  test('transient slice properties: wanted by the parent, accounting, limits in systemd units, no Delegate (refused for slices)', () => {
    const props = sliceProperties({
      unit: 'kubepods-burstable-podx.slice',
      parent: 'kubepods-burstable.slice',
      settings: { cpuShares: 102, cpuQuota: 25_000, cpuPeriod: 100_000, memoryLimitInBytes: 67_108_864, pidsLimit: 256 },
    });
    expect(props).toEqual(
      expect.arrayContaining([
        ['Wants', 'as', '1', 'kubepods-burstable.slice'],
        ['DefaultDependencies', 'b', 'false'],
        ['CPUWeight', 't', '4'],
        ['CPUQuotaPerSecUSec', 't', '250000'],
        ['CPUQuotaPeriodUSec', 't', '100000'],
        ['MemoryMax', 't', '67108864'],
        ['TasksMax', 't', '256'],
      ]),
    );
    expect(props.map((p) => p[0])).not.toContain('Delegate');
    expect(sliceProperties({ unit: 'kubepods.slice' }).map((p) => p[0])).not.toContain('Wants');
  });

  test('QoS and pod slices started through systemd, their files written, stopped with the pod and as orphans', async () => {
    const mount = '/sys/fs/cgroup';
    const fs = new InMemoryCgroupFs(mount, ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids']);
    const started: SliceSpec[] = [];
    const stopped: string[] = [];
    // As systemd: a started slice gets its cgroup (its parent enabling the controllers), a stopped one loses it.
    const systemd: SystemdUnits = {
      async startSlice(spec) {
        started.push(spec);
        const path = systemdCgroupPath(spec.unit.replace(/\.slice$/, '').split('-').join('/'));
        const parent = path.split('/').slice(0, -1).join('/') || mount;
        await fs.writeControl(`${parent === mount ? mount : mount + parent}/cgroup.subtree_control`, '+cpu +memory +pids').catch(() => undefined);
        await fs.mkdir(`${mount}${path}`).catch(() => undefined);
      },
      async stopUnit(unit) {
        stopped.push(unit);
        await fs.rmdir(`${mount}${systemdCgroupPath(unit.replace(/\.slice$/, '').split('-').join('/'))}`).catch(() => undefined);
      },
    };
    const manager = new PodCgroupManager([{ mountPoint: mount, version: 2, controllers: [] }], '/', fs, systemd);
    await manager.ensurePod('/kubepods/burstable/poda1', { cpuShares: 102, cpuQuota: 25_000, cpuPeriod: 100_000, memoryLimitInBytes: 67_108_864 });
    expect(started.map((s) => [s.unit, s.parent])).toEqual([
      ['kubepods.slice', undefined],
      ['kubepods-burstable.slice', 'kubepods.slice'],
      ['kubepods-besteffort.slice', 'kubepods.slice'],
      ['kubepods-burstable-poda1.slice', 'kubepods-burstable.slice'],
    ]);
    const pod = `${mount}/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda1.slice`;
    expect([fs.read(`${pod}/cpu.max`), fs.read(`${pod}/memory.max`), fs.read(`${pod}/cpu.weight`)]).toEqual(['25000 100000', '67108864', '4']);
    expect(fs.read(`${mount}/kubepods.slice/kubepods-besteffort.slice/cpu.weight`)).toBe('1');
    await manager.ensurePod('/kubepods/besteffort/podb2', { cpuShares: 2 });
    expect([...(await manager.podUids())].sort()).toEqual(['a1', 'b2']);
    await manager.removePod('a1');
    expect(stopped).toEqual(['kubepods-burstable-poda1.slice']);
    expect(fs.dirs.has(pod)).toBe(false);
    expect((await manager.garbageCollect(() => false)).removed).toEqual(['b2']);
    expect(stopped).toEqual(['kubepods-burstable-poda1.slice', 'kubepods-besteffort-podb2.slice']);
  });
});
