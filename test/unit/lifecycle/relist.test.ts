// The relist (PLEG) on the in-memory runtime: which pods two successive observations report as changed, what a
// relist error does, and the loop on the injected clock.
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { PodSandboxConfig } from '../../../src/cri/types.js';
import { computePodActions } from '../../../src/decisions/compute-actions.js';
import { crashBackoffKey, executePodActions } from '../../../src/execution/sync-pod.js';
import { podUidLabel } from '../../../src/core/labels.js';
import { Relister, runtimeCounts, type RelistHandler } from '../../../src/lifecycle/relist.js';
import type { NodeRuntimeSnapshot } from '../../../src/lifecycle/runtime-observer.js';
import { lifecycleFakes, testImage, type LifecycleFakes } from '../fakes/lifecycle-deps.js';
import { recordingLogger } from '../prober/fake-log.js';

const log = pino({ level: 'silent' });

const pod = (name: string): V1Pod => ({
  metadata: { name, namespace: 'default', uid: `uid-${name}` },
  spec: { restartPolicy: 'Always', containers: [{ name: 'app', image: testImage }] },
});

/** One sync of the pod as its worker would run it: observe, decide, execute. */
async function sync(f: LifecycleFakes, p: V1Pod): Promise<void> {
  const state = await f.observer.observePod(p.metadata!.uid!);
  const actions = computePodActions(p, state, {
    now: f.clock.now(),
    backoffPolicy: f.crashBackoff.policy,
    crashBackoff: (name) => f.crashBackoff.get(crashBackoffKey(p, name)),
  });
  await executePodActions(f.deps, p, actions, state, log);
}

class RecordedHandler implements RelistHandler {
  readonly relists: string[][] = [];
  recovered = 0;
  onRelist(changed: Set<string>, _snapshot: NodeRuntimeSnapshot): void {
    this.relists.push([...changed].sort());
  }
  onRuntimeRecovered(): void {
    this.recovered++;
  }
}

async function setup() {
  const f = lifecycleFakes();
  const handler = new RecordedHandler();
  const { log: recLog, records } = recordingLogger();
  const relister = new Relister(f.observer, 1_000, handler, recLog, f.clock);
  await sync(f, pod('a'));
  await sync(f, pod('b'));
  const containerOf = (name: string) => [...f.runtime.peek().containers].reverse().find((c) => c.config.labels[podUidLabel] === `uid-${name}`)!.id;
  const sandboxOf = (name: string) => [...f.runtime.peek().sandboxes].reverse().find((s) => s.metadata.uid === `uid-${name}`)!.id;
  return { f, handler, relister, records, containerOf, sandboxOf };
}

type Setup = Awaited<ReturnType<typeof setup>>;

interface Case {
  name: string;
  /** Changes the runtime between the first relist and the second. */
  change: (t: Setup) => void | Promise<void>;
  changed: string[];
}

const cases: Case[] = [
  { name: 'nothing changed: no pod is reported (the handler still hears the relist)', change: () => {}, changed: [] },
  { name: 'a container died', change: (t) => t.f.runtime.exitContainer(t.containerOf('a'), 1), changed: ['uid-a'] },
  {
    name: 'a container was started again (new id)',
    change: async (t) => {
      t.f.runtime.exitContainer(t.containerOf('b'), 0);
      await sync(t.f, pod('b'));
    },
    changed: ['uid-b'],
  },
  {
    name: 'a container was created, its start not yet answered',
    change: async (t) => {
      t.f.runtime.exitContainer(t.containerOf('a'), 2);
      await t.relister.relist(); // its death is one change ...
      const held = t.f.runtime.holdNext('startContainer');
      void sync(t.f, pod('a'));
      await held.reached; // ... the new instance, created, another
    },
    changed: ['uid-a'],
  },
  {
    name: 'an exited container was removed',
    change: async (t) => {
      const id = t.containerOf('a');
      t.f.runtime.exitContainer(id, 0);
      await t.relister.relist(); // its death is one change ...
      await t.f.runtime.removeContainer(id); // ... its removal another
    },
    changed: ['uid-a'],
  },
  { name: 'the sandbox died (sandbox changed)', change: (t) => t.f.runtime.exitSandbox(t.sandboxOf('b')), changed: ['uid-b'] },
  { name: 'the pod vanished from the runtime', change: (t) => t.f.runtime.removePodSandbox(t.sandboxOf('a')), changed: ['uid-a'] },
  { name: 'a new pod appeared', change: (t) => sync(t.f, pod('c')), changed: ['uid-c'] },
  {
    name: 'both pods changed at once',
    change: (t) => {
      t.f.runtime.exitContainer(t.containerOf('a'), 1);
      t.f.runtime.exitSandbox(t.sandboxOf('b'));
    },
    changed: ['uid-a', 'uid-b'],
  },
  {
    name: 'objects without a pod UID label are not pods',
    change: async (t) => {
      await t.f.runtime.runPodSandbox({ metadata: { name: 'x', namespace: 'y', uid: 'z', attempt: 0 }, labels: {}, annotations: {} } as unknown as PodSandboxConfig);
    },
    changed: [],
  },
];

