// The Node as kubelet's status setters build it: capacity/allocatable arithmetic, nodeInfo, conditions and their transitions, patches.
import type { V1Node, V1NodeStatus } from '@kubernetes/client-node';
import { aggregateMessage } from '../../../src/core/sync-result.js';
import {
  formatTime,
  initialNode,
  isNodeReady,
  nodeConditionEvents,
  nodeConditions,
  nodeImages,
  nodeStatusHasChanged,
  nodeStatusPatch,
  reconcileOwnedLabels,
  RuntimeState,
  setNodeStatus,
  type NodeStatusInputs,
} from '../../../src/controllers/node-status.js';
import { defaultReservation, machine } from '../fakes/machine.js';


const ready = {
  conditions: [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ],
};

function inputs(over: Partial<NodeStatusInputs> = {}): NodeStatusInputs {
  return {
    nodeName: 'n1',
    hostname: 'n1',
    nodeIP: '192.0.2.10',
    machine,
    kubeletVersion: 'v1.37.0+nodelet.0.1.0',
    kubeletPort: 10250,
    maxPods: 110,
    reservation: defaultReservation,
    runtime: { name: 'containerd', version: '1.6.20~ds1' },
    readyErrors: [],
    runtimeHandlers: undefined,
    runtimeFeatures: undefined,
    images: undefined,
    maxImages: 50,
    ...over,
  };
}

const t0 = new Date('2025-01-01T00:00:00.123Z');
const t1 = new Date('2025-01-01T00:00:10.456Z');
const t2 = new Date('2025-01-01T00:00:20Z');
const condition = (node: V1Node, type: string) => nodeConditions(node).find((c) => c.type === type)!;

