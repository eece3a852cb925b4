// Status derivation: phase, conditions, container states and reasons, as kubelet reports them.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { ContainerObservation, PodRuntimeState } from '../../../src/core/runtime-state.js';
import type { ProbeResult } from '../../../src/core/probe-results.js';
import { derivePodStatus, podPhase, readinessGatesChangeReady, type StatusInput, type WaitingReason } from '../../../src/decisions/status.js';

const t0 = Date.parse('2026-11-22T10:00:00Z');

function pod(restartPolicy = 'Always'): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'u1' },
    spec: { restartPolicy, containers: [{ name: 'app', image: 'img:1' }, { name: 'side', image: 'img:1' }] },
  };
}

function c(name: string, state: ContainerObservation['state'], extra: Partial<ContainerObservation> = {}): ContainerObservation {
  return {
    id: `${name}-id`, sandboxId: 'sb', name, attempt: 0, restartCount: 0, hash: '', state, createdAt: t0,
    startedAt: t0 + 1000, image: 'img:1', imageRef: 'localhost/img@sha256:aa', ...extra,
  };
}

function input(p: V1Pod, containers: ContainerObservation[], extra: Partial<StatusInput> = {}): StatusInput {
  const state: PodRuntimeState = {
    uid: 'u1',
    sandboxes: [{ id: 'sb', attempt: 0, ready: true, createdAt: t0, ips: ['10.99.0.7'] }],
    containers,
  };
  return { pod: p, state, waitingReasons: new Map(), hostIP: '192.0.2.2', runtimeName: 'containerd', now: new Date(t0 + 5000), ...extra };
}

const cond = (s: V1PodStatus, type: string) => s.conditions!.find((x) => x.type === type)!;

