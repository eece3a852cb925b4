// The node lease controller against an in-memory lease store and a virtual clock: creation, renew timing, conflicts, back-off.
import type { V1Lease } from '@kubernetes/client-node';
import { ApiError, ApiUnavailableError, type ApiRequest } from '../../../src/kubeapi/client.js';
import type { Clock } from '../../../src/core/clock.js';
import { formatMicroTime, NodeLeaseController } from '../../../src/controllers/node-lease.js';
import { logger } from '../../../src/core/log.js';

const log = logger.child({});
log.level = 'silent';

interface Call {
  method: string;
  path: string;
  at: number;
  timeoutMs?: number;
  body?: V1Lease;
}

/** A lease store answering like kube-apiserver (resourceVersion checks), with a queue of injected failures. */
class FakeLeases {
  lease: V1Lease | undefined;
  calls: Call[] = [];
  failures: Array<{ method: string; error: Error }> = [];
  private rv = 1;

  constructor(private readonly clock: VirtualClock) {}

  async request<T>(req: ApiRequest): Promise<T> {
    const body = req.body as V1Lease | undefined;
    this.calls.push({ method: req.method, path: req.path, at: this.clock.t, ...(req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {}), ...(body ? { body: structuredClone(body) } : {}) });
    const i = this.failures.findIndex((f) => f.method === req.method);
    if (i >= 0) throw this.failures.splice(i, 1)[0]!.error;
    const copy = () => structuredClone(this.lease) as T;
    switch (req.method) {
      case 'GET':
        if (!this.lease) throw new ApiError(404, 'NotFound', 'leases.coordination.k8s.io "n1" not found');
        return copy();
      case 'POST':
        if (this.lease) throw new ApiError(409, 'AlreadyExists', 'exists');
        this.lease = { ...body!, metadata: { ...body!.metadata, uid: 'lease-uid', resourceVersion: String(this.rv++) } };
        return copy();
      case 'PUT':
        if (!this.lease) throw new ApiError(404, 'NotFound', 'not found');
        if (body!.metadata?.resourceVersion !== this.lease.metadata?.resourceVersion) throw new ApiError(409, 'Conflict', 'the object has been modified');
        this.lease = { ...body!, metadata: { ...body!.metadata, resourceVersion: String(this.rv++) } };
        return copy();
      default:
        throw new Error(`unexpected ${req.method}`);
    }
  }

  /** Someone else writes the lease (its resourceVersion moves on). */
  touch(): void {
    this.lease = { ...this.lease!, metadata: { ...this.lease!.metadata, resourceVersion: String(this.rv++) } };
  }
}

/** Virtual time: sleeping advances it at once; the test stops the controller after a number of sleeps. */
class VirtualClock implements Pick<Clock, 'now' | 'sleep'> {
  t = Date.parse('2025-01-01T00:00:00Z');
  sleeps: number[] = [];
  onSleep: (ms: number) => void = () => {};
  now = () => this.t;
  random = () => 0;
  async sleep(ms: number, signal: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    this.t += ms;
    this.onSleep(ms);
    await Promise.resolve(signal);
  }
}

function setup(nodeUID: () => string | undefined = () => 'node-uid') {
  const clock = new VirtualClock();
  const api = new FakeLeases(clock);
  const lease = new NodeLeaseController({ client: api, nodeName: 'n1', leaseDurationSeconds: 40, requestTimeoutMs: 8000, nodeUID, log, clock, random: () => clock.random() });
  /** Runs the controller until `renewals` renew-interval sleeps happened (the same controller may run again). */
  const runFor = async (renewals: number) => {
    const controller = new AbortController();
    let seen = 0;
    clock.onSleep = (ms) => {
      if (ms === 10_000 && ++seen >= renewals) controller.abort();
    };
    await lease.run(controller.signal);
  };
  return { clock, api, lease, runFor };
}

test('MicroTime has six fraction digits', () => {
  expect(formatMicroTime(new Date('2025-01-01T00:00:01.5Z'))).toBe('2025-01-01T00:00:01.500000Z');
});