describe('initialNode', () => {
  test('labels, addresses, nodeInfo, daemon endpoints and the four conditions', () => {
    const node = initialNode(inputs(), { taints: [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }], providerID: 'nodelet://n1' }, t0);
    expect(node.metadata).toEqual({
      name: 'n1',
      labels: {
        'kubernetes.io/hostname': 'n1',
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/arch': 'amd64',
      },
    });
    expect(node.spec).toEqual({ taints: [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }], providerID: 'nodelet://n1' });
    expect(node.status?.addresses).toEqual([
      { type: 'InternalIP', address: '192.0.2.10' },
      { type: 'Hostname', address: 'n1' },
    ]);
    expect(node.status?.nodeInfo).toEqual({
      machineID: machine.machineID,
      systemUUID: '',
      bootID: machine.bootID,
      kernelVersion: '6.1.0-13-amd64',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      containerRuntimeVersion: 'containerd://1.6.20~ds1',
      kubeletVersion: 'v1.37.0+nodelet.0.1.0',
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: 'amd64',
    });
    // The JSON field is "Port" (capital P) in the API.
    expect(JSON.parse(JSON.stringify(node.status?.daemonEndpoints))).toEqual({ kubeletEndpoint: { Port: 10250 } });
    expect(node.status?.capacity?.pods).toBe('110');
    const at = '2025-01-01T00:00:00Z';
    expect(nodeConditions(node)).toEqual([
      { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available', lastHeartbeatTime: at, lastTransitionTime: at },
      { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure', lastHeartbeatTime: at, lastTransitionTime: at },
      { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available', lastHeartbeatTime: at, lastTransitionTime: at },
      { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status', lastHeartbeatTime: at, lastTransitionTime: at },
    ]);
    expect(isNodeReady(node)).toBe(true);
  });

  test('no taints or providerID: an empty spec (podCIDR is the controller manager\'s)', () => {
    expect(initialNode(inputs(), { taints: [], providerID: '' }, t0).spec).toEqual({});
  });
});

describe('RuntimeState and the Ready message', () => {
  test('before the first check: status check not completed and network state unknown', () => {
    const s = new RuntimeState();
    expect(s.readyErrors(0)).toEqual(['container runtime status check may not have completed yet', 'network state unknown']);
    expect(aggregateMessage(s.readyErrors(0))).toBe('[container runtime status check may not have completed yet, network state unknown]');
  });

  test('network not ready: the CRI condition printed as kubelet prints it', () => {
    const s = new RuntimeState();
    s.update(
      {
        conditions: [
          { type: 'RuntimeReady', status: true, reason: '', message: '' },
          { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' },
        ],
      },
      1000,
    );
    expect(aggregateMessage(s.readyErrors(2000))).toBe(
      'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized',
    );
    expect(s.networkErrors()).toHaveLength(1);
  });

  test('runtime not ready, a missing condition, and a runtime silent for 30 s', () => {
    const s = new RuntimeState();
    s.update({ conditions: [{ type: 'RuntimeReady', status: false, reason: 'Boom', message: 'down' }] }, 0);
    expect(s.readyErrors(0)).toEqual([
      'container runtime status check may not have completed yet',
      'container runtime not ready: RuntimeReady=false reason:Boom message:down',
      'container runtime network not ready: <nil>',
    ]);
    s.update(ready, 1000);
    expect(s.readyErrors(30_999)).toEqual([]);
    expect(s.readyErrors(31_000)).toEqual(['container runtime is down']);
  });

  test('aggregate messages are deduplicated', () => {
    expect(aggregateMessage(['a'])).toBe('a');
    expect(aggregateMessage(['a', 'b', 'a'])).toBe('[a, b]');
  });
});

describe('setNodeStatus transitions', () => {
  test('NotReady with the reason, then Ready: transition time moves only for Ready; heartbeats always', () => {
    const notReady = initialNode(inputs({ readyErrors: ['container runtime is down'] }), { taints: [], providerID: '' }, t0);
    expect(condition(notReady, 'Ready')).toMatchObject({ status: 'False', reason: 'KubeletNotReady', message: 'container runtime is down' });

    const readyNode = setNodeStatus(notReady, inputs(), t1);
    expect(condition(readyNode, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'KubeletReady',
      lastHeartbeatTime: formatTime(t1),
      lastTransitionTime: formatTime(t1),
    });
    expect(condition(readyNode, 'MemoryPressure')).toMatchObject({ lastHeartbeatTime: formatTime(t1), lastTransitionTime: formatTime(t0) });

    const later = setNodeStatus(readyNode, inputs(), t2);
    expect(condition(later, 'Ready')).toMatchObject({ lastHeartbeatTime: formatTime(t2), lastTransitionTime: formatTime(t1) });
    expect(nodeStatusHasChanged(readyNode.status, later.status)).toBe(false);
    expect(nodeStatusHasChanged(notReady.status, readyNode.status)).toBe(true);
  });

  test('a NotReady message change is a change without a transition', () => {
    const a = initialNode(inputs({ readyErrors: ['container runtime is down'] }), { taints: [], providerID: '' }, t0);
    const b = setNodeStatus(a, inputs({ readyErrors: ['network state unknown'] }), t1);
    expect(condition(b, 'Ready')).toMatchObject({ status: 'False', message: 'network state unknown', lastTransitionTime: formatTime(t0) });
    expect(nodeStatusHasChanged(a.status, b.status)).toBe(true);
  });

  test("a condition set by someone else (Unknown from the node lifecycle controller) transitions; others' conditions stay, Ready last", () => {
    const base = initialNode(inputs(), { taints: [], providerID: '' }, t0);
    const conditions = nodeConditions(base).map((c) => (c.type === 'Ready' || c.type === 'DiskPressure' ? { ...c, status: 'Unknown', reason: 'NodeStatusUnknown' } : c));
    const lost: V1Node = {
      ...base,
      status: { ...base.status, conditions: [{ type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated' }, ...conditions] as never },
    };
    const back = setNodeStatus(lost, inputs(), t1);
    expect(nodeConditions(back).map((c) => c.type)).toEqual(['NetworkUnavailable', 'MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready']);
    expect(condition(back, 'Ready')).toMatchObject({ status: 'True', reason: 'KubeletReady', lastTransitionTime: formatTime(t1) });
    expect(condition(back, 'DiskPressure')).toMatchObject({ status: 'False', reason: 'KubeletHasNoDiskPressure', lastTransitionTime: formatTime(t1) });
    expect(condition(back, 'MemoryPressure')).toMatchObject({ lastTransitionTime: formatTime(t0) });
  });

  test("extended resources others advertise stay in capacity and allocatable; the runtime version stays until known", () => {
    const base = initialNode(inputs(), { taints: [], providerID: '' }, t0);
    const withGpu: V1Node = { ...base, status: { ...base.status, capacity: { ...base.status!.capacity, 'example.com/gpu': '2' } } };
    const next = setNodeStatus(withGpu, inputs({ runtime: undefined }), t1);
    expect(next.status?.capacity?.['example.com/gpu']).toBe('2');
    expect(next.status?.allocatable?.['example.com/gpu']).toBe('2');
    expect(next.status?.nodeInfo?.containerRuntimeVersion).toBe('containerd://1.6.20~ds1');
    expect(setNodeStatus({ metadata: { name: 'n1' } }, inputs({ runtime: undefined }), t1).status?.nodeInfo?.containerRuntimeVersion).toBe('');
  });
});

test('images: largest first, at most nodeStatusMaxImages, up to 5 names with digests first', () => {
  const images = [
    { id: 'a', repoTags: ['small:1'], repoDigests: [], size: 10, username: '' },
    { id: 'b', repoTags: ['big:1', 'big:2', 'big:3', 'big:4'], repoDigests: ['big@sha256:1', 'big@sha256:2'], size: 1000, username: '' },
    { id: 'c', repoTags: ['mid:1'], repoDigests: [], size: 100, username: '' },
  ];
  expect(nodeImages(images, 2)).toEqual([
    { names: ['big@sha256:1', 'big@sha256:2', 'big:1', 'big:2', 'big:3'], sizeBytes: 1000 },
    { names: ['mid:1'], sizeBytes: 100 },
  ]);
  expect(nodeImages(images, -1)).toHaveLength(3);
  const node = initialNode(inputs({ images, maxImages: 1 }), { taints: [], providerID: '' }, t0);
  expect(node.status?.images).toHaveLength(1);
});

describe('nodeStatusPatch', () => {
  const base = initialNode(inputs(), { taints: [], providerID: '' }, t0);

  test('a heartbeat patches only the conditions (merged by type on the server)', () => {
    const next = setNodeStatus(base, inputs(), t1);
    const patch = nodeStatusPatch(base.status, next.status!);
    expect(Object.keys(patch.status)).toEqual(['conditions']);
    expect(patch.status.conditions).toHaveLength(4);
  });

  test('changed addresses replace the list; changed resources patch by key; nodeInfo as a whole', () => {
    const next = setNodeStatus(base, inputs({ nodeIP: '192.0.2.11', maxPods: 50, kubeletVersion: 'v1.37.0+nodelet.0.2.0' }), t1);
    const patch = nodeStatusPatch(base.status, next.status!);
    expect(patch.status.addresses).toEqual([
      { type: 'InternalIP', address: '192.0.2.11' },
      { type: 'Hostname', address: 'n1' },
      { $patch: 'replace' },
    ]);
    expect(patch.status.capacity).toEqual({ pods: '50' });
    expect(patch.status.allocatable).toEqual({ pods: '50' });
    expect((patch.status.nodeInfo as { kubeletVersion: string }).kubeletVersion).toBe('v1.37.0+nodelet.0.2.0');
    expect(patch.status).not.toHaveProperty('daemonEndpoints');
  });

  test('a status without addresses gets them without a replace directive; quantities equal in value are no change', () => {
    const bare: V1NodeStatus = { ...base.status, addresses: [] };
    expect(nodeStatusPatch(bare, base.status!).status.addresses).toEqual(base.status!.addresses);
    const respelled: V1NodeStatus = { ...base.status, capacity: { ...base.status!.capacity, memory: `${24684096 * 1024}` } };
    expect(nodeStatusHasChanged(respelled, base.status)).toBe(false);
  });
});

test("adopting an existing node: only kubelet's own labels are reconciled", () => {
  const wanted = initialNode(inputs(), { taints: [], providerID: '' }, t0);
  const existing: V1Node = {
    metadata: { name: 'n1', labels: { 'kubernetes.io/hostname': 'old', 'kubernetes.io/os': 'linux', 'team': 'a' } },
  };
  expect(reconcileOwnedLabels(existing, wanted)).toEqual({
    'kubernetes.io/hostname': 'n1',
    'kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'beta.kubernetes.io/arch': 'amd64',
  });
  expect(reconcileOwnedLabels(wanted, wanted)).toBeUndefined();
});

test("node events as kubelet's setters record them: new or changed pressure conditions, Ready only when it changes", () => {
  const notReady = initialNode(inputs({ readyErrors: ['container runtime is down'] }), { taints: [], providerID: '' }, t0);
  expect(nodeConditionEvents(undefined, notReady)).toEqual(['NodeHasSufficientMemory', 'NodeHasNoDiskPressure', 'NodeHasSufficientPID']);
  const readyNode = setNodeStatus(notReady, inputs(), t1);
  expect(nodeConditionEvents(notReady, readyNode)).toEqual(['NodeReady']);
  expect(nodeConditionEvents(readyNode, setNodeStatus(readyNode, inputs(), t2))).toEqual([]);
  expect(nodeConditionEvents(readyNode, setNodeStatus(readyNode, inputs({ readyErrors: ['x'] }), t2))).toEqual(['NodeNotReady']);
});

describe('runtime features and handlers (kubelet\'s NodeFeatures and RuntimeHandlers setters)', () => {
  const containerd = {
    ...ready,
    handlers: [
      { name: '', recursiveReadOnlyMounts: true, userNamespaces: true },
      { name: 'runc', recursiveReadOnlyMounts: true, userNamespaces: true },
    ],
    features: { supplementalGroupsPolicy: true },
  };

  test('the runtime\'s last Status: features and every handler, userNamespaces only where the kernel mounts tmpfs idmapped (not this 6.1)', () => {
    const state = new RuntimeState();
    expect([state.handlers(), state.features()]).toEqual([undefined, undefined]);
    state.update(containerd, 0);
    const node = initialNode(inputs({ runtimeHandlers: state.handlers(), runtimeFeatures: state.features() }), { taints: [], providerID: '' }, t0);
    expect(node.status!.features).toEqual({ supplementalGroupsPolicy: true });
    expect(node.status!.runtimeHandlers).toEqual([
      { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: false } },
      { name: 'runc', features: { recursiveReadOnlyMounts: true, userNamespaces: false } },
    ]);
    // A runtime that does not tell its features (before CRI 1.31) leaves the last ones; one without handlers lists none.
    state.update(ready, 1);
    expect([state.handlers(), state.features()]).toEqual([[], { supplementalGroupsPolicy: true }]);
    const later = setNodeStatus(node, inputs({ runtimeHandlers: state.handlers(), runtimeFeatures: state.features() }), t1);
    expect(later.status!.runtimeHandlers).toBeUndefined();
    expect(later.status!.features).toEqual({ supplementalGroupsPolicy: true });
  });

  test('before the runtime answered both are left as they are; a change is patched', () => {
    const node = initialNode(inputs({ runtimeHandlers: containerd.handlers, runtimeFeatures: containerd.features }), { taints: [], providerID: '' }, t0);
    const unknown = setNodeStatus(node, inputs(), t1);
    expect(unknown.status!.features).toEqual(node.status!.features);
    expect(unknown.status!.runtimeHandlers).toEqual(node.status!.runtimeHandlers);
    const without = setNodeStatus(node, inputs({ runtimeFeatures: { supplementalGroupsPolicy: false }, runtimeHandlers: [{ name: '', recursiveReadOnlyMounts: false, userNamespaces: false }] }), t1);
    const patch = nodeStatusPatch(node.status, without.status!).status;
    expect(patch.features).toEqual({ supplementalGroupsPolicy: false });
    expect(patch.runtimeHandlers).toEqual([{ name: '', features: { recursiveReadOnlyMounts: false, userNamespaces: false } }]);
  });
});
