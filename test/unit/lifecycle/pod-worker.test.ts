// One pod's worker on the in-memory runtime and the fake clock: the one-way lifecycle (syncing -> terminating ->
// terminated), updates merged during a sync, termination cancelling a sync, the grace period that only decreases,
// retries and back-off on the clock, and the statuses it publishes.
import type { V1Pod } from '@kubernetes/client-node';
import { PodWorker } from '../../../src/lifecycle/pod-worker.js';
import { PodStartupLatencyTracker } from '../../../src/execution/pod-startup-latency.js';
import { lifecycleFakes, testImage, type LifecycleFakes } from '../fakes/lifecycle-deps.js';

const uid = 'uid-1';
const imageV2 = 'localhost/nodelet/busybox:v2';
const imageV3 = 'localhost/nodelet/busybox:v3';

function basePod(image = testImage): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid },
    spec: { restartPolicy: 'Always', terminationGracePeriodSeconds: 30, containers: [{ name: 'app', image }] },
  };
}

function setup() {
  const f = lifecycleFakes();
  f.runtime.addImage(imageV2);
  f.runtime.addImage(imageV3);
  const pod = basePod();
  const worker = new PodWorker(f.deps, pod, { uid, name: 'web', namespace: 'default', gracePeriodSeconds: 30 });
  /** Lets every sync under way finish (the fakes answer without timers), firing no timer. */
  const idle = () => f.clock.advance(0);
  const containers = () => f.runtime.peek().containers.map((c) => `${c.name}#${c.attempt} ${c.state}`);
  const phases = () => f.statuses.map((s) => `${s.status.phase}${s.final ? ' (final)' : ''}`);
  return { f, pod, worker, idle, containers, phases };
}

async function running(t: ReturnType<typeof setup>): Promise<void> {
  t.worker.wake();
  await t.idle();
  expect(t.containers()).toEqual(['app#0 CONTAINER_RUNNING']);
  t.f.runtime.clearCalls();
}

const imagesAsked = (f: LifecycleFakes) => f.runtime.callsOf('imageStatus').map((c) => c.args.image);

