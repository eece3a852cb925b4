// The stats provider reads a pod's cgroup where the pod cgroup manager puts it: cgroupfs names or the systemd driver's
// slices, in cgroup v1 or v2 hierarchies (scratch directories standing in for cgroupfs; the pause process is this one,
// whose /proc/<pid>/net/dev is real).
import { mkdir } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { PodCgroupManager, type CgroupHierarchy, type SystemdUnits } from '../../../src/host/cgroups.js';
import { CgroupUsageReader, parseNetDev } from '../../../src/host/resource-usage.js';
import type { Container, PodSandbox } from '../../../src/cri/types.js';
import type { RuntimeListing } from '../../../src/server/stats-housekeeping.js';
import { StatsProvider } from '../../../src/server/stats-provider.js';
import { FakeClock } from '../core/fake-clock.js';
import { recordingLogger } from '../prober/fake-log.js';
import { files, scratchDir } from '../fakes/scratch-dir.js';

const scratch = scratchDir('stats-');

const uid = '0a1b2c3d-4e5f-6789-abcd-ef0123456789';
const sandboxId = 'f00d'.repeat(16);
const containerId = 'beef'.repeat(16);
const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'default', uid },
  spec: { containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu: '100m' } } }] },
};
const now = Date.UTC(2026, 10, 26, 8, 0, 0);
const listing: RuntimeListing = {
  sandboxes: [
    {
      id: sandboxId, metadata: { name: 'web', namespace: 'default', uid, attempt: 0 }, state: 'SANDBOX_READY', createdAt: now - 60_000,
      labels: { 'io.kubernetes.pod.uid': uid }, annotations: {}, runtimeHandler: '',
    } as PodSandbox,
  ],
  containers: [
    {
      id: containerId, podSandboxId: sandboxId, metadata: { name: 'c', attempt: 0 }, image: { image: 'busybox' }, imageRef: 'busybox',
      state: 'CONTAINER_RUNNING', createdAt: now - 50_000, labels: {}, annotations: {},
    } as Container,
  ],
};

// The driver's names: the pod cgroup, and containerd's child cgroups of the sandbox and the container in it.
const layouts = {
  cgroupfs: { pod: `kubepods/burstable/pod${uid}`, kubepods: 'kubepods', sandbox: sandboxId, container: containerId },
  systemd: {
    pod: `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid.replaceAll('-', '_')}.slice`,
    kubepods: 'kubepods.slice',
    sandbox: `cri-containerd-${sandboxId}.scope`,
    container: `cri-containerd-${containerId}.scope`,
  },
};

/** The cgroups of one driver in a v1 (cpuacct and memory hierarchies) or v2 layout; the hierarchies. */
async function hostCgroups(version: 1 | 2, layout: (typeof layouts)[keyof typeof layouts]): Promise<CgroupHierarchy[]> {
  const procs = (base: string) => files(join(base, layout.sandbox), { 'cgroup.procs': `${process.pid}\n` })
    .then(() => files(join(base, layout.container), { 'cgroup.procs': '101\n102\n' }));
  if (version === 2) {
    const mount = join(scratch.dir(), 'unified');
    for (const [path, cpu] of [[layout.pod, 3_000], [layout.kubepods, 9_000]] as const) {
      await files(join(mount, path), {
        'cpu.stat': `usage_usec ${cpu}\n`, 'memory.current': '4096\n', 'memory.stat': 'anon 1024\ninactive_file 1000\npgfault 3\npgmajfault 0\n', 'memory.max': 'max\n',
      });
    }
    await procs(join(mount, layout.pod));
    return [{ mountPoint: mount, version: 2, controllers: [] }];
  }
  const cpuacct = join(scratch.dir(), 'cpu,cpuacct');
  const memory = join(scratch.dir(), 'memory');
  for (const [path, cpu] of [[layout.pod, 3_000_000], [layout.kubepods, 9_000_000]] as const) {
    await files(join(cpuacct, path), { 'cpuacct.usage': `${cpu}\n` });
    await files(join(memory, path), {
      'memory.usage_in_bytes': '4096\n', 'memory.stat': 'total_inactive_file 1000\ntotal_rss 1024\ntotal_pgfault 3\ntotal_pgmajfault 0\n',
      'memory.limit_in_bytes': '9223372036854771712\n',
    });
  }
  await procs(join(memory, layout.pod));
  return [
    { mountPoint: cpuacct, version: 1, controllers: ['cpu', 'cpuacct'] },
    { mountPoint: memory, version: 1, controllers: ['memory'] },
  ];
}

const noSystemdCalls: SystemdUnits = {
  startSlice: () => Promise.reject(new Error('not called')),
  stopUnit: () => Promise.reject(new Error('not called')),
};