test('creates the lease owned by the Node, then renews it by PUT every 10 s without reading it again', async () => {
  const { api, runFor, clock } = setup();
  const start = clock.t;
  await runFor(3);
  expect(api.calls.map((c) => `${c.method} ${(c.at - start) / 1000}`)).toEqual(['GET 0', 'POST 0', 'PUT 10', 'PUT 20']);
  const created = api.calls[1]!.body!;
  expect(api.calls[1]!.path).toBe('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases');
  expect(created.metadata).toEqual({
    name: 'n1',
    namespace: 'kube-node-lease',
    ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'node-uid' }],
  });
  expect(created.spec).toEqual({ holderIdentity: 'n1', leaseDurationSeconds: 40, renewTime: '2025-01-01T00:00:00.000000Z' });
  expect(api.lease?.spec?.renewTime).toBe('2025-01-01T00:00:20.000000Z');
  expect(api.calls[2]!.path).toBe('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1');
  expect(api.calls.every((c) => c.timeoutMs === 8000)).toBe(true);
});

test('the renew interval is a quarter of the lease duration plus up to 4% jitter', async () => {
  const { clock, api } = setup();
  clock.random = () => 0.5;
  const controller = new AbortController();
  clock.onSleep = () => controller.abort();
  await new NodeLeaseController({ client: api, nodeName: 'n1', leaseDurationSeconds: 60, requestTimeoutMs: 1000, nodeUID: () => 'u', log, clock, random: () => clock.random() }).run(controller.signal);
  expect(clock.sleeps).toEqual([15_000 * 1.02]);
});

test('no lease while the Node is not registered; created once it is', async () => {
  let uid: string | undefined;
  const { api, runFor } = setup(() => uid);
  await runFor(3);
  expect(api.lease).toBeUndefined();
  expect(api.calls.map((c) => c.method)).toEqual(['GET', 'GET', 'GET']);
  uid = 'node-uid';
  api.calls = [];
  await runFor(2);
  expect(api.calls.map((c) => c.method)).toEqual(['GET', 'POST', 'PUT']);
  expect(api.lease?.metadata?.ownerReferences?.[0]?.uid).toBe('node-uid');
});

test('an existing lease without an owner gets one on renewal; the holder and resourceVersion are kept', async () => {
  const { api, runFor } = setup();
  api.lease = { metadata: { name: 'n1', namespace: 'kube-node-lease', resourceVersion: '7' }, spec: { holderIdentity: 'n1', leaseDurationSeconds: 40 } };
  await runFor(1);
  expect(api.calls.map((c) => c.method)).toEqual(['GET', 'PUT']);
  expect(api.calls[1]!.body!.metadata?.resourceVersion).toBe('7');
  expect(api.lease?.metadata?.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'node-uid' }]);
});

test('a conflict re-reads the lease and updates from it', async () => {
  const { api, runFor, clock } = setup();
  await runFor(1);
  api.touch();
  await runFor(1);
  expect(api.calls.map((c) => c.method)).toEqual(['GET', 'POST', 'PUT', 'GET', 'PUT']);
  expect(api.lease?.spec?.renewTime).toBe(formatMicroTime(new Date(clock.t - 10_000)));
});

test('failures back off 200 ms doubling to 7 s while ensuring the lease', async () => {
  const { api, runFor, clock } = setup();
  for (let i = 0; i < 8; i++) api.failures.push({ method: 'GET', error: new ApiUnavailableError('GET lease: timed out') });
  await runFor(1);
  expect(clock.sleeps).toEqual([200, 400, 800, 1600, 3200, 6400, 7000, 7000, 10_000]);
  expect(api.calls.map((c) => c.method)).toEqual([...Array(9).fill('GET'), 'POST']);
});

test('a renewal failing 5 times falls back to reading the lease, then renews', async () => {
  const { api, runFor } = setup();
  await runFor(1);
  api.calls = [];
  for (let i = 0; i < 5; i++) api.failures.push({ method: 'PUT', error: new ApiUnavailableError('PUT lease: timed out') });
  await runFor(1);
  expect(api.calls.map((c) => c.method)).toEqual(['PUT', 'PUT', 'PUT', 'PUT', 'PUT', 'GET', 'PUT']);
  expect(api.lease?.spec?.renewTime).toBe(api.calls[6]!.body!.spec!.renewTime);
});

test('a deleted lease is created again', async () => {
  const { api, runFor } = setup();
  await runFor(1);
  api.lease = undefined;
  api.calls = [];
  await runFor(1);
  expect(api.calls.map((c) => c.method)).toEqual(['PUT', 'PUT', 'PUT', 'PUT', 'PUT', 'GET', 'POST']);
  expect(api.lease).toBeDefined();
});
