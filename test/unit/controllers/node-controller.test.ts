// NodeController against an in-memory Node store and a virtual clock: registration, adoption, status patches, pod CIDR.
import type { V1Node } from '@kubernetes/client-node';
import { ApiError, ApiUnavailableError, mergePatch, strategicMergePatch, type ApiRequest } from '../../../src/kubeapi/client.js';
import { NodeController, type NodeControllerSettings } from '../../../src/controllers/node-controller.js';
import type { Clock } from '../../../src/core/clock.js';
import { isNodeReady, nodeConditions } from '../../../src/controllers/node-status.js';
import { defaultKubeletConfiguration } from '../../../src/agent/kubelet-config.js';
import type { RuntimeStatus } from '../../../src/cri/types.js';
import type { MachineInfo } from '../../../src/host/machine-info.js';
import { logger } from '../../../src/core/log.js';
import { applyJsonMergePatch, applyStrategicMergePatch } from '../fakes/patch.js';

const log = logger.child({});
log.level = 'silent';

/** Virtual time with real timer semantics: sleeps wait until the test advances the clock past them. */
class VirtualClock implements Pick<Clock, 'now' | 'sleep'> {
  t = Date.parse('2025-01-01T00:00:00Z');
  private timers: Array<{ at: number; resolve: () => void }> = [];
  now = () => this.t;
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const timer = { at: this.t + ms, resolve };
      this.timers.push(timer);
      signal.addEventListener('abort', () => {
        this.timers = this.timers.filter((t) => t !== timer);
        resolve();
      }, { once: true });
    });
  }
  /** Advances time by `ms`, firing due timers in order and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    await settle();
    for (;;) {
      const next = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.t = Math.max(this.t, next.at);
      next.resolve();
      await settle();
    }
    this.t = end;
  }
}

const settle = () => new Promise((r) => setTimeout(r, 5));

interface Call {
  method: string;
  path: string;
  at: number;
  contentType?: string;
  query?: ApiRequest['query'];
  timeoutMs?: number;
  body?: unknown;
}

/** A Node store answering like kube-apiserver for the requests NodeController makes. */
class FakeNodes {
  node: V1Node | undefined;
  calls: Call[] = [];
  failures: Array<{ method: string; error: Error }> = [];
  private rv = 1;
  constructor(private readonly clock: VirtualClock) {}

  async request<T>(req: ApiRequest): Promise<T> {
    this.calls.push({
      method: req.method,
      path: req.path,
      at: this.clock.t,
      ...(req.contentType ? { contentType: req.contentType } : {}),
      ...(req.query ? { query: req.query } : {}),
      ...(req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {}),
      ...(req.body !== undefined ? { body: structuredClone(req.body) } : {}),
    });
    const i = this.failures.findIndex((f) => f.method === req.method);
    if (i >= 0) throw this.failures.splice(i, 1)[0]!.error;
    const out = () => structuredClone(this.node) as T;
    const bump = () => (this.node!.metadata!.resourceVersion = String(this.rv++));
    if (req.method === 'POST' && req.path === '/api/v1/nodes') {
      if (this.node) throw new ApiError(409, 'AlreadyExists', 'nodes "n1" already exists');
      this.node = { ...(structuredClone(req.body) as V1Node) };
      this.node.metadata!.uid = 'node-uid';
      bump();
      return out();
    }
    if (!this.node) throw new ApiError(404, 'NotFound', 'nodes "n1" not found');
    if (req.method === 'GET' && req.path === '/api/v1/nodes/n1') return out();
    if (req.method === 'PATCH' && req.path === '/api/v1/nodes/n1' && req.contentType === mergePatch) {
      this.node = applyJsonMergePatch(this.node, req.body) as V1Node;
      bump();
      return out();
    }
    if (req.method === 'PATCH' && req.path === '/api/v1/nodes/n1/status' && req.contentType === strategicMergePatch) {
      const patched = applyStrategicMergePatch(this.node as Record<string, unknown>, req.body as Record<string, unknown>, 'Node') as V1Node;
      this.node = { ...this.node, status: patched.status! };
      bump();
      return out();
    }
    throw new Error(`unexpected ${req.method} ${req.path}`);
  }
}

