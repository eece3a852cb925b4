// Table test of computePodActions: one base pod and runtime state, each case a small mutation of either.
import type { V1Pod } from '@kubernetes/client-node';
import { kubeletBackoff, type BackoffEntry } from '../../../src/decisions/backoff.js';
import { computePodActions, isNoop, type PodActions } from '../../../src/decisions/compute-actions.js';
import { containerHash } from '../../../src/decisions/container-hash.js';
import type { ContainerObservation, PodRuntimeState } from '../../../src/core/runtime-state.js';
import type { ProbeResult } from '../../../src/core/probe-results.js';

const now = 1_000_000_000;

function basePod(): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
    spec: {
      restartPolicy: 'Always',
      containers: [
        { name: 'app', image: 'localhost/nodelet/busybox:1.35' },
        { name: 'sidecar', image: 'localhost/nodelet/busybox:1.35', args: ['sleep', '3600'] },
      ],
    },
  };
}

function running(pod: V1Pod, name: string, extra: Partial<ContainerObservation> = {}): ContainerObservation {
  const spec = [...pod.spec!.containers, ...(pod.spec!.initContainers ?? [])].find((c) => c.name === name) ?? { name, image: 'x' };
  return {
    id: `${name}-1`,
    sandboxId: 'sb-1',
    name,
    attempt: 0,
    restartCount: 0,
    hash: containerHash(spec),
    state: 'running',
    createdAt: now - 60_000,
    startedAt: now - 59_000,
    image: spec.image!,
    imageRef: 'sha256:abc',
    ...extra,
  };
}

function exited(pod: V1Pod, name: string, exitCode: number, extra: Partial<ContainerObservation> = {}): ContainerObservation {
  return running(pod, name, { state: 'exited', exitCode, finishedAt: now - 1_000, ...extra });
}

function baseState(pod: V1Pod): PodRuntimeState {
  return {
    uid: 'uid-1',
    sandboxes: [{ id: 'sb-1', attempt: 0, ready: true, createdAt: now - 61_000, ips: ['10.99.0.5'] }],
    containers: [running(pod, 'app'), running(pod, 'sidecar')],
  };
}

function withInits(pod: V1Pod): void {
  pod.spec!.initContainers = [
    { name: 'init-a', image: 'localhost/nodelet/busybox:1.35', command: ['true'] },
    { name: 'init-b', image: 'localhost/nodelet/busybox:1.35', command: ['true'] },
  ];
}

function withSidecar(pod: V1Pod): void {
  pod.spec!.initContainers = [
    { name: 'proxy', image: 'localhost/nodelet/busybox:1.35', restartPolicy: 'Always' },
    { name: 'init-b', image: 'localhost/nodelet/busybox:1.35', command: ['true'] },
  ];
}

const noop: PodActions = {
  killPod: false,
  createSandbox: false,
  sandboxId: 'sb-1',
  attempt: 0,
  containersToKill: [],
  ephemeralContainersToStart: [],
  initContainersToStart: [],
  containersToStart: [],
  containersInBackoff: [],
  containersToUpdate: { memory: [], cpu: [] },
  updatePodResources: false,
};

interface Case {
  name: string;
  mutate?: (pod: V1Pod, state: PodRuntimeState) => void;
  backoff?: Record<string, BackoffEntry>;
  /** Probe results by container ID. */
  liveness?: Record<string, ProbeResult>;
  startup?: Record<string, ProbeResult>;
  expected: Partial<PodActions>;
}