describe('syncing', () => {
  test('a new worker syncs its pod into the runtime and publishes Pending, then Running', async () => {
    const t = setup();
    expect(t.worker.state).toBe('syncing');
    await running(t);
    expect(t.phases()).toEqual(['Pending', 'Running']);
    expect(t.worker.apiPod()?.status?.containerStatuses?.map((c) => [c.name, Object.keys(c.state ?? {})])).toEqual([['app', ['running']]]);
    expect(t.f.prober.updates).toEqual([uid]);
  });

  test('updates that arrive during a sync are merged: one more sync, with the latest spec', async () => {
    const t = setup();
    const held = t.f.runtime.holdNext('runPodSandbox');
    t.worker.wake();
    await held.reached;
    t.worker.update(basePod(imageV2));
    t.worker.update(basePod(imageV3));
    held.release();
    await t.idle();
    expect(imagesAsked(t.f)).toEqual([testImage, imageV3]);
    expect(t.f.runtime.peek().containers.map((c) => [c.attempt, c.config.image.image, c.state])).toEqual([
      [0, testImage, 'CONTAINER_EXITED'],
      [1, imageV3, 'CONTAINER_RUNNING'],
    ]);
    expect(t.worker.apiPod()?.spec?.containers[0]?.image).toBe(imageV3);
  });

  test('an update that changes only the status or resourceVersion does not wake the worker', async () => {
    const t = setup();
    await running(t);
    t.worker.update({ ...basePod(), metadata: { ...basePod().metadata, resourceVersion: '7' }, status: { phase: 'Running' } });
    await t.idle();
    expect(t.f.runtime.calls).toEqual([]);
  });

  test("activeDeadlineSeconds, updated on a running pod: at the deadline from its start it fails with DeadlineExceeded and starts nothing more", async () => {
    const t = setup();
    await running(t);
    const startedAt = t.f.clock.now();
    t.worker.update({ ...basePod(), spec: { ...basePod().spec!, activeDeadlineSeconds: 5 } });
    await t.idle();
    await t.f.clock.advance(4_000);
    expect(t.worker.apiPod()?.status?.phase).toBe('Running');
    await t.f.clock.advance(1_000);
    expect(t.f.clock.now() - startedAt).toBe(5_000);
    const status = t.worker.apiPod()?.status;
    expect([status?.phase, status?.reason, status?.message]).toEqual(['Failed', 'DeadlineExceeded', 'Pod was active on the node longer than the specified deadline']);
    expect(t.f.events.reasons()).toContain('DeadlineExceeded');
    // The worker stops the pod itself (a static pod has no API server status to stop it); the final status keeps the reason.
    await t.idle();
    expect(t.f.runtime.callsOf('stopContainer')).toHaveLength(1);
    expect(t.f.runtime.callsOf('stopPodSandbox')).toHaveLength(1);
    expect(t.f.runtime.callsOf('removePodSandbox')).toHaveLength(0);
    const final = t.f.statuses.at(-1)!;
    expect([final.final, final.status.phase, final.status.reason]).toEqual([true, 'Failed', 'DeadlineExceeded']);
  });

  test('a failed step is retried after errorRetryMs on the clock', async () => {
    const t = setup();
    t.f.runtime.failNext('runPodSandbox', 'Unknown');
    t.worker.wake();
    await t.idle();
    expect(t.containers()).toEqual([]);
    await t.f.clock.advance(999);
    expect(t.f.runtime.callsOf('runPodSandbox')).toHaveLength(1);
    await t.f.clock.advance(1);
    expect(t.f.runtime.callsOf('runPodSandbox')).toHaveLength(2);
    expect(t.containers()).toEqual(['app#0 CONTAINER_RUNNING']);
  });

  test('a crashed container waits out its back-off (terminated in the status, as kubelet 1.37), then restarts when the clock gets there', async () => {
    const t = setup();
    await running(t);
    t.f.runtime.exitContainer(t.f.runtime.peek().containers[0]!.id, 1);
    t.worker.wake(); // as the relist would
    await t.idle();
    expect(t.containers()).toEqual(['app#0 CONTAINER_EXITED', 'app#1 CONTAINER_RUNNING']);
    t.f.runtime.exitContainer(t.f.runtime.peek().containers[1]!.id, 1);
    t.worker.wake();
    await t.idle();
    // The older dead instance is collected: one dead container is kept per name.
    expect(t.containers()).toEqual(['app#1 CONTAINER_EXITED']);
    // The sync that finds the back-off reports the exit; CrashLoopBackOff would show from a later sync in it.
    expect(t.worker.apiPod()?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(1);
    expect(t.f.events.reasons()).toContain('BackOff');
    await t.f.clock.advance(9_999);
    expect(t.f.runtime.callsOf('createContainer')).toHaveLength(1);
    await t.f.clock.advance(1);
    expect(t.containers()).toEqual(['app#1 CONTAINER_EXITED', 'app#2 CONTAINER_RUNNING']);
  });
});

describe('a back-off longer than the resync', () => {
  test('shows CrashLoopBackOff from the resync inside it, as kubelet 1.37 (requeued at min(back-off end, resync))', async () => {
    const t = setup();
    await running(t);
    // The first crash restarts at once; the next three wait out back-offs of 10 s, 20 s and 40 s, each shorter than
    // the resync of 60 s, so no sync falls inside them: the status shows the exit throughout.
    for (let i = 0; i < 4; i++) {
      const live = t.f.runtime.peek().containers.find((c) => c.state === 'CONTAINER_RUNNING')!;
      t.f.runtime.exitContainer(live.id, 1);
      t.worker.wake();
      await t.idle();
      if (i === 0) continue;
      expect(t.worker.apiPod()?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(1);
      await t.f.clock.advance(10_000 * 2 ** (i - 1));
    }
    const live = t.f.runtime.peek().containers.find((c) => c.state === 'CONTAINER_RUNNING')!;
    t.f.runtime.exitContainer(live.id, 1);
    t.worker.wake();
    await t.idle();
    // The fifth crash: an 80 s back-off. Terminated first; the resync 60 s in shows CrashLoopBackOff.
    const status = () => t.worker.apiPod()?.status?.containerStatuses?.[0];
    expect(status()?.state?.terminated?.exitCode).toBe(1);
    await t.f.clock.advance(60_000);
    expect(status()?.state?.waiting).toMatchObject({ reason: 'CrashLoopBackOff', message: expect.stringMatching(/^back-off 80s restarting failed container=app pod=/) });
    expect(status()?.lastState?.terminated?.exitCode).toBe(1);
    await t.f.clock.advance(20_000);
    expect(status()?.state?.running).toBeDefined();
  });
});

describe('terminating', () => {
  test('termination stops and removes the pod, publishes a final status, and the worker ends terminated', async () => {
    const t = setup();
    await running(t);
    t.worker.terminate();
    expect(t.worker.state).toBe('terminating');
    await t.idle();
    await t.worker.terminated;
    expect(t.worker.state).toBe('terminated');
    expect(t.f.runtime.peek()).toEqual({ sandboxes: [], containers: [] });
    expect(t.f.runtime.callsOf('stopContainer').map((c) => c.args.timeoutSeconds)).toEqual([30]);
    expect(t.f.prober.removed).toEqual([uid]);
    expect(t.f.volumes.tearDowns).toEqual([uid]);
    const final = t.f.statuses.filter((s) => s.final);
    expect(final.map((s) => s.status.containerStatuses?.[0]?.state?.terminated?.exitCode)).toEqual([143]);
  });

  test('termination cancels a running sync: its held call is cancelled and the sync does not restart the probes', async () => {
    const t = setup();
    const held = t.f.runtime.holdNext('createContainer');
    t.worker.wake();
    await held.reached;
    t.worker.terminate();
    await t.idle();
    await t.worker.terminated;
    expect(t.f.runtime.callsOf('startContainer')).toEqual([]);
    expect(t.f.runtime.peek()).toEqual({ sandboxes: [], containers: [] });
    expect(t.f.prober.updates).toEqual([]);
    expect(t.worker.state).toBe('terminated');
  });

  test('a sync that outlives its cancellation does not hand the pod back to the prober termination removed it from', async () => {
    const t = setup();
    await running(t);
    let release!: () => void;
    t.f.volumes.hold = new Promise((r) => (release = r));
    t.worker.wake(); // nothing to do but refresh the volumes, which hangs
    await t.idle();
    t.worker.terminate();
    expect(t.f.prober.removed).toEqual([uid]);
    release();
    await t.idle();
    await t.worker.terminated;
    expect(t.f.prober.updates).toEqual([uid]); // the first sync's only
  });

  test('a shorter grace period restarts the stop under way with it; a longer one changes nothing', async () => {
    const t = setup();
    await running(t);
    const held = t.f.runtime.holdNext('stopContainer');
    t.worker.terminate();
    await held.reached;
    t.worker.terminate(5);
    const second = t.f.runtime.holdNext('stopContainer');
    await second.reached;
    t.worker.terminate(60);
    t.worker.terminate();
    second.release();
    await t.idle();
    await t.worker.terminated;
    expect(t.f.runtime.callsOf('stopContainer').map((c) => c.args.timeoutSeconds)).toEqual([30, 5]);
    expect(t.f.runtime.peek().sandboxes).toEqual([]);
  });

  test('the grace period given when termination starts replaces the pod\'s', async () => {
    const t = setup();
    await running(t);
    t.worker.terminate(3);
    await t.idle();
    expect(t.f.runtime.callsOf('stopContainer').map((c) => c.args.timeoutSeconds)).toEqual([3]);
  });

  test('a failed termination is retried after errorRetryMs on the clock until the pod is gone', async () => {
    const t = setup();
    await running(t);
    t.f.runtime.failNext('stopContainer', 'Unknown');
    t.worker.terminate();
    await t.idle();
    // As kubelet, the sandbox is stopped even so (which kills the container), but nothing is removed.
    expect(t.f.runtime.methods().filter((m) => !m.startsWith('list'))).toEqual(['stopContainer', 'stopPodSandbox']);
    expect(t.f.events.reasons()).toContain('FailedKillPod');
    expect(t.worker.state).toBe('terminating');
    await t.f.clock.advance(999);
    expect(t.worker.state).toBe('terminating');
    expect(t.f.runtime.peek().sandboxes).toHaveLength(1);
    await t.f.clock.advance(1);
    expect(t.worker.state).toBe('terminated');
    expect(t.f.runtime.peek()).toEqual({ sandboxes: [], containers: [] });
  });

  test('a terminated worker ignores later updates, terminations and wakes', async () => {
    const t = setup();
    await running(t);
    t.worker.terminate();
    await t.idle();
    await t.worker.terminated;
    t.f.runtime.clearCalls();
    const published = t.f.statuses.length;
    t.worker.update(basePod(imageV2));
    t.worker.terminate(1);
    t.worker.wake();
    await t.f.clock.advance(120_000);
    expect(t.f.runtime.calls).toEqual([]);
    expect(t.f.statuses).toHaveLength(published);
    expect(t.worker.state).toBe('terminated');
    expect(t.worker.apiPod()?.spec?.containers[0]?.image).toBe(testImage);
  });

  test('a worker for a pod known only from the runtime starts terminating and removes it with its grace period', async () => {
    const t = setup();
    await running(t);
    const orphan = new PodWorker(t.f.deps, undefined, { uid, name: 'web', namespace: 'default', gracePeriodSeconds: 7 });
    expect(orphan.state).toBe('terminating');
    expect(orphan.apiPod()).toBeUndefined();
    orphan.wake();
    await t.idle();
    await orphan.terminated;
    expect(t.f.runtime.callsOf('stopContainer').map((c) => c.args.timeoutSeconds)).toEqual([7]);
    expect(t.f.runtime.peek()).toEqual({ sandboxes: [], containers: [] });
  });
});

describe('metrics', () => {
  /** The metrics the worker and its sync steps record, as calls. */
  function recording() {
    const calls: string[] = [];
    const record = (name: string) => (...args: unknown[]) => void calls.push(`${name} ${args.map(String).join(' ')}`.trim());
    const metrics = {
      runtimeOperation: record('runtimeOperation'), relist: record('relist'), runtimeCounts: record('runtimeCounts'),
      podWorkerSync: record('podWorkerSync'), podStarted: record('podStarted'), podStartSli: record('podStartSli'),
      sandboxStarted: record('sandboxStarted'), containerStarted: record('containerStarted'), containerStartFailed: record('containerStartFailed'),
      probeResult: record('probeResult'), probeWorkerStopped: record('probeWorkerStopped'),
    };
    return { calls, metrics };
  }

  test("a new pod: kubelet's started counters, the create sync then plain syncs, its start and startup SLI once", async () => {
    const f = lifecycleFakes();
    const { calls, metrics } = recording();
    const startupLatency = new PodStartupLatencyTracker();
    const created = new Date(f.clock.now() - 3_000);
    const pod: V1Pod = { ...basePod(), metadata: { ...basePod().metadata, creationTimestamp: created } };
    const worker = new PodWorker({ ...f.deps, metrics, startupLatency }, pod, { uid, name: 'web', namespace: 'default', gracePeriodSeconds: 30 });
    worker.wake();
    await f.clock.advance(0);
    expect(calls).toEqual(['sandboxStarted false', 'containerStarted container', 'podStarted 0', 'podStartSli 3 true', 'podWorkerSync create 0']);
    calls.length = 0;
    worker.wake();
    await f.clock.advance(0);
    expect(calls).toEqual(['podWorkerSync sync 0']);
    calls.length = 0;
    worker.terminate();
    await f.clock.advance(0);
    expect(calls).toEqual(['podWorkerSync kill 0']);
  });

  test('a pod already running when its worker first sees it (adopted) counts no start', async () => {
    const f = lifecycleFakes();
    const first = new PodWorker(f.deps, basePod(), { uid, name: 'web', namespace: 'default', gracePeriodSeconds: 30 });
    first.wake();
    await f.clock.advance(0);
    first.stop();
    const { calls, metrics } = recording();
    const adopted = new PodWorker({ ...f.deps, metrics, startupLatency: new PodStartupLatencyTracker() }, basePod(), { uid, name: 'web', namespace: 'default', gracePeriodSeconds: 30 });
    adopted.wake();
    await f.clock.advance(0);
    expect(calls).toEqual(['podWorkerSync create 0']);
  });

  test('a failed container start is counted with its gRPC code', async () => {
    const f = lifecycleFakes();
    const { calls, metrics } = recording();
    f.runtime.failNext('createContainer', 'Unknown');
    const worker = new PodWorker({ ...f.deps, metrics }, basePod(), { uid, name: 'web', namespace: 'default', gracePeriodSeconds: 30 });
    worker.wake();
    await f.clock.advance(0);
    expect(calls.filter((c) => c.startsWith('container'))).toEqual(['containerStarted container', 'containerStartFailed container Unknown']);
  });
});
