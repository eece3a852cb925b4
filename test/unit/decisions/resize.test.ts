// In-place resize's pure parts: the allocated pod, the per-container resize decision and its order, kubelet's event
// messages, the container status resources reported while and after a resize, and the pod-level ones per minor.
import type { V1Pod, V1PodStatus, V1ResourceRequirements } from '@kubernetes/client-node';
import { kubeletBackoff } from '../../../src/decisions/backoff.js';
import { computePodActions, isNoop } from '../../../src/decisions/compute-actions.js';
import { containerHash } from '../../../src/decisions/container-hash.js';
import { allocationOf, podFromAllocation, resizeEventMessage, resizeInProgress } from '../../../src/decisions/resize.js';
import { derivePodStatus } from '../../../src/decisions/status.js';
import type { ContainerObservation, PodRuntimeState } from '../../../src/core/runtime-state.js';
import { featureGatesOf } from '../../../src/core/kube-minor.js';

const now = 1_000_000_000;

function pod(resources: Record<string, V1ResourceRequirements>, policy?: Record<string, string>): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1', generation: 2 },
    spec: {
      containers: Object.entries(resources).map(([name, r]) => ({
        name,
        image: 'busybox',
        resources: r,
        ...(policy ? { resizePolicy: Object.entries(policy).map(([resourceName, restartPolicy]) => ({ resourceName, restartPolicy })) } : {}),
      })),
    },
  };
}

function running(p: V1Pod, name: string, extra: Partial<ContainerObservation> = {}): ContainerObservation {
  const spec = p.spec!.containers.find((c) => c.name === name)!;
  return {
    id: `${name}-id`, sandboxId: 'sb-1', name, attempt: 0, restartCount: 0, hash: containerHash(spec), state: 'running',
    createdAt: now - 60_000, startedAt: now - 59_000, image: 'busybox', imageRef: 'sha256:1', ...extra,
  };
}

function state(p: V1Pod): PodRuntimeState {
  return { uid: 'uid-1', sandboxes: [{ id: 'sb-1', attempt: 0, ready: true, createdAt: now - 61_000, ips: ['10.99.0.5'] }], containers: p.spec!.containers.map((c) => running(p, c.name)) };
}

const actions = (p: V1Pod, actuated: Record<string, V1ResourceRequirements>) =>
  computePodActions(p, state(p), { now, backoffPolicy: kubeletBackoff, crashBackoff: () => undefined, actuated: (n) => actuated[n] });

describe('the allocated pod', () => {
  test('equal quantities in other forms are no resize; a changed one is replaced by the allocation', () => {
    const p = pod({ a: { requests: { cpu: '1', memory: '1Gi' } } });
    expect(podFromAllocation(p, { a: { requests: { cpu: '1000m', memory: '1073741824' } } })).toEqual({ pod: p, updated: false });
    const alloc = allocationOf(pod({ a: { requests: { cpu: '500m' } } }));
    const { pod: allocated, updated } = podFromAllocation(p, alloc);
    expect(updated).toBe(true);
    expect(allocated.spec!.containers[0]!.resources).toEqual({ requests: { cpu: '500m' } });
    expect(p.spec!.containers[0]!.resources).toEqual({ requests: { cpu: '1', memory: '1Gi' } });
  });
});

describe('computePodActions with actuated resources', () => {
  test('nothing to do when every running container has what it was allocated', () => {
    const p = pod({ a: { requests: { cpu: '100m' }, limits: { cpu: '200m' } } });
    expect(isNoop(actions(p, allocationOf(p)))).toBe(true);
  });

  test('an update per resource, decreases ahead of increases, without restarting anything', () => {
    const p = pod({ grow: { requests: { cpu: '300m', memory: '64Mi' } }, shrink: { requests: { cpu: '100m', memory: '64Mi' } } });
    const a = actions(p, { grow: { requests: { cpu: '200m', memory: '64Mi' } }, shrink: { requests: { cpu: '200m', memory: '64Mi' } } });
    expect(a.containersToUpdate.cpu.map((u) => u.name)).toEqual(['shrink', 'grow']);
    expect(a.containersToUpdate.memory).toEqual([]);
    expect(a.containersToKill).toEqual([]);
    expect(a.containersToStart).toEqual([]);
    expect(a.updatePodResources).toBe(true);
    expect(isNoop(a)).toBe(false);
  });

  test('a resource whose resizePolicy is RestartContainer restarts the container', () => {
    const p = pod({ a: { requests: { memory: '128Mi' }, limits: { memory: '128Mi' } } }, { memory: 'RestartContainer', cpu: 'NotRequired' });
    const a = actions(p, { a: { requests: { memory: '64Mi' }, limits: { memory: '64Mi' } } });
    expect(a.containersToKill).toEqual([{ id: 'a-id', name: 'a', reason: 'Container a resize requires restart' }]);
    expect(a.containersToStart).toMatchObject([{ name: 'a', restartCount: 1, reason: 'container resize requires restart' }]);
    expect(a.containersToUpdate).toEqual({ memory: [], cpu: [] });
    // A cpu change of the same container with NotRequired is applied in place.
    const cpuOnly = actions(pod({ a: { requests: { cpu: '2', memory: '64Mi' }, limits: { memory: '64Mi' } } }, { memory: 'RestartContainer' }), { a: { requests: { cpu: '1', memory: '64Mi' }, limits: { memory: '64Mi' } } });
    expect(cpuOnly.containersToKill).toEqual([]);
    expect(cpuOnly.containersToUpdate.cpu).toHaveLength(1);
  });

  test('a running init container that is not a sidecar is resized in place while the pod initializes', () => {
    const p = pod({ main: {} });
    p.spec!.initContainers = [{ name: 'setup', image: 'busybox', resources: { limits: { cpu: '400m' } } }];
    const s = state(p);
    s.containers = [{ ...running(p, 'main'), name: 'setup', id: 'setup-id', hash: containerHash(p.spec!.initContainers[0]!) }];
    const a = computePodActions(p, s, { now, backoffPolicy: kubeletBackoff, crashBackoff: () => undefined, actuated: () => ({ limits: { cpu: '200m' } }) });
    expect(a.containersToUpdate.cpu).toMatchObject([{ id: 'setup-id', name: 'setup' }]);
    expect(a.containersToStart).toEqual([]);
    expect(a.containersToKill).toEqual([]);
  });

  test('in progress while a running container differs from its allocation', () => {
    const p = pod({ a: { requests: { cpu: '100m' } } });
    expect(resizeInProgress(p, () => true, () => ({ requests: { cpu: '200m' } }))).toBe(true);
    expect(resizeInProgress(p, () => true, () => ({ requests: { cpu: '0.1' } }))).toBe(false);
    expect(resizeInProgress(p, () => false, () => ({ requests: { cpu: '200m' } }))).toBe(false);
  });
});