const cases: Case[] = [
  { name: 'everything running: nothing to do', expected: {} },
  {
    name: 'liveness failed: the container is killed and restarted in the same sync',
    liveness: { 'app-1': 'failure', 'sidecar-1': 'success' },
    expected: {
      containersToKill: [{ id: 'app-1', name: 'app', reason: 'Container app failed liveness probe, will be restarted' }],
      containersToStart: [{ name: 'app', specIndex: 0, restartCount: 1, reason: 'container failed liveness probe' }],
    },
  },
  {
    name: 'startup failed: the container is killed and restarted',
    startup: { 'sidecar-1': 'failure' },
    expected: {
      containersToKill: [{ id: 'sidecar-1', name: 'sidecar', reason: 'Container sidecar failed startup probe, will be restarted' }],
      containersToStart: [{ name: 'sidecar', specIndex: 1, restartCount: 1, reason: 'container failed startup probe' }],
    },
  },
  {
    name: 'liveness failed under OnFailure: restarted too (only Never keeps it down)',
    mutate: (p, s) => {
      p.spec!.restartPolicy = 'OnFailure';
      s.containers[0]!.restartCount = 4;
    },
    liveness: { 'app-1': 'failure' },
    expected: {
      containersToKill: [{ id: 'app-1', name: 'app', reason: 'Container app failed liveness probe, will be restarted' }],
      containersToStart: [{ name: 'app', specIndex: 0, restartCount: 5, reason: 'container failed liveness probe' }],
    },
  },
  {
    name: 'liveness failed under Never: killed, not restarted; the other container keeps the pod',
    mutate: (p) => {
      p.spec!.restartPolicy = 'Never';
    },
    liveness: { 'app-1': 'failure' },
    expected: { containersToKill: [{ id: 'app-1', name: 'app', reason: 'Container app failed liveness probe' }] },
  },
  {
    name: 'liveness failed under Never in every container: the pod is killed',
    mutate: (p) => {
      p.spec!.restartPolicy = 'Never';
    },
    liveness: { 'app-1': 'failure', 'sidecar-1': 'failure' },
    expected: { killPod: true },
  },
  {
    name: 'the failed probe\'s terminationGracePeriodSeconds overrides the pod\'s',
    mutate: (p, s) => {
      p.spec!.containers[0]!.livenessProbe = { exec: { command: ['true'] }, terminationGracePeriodSeconds: 5 };
      p.spec!.containers[0]!.startupProbe = { exec: { command: ['true'] }, terminationGracePeriodSeconds: 7 };
      s.containers[0]!.hash = containerHash(p.spec!.containers[0]!);
    },
    liveness: { 'app-1': 'failure' },
    expected: {
      containersToKill: [{ id: 'app-1', name: 'app', reason: 'Container app failed liveness probe, will be restarted', gracePeriodSeconds: 5 }],
      containersToStart: [{ name: 'app', specIndex: 0, restartCount: 1, reason: 'container failed liveness probe' }],
    },
  },
  {
    name: 'startup not yet succeeded (unknown) and readiness results change nothing',
    startup: { 'app-1': 'unknown' },
    liveness: { 'app-1': 'success' },
    expected: {},
  },
  {
    name: 'a liveness failure of an exited container only leads to the usual restart',
    mutate: (p, s) => {
      s.containers[0] = exited(p, 'app', 137);
    },
    liveness: { 'app-1': 'failure' },
    expected: { containersToStart: [{ name: 'app', specIndex: 0, restartCount: 1, reason: 'container exited with code 137' }] },
  },
  {
    name: 'no sandbox yet: create one and start every container in order',
    mutate: (_p, s) => {
      s.sandboxes = [];
      s.containers = [];
    },
    expected: {
      createSandbox: true,
      sandboxId: '',
      containersToStart: [
        { name: 'app', specIndex: 0, restartCount: 0, reason: 'container has not been started' },
        { name: 'sidecar', specIndex: 1, restartCount: 0, reason: 'container has not been started' },
      ],
    },
  },
  {
    name: 'sandbox died: kill the pod and recreate with the next attempt, restart counts carried on',
    mutate: (p, s) => {
      s.sandboxes[0]!.ready = false;
      s.containers = [exited(p, 'app', 137), exited(p, 'sidecar', 137)];
    },
    expected: {
      killPod: false,
      createSandbox: true,
      sandboxId: '',
      attempt: 1,
      containersToStart: [
        { name: 'app', specIndex: 0, restartCount: 1, reason: 'container exited with code 137' },
        { name: 'sidecar', specIndex: 1, restartCount: 1, reason: 'container exited with code 137' },
      ],
    },
  },
  {
    name: 'ready sandbox without an IP is replaced (pod network lost)',
    mutate: (_p, s) => {
      s.sandboxes[0]!.ips = [];
    },
    expected: {
      killPod: true,
      createSandbox: true,
      sandboxId: '',
      attempt: 1,
      containersToStart: [
        { name: 'app', specIndex: 0, restartCount: 1, reason: 'container is in running state' },
        { name: 'sidecar', specIndex: 1, restartCount: 1, reason: 'container is in running state' },
      ],
    },
  },
  {
    name: 'host-network sandbox needs no IP',
    mutate: (p, s) => {
      p.spec!.hostNetwork = true;
      s.sandboxes[0]!.ips = [];
    },
    expected: {},
  },
  {
    name: 'Always: an exited container restarts with restartCount + 1',
    mutate: (p, s) => {
      s.containers[0] = exited(p, 'app', 0, { restartCount: 2 });
    },
    expected: { containersToStart: [{ name: 'app', specIndex: 0, restartCount: 3, reason: 'container exited with code 0' }] },
  },
  {
    name: 'Always: exited container inside its crash-loop back-off waits',
    mutate: (p, s) => {
      s.containers[0] = exited(p, 'app', 1, { restartCount: 2, finishedAt: now - 5_000 });
    },
    backoff: { app: { durationMs: 20_000, lastUpdate: now - 30_000 } },
    expected: { containersInBackoff: [{ name: 'app', retryAt: now + 15_000, durationMs: 20_000 }] },
  },
  {
    name: 'Always: back-off elapsed, restart now',
    mutate: (p, s) => {
      s.containers[0] = exited(p, 'app', 1, { restartCount: 2, finishedAt: now - 25_000 });
    },
    backoff: { app: { durationMs: 20_000, lastUpdate: now - 50_000 } },
    expected: { containersToStart: [{ name: 'app', specIndex: 0, restartCount: 3, reason: 'container exited with code 1' }] },
  },
  {
    name: 'back-off entry older than twice the cap is stale: restart now',
    mutate: (p, s) => {
      s.containers[0] = exited(p, 'app', 1, { finishedAt: now - 1_000 });
    },
    backoff: { app: { durationMs: 300_000, lastUpdate: now - 700_000 } },
    expected: { containersToStart: [{ name: 'app', specIndex: 0, restartCount: 1, reason: 'container exited with code 1' }] },
  },
  {
    name: 'OnFailure: a container that succeeded stays down, the other keeps the sandbox',
    mutate: (p, s) => {
      p.spec!.restartPolicy = 'OnFailure';
      s.containers[0] = exited(p, 'app', 0);
    },
    expected: {},
  },
  {
    name: 'OnFailure: a failed container restarts',
    mutate: (p, s) => {
      p.spec!.restartPolicy = 'OnFailure';
      s.containers[0] = exited(p, 'app', 2);
    },
    expected: { containersToStart: [{ name: 'app', specIndex: 0, restartCount: 1, reason: 'container exited with code 2' }] },
  },
  {
    name: 'Never: all containers exited, the sandbox is stopped',
    mutate: (p, s) => {
      p.spec!.restartPolicy = 'Never';
      s.containers = [exited(p, 'app', 3), exited(p, 'sidecar', 0)];
    },
    expected: { killPod: true },
  },
  {
    name: 'Never: sandbox already stopped after the containers ran: no new sandbox',
    mutate: (p, s) => {
      p.spec!.restartPolicy = 'Never';
      s.sandboxes[0]!.ready = false;
      s.containers = [exited(p, 'app', 3), exited(p, 'sidecar', 0)];
    },
    expected: { sandboxId: '', attempt: 1 },
  },
  {
    name: 'OnFailure: every container succeeded and the sandbox is gone: nothing more',
    mutate: (p, s) => {
      p.spec!.restartPolicy = 'OnFailure';
      s.sandboxes[0]!.ready = false;
      s.containers = [exited(p, 'app', 0), exited(p, 'sidecar', 0)];
    },
    expected: { sandboxId: '', attempt: 1 },
  },
  {
    // kubelet's hash covers the name and the image, the only fields of a running container the API lets change.
    name: 'changed container image: kill and start it again',
    mutate: (p) => {
      p.spec!.containers[1]!.image = 'localhost/nodelet/busybox:1.36';
    },
    expected: {
      containersToKill: [{ id: 'sidecar-1', name: 'sidecar', reason: 'Container sidecar definition changed' }],
      containersToStart: [{ name: 'sidecar', specIndex: 1, restartCount: 1, reason: 'container definition changed' }],
    },
  },
  {
    name: 'a running container not in the spec is killed',
    mutate: (p, s) => {
      s.containers.push(running(p, 'app', { id: 'old-1', name: 'gone' }));
    },
    expected: { containersToKill: [{ id: 'old-1', name: 'gone', reason: 'Container is not in the pod spec' }] },
  },
  {
    name: 'a container in unknown state is killed and started again',
    mutate: (p, s) => {
      s.containers[0] = running(p, 'app', { state: 'unknown' });
    },
    expected: {
      containersToKill: [{ id: 'app-1', name: 'app', reason: 'Container is in unknown state, try killing it before removal' }],
      containersToStart: [{ name: 'app', specIndex: 0, restartCount: 1, reason: 'container is in unknown state' }],
    },
  },
  {
    name: 'created but never started: start a new instance',
    mutate: (p, s) => {
      s.containers[1] = running(p, 'sidecar', { state: 'created', startedAt: undefined });
    },
    expected: { containersToStart: [{ name: 'sidecar', specIndex: 1, restartCount: 1, reason: 'container is in created state' }] },
  },
  {
    name: 'two ready sandboxes: start over in a new one',
    mutate: (_p, s) => {
      s.sandboxes.unshift({ id: 'sb-2', attempt: 1, ready: true, createdAt: now - 1_000, ips: ['10.99.0.6'] });
    },
    expected: {
      killPod: true,
      createSandbox: true,
      sandboxId: '',
      attempt: 2,
      containersToStart: [
        { name: 'app', specIndex: 0, restartCount: 1, reason: 'container is in running state' },
        { name: 'sidecar', specIndex: 1, restartCount: 1, reason: 'container is in running state' },
      ],
    },
  },
  // Init containers (no sidecars): one at a time, in order, each to success before the next.
  {
    name: 'init: a new sandbox starts with the first init container only',
    mutate: (p, s) => {
      withInits(p);
      s.sandboxes = [];
      s.containers = [];
    },
    expected: { createSandbox: true, sandboxId: '', initContainersToStart: [{ name: 'init-a', specIndex: 0, restartCount: 0, reason: 'container has not been started' }] },
  },
  {
    name: 'init: the first succeeded, start the second',
    mutate: (p, s) => {
      withInits(p);
      s.containers = [exited(p, 'init-a', 0)];
    },
    expected: { initContainersToStart: [{ name: 'init-b', specIndex: 1, restartCount: 0, reason: 'container has not been started' }] },
  },
  {
    name: 'init: one is still running, wait',
    mutate: (p, s) => {
      withInits(p);
      s.containers = [running(p, 'init-b'), exited(p, 'init-a', 0)];
    },
    expected: {},
  },
  {
    name: 'init: all succeeded, start the app containers',
    mutate: (p, s) => {
      withInits(p);
      s.containers = [exited(p, 'init-b', 0), exited(p, 'init-a', 0)];
    },
    expected: {
      containersToStart: [
        { name: 'app', specIndex: 0, restartCount: 0, reason: 'container has not been started' },
        { name: 'sidecar', specIndex: 1, restartCount: 0, reason: 'container has not been started' },
      ],
    },
  },
  {
    name: 'init: a failed init container is retried (restartPolicy Always)',
    mutate: (p, s) => {
      withInits(p);
      s.containers = [exited(p, 'init-b', 1, { restartCount: 1 }), exited(p, 'init-a', 0)];
    },
    expected: { initContainersToStart: [{ name: 'init-b', specIndex: 1, restartCount: 2, reason: 'container exited with code 1' }] },
  },
  {
    name: 'init: a failed init container in back-off waits',
    mutate: (p, s) => {
      withInits(p);
      s.containers = [exited(p, 'init-b', 1, { finishedAt: now - 2_000 }), exited(p, 'init-a', 0)];
    },
    backoff: { 'init-b': { durationMs: 10_000, lastUpdate: now - 5_000 } },
    expected: { containersInBackoff: [{ name: 'init-b', retryAt: now + 8_000, durationMs: 10_000 }] },
  },
  {
    name: 'init: a failed init container with restartPolicy Never kills the pod',
    mutate: (p, s) => {
      withInits(p);
      p.spec!.restartPolicy = 'Never';
      s.containers = [exited(p, 'init-a', 2)];
    },
    expected: { killPod: true },
  },
  {
    name: 'init: running app containers mean initialization is done even if init containers are gone',
    mutate: (p) => withInits(p),
    expected: {},
  },
  {
    name: 'init: a new sandbox after a crash runs initialization again from the first',
    mutate: (p, s) => {
      withInits(p);
      s.sandboxes[0]!.ready = false;
      s.containers = [exited(p, 'app', 137), exited(p, 'sidecar', 137), exited(p, 'init-b', 0), exited(p, 'init-a', 0)];
    },
    expected: {
      createSandbox: true,
      sandboxId: '',
      attempt: 1,
      initContainersToStart: [{ name: 'init-a', specIndex: 0, restartCount: 1, reason: 'container exited with code 0' }],
    },
  },
  // Sidecars (init containers with restartPolicy Always): started in order, kept running.
  {
    name: 'sidecar: once the sidecar runs, the next init container starts',
    mutate: (p, s) => {
      withSidecar(p);
      s.containers = [running(p, 'proxy')];
    },
    expected: { initContainersToStart: [{ name: 'init-b', specIndex: 1, restartCount: 0, reason: 'container has not been started' }] },
  },
  {
    name: 'sidecar: after initialization an exited sidecar is restarted, app containers keep running',
    mutate: (p, s) => {
      withSidecar(p);
      s.containers = [running(p, 'app'), running(p, 'sidecar'), exited(p, 'proxy', 1), exited(p, 'init-b', 0)];
    },
    expected: { initContainersToStart: [{ name: 'proxy', specIndex: 0, restartCount: 1, reason: 'container exited with code 1' }] },
  },
  {
    name: 'sidecar: with every app container done under Never, the sidecar is stopped with the pod',
    mutate: (p, s) => {
      withSidecar(p);
      p.spec!.restartPolicy = 'Never';
      s.containers = [exited(p, 'app', 0), exited(p, 'sidecar', 0), running(p, 'proxy'), exited(p, 'init-b', 0)];
    },
    expected: { killPod: true },
  },
  {
    name: 'sidecar with a startup probe not yet succeeded: the next init container waits',
    mutate: (p, s) => {
      withSidecar(p);
      p.spec!.initContainers![0]!.startupProbe = { exec: { command: ['true'] } };
      s.containers = [running(p, 'proxy')];
    },
    startup: { 'proxy-1': 'unknown' },
    expected: {},
  },
  {
    name: 'sidecar whose startup probe succeeded lets the next init container start',
    mutate: (p, s) => {
      withSidecar(p);
      p.spec!.initContainers![0]!.startupProbe = { exec: { command: ['true'] } };
      s.containers = [running(p, 'proxy')];
    },
    startup: { 'proxy-1': 'success' },
    expected: { initContainersToStart: [{ name: 'init-b', specIndex: 1, restartCount: 0, reason: 'container has not been started' }] },
  },
  {
    name: 'sidecar failing its liveness probe is killed and started again, the app keeps running',
    mutate: (p, s) => {
      withSidecar(p);
      p.spec!.initContainers![0]!.livenessProbe = { exec: { command: ['true'] } };
      s.containers = [running(p, 'app'), running(p, 'sidecar'), running(p, 'proxy'), exited(p, 'init-b', 0)];
    },
    liveness: { 'proxy-1': 'failure' },
    expected: {
      containersToKill: [{ id: 'proxy-1', name: 'proxy', reason: 'Init container proxy failed liveness probe' }],
      initContainersToStart: [{ name: 'proxy', specIndex: 0, restartCount: 1, reason: 'container is in running state' }],
    },
  },
  {
    name: 'liveness failure while an earlier exit is still in back-off: killed now, restarted after the back-off',
    mutate: (p, s) => {
      s.containers.push(exited(p, 'app', 137, { id: 'app-0', restartCount: 0, finishedAt: now - 3_000 }));
      s.containers[0] = running(p, 'app', { restartCount: 1 });
    },
    liveness: { 'app-1': 'failure' },
    backoff: { app: { durationMs: 10_000, lastUpdate: now - 3_000 } },
    expected: {
      containersToKill: [{ id: 'app-1', name: 'app', reason: 'Container app failed liveness probe, will be restarted' }],
      containersInBackoff: [{ name: 'app', retryAt: now + 7_000, durationMs: 10_000 }],
    },
  },
  {
    name: 'an ephemeral container added to a running pod starts, nothing else changes',
    mutate: (p) => {
      p.spec!.ephemeralContainers = [{ name: 'debugger', image: 'localhost/nodelet/busybox:1.35', targetContainerName: 'app' }];
    },
    expected: { ephemeralContainersToStart: [{ name: 'debugger', specIndex: 0, restartCount: 0, reason: 'ephemeral container has not been started' }] },
  },
  {
    name: 'an ephemeral container that ran (or runs) is never started again, and is not killed as foreign',
    mutate: (p, s) => {
      p.spec!.ephemeralContainers = [
        { name: 'done', image: 'localhost/nodelet/busybox:1.35' },
        { name: 'live', image: 'localhost/nodelet/busybox:1.35' },
      ];
      s.containers.push(exited(p, 'done', 1), running(p, 'live'));
    },
    expected: {},
  },
  {
    name: 'an ephemeral container starts while init containers still run',
    mutate: (p, s) => {
      withInits(p);
      p.spec!.ephemeralContainers = [{ name: 'debugger', image: 'localhost/nodelet/busybox:1.35' }];
      s.containers = [running(p, 'init-a')];
    },
    expected: { ephemeralContainersToStart: [{ name: 'debugger', specIndex: 0, restartCount: 0, reason: 'ephemeral container has not been started' }] },
  },
  {
    name: 'a running ephemeral container does not keep a finished pod alive',
    mutate: (p, s) => {
      p.spec!.restartPolicy = 'Never';
      p.spec!.ephemeralContainers = [{ name: 'debugger', image: 'localhost/nodelet/busybox:1.35' }];
      s.containers = [exited(p, 'app', 0), exited(p, 'sidecar', 0), running(p, 'debugger')];
    },
    expected: { killPod: true },
  },
];

describe('computePodActions', () => {
  test.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const pod = basePod();
    const state = baseState(pod);
    c.mutate?.(pod, state);
    const actions = computePodActions(pod, state, {
      now,
      backoffPolicy: kubeletBackoff,
      crashBackoff: (name) => c.backoff?.[name],
      liveness: (id) => c.liveness?.[id],
      startup: (id) => c.startup?.[id],
    });
    expect(actions).toEqual({ ...noop, ...c.expected });
  });

  test('isNoop is true only when nothing changes in the runtime', () => {
    expect(isNoop(noop)).toBe(true);
    expect(isNoop({ ...noop, initContainersToStart: [{ name: 'i', specIndex: 0, restartCount: 0, reason: '' }] })).toBe(false);
    expect(isNoop({ ...noop, containersInBackoff: [{ name: 'a', retryAt: 1, durationMs: 1 }] })).toBe(true);
    expect(isNoop({ ...noop, killPod: true })).toBe(false);
    expect(isNoop({ ...noop, ephemeralContainersToStart: [{ name: 'e', specIndex: 0, restartCount: 0, reason: '' }] })).toBe(false);
  });
});
