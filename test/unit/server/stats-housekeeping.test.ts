// The stats housekeeping, as cAdvisor's for kubelet: what a round and a scrape read (the pure plan), and the provider
// run with a fake cgroup reader and a fake clock: scrapes serve the latest samples with their own times, a new sandbox
// is read at the scrape, a gone one is dropped, and cpu rates come from consecutive housekeeping samples.
import type { V1Pod } from '@kubernetes/client-node';
import type { Container, PodSandbox } from '../../../src/cri/types.js';
import type { CgroupUsage } from '../../../src/host/resource-usage.js';
import { housekeepingPlan, statsSandboxes, type PodSample, type RuntimeListing } from '../../../src/server/stats-housekeeping.js';
import { StatsProvider } from '../../../src/server/stats-provider.js';
import { FakeClock } from '../core/fake-clock.js';
import { recordingLogger } from '../prober/fake-log.js';
import { scratchDir } from '../fakes/scratch-dir.js';

const scratch = scratchDir('housekeeping-');
const t0 = Date.UTC(2026, 10, 26, 8, 0, 0);

function sandbox(id: string, uid: string, opts: { createdAt?: number; state?: PodSandbox['state'] } = {}): PodSandbox {
  return {
    id, metadata: { name: `pod-${uid}`, namespace: 'default', uid, attempt: 0 }, state: opts.state ?? 'SANDBOX_READY',
    createdAt: opts.createdAt ?? t0 - 60_000, labels: { 'io.kubernetes.pod.uid': uid }, annotations: {}, runtimeHandler: '',
  } as PodSandbox;
}

function container(id: string, sandboxId: string, state: Container['state'] = 'CONTAINER_RUNNING'): Container {
  return {
    id, podSandboxId: sandboxId, metadata: { name: 'c', attempt: 0 }, image: { image: 'busybox' }, imageRef: 'busybox',
    state, createdAt: t0 - 50_000, labels: {}, annotations: {},
  } as Container;
}