const machine: MachineInfo = {
  machineID: 'm',
  systemUUID: 'u',
  bootID: 'b',
  kernelVersion: '6.1.0',
  osImage: 'Debian GNU/Linux 12 (bookworm)',
  architecture: 'amd64',
  numCores: 2,
  memoryCapacityBytes: 8n * 1024n ** 3n,
  hugePages: [],
  rootFsCapacityBytes: 100n * 1024n ** 3n,
};
const runtimeReady: RuntimeStatus = {
  conditions: [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ],
};
const networkNotReady: RuntimeStatus = {
  conditions: [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'cni plugin not initialized' },
  ],
};

function setup(over: Partial<NodeControllerSettings> = {}, applyPodCIDR?: (cidr: string) => Promise<void>, nodeIP?: () => Promise<string>) {
  const clock = new VirtualClock();
  const api = new FakeNodes(clock);
  const runtime = {
    current: runtimeReady,
    async version() {
      return { version: '0.1.0', runtimeName: 'containerd', runtimeVersion: '1.6.20~ds1', runtimeApiVersion: 'v1' };
    },
    async status(): Promise<RuntimeStatus> {
      return runtime.current;
    },
    async listImages() {
      return [{ id: 'i', repoTags: ['localhost/nodelet/busybox:1.35'], repoDigests: [], size: 1000, username: '' }];
    },
  };
  const config = defaultKubeletConfiguration();
  const settings: NodeControllerSettings = {
    nodeName: 'n1',
    hostname: 'n1',
    nodeIP: '192.0.2.10',
    kubeletVersion: 'v1.37.0+nodelet.0.1.0',
    kubeletPort: 10250,
    maxPods: 110,
    maxImages: 50,
    reservation: { systemReserved: {}, kubeReserved: {}, evictionHard: config.evictionHard },
    registerNode: true,
    registration: { taints: [], providerID: '' },
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    requestTimeoutMs: 8_000,
    ...over,
  };
  const events: string[] = [];
  const controller = new NodeController({
    client: api,
    runtime,
    settings,
    recordNodeEvent: (reason, message) => events.push(`${reason}: ${message}`),
    machineInfo: async () => machine,
    ...(applyPodCIDR ? { applyPodCIDR: (cidr: string) => applyPodCIDR(cidr) } : {}),
    ...(nodeIP ? { nodeIP } : {}),
    log,
    clock,
  });
  const stop = new AbortController();
  const done = controller.run(stop.signal);
  const finish = async () => {
    stop.abort();
    await done;
  };
  return { clock, api, runtime, controller, finish, events };
}

const writes = (calls: Call[]) => calls.filter((c) => c.method !== 'GET').map((c) => `${c.method} ${c.path}`);

test('registers the Node Ready with its status, then reads it every 10 s and patches only when something changed', async () => {
  const { clock, api, controller, finish } = setup();
  const registered = await controller.whenRegistered();
  expect(registered.metadata?.uid).toBe('node-uid');
  expect(controller.registered).toBe(true);
  expect(controller.uid).toBe('node-uid');
  expect(isNodeReady(api.node)).toBe(true);
  expect(api.node?.status?.nodeInfo?.containerRuntimeVersion).toBe('containerd://1.6.20~ds1');
  expect(api.calls[0]).toMatchObject({ method: 'POST', path: '/api/v1/nodes', timeoutMs: 8000 });

  await clock.advance(60_000);
  // Reads: one right after registration, then one per period; the images appeared, so one patch.
  const gets = api.calls.filter((c) => c.method === 'GET');
  expect(gets).toHaveLength(7);
  expect(gets[0]!.query).toEqual({ resourceVersion: '0' });
  expect(writes(api.calls)).toEqual(['POST /api/v1/nodes', 'PATCH /api/v1/nodes/n1/status']);
  expect(api.node?.status?.images).toEqual([{ names: ['localhost/nodelet/busybox:1.35'], sizeBytes: 1000 }]);
  await finish();
});

test('reports at least every nodeStatusReportFrequency even without change', async () => {
  const { clock, api, controller, finish } = setup({ nodeStatusReportFrequencyMs: 60_000 });
  await controller.whenRegistered();
  await clock.advance(10_000);
  api.calls = [];
  await clock.advance(120_000);
  const patches = api.calls.filter((c) => c.method === 'PATCH');
  expect(patches.map((c) => Object.keys((c.body as { status: object }).status))).toEqual([['conditions'], ['conditions']]);
  expect(patches[1]!.at - patches[0]!.at).toBe(60_000);
  await finish();
});