describe.each([
  ['cgroupfs', 1],
  ['cgroupfs', 2],
  ['systemd', 1],
  ['systemd', 2],
] as const)('a pod cgroup of the %s driver, cgroup v%d', (driver, version) => {
  test("the pod's cpu, memory, network and process count read where the manager made its cgroup", async () => {
    const hierarchies = await hostCgroups(version, layouts[driver]);
    const manager = new PodCgroupManager(hierarchies, '/', undefined, driver === 'systemd' ? noSystemdCalls : undefined);
    await mkdir(join(scratch.dir(), 'root'));
    const stats = new StatsProvider({
      nodeName: 'n1',
      runtime: { listContainerStats: () => Promise.resolve([]), imageFsInfo: () => Promise.resolve({ imageFilesystems: [], containerFilesystems: [] }) },
      listing: () => listing,
      pods: () => [pod],
      cgroups: new CgroupUsageReader(manager.mounted),
      cgroupPath: (name) => manager.cgroupPath(name),
      cgroupRoot: '/',
      rootDir: join(scratch.dir(), 'root'),
      podLogsDir: join(scratch.dir(), 'logs'),
      memoryCapacityBytes: 1 << 30,
      nodeStartTime: now - 3_600_000,
      housekeepingIntervalMs: 10_000,
    clock: new FakeClock(now),
      log: recordingLogger().log,
    });
    const summary = await stats.summary();
    const [web] = summary.pods;
    expect(web?.podRef).toEqual({ name: 'web', namespace: 'default', uid });
    expect(web?.cpu).toEqual({ time: '2026-11-26T08:00:00Z', usageCoreNanoSeconds: 3_000_000 });
    expect(web?.memory).toMatchObject({ usageBytes: 4096, workingSetBytes: 3096, rssBytes: 1024 });
    // The container's processes; the sandbox's pause process is not one of the pod's, as kubelet counts.
    expect(web?.process_stats).toEqual({ process_count: 2 });
    // The pause process's network namespace (here this process's).
    const own = parseNetDev(readFileSync(`/proc/${process.pid}/net/dev`, 'utf8')).filter((i) => i.name !== 'lo');
    expect(web?.network?.interfaces?.map((i) => i.name)).toEqual(own.map((i) => i.name));
    expect(summary.node.systemContainers).toEqual([expect.objectContaining({ name: 'pods', cpu: { time: '2026-11-26T08:00:00Z', usageCoreNanoSeconds: 9_000_000 } })]);
  });
});

/** A provider over no pods that counts its CRI calls. */
function countingProvider() {
  const calls = { listContainerStats: 0, imageFsInfo: 0 };
  const stats = new StatsProvider({
    nodeName: 'n1',
    runtime: {
      listContainerStats: () => {
        calls.listContainerStats++;
        return Promise.resolve([]);
      },
      imageFsInfo: () => {
        calls.imageFsInfo++;
        return Promise.resolve({ imageFilesystems: [], containerFilesystems: [] });
      },
    },
    listing: () => ({ sandboxes: [], containers: [] }),
    pods: () => [],
    cgroups: new CgroupUsageReader([]),
    cgroupPath: (name) => name,
    cgroupRoot: '/',
    rootDir: scratch.dir(),
    podLogsDir: scratch.dir(),
    memoryCapacityBytes: 1 << 30,
    nodeStartTime: now - 3_600_000,
    housekeepingIntervalMs: 10_000,
    clock: new FakeClock(now),
    log: recordingLogger().log,
  });
  return { stats, calls };
}

test('scrapes that come while a collection is under way share it', async () => {
  const { stats, calls } = countingProvider();
  const [a, b] = await Promise.all([stats.summary(), stats.summary()]);
  expect(a).toBe(b);
  expect(calls.listContainerStats).toBe(1);
  await stats.summary();
  expect(calls.listContainerStats).toBe(2);
});

test('cpu and memory alone read no filesystem; a summary under way serves them, without its filesystems', async () => {
  const { stats, calls } = countingProvider();
  const alone = await stats.cpuAndMemory();
  expect(calls).toEqual({ listContainerStats: 1, imageFsInfo: 0 });
  expect(Object.keys(alone.node).sort()).toEqual(['nodeName', 'startTime', 'systemContainers']);
  const [full, shared] = await Promise.all([stats.summary(), stats.cpuAndMemory()]);
  expect(calls).toEqual({ listContainerStats: 2, imageFsInfo: 1 });
  expect(full.node.fs).toBeDefined();
  expect(shared.node).toEqual({ nodeName: 'n1', startTime: full.node.startTime, systemContainers: [] });
});