const podOf = (uid: string): V1Pod => ({ metadata: { name: `pod-${uid}`, namespace: 'default', uid }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
const sampleOf = (containerIds: string[]): PodSample => ({ timeMs: t0, cgroups: { children: [] }, containerIds });

describe('statsSandboxes', () => {
  test("one sandbox per pod, its newest ready one, with its running containers", () => {
    const listing: RuntimeListing = {
      sandboxes: [sandbox('old', 'u1', { createdAt: t0 - 9_000 }), sandbox('new', 'u1', { createdAt: t0 - 1_000 }), sandbox('gone', 'u2', { state: 'SANDBOX_NOTREADY' })],
      containers: [container('c1', 'new'), container('c2', 'new', 'CONTAINER_EXITED'), container('c3', 'old')],
    };
    expect(statsSandboxes(listing).map((s) => [s.sandbox.id, s.containers.map((c) => c.id)])).toEqual([['new', ['c1']]]);
  });
});

describe('housekeepingPlan', () => {
  const listed = statsSandboxes({
    sandboxes: [sandbox('s1', 'u1'), sandbox('s2', 'u2'), sandbox('s3', 'u3')],
    containers: [container('c1', 's1'), container('c2', 's2'), container('c2b', 's2')],
  });

  test('a round reads every listed sandbox and drops the samples of those gone', () => {
    const samples = new Map([['s1', sampleOf(['c1'])], ['gone', sampleOf([])]]);
    const plan = housekeepingPlan(listed, samples, true);
    expect(plan.read.map((s) => s.sandbox.id)).toEqual(['s1', 's2', 's3']);
    expect(plan.drop).toEqual(['gone']);
  });

  test('a scrape reads a sandbox never sampled and one with a container its sample did not count, nothing else', () => {
    const samples = new Map([['s1', sampleOf(['c1'])], ['s2', sampleOf(['c2'])], ['gone', sampleOf([])]]);
    const plan = housekeepingPlan(listed, samples, false);
    expect(plan.read.map((s) => s.sandbox.id)).toEqual(['s2', 's3']);
    expect(plan.drop).toEqual(['gone']);
  });
});

/** A pod cgroup reader whose counters the test sets, counting its reads. */
class FakeCgroups {
  readonly cpu = new Map<string, number>();
  reads = 0;

  read(path: string): CgroupUsage | undefined {
    if (path === '/' || path.endsWith('/kubepods')) return { cpuUsageNs: 1 };
    const cpu = this.cpu.get(path);
    if (cpu === undefined) return undefined;
    this.reads++;
    return { cpuUsageNs: cpu, memory: { usageBytes: 4096, workingSetBytes: 2048, rssBytes: 1024, pageFaults: 0, majorPageFaults: 0 } };
  }

  /** Each pod cgroup holds its sandbox's and its container's cgroups, named after their ids (as the fixtures below). */
  children(path: string): string[] {
    const uid = path.slice(path.lastIndexOf('pod') + 3);
    return [`s-${uid}`, `c-${uid}`];
  }

  /** The sandbox's process is this one (a real /proc/<pid>/net/dev); each container has two. */
  pids(path: string): number[] {
    return path.includes('/s-') ? [process.pid] : [101, 102];
  }
}

describe("the provider's housekeeping", () => {
  const cgroupOf = (uid: string) => `/kubepods/besteffort/pod${uid}`;
  let clock: FakeClock;
  let cgroups: FakeCgroups;
  let listing: RuntimeListing;
  let stats: StatsProvider;
  let controller: AbortController;

  const listPods = (...uids: string[]) => {
    listing = { sandboxes: uids.map((u) => sandbox(`s-${u}`, u)), containers: uids.map((u) => container(`c-${u}`, `s-${u}`)) };
  };

  beforeEach(() => {
    clock = new FakeClock(t0);
    cgroups = new FakeCgroups();
    listPods('a');
    cgroups.cpu.set(cgroupOf('a'), 1e9);
    stats = new StatsProvider({
      nodeName: 'n1',
      runtime: { listContainerStats: () => Promise.resolve([]), imageFsInfo: () => Promise.resolve({ imageFilesystems: [], containerFilesystems: [] }) },
      listing: () => listing,
      pods: () => listing.sandboxes.map((s) => podOf(s.metadata.uid)),
      cgroups,
      cgroupPath: (name) => name,
      cgroupRoot: '/',
      rootDir: scratch.dir(),
      podLogsDir: scratch.dir(),
      memoryCapacityBytes: 1 << 30,
      nodeStartTime: t0 - 3_600_000,
      housekeepingIntervalMs: 10_000,
      clock,
      log: recordingLogger().log,
    });
    controller = new AbortController();
    void stats.run(controller.signal);
  });

  afterEach(() => controller.abort());

  const podStats = async (uid: string) => (await stats.summary()).pods.find((p) => p.podRef.uid === uid);

  test("a scrape serves housekeeping's sample, with the sample's time, and reads no pod cgroup", async () => {
    await clock.advance(3_000);
    const reads = cgroups.reads;
    expect(reads).toBe(1);
    cgroups.cpu.set(cgroupOf('a'), 2e9);
    const a = await podStats('a');
    expect(cgroups.reads).toBe(reads);
    expect(a?.cpu).toEqual({ time: '2026-11-26T08:00:00Z', usageCoreNanoSeconds: 1e9 });
    expect(a?.memory).toMatchObject({ time: '2026-11-26T08:00:00Z', workingSetBytes: 2048 });
    expect(a?.network?.time).toBe('2026-11-26T08:00:00Z');
    expect(a?.process_stats).toEqual({ process_count: 2 });
  });

  test('usageNanoCores is the rate between two consecutive housekeeping samples', async () => {
    await clock.advance(1);
    // Half a core over the interval.
    cgroups.cpu.set(cgroupOf('a'), 1e9 + 5e9);
    await clock.advance(10_000);
    expect(cgroups.reads).toBe(2);
    expect((await podStats('a'))?.cpu).toEqual({ time: '2026-11-26T08:00:10Z', usageNanoCores: 5e8, usageCoreNanoSeconds: 6e9 });
  });

  test('a sandbox first seen at a scrape is read then, a gone one is dropped at once', async () => {
    await clock.advance(2_000);
    listPods('b');
    cgroups.cpu.set(cgroupOf('b'), 7e9);
    const summary = await stats.summary();
    expect(summary.pods.map((p) => p.podRef.uid)).toEqual(['b']);
    expect(summary.pods[0]?.cpu).toEqual({ time: '2026-11-26T08:00:02Z', usageCoreNanoSeconds: 7e9 });
    // Pod a's sandbox came back (the same id): its old sample was dropped, so its first sample again has no rate.
    listPods('a', 'b');
    cgroups.cpu.set(cgroupOf('a'), 9e9);
    await clock.advance(1_000);
    expect((await podStats('a'))?.cpu).toEqual({ time: '2026-11-26T08:00:03Z', usageCoreNanoSeconds: 9e9 });
  });

  test('housekeeping stops when the signal aborts', async () => {
    await clock.advance(1);
    controller.abort();
    await clock.advance(30_000);
    expect(cgroups.reads).toBe(1);
  });
});