describe('derivePodStatus', () => {
  test('all running: Running, Ready, IPs and container details', () => {
    const s = derivePodStatus(input(pod(), [c('app', 'running'), c('side', 'running')]));
    expect(s.phase).toBe('Running');
    expect(s.podIP).toBe('10.99.0.7');
    expect(s.podIPs).toEqual([{ ip: '10.99.0.7' }]);
    expect(s.hostIP).toBe('192.0.2.2');
    expect(cond(s, 'Ready').status).toBe('True');
    expect(cond(s, 'ContainersReady').status).toBe('True');
    expect(cond(s, 'Initialized').status).toBe('True');
    expect(cond(s, 'PodScheduled').status).toBe('True');
    const app = s.containerStatuses![0]!;
    expect(app).toMatchObject({ name: 'app', ready: true, started: true, restartCount: 0, containerID: 'containerd://app-id', imageID: 'localhost/img@sha256:aa' });
    expect(app.state!.running!.startedAt).toEqual(new Date(t0 + 1000));
  });

  test("observedGeneration: the pod's generation on the status and on every condition kubelet owns; none without one", () => {
    const p = pod();
    p.metadata!.generation = 3;
    const s = derivePodStatus(input(p, [c('app', 'running'), c('side', 'running')]));
    expect(s.observedGeneration).toBe(3);
    expect(s.conditions!.map((x) => [x.type, x.observedGeneration])).toEqual([
      ['PodReadyToStartContainers', 3], ['Initialized', 3], ['Ready', 3], ['ContainersReady', 3], ['PodScheduled', 3],
    ]);
    const standalone = derivePodStatus(input(pod(), [c('app', 'running')]));
    expect(standalone).not.toHaveProperty('observedGeneration');
    expect(standalone.conditions!.every((x) => !('observedGeneration' in x))).toBe(true);
  });

  test("PodReadyToStartContainers False with kubelet 1.37's PodSandboxNotReady reason and why", () => {
    const ready = (p: V1Pod, sandboxes: PodRuntimeState['sandboxes']) => cond(derivePodStatus({ ...input(p, []), state: { uid: 'u1', sandboxes, containers: [] } }), 'PodReadyToStartContainers');
    const sb = (ready: boolean, ips: string[], attempt = 0) => ({ id: `sb${attempt}`, attempt, ready, createdAt: t0 + attempt, ips });
    expect(ready(pod(), [sb(true, ['10.99.0.7'])])).toMatchObject({ status: 'True' });
    expect(ready(pod(), [sb(true, ['10.99.0.7'])])).not.toHaveProperty('reason');
    expect(ready(pod(), [])).toMatchObject({ status: 'False', reason: 'PodSandboxNotReady', message: 'no pod sandbox exists' });
    expect(ready(pod(), [sb(false, [])])).toMatchObject({ status: 'False', reason: 'PodSandboxNotReady', message: 'pod sandbox is not ready' });
    expect(ready(pod(), [sb(true, [])])).toMatchObject({ status: 'False', message: 'pod sandbox has no IP address' });
    expect(ready(pod(), [sb(true, ['10.99.0.8'], 1), sb(true, ['10.99.0.7'])])).toMatchObject({ message: 'multiple pod sandboxes are ready and need to be reconciled' });
    const host = pod();
    host.spec!.hostNetwork = true;
    expect(ready(host, [sb(true, [])])).toMatchObject({ status: 'True' });
  });

  test("containerStatuses[].user: the uid, gid and supplemental groups the runtime reports (kubelet's SupplementalGroupsPolicy)", () => {
    const s = derivePodStatus(input(pod(), [c('app', 'running', { user: { uid: 1000, gid: 3000, supplementalGroups: [3000, 4000] } }), c('side', 'running')]));
    expect(s.containerStatuses![0]!.user).toEqual({ linux: { uid: 1000, gid: 3000, supplementalGroups: [3000, 4000] } });
    expect(s.containerStatuses![1]).not.toHaveProperty('user');
  });

  test("each container's volumeMounts as specified, created or not (kubelet's RecursiveReadOnlyMounts status); read-only ones not recursively", () => {
    const p = pod();
    p.spec!.containers[0]!.volumeMounts = [{ name: 'data', mountPath: '/data' }, { name: 'cfg', mountPath: '/etc/cfg', readOnly: true, subPath: 'x' }];
    p.spec!.containers[1]!.volumeMounts = [{ name: 'data', mountPath: '/d' }];
    const mounts = [{ name: 'data', mountPath: '/data' }, { name: 'cfg', mountPath: '/etc/cfg', readOnly: true, recursiveReadOnly: 'Disabled' }];
    const s = derivePodStatus(input(p, [c('app', 'running')]));
    expect(s.containerStatuses![0]!.volumeMounts).toEqual(mounts);
    expect(s.containerStatuses![1]!.volumeMounts).toEqual([{ name: 'data', mountPath: '/d' }]);
    expect(derivePodStatus(input(pod(), [c('app', 'running')])).containerStatuses![0]).not.toHaveProperty('volumeMounts');
  });

  test('recursiveReadOnly in status: Enabled when the runtime handler makes the mount so, else Disabled', () => {
    const p = pod();
    p.spec!.containers[0]!.volumeMounts = [
      { name: 'a', mountPath: '/a', readOnly: true, recursiveReadOnly: 'Enabled' },
      { name: 'b', mountPath: '/b', readOnly: true, recursiveReadOnly: 'IfPossible' },
      { name: 'c', mountPath: '/c', readOnly: true },
    ];
    const modes = (supported: boolean) =>
      derivePodStatus({ ...input(p, [c('app', 'running')]), recursiveReadOnlyMounts: supported }).containerStatuses![0]!.volumeMounts!.map((m) => m.recursiveReadOnly);
    expect(modes(true)).toEqual(['Enabled', 'Enabled', 'Disabled']);
    // Enabled cannot be met (the container does not start) and IfPossible falls back: both say Disabled, as kubelet.
    expect(modes(false)).toEqual(['Disabled', 'Disabled', 'Disabled']);
  });

  test('ephemeral containers: their own statuses, never ready, never restarted, and no say in readiness or phase', () => {
    const p = pod();
    p.spec!.ephemeralContainers = [
      { name: 'debugger', image: 'busybox:1', targetContainerName: 'app' },
      { name: 'gone', image: 'busybox:1' },
      { name: 'queued', image: 'busybox:1' },
    ];
    const s = derivePodStatus(input(p, [c('app', 'running'), c('side', 'running'), c('debugger', 'running'), c('gone', 'exited', { exitCode: 1, finishedAt: t0 + 2000 })]));
    expect(s.phase).toBe('Running');
    expect(cond(s, 'Ready').status).toBe('True');
    const [debug, gone, queued] = s.ephemeralContainerStatuses!;
    expect(debug).toMatchObject({ name: 'debugger', ready: false, started: true, containerID: 'containerd://debugger-id' });
    expect(debug!.state!.running).toBeDefined();
    expect(gone!.state!.terminated).toMatchObject({ exitCode: 1, reason: 'Error' });
    expect(queued!.state).toEqual({ waiting: { reason: 'ContainerCreating' } });
    expect(derivePodStatus(input(pod(), [c('app', 'running')]))).not.toHaveProperty('ephemeralContainerStatuses');
  });

  test("readiness gates: Ready False with kubelet's reason and messages until every gate's condition is True", () => {
    const p = pod();
    p.spec!.readinessGates = [{ conditionType: 'example.com/one' }, { conditionType: 'example.com/two' }];
    const running = [c('app', 'running'), c('side', 'running')];
    let s = derivePodStatus(input(p, running));
    expect(cond(s, 'ContainersReady').status).toBe('True');
    expect(cond(s, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ReadinessGatesNotReady',
      message: 'corresponding condition of pod readiness gate "example.com/one" does not exist., corresponding condition of pod readiness gate "example.com/two" does not exist.',
    });
    // Another controller sets the gates' conditions; kubelet reads them from the pod as the API server has it.
    p.status = { conditions: [{ type: 'example.com/one', status: 'True' }, { type: 'example.com/two', status: 'False' }] };
    expect(readinessGatesChangeReady(p, s)).toBe(false);
    s = derivePodStatus(input(p, running, { previous: s }));
    expect(cond(s, 'Ready')).toMatchObject({ status: 'False', message: 'the status of pod readiness gate "example.com/two" is not "True", but False' });
    p.status = { conditions: [{ type: 'example.com/one', status: 'True' }, { type: 'example.com/two', status: 'True' }] };
    expect(readinessGatesChangeReady(p, s)).toBe(true);
    s = derivePodStatus(input(p, running, { previous: s }));
    expect(cond(s, 'Ready').status).toBe('True');
    expect(cond(s, 'Ready')).not.toHaveProperty('reason');
    // Containers not ready: Ready says what ContainersReady says, whatever the gates.
    const notReady = derivePodStatus(input(p, [c('app', 'running')]));
    expect(cond(notReady, 'Ready')).toMatchObject({ status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [side]' });
    expect(readinessGatesChangeReady(p, notReady)).toBe(false);
  });

  test('nothing created yet: Pending with ContainerCreating, not ready with the unready names', () => {
    const s = derivePodStatus(input(pod(), []));
    expect(s.phase).toBe('Pending');
    expect(s.containerStatuses![0]!.state).toEqual({ waiting: { reason: 'ContainerCreating' } });
    expect(cond(s, 'Ready')).toMatchObject({ status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [app side]' });
  });

  test('crash loop: Waiting CrashLoopBackOff with the last termination, phase Running', () => {
    const reasons = new Map<string, WaitingReason>([['app', { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=app pod=web_default(u1)' }]]);
    const s = derivePodStatus(
      input(pod(), [c('app', 'exited', { exitCode: 1, finishedAt: t0 + 2000, restartCount: 1 }), c('side', 'running')], { waitingReasons: reasons }),
    );
    const app = s.containerStatuses![0]!;
    expect(app.state!.waiting).toEqual({ reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=app pod=web_default(u1)' });
    expect(app.lastState!.terminated).toMatchObject({ exitCode: 1, reason: 'Error', containerID: 'containerd://app-id' });
    expect(app.restartCount).toBe(1);
    expect(s.phase).toBe('Running');
  });

  test('Never and one container exits 3: Failed, terminated with exit code and Error reason, Ready PodFailed', () => {
    const s = derivePodStatus(
      input(pod('Never'), [c('app', 'exited', { exitCode: 3, finishedAt: t0 + 2000 }), c('side', 'exited', { exitCode: 0, finishedAt: t0 + 2000 })]),
    );
    expect(s.phase).toBe('Failed');
    expect(s.containerStatuses![0]!.state!.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
    expect(s.containerStatuses![1]!.state!.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    expect(cond(s, 'Ready')).toMatchObject({ status: 'False', reason: 'PodFailed' });
  });

  test('all succeeded under OnFailure: Succeeded', () => {
    const s = derivePodStatus(input(pod('OnFailure'), [c('app', 'exited', { exitCode: 0 }), c('side', 'exited', { exitCode: 0 })]));
    expect(s.phase).toBe('Succeeded');
  });

  test('a terminal phase is never left, and the IP stays reported after the sandbox is gone', () => {
    const first = derivePodStatus(input(pod('Never'), [c('app', 'exited', { exitCode: 3 }), c('side', 'exited', { exitCode: 0 })]));
    const next = input(pod('Never'), [], { previous: first });
    next.state.sandboxes = [];
    const s = derivePodStatus(next);
    expect(s.phase).toBe('Failed');
    expect(s.podIP).toBe('10.99.0.7');
  });

  test('transition times are kept while a condition does not change, and startTime is sticky', () => {
    const first = derivePodStatus(input(pod(), [c('app', 'running'), c('side', 'running')]));
    const later = derivePodStatus(input(pod(), [c('app', 'running'), c('side', 'running')], { previous: first, now: new Date(t0 + 60_000) }));
    expect(cond(later, 'Ready').lastTransitionTime).toEqual(cond(first, 'Ready').lastTransitionTime);
    expect(later.startTime).toEqual(first.startTime);
    const broken = derivePodStatus(input(pod(), [c('app', 'exited', { exitCode: 1 }), c('side', 'running')], { previous: later, now: new Date(t0 + 90_000) }));
    expect(cond(broken, 'Ready').lastTransitionTime).toEqual(new Date(t0 + 90_000));
  });

  test('image pull failure shows as the waiting reason of a container not yet created', () => {
    const reasons = new Map<string, WaitingReason>([['side', { reason: 'ErrImagePull', message: 'not found' }]]);
    const s = derivePodStatus(input(pod(), [c('app', 'running')], { waitingReasons: reasons }));
    expect(s.containerStatuses![1]!.state).toEqual({ waiting: { reason: 'ErrImagePull', message: 'not found' } });
    expect(s.phase).toBe('Pending');
  });

  test('host network pods report the node IP as pod IP', () => {
    const p = pod();
    p.spec!.hostNetwork = true;
    const i = input(p, [c('app', 'running'), c('side', 'running')]);
    i.state.sandboxes[0]!.ips = [];
    expect(derivePodStatus(i).podIP).toBe('192.0.2.2');
  });

  test('a refused pod is Failed with the reason', () => {
    const s = derivePodStatus(input(pod(), [], { rejection: { reason: 'UnsupportedPodSpec', message: 'uses spec.volumes' } }));
    expect(s).toMatchObject({ phase: 'Failed', reason: 'UnsupportedPodSpec', message: 'uses spec.volumes' });
  });
});

describe('podPhase', () => {
  test('Always with everything stopped is Running (restarting)', () => {
    expect(podPhase(pod(), [], [{ name: 'app', ready: false, restartCount: 1, image: '', imageID: '', state: { terminated: { exitCode: 1 } } }])).toBe('Running');
  });
});

describe('init containers', () => {
  function initPod(restartPolicy = 'Always', sidecar = false): V1Pod {
    const p = pod(restartPolicy);
    p.spec!.initContainers = [
      { name: 'setup', image: 'img:1', ...(sidecar ? { restartPolicy: 'Always' } : {}) },
      { name: 'migrate', image: 'img:1' },
    ];
    return p;
  }

  test('before any container: Pending, PodInitializing everywhere, Initialized False naming both', () => {
    const s = derivePodStatus(input(initPod(), []));
    expect(s.phase).toBe('Pending');
    expect(s.initContainerStatuses!.map((c) => c.state!.waiting!.reason)).toEqual(['PodInitializing', 'PodInitializing']);
    expect(s.containerStatuses!.map((c) => c.state!.waiting!.reason)).toEqual(['PodInitializing', 'PodInitializing']);
    expect(cond(s, 'Initialized')).toMatchObject({ status: 'False', reason: 'ContainersNotInitialized', message: 'containers with incomplete status: [setup migrate]' });
  });

  test('first init container done, second running: still Pending, the first is ready', () => {
    const s = derivePodStatus(input(initPod(), [c('migrate', 'running'), c('setup', 'exited', { exitCode: 0 })]));
    expect(s.phase).toBe('Pending');
    expect(s.initContainerStatuses![0]).toMatchObject({ name: 'setup', ready: true });
    expect(s.initContainerStatuses![0]!.state!.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    expect(s.initContainerStatuses![1]).toMatchObject({ name: 'migrate', ready: false });
    expect(cond(s, 'Initialized').message).toBe('containers with incomplete status: [migrate]');
  });

  test('all init containers done, app running: Running and Initialized', () => {
    const s = derivePodStatus(input(initPod(), [c('app', 'running'), c('side', 'running'), c('migrate', 'exited', { exitCode: 0 }), c('setup', 'exited', { exitCode: 0 })]));
    expect(s.phase).toBe('Running');
    expect(cond(s, 'Initialized').status).toBe('True');
    expect(cond(s, 'Ready').status).toBe('True');
  });

  test('a failed init container under Never makes the pod Failed', () => {
    const s = derivePodStatus(input(initPod('Never'), [c('setup', 'exited', { exitCode: 4 })]));
    expect(s.phase).toBe('Failed');
    expect(s.initContainerStatuses![0]!.state!.terminated).toMatchObject({ exitCode: 4, reason: 'Error' });
  });

  test('a failing init container in crash-loop back-off under Always keeps the pod Pending', () => {
    const reasons = new Map<string, WaitingReason>([['setup', { reason: 'CrashLoopBackOff', message: 'back-off 10s' }]]);
    const s = derivePodStatus(input(initPod(), [c('setup', 'exited', { exitCode: 1 })], { waitingReasons: reasons }));
    expect(s.initContainerStatuses![0]!.state!.waiting!.reason).toBe('CrashLoopBackOff');
    expect(s.phase).toBe('Pending');
  });

  test('a running sidecar counts as initialized, and its readiness joins ContainersReady', () => {
    const s = derivePodStatus(input(initPod('Always', true), [c('migrate', 'running'), c('setup', 'running')]));
    expect(s.initContainerStatuses![0]).toMatchObject({ name: 'setup', ready: true, started: true });
    expect(cond(s, 'Initialized').message).toBe('containers with incomplete status: [migrate]');
    expect(cond(s, 'ContainersReady').message).toBe('containers with unready status: [app side]');
  });
});

describe('probe results in container status', () => {
  const probe = { exec: { command: ['true'] } };
  function probed(extra: { readiness?: boolean; startup?: boolean } = {}): V1Pod {
    const p = pod();
    const app = p.spec!.containers[0]!;
    if (extra.readiness !== false) app.readinessProbe = probe;
    if (extra.startup) app.startupProbe = probe;
    return p;
  }
  const lookup = (results: Record<string, ProbeResult>) => (id: string) => results[id];
  const running = () => [c('app', 'running'), c('side', 'running')];

  test('with a readiness probe a running container is not ready until it succeeds; Ready and ContainersReady follow', () => {
    const before = derivePodStatus(input(probed(), running(), { readiness: lookup({ 'app-id': 'failure' }) }));
    expect(before.containerStatuses![0]).toMatchObject({ ready: false, started: true });
    expect(before.containerStatuses![1]).toMatchObject({ ready: true, started: true });
    expect(cond(before, 'ContainersReady')).toMatchObject({ status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [app]' });
    expect(cond(before, 'Ready').status).toBe('False');
    expect(before.phase).toBe('Running');

    const noResult = derivePodStatus(input(probed(), running(), { readiness: lookup({}) }));
    expect(noResult.containerStatuses![0]!.ready).toBe(false);

    const after = derivePodStatus(input(probed(), running(), { readiness: lookup({ 'app-id': 'success' }), previous: before, now: new Date(t0 + 9_000) }));
    expect(after.containerStatuses![0]!.ready).toBe(true);
    expect(cond(after, 'Ready')).toMatchObject({ status: 'True', lastTransitionTime: new Date(t0 + 9_000) });
    expect(cond(after, 'ContainersReady').status).toBe('True');
  });

  test('a startup probe: not started (and so not ready) until it succeeds, whatever readiness says', () => {
    const p = probed({ startup: true });
    const starting = derivePodStatus(input(p, running(), { startup: lookup({ 'app-id': 'unknown' }), readiness: lookup({ 'app-id': 'success' }) }));
    expect(starting.containerStatuses![0]).toMatchObject({ started: false, ready: false });
    const started = derivePodStatus(input(p, running(), { startup: lookup({ 'app-id': 'success' }), readiness: lookup({ 'app-id': 'success' }) }));
    expect(started.containerStatuses![0]).toMatchObject({ started: true, ready: true });
    const noReadiness = derivePodStatus(input(probed({ startup: true, readiness: false }), running(), { startup: lookup({ 'app-id': 'success' }) }));
    expect(noReadiness.containerStatuses![0]).toMatchObject({ started: true, ready: true });
  });

  test('results of an older container instance do not count for the new one', () => {
    const s = derivePodStatus(input(probed(), [c('app', 'running', { id: 'app-2' }), c('side', 'running')], { readiness: lookup({ 'app-id': 'success' }) }));
    expect(s.containerStatuses![0]!.ready).toBe(false);
  });

  test('a container killed by a failed liveness probe shows the runtime\'s termination as lastState (Error, 137)', () => {
    const killed = c('app', 'exited', { id: 'app-1', exitCode: 137, reason: 'Error', finishedAt: t0 + 3_000 });
    const s = derivePodStatus(input(pod(), [c('app', 'running', { id: 'app-2', restartCount: 1, createdAt: t0 + 3_500 }), killed, c('side', 'running')]));
    expect(s.containerStatuses![0]).toMatchObject({ restartCount: 1, ready: true, lastState: { terminated: { exitCode: 137, reason: 'Error' } } });
  });
});
