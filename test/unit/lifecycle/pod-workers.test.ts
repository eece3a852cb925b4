// The pod workers on the in-memory runtime and fake clock: one worker per desired pod UID, termination of pods no
// longer desired or deleted, the pods a relist wakes, orphans from the runtime, workers removed when done.
import type { V1Pod } from '@kubernetes/client-node';
import { PodWorkers } from '../../../src/lifecycle/pod-workers.js';
import { podNameLabel } from '../../../src/core/labels.js';
import { lifecycleFakes, testImage } from '../fakes/lifecycle-deps.js';

const pod = (name: string, grace = 30): V1Pod => ({
  metadata: { name, namespace: 'default', uid: `uid-${name}` },
  spec: { restartPolicy: 'Always', terminationGracePeriodSeconds: grace, containers: [{ name: 'app', image: testImage }] },
});

function setup() {
  const f = lifecycleFakes();
  const changes: string[] = [];
  const workers = new PodWorkers({ ...f.deps, onPodChange: (uid, p) => changes.push(`${uid} ${p ? 'set' : 'gone'}`) });
  const idle = () => f.clock.advance(0);
  /** Running containers by pod name. */
  const running = () =>
    f.runtime
      .peek()
      .containers.filter((c) => c.state === 'CONTAINER_RUNNING')
      .map((c) => c.config.labels[podNameLabel])
      .sort();
  const relist = () => f.observer.snapshot();
  return { f, workers, changes, idle, running, relist };
}

test('each desired pod gets a worker that runs it; pods() shows them with their status', async () => {
  const t = setup();
  t.workers.setDesiredPods([pod('a'), pod('b')]);
  await t.idle();
  expect(t.running()).toEqual(['a', 'b']);
  expect(t.workers.pods().map((p) => [p.metadata?.name, p.status?.phase])).toEqual([['a', 'Running'], ['b', 'Running']]);
  expect(t.changes.filter((c) => c.endsWith('gone'))).toEqual([]);
});

test('a pod whose worker cannot be made costs only itself: the others get theirs', async () => {
  const t = setup();
  const bad: V1Pod = { metadata: { name: 'bad', namespace: 'default', uid: 'uid-bad' } };
  Object.defineProperty(bad, 'spec', { get: () => { throw new Error('unreadable spec'); } });
  t.workers.setDesiredPods([bad, pod('a')]);
  await t.idle();
  expect(t.running()).toEqual(['a']);
});

test('a pod no longer desired is terminated with its grace period and its worker removed when done', async () => {
  const t = setup();
  t.workers.setDesiredPods([pod('a', 12), pod('b')]);
  await t.idle();
  t.f.runtime.clearCalls();
  t.workers.setDesiredPods([pod('b')]);
  await t.idle();
  await t.workers.settled();
  expect(t.running()).toEqual(['b']);
  expect(t.f.runtime.callsOf('stopContainer').map((c) => c.args.timeoutSeconds)).toEqual([12]);
  expect(t.workers.pods().map((p) => p.metadata?.name)).toEqual(['b']);
  expect(t.changes).toContain('uid-a gone');
  expect(t.workers.isKnown('uid-a')).toBe(false);
});

test('a deletion terminates with the grace period given, kept when the SET without the pod follows; a pod without a worker is ignored', async () => {
  const t = setup();
  t.workers.setDesiredPods([pod('a')]);
  await t.idle();
  t.f.runtime.clearCalls();
  t.workers.terminatePod('uid-a', 4);
  t.workers.terminatePod('uid-nobody', 4);
  t.workers.setDesiredPods([]); // as the pod config follows a deletion
  await t.idle();
  expect(t.f.runtime.callsOf('stopContainer').map((c) => c.args.timeoutSeconds)).toEqual([4]);
  expect(t.running()).toEqual([]);
});

test('a pod desired again while it terminates gets a new worker once the old one is done', async () => {
  const t = setup();
  t.workers.setDesiredPods([pod('a')]);
  await t.idle();
  const held = t.f.runtime.holdNext('stopContainer');
  t.workers.terminatePod('uid-a', 30);
  await held.reached;
  t.workers.setDesiredPods([pod('a')]); // the terminating worker keeps going; no second worker meanwhile
  expect(t.workers.pods()).toHaveLength(1);
  held.release();
  await t.idle();
  expect(t.running()).toEqual(['a']);
  expect(t.f.runtime.peek().sandboxes).toHaveLength(1);
  expect(t.changes.filter((c) => c.startsWith('uid-a'))).toEqual(expect.arrayContaining(['uid-a gone', 'uid-a set']));
});

test('a relist wakes the workers of the pods it names, and only them', async () => {
  const t = setup();
  t.workers.setDesiredPods([pod('a'), pod('b')]);
  await t.idle();
  for (const c of t.f.runtime.peek().containers) t.f.runtime.exitContainer(c.id, 0);
  t.f.runtime.clearCalls();
  t.workers.handleRelist(['uid-b'], await t.relist());
  await t.idle();
  expect(t.running()).toEqual(['b']);
  expect(t.f.runtime.callsOf('createContainer')).toHaveLength(1);
});

test('runtime pods nobody wants are terminated once the sources have spoken, with the grace period their containers kept', async () => {
  const t = setup();
  // An earlier agent's pod: left running in the runtime when it stopped.
  const earlier = new PodWorkers(t.f.deps);
  earlier.setDesiredPods([pod('old', 9)]);
  await t.idle();
  earlier.stop();
  t.f.runtime.clearCalls();

  t.workers.setDesiredPods([], false);
  t.workers.handleRelist([], await t.relist());
  await t.idle();
  expect(t.running()).toEqual(['old']); // not every source has spoken: it may still be wanted
  expect(t.workers.isKnown('uid-old')).toBe(true);
  expect(t.f.runtime.callsOf('stopContainer')).toEqual([]);

  t.workers.setDesiredPods([], true);
  t.workers.handleRelist([], await t.relist());
  await t.idle();
  await t.workers.settled();
  expect(t.f.runtime.callsOf('stopContainer').map((c) => c.args.timeoutSeconds)).toEqual([9]);
  expect(t.f.runtime.peek()).toEqual({ sandboxes: [], containers: [] });
  expect(t.workers.pods()).toEqual([]);
  expect(t.workers.isKnown('uid-old')).toBe(false);
});