describe('relist: the pods two successive observations differ in', () => {
  test.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const t = await setup();
    await t.relister.relist();
    expect(t.handler.relists).toEqual([['uid-a', 'uid-b']]);
    await c.change(t);
    t.handler.relists.length = 0;
    await t.relister.relist();
    expect(t.handler.relists).toEqual([c.changed]);
    expect(t.relister.runtimeHealthy).toBe(true);
  });
});

describe('relist errors', () => {
  test('an unanswered relist reports nothing, logs once, and is unhealthy; recovery reports the changes since, then recovered', async () => {
    const t = await setup();
    expect(t.relister.runtimeHealthy).toBe(false); // not yet relisted
    await t.relister.relist();
    expect(t.relister.runtimeHealthy).toBe(true);
    t.handler.relists.length = 0;

    t.f.runtime.setDown(true);
    t.f.runtime.exitContainer(t.containerOf('a'), 1);
    await t.relister.relist();
    await t.relister.relist();
    expect(t.handler.relists).toEqual([]);
    expect(t.relister.runtimeHealthy).toBe(false);
    expect(t.records.filter((r) => r.level === 50).map((r) => r.msg)).toEqual(['Container runtime is not responding; will keep retrying']);

    t.f.runtime.setDown(false);
    await t.relister.relist();
    expect(t.handler.relists).toEqual([['uid-a']]);
    expect(t.handler.recovered).toBe(1);
    expect(t.relister.runtimeHealthy).toBe(true);
    await t.relister.relist();
    expect(t.handler.recovered).toBe(1);
  });

  test('a first relist that fails, then one answered: every pod is reported, and the runtime recovered', async () => {
    const t = await setup();
    t.f.runtime.failNext('listContainers', 'Unavailable');
    await t.relister.relist();
    expect(t.relister.runtimeHealthy).toBe(false);
    await t.relister.relist();
    expect(t.handler.relists).toEqual([['uid-a', 'uid-b']]);
    expect(t.handler.recovered).toBe(1);
  });

  test('a relist cancelled by its signal neither reports nor marks the runtime unhealthy', async () => {
    const t = await setup();
    await t.relister.relist();
    t.handler.relists.length = 0;
    const controller = new AbortController();
    const held = t.f.runtime.holdNext('listPodSandbox');
    const relist = t.relister.relist(controller.signal);
    await held.reached;
    controller.abort();
    await relist;
    expect(t.handler.relists).toEqual([]);
    expect(t.relister.runtimeHealthy).toBe(true);
    expect(t.records.filter((r) => r.level === 50)).toEqual([]);
  });
});

test('run relists every period of the injected clock until its signal aborts', async () => {
  const t = await setup();
  const controller = new AbortController();
  const running = t.relister.run(controller.signal);
  await t.f.clock.advance(0);
  expect(t.handler.relists).toHaveLength(1);
  await t.f.clock.advance(999);
  expect(t.handler.relists).toHaveLength(1);
  await t.f.clock.advance(1);
  expect(t.handler.relists).toHaveLength(2);
  await t.f.clock.advance(3_000);
  expect(t.handler.relists).toHaveLength(5);
  controller.abort();
  await running;
  await t.f.clock.advance(5_000);
  expect(t.handler.relists).toHaveLength(5);
});

describe('runtimeCounts', () => {
  test("pods with a ready sandbox, and the pods' containers by state (not their sandboxes), as kubelet counts", () => {
    const uid = (u: string) => ({ [podUidLabel]: u });
    const sandbox = (id: string, u: string, state: 'SANDBOX_READY' | 'SANDBOX_NOTREADY') =>
      ({ id, metadata: { name: id, uid: u, namespace: 'ns', attempt: 0 }, state, createdAt: 0, labels: uid(u), annotations: {}, runtimeHandler: '' });
    const container = (id: string, u: string | undefined, state: 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_CREATED') =>
      ({ id, podSandboxId: '', metadata: { name: id, attempt: 0 }, image: { image: '', annotations: {} }, imageRef: '', state, createdAt: 0, labels: u ? uid(u) : {}, annotations: {} });
    const counts = runtimeCounts({
      sandboxes: [sandbox('s1', 'a', 'SANDBOX_READY'), sandbox('s0', 'a', 'SANDBOX_NOTREADY'), sandbox('s2', 'b', 'SANDBOX_NOTREADY'), sandbox('s3', 'c', 'SANDBOX_READY')],
      containers: [container('c1', 'a', 'CONTAINER_RUNNING'), container('c2', 'a', 'CONTAINER_EXITED'), container('c3', 'c', 'CONTAINER_CREATED'), container('x', undefined, 'CONTAINER_RUNNING')],
    });
    expect(counts).toEqual({ runningPods: 2, containers: { created: 1, running: 1, exited: 1, unknown: 0 } });
  });
});