test("kubelet's resize event message: containers' allocated resources, limits first, and the generation", () => {
  const p = pod({ c1: { requests: { memory: '100', cpu: '100m' }, limits: { cpu: '200m' } }, c2: {} });
  expect(resizeEventMessage('Pod resize completed', p, 2)).toBe(
    'Pod resize completed: {"containers":[{"name":"c1","resources":{"limits":{"cpu":"200m"},"requests":{"cpu":"100m","memory":"100"}}},{"name":"c2","resources":{}}],"generation":2}',
  );
  expect(resizeEventMessage('Pod resize Deferred', pod({ c: {} }), 3, 'no room')).toBe('Pod resize Deferred: {"containers":[{"name":"c","resources":{}}],"generation":3,"error":"no room"}');
});

describe('status resources', () => {
  const statusOf = (p: V1Pod, observed: Partial<ContainerObservation>, actuated?: V1ResourceRequirements) => {
    const s = state(p);
    s.containers = [running(p, 'c', observed)];
    return derivePodStatus({ pod: p, state: s, waitingReasons: new Map(), hostIP: '10.0.0.1', runtimeName: 'containerd', now: new Date(now), actuated: () => actuated }).containerStatuses![0]!;
  };

  test("a running container reports the runtime's values and the allocation's requests", () => {
    const p = pod({ c: { requests: { cpu: '150m', memory: '96Mi' }, limits: { cpu: '300m', memory: '192Mi' } } });
    const s = statusOf(p, { resources: { cpuShares: 102, cpuQuota: 20000, cpuPeriod: 100000, memoryLimitInBytes: 128 * 2 ** 20 } }, { requests: { memory: '64Mi' } });
    expect(s.allocatedResources).toEqual({ cpu: '150m', memory: '96Mi' });
    // Not yet applied: what the container has.
    expect(s.resources).toEqual({ requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } });
  });

  test('values the runtime cannot tell apart (at the minimum shares and quota) are reported as allocated', () => {
    const p = pod({ c: { requests: { cpu: '1m' }, limits: { cpu: '5m' } } });
    const s = statusOf(p, { resources: { cpuShares: 2, cpuQuota: 1000, cpuPeriod: 100000 } });
    expect(s.resources).toEqual({ requests: { cpu: '1m' }, limits: { cpu: '5m' } });
  });

  test('an exited container reports its allocation', () => {
    const p = pod({ c: { requests: { cpu: '1' } } });
    expect(statusOf(p, { state: 'exited', exitCode: 0, finishedAt: now }).resources).toEqual({ requests: { cpu: '1' } });
  });
});

describe('pod-level status resources by the minor served', () => {
  const podStatus = (p: V1Pod, featureGates?: ReturnType<typeof featureGatesOf>) =>
    derivePodStatus({ pod: p, state: state(p), waitingReasons: new Map(), hostIP: '10.0.0.1', runtimeName: 'containerd', now: new Date(now), ...(featureGates ? { featureGates } : {}) }) as V1PodStatus & {
      resources?: V1ResourceRequirements;
      allocatedResources?: Record<string, string>;
    };
  const p = pod({ c: { requests: { cpu: '150m', memory: '96Mi' }, limits: { memory: '192Mi' } } });

  test('1.36 and 1.37 (InPlacePodLevelResourcesVerticalScaling on) report the pod\'s resources and allocation', () => {
    for (const minor of [36, 37] as const) {
      const s = podStatus(p, featureGatesOf(minor));
      expect(s.allocatedResources).toEqual({ cpu: '150m', memory: '96Mi' });
      expect(s.resources).toEqual({ requests: { cpu: '150m', memory: '96Mi' }, limits: { memory: '192Mi' } });
    }
  });

  test('1.35 (the gate off) reports neither; the containers\' own resources stay', () => {
    const s = podStatus(p, featureGatesOf(35));
    expect(s).not.toHaveProperty('resources');
    expect(s).not.toHaveProperty('allocatedResources');
    expect(s.containerStatuses![0]!.allocatedResources).toEqual({ cpu: '150m', memory: '96Mi' });
  });

  test('without gates (standalone) the newest minor\'s apply', () => {
    expect(podStatus(p)).toEqual(podStatus(p, featureGatesOf(37)));
  });
});