test('stop leaves the pods running and the workers quiet', async () => {
  const t = setup();
  t.workers.setDesiredPods([pod('a')]);
  await t.idle();
  t.workers.stop();
  t.f.runtime.clearCalls();
  await t.f.clock.advance(300_000);
  expect(t.f.runtime.calls).toEqual([]);
  expect(t.running()).toEqual(['a']);
});

test("while the network is not ready only host-network pods start (kubelet's NetworkNotReady); the rest start once it is", async () => {
  const f = lifecycleFakes();
  let networkError: string | undefined = 'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized';
  const workers = new PodWorkers({ ...f.deps, networkNotReady: () => networkError });
  const hostNet: V1Pod = { ...pod('cni-daemon'), spec: { ...pod('cni-daemon').spec!, hostNetwork: true } };
  workers.setDesiredPods([hostNet, pod('app')]);
  await f.clock.advance(0);
  const running = () => f.runtime.peek().containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => c.config.labels[podNameLabel]);
  expect(running()).toEqual(['cni-daemon']);
  expect(f.runtime.peek().sandboxes).toHaveLength(1);
  expect(f.events.events.filter((e) => e.reason === 'NetworkNotReady')).toEqual([
    { type: 'Warning', reason: 'NetworkNotReady', message: `network is not ready: ${networkError}` },
  ]);
  const app = workers.pods().find((p) => p.metadata?.name === 'app')!;
  expect(app.status?.phase).toBe('Pending');
  expect(app.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('ContainerCreating');
  networkError = undefined;
  workers.wakeAll();
  await f.clock.advance(0);
  expect(running().sort()).toEqual(['app', 'cni-daemon']);
});

test("a pod that ended and is not deleted is stopped with its content kept (kubectl logs reads it); deleted, it is removed", async () => {
  const t = setup();
  const job: V1Pod = { ...pod('job'), spec: { ...pod('job').spec!, restartPolicy: 'Never' } };
  t.workers.setDesiredPods([job]);
  await t.idle();
  for (const c of t.f.runtime.peek().containers) t.f.runtime.exitContainer(c.id, 0);
  t.workers.handleRelist(['uid-job'], await t.relist());
  await t.idle();
  // The API server now has it Succeeded: no longer desired, one of the ended pods.
  const ended: V1Pod = { ...job, status: { phase: 'Succeeded' } };
  t.f.runtime.clearCalls();
  t.workers.setDesiredPods([], true, [ended]);
  await t.idle();
  await t.workers.settled();
  expect(t.f.runtime.callsOf('removePodSandbox')).toEqual([]);
  expect(t.f.runtime.callsOf('removeContainer')).toEqual([]);
  expect(t.f.runtime.peek().sandboxes.map((s) => s.state)).toEqual(['SANDBOX_NOTREADY']);
  expect(t.f.runtime.peek().containers.map((c) => c.state)).toEqual(['CONTAINER_EXITED']);
  expect(t.workers.pods().map((p) => [p.metadata?.name, p.status?.phase])).toEqual([['job', 'Succeeded']]);
  expect(t.changes.at(-1)).toBe('uid-job set');
  expect(t.workers.isKnown('uid-job')).toBe(true);
  expect(t.workers.hasWorker('uid-job')).toBe(false);

  // Its stopped objects are not an orphan while it is kept.
  const snapshot = await t.relist();
  t.f.runtime.clearCalls();
  t.workers.handleRelist([], snapshot);
  await t.idle();
  expect(t.f.runtime.calls).toEqual([]);

  // Deleted in the API server: gone from the ended pods, its objects are removed by the next relist.
  t.workers.setDesiredPods([], true, []);
  expect(t.workers.isKnown('uid-job')).toBe(false);
  expect(t.changes.at(-1)).toBe('uid-job gone');
  t.workers.handleRelist([], await t.relist());
  await t.idle();
  await t.workers.settled();
  expect(t.f.runtime.peek()).toEqual({ sandboxes: [], containers: [] });
  expect(t.workers.pods()).toEqual([]);
});

test('an ended pod found still running after an agent restart is stopped, its content kept', async () => {
  const t = setup();
  const earlier = new PodWorkers(t.f.deps);
  earlier.setDesiredPods([pod('job')]);
  await t.idle();
  earlier.stop();
  t.f.runtime.clearCalls();
  t.workers.setDesiredPods([], true, [{ ...pod('job'), status: { phase: 'Failed' } }]);
  t.workers.handleRelist([], await t.relist());
  await t.idle();
  await t.workers.settled();
  expect(t.running()).toEqual([]);
  expect(t.f.runtime.peek().sandboxes.map((s) => s.state)).toEqual(['SANDBOX_NOTREADY']);
  expect(t.f.runtime.peek().containers.map((c) => c.state)).toEqual(['CONTAINER_EXITED']);
  expect(t.f.runtime.callsOf('removeContainer')).toEqual([]);
  // Stopped now: the next relist leaves it be.
  const snapshot = await t.relist();
  t.f.runtime.clearCalls();
  t.workers.handleRelist([], snapshot);
  await t.idle();
  expect(t.f.runtime.calls).toEqual([]);
});