test('a readiness change of the runtime is patched at once, with the CRI condition in the message', async () => {
  const { clock, api, runtime, controller, finish, events } = setup();
  await controller.whenRegistered();
  await clock.advance(10_000);
  api.calls = [];
  runtime.current = networkNotReady;
  // The next runtime check is at most 5 s away; the patch follows it, not the 10 s period.
  await clock.advance(5_000);
  expect(writes(api.calls)).toEqual(['PATCH /api/v1/nodes/n1/status']);
  const ready = nodeConditions(api.node).find((c) => c.type === 'Ready')!;
  expect(ready).toMatchObject({
    status: 'False',
    reason: 'KubeletNotReady',
    message: 'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized',
  });
  expect(controller.runtimeState.networkErrors()).toHaveLength(1);
  runtime.current = runtimeReady;
  await clock.advance(5_000);
  expect(isNodeReady(api.node)).toBe(true);
  expect(events).toEqual([
    'NodeHasSufficientMemory: Node n1 status is now: NodeHasSufficientMemory',
    'NodeHasNoDiskPressure: Node n1 status is now: NodeHasNoDiskPressure',
    'NodeHasSufficientPID: Node n1 status is now: NodeHasSufficientPID',
    'NodeNotReady: Node n1 status is now: NodeNotReady',
    'NodeReady: Node n1 status is now: NodeReady',
  ]);
  await finish();
});

test("adopts an existing Node: reconciles only its own labels, keeps podCIDR, taints and others' labels", async () => {
  const s = setup();
  // The Node left by an earlier run, changed by others meanwhile (set before the controller's first request).
  s.api.node = {
    metadata: { name: 'n1', uid: 'old-uid', resourceVersion: '5', labels: { 'kubernetes.io/hostname': 'stale', team: 'a' } },
    spec: { podCIDR: '10.244.3.0/24', taints: [{ key: 'k', effect: 'NoSchedule' }] },
    status: {},
  };
  const adopted = await s.controller.whenRegistered();
  expect(adopted.metadata?.uid).toBe('old-uid');
  expect(writes(s.api.calls)).toEqual(['POST /api/v1/nodes', 'PATCH /api/v1/nodes/n1']);
  expect(s.api.calls.find((c) => c.method === 'PATCH')!.body).toEqual({
    metadata: {
      labels: {
        'kubernetes.io/hostname': 'n1',
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/arch': 'amd64',
      },
    },
  });
  expect(s.api.node?.metadata?.labels?.team).toBe('a');
  expect(s.api.node?.spec).toEqual({ podCIDR: '10.244.3.0/24', taints: [{ key: 'k', effect: 'NoSchedule' }] });
  // Adoption wrote no status: the first status update reports it at once.
  await s.clock.advance(1_000);
  expect(isNodeReady(s.api.node)).toBe(true);
  expect(s.controller.podCIDR).toBe('10.244.3.0/24');
  await s.finish();
});

test('registration retries with back-off (100 ms doubling to 7 s) while the API server is unreachable', async () => {
  const s = setup();
  for (let i = 0; i < 7; i++) s.api.failures.push({ method: 'POST', error: new ApiUnavailableError('POST /api/v1/nodes: timed out') });
  await s.clock.advance(30_000);
  const posts = s.api.calls.filter((c) => c.method === 'POST').map((c) => c.at - s.api.calls[0]!.at);
  expect(posts).toEqual([0, 100, 300, 700, 1500, 3100, 6300, 12_700]);
  expect(s.controller.registered).toBe(true);
  await s.finish();
});

test('Node.spec.podCIDR set by a controller manager reconfigures the pod network once and is reported at once', async () => {
  const applied: string[] = [];
  const s = setup({ initialPodCIDR: '10.99.0.0/24' }, async (cidr) => {
    applied.push(cidr);
  });
  await s.controller.whenRegistered();
  await s.clock.advance(10_000);
  s.api.node!.spec = { podCIDR: '10.244.7.0/24' };
  s.api.calls = [];
  await s.clock.advance(30_000);
  expect(applied).toEqual(['10.244.7.0/24']);
  expect(s.controller.podCIDR).toBe('10.244.7.0/24');
  expect(writes(s.api.calls)).toEqual(['PATCH /api/v1/nodes/n1/status']);
  await s.finish();
});

test("a network that waits for the podCIDR: NotReady with kubelet's message until then; the watched podCIDR is applied and reported Ready at once", async () => {
  // As containerd with a conf_template: its network is not ready until the pod CIDR has been applied.
  const s = setup({}, async () => {
    s.runtime.current = runtimeReady;
  });
  s.runtime.current = networkNotReady;
  await s.controller.whenRegistered();
  await s.clock.advance(1_000);
  expect(isNodeReady(s.api.node)).toBe(false);
  expect(nodeConditions(s.api.node).find((c) => c.type === 'Ready')!.message).toBe(
    'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized',
  );
  s.api.calls = [];
  // The node IPAM controller sets the podCIDR; the Node watch sees it well before the next 10 s status period.
  s.api.node!.spec = { podCIDR: '10.244.7.0/24' };
  s.controller.nodeObserved(s.api.node!);
  await s.clock.advance(0);
  expect(s.controller.podCIDR).toBe('10.244.7.0/24');
  expect(isNodeReady(s.api.node)).toBe(true);
  expect(s.api.calls.map((c) => c.at)).toEqual(s.api.calls.map(() => s.api.calls[0]!.at));
  expect(writes(s.api.calls)).toEqual(['PATCH /api/v1/nodes/n1/status']);
  // Seen again (any later watch event), an applied podCIDR wakes nothing.
  s.api.calls = [];
  s.controller.nodeObserved(s.api.node!);
  await s.clock.advance(0);
  expect(s.api.calls).toEqual([]);
  await s.finish();
});

test("the node's addresses are determined again at every status update: a new InternalIP is patched; none keeps the last", async () => {
  let ip: string | Error = '192.0.2.10';
  const s = setup({}, undefined, async () => {
    if (ip instanceof Error) throw ip;
    return ip;
  });
  await s.controller.whenRegistered();
  expect(s.api.node?.status?.addresses).toEqual([{ type: 'InternalIP', address: '192.0.2.10' }, { type: 'Hostname', address: 'n1' }]);
  await s.clock.advance(10_000);
  ip = '192.0.2.11';
  s.api.calls = [];
  await s.clock.advance(10_000);
  expect(writes(s.api.calls)).toEqual(['PATCH /api/v1/nodes/n1/status']);
  expect(s.api.node?.status?.addresses).toEqual([{ type: 'InternalIP', address: '192.0.2.11' }, { type: 'Hostname', address: 'n1' }]);
  // kubelet's setter error: the addresses are left as they are, and nothing is patched for it.
  ip = new Error('failed to validate nodeIP: node IP: "192.0.2.11" not found in the host\'s network interfaces');
  s.api.calls = [];
  await s.clock.advance(30_000);
  expect(writes(s.api.calls)).toEqual([]);
  expect(s.api.node?.status?.addresses).toEqual([{ type: 'InternalIP', address: '192.0.2.11' }, { type: 'Hostname', address: 'n1' }]);
  await s.finish();
});

test('a refused pod CIDR is retried after 10 s, then backing off, without forcing patches; a new one is tried at once', async () => {
  const attempts: Array<{ cidr: string; at: number }> = [];
  let refuse = true;
  const s = setup({}, async (cidr) => {
    attempts.push({ cidr, at: s.clock.now() });
    if (refuse) throw new Error('overlaps host routes');
  });
  await s.controller.whenRegistered();
  await s.clock.advance(10_000);
  s.api.node!.spec = { podCIDR: '192.0.2.0/24' };
  s.api.calls = [];
  const start = s.clock.now();
  await s.clock.advance(80_000);
  // Tries at the next status updates 10 s, 20 s and 40 s apart (each on a 10 s status period).
  const gaps = attempts.map((a) => a.at - start);
  expect(gaps).toEqual([gaps[0], gaps[0]! + 10_000, gaps[0]! + 30_000, gaps[0]! + 70_000]);
  expect(writes(s.api.calls)).toEqual([]);
  attempts.length = 0;
  refuse = false;
  s.api.node!.spec = { podCIDR: '198.51.100.0/24' };
  await s.clock.advance(10_000);
  expect(attempts.map((a) => a.cidr)).toEqual(['198.51.100.0/24']);
  await s.finish();
});

test('registerNode false: no POST; the status of an existing Node is kept up to date', async () => {
  const s = setup({ registerNode: false });
  await s.clock.advance(10_000);
  expect(s.controller.registered).toBe(false);
  s.api.node = { metadata: { name: 'n1', uid: 'admin-made' }, spec: {}, status: {} };
  await s.clock.advance(10_000);
  expect(s.controller.uid).toBe('admin-made');
  expect(writes(s.api.calls)).toEqual(['PATCH /api/v1/nodes/n1/status']);
  expect(isNodeReady(s.api.node)).toBe(true);
  await s.finish();
});
