// Status manager against a fake API client: coalesced writes, conflicts re-read, terminal guard, final write then delete, mirror pods.
import { pino } from 'pino';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { ApiError, type ApiRequest } from '../../../src/kubeapi/client.js';
import { StatusManager } from '../../../src/controllers/status-manager.js';

const log = pino({ level: 'silent' });

const apiPod = (status: V1PodStatus = { phase: 'Pending' }, extra: Partial<V1Pod['metadata']> = {}): V1Pod => ({
  metadata: { name: 'web', namespace: 'ns', uid: 'u1', resourceVersion: '10', ...extra },
  spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox' }] },
  status,
});

const running: V1PodStatus = { phase: 'Running', podIP: '10.99.0.7', conditions: [{ type: 'Ready', status: 'True' }] };
const creating: V1PodStatus = { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }] };

type Handler = (req: ApiRequest) => Promise<unknown>;

/** Records requests; PATCH applies the patch's status fields to the stored pod (enough for these tests). */
class FakeClient {
  readonly requests: ApiRequest[] = [];
  stored: V1Pod;
  private rv = 10;
  handlers: Handler[] = [];
  gate?: Promise<void>;

  constructor(pod: V1Pod) {
    this.stored = structuredClone(pod);
  }

  async request<T>(req: ApiRequest): Promise<T> {
    this.requests.push(req);
    const custom = this.handlers.shift();
    if (custom) return (await custom(req)) as T;
    if (this.gate) await this.gate;
    if (req.method === 'PATCH') {
      const body = req.body as { status: Record<string, unknown> };
      this.stored = { ...this.stored, metadata: { ...this.stored.metadata, resourceVersion: String(++this.rv) }, status: { ...this.stored.status, ...body.status } as V1PodStatus };
      return structuredClone(this.stored) as T;
    }
    if (req.method === 'GET') return structuredClone(this.stored) as T;
    return {} as T;
  }

  patches(): { path: string; body: { metadata: { uid: string }; status: Record<string, unknown> } }[] {
    return this.requests.filter((r) => r.method === 'PATCH').map((r) => ({ path: r.path, body: r.body as { metadata: { uid: string }; status: Record<string, unknown> } }));
  }
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('StatusManager', () => {
  it('writes the latest status with one write in flight: rapid changes coalesce', async () => {
    const pod = apiPod();
    const client = new FakeClient(pod);
    let release!: () => void;
    client.gate = new Promise((r) => (release = r));
    const sm = new StatusManager({ client, log });
    sm.setApiPods([pod], []);
    sm.setStatus(pod, creating);
    sm.setStatus(pod, { ...creating, message: 'x' });
    sm.setStatus(pod, running);
    release();
    await settle();
    const patches = client.patches();
    expect(patches).toHaveLength(2);
    expect(patches[0]!.path).toBe('/api/v1/namespaces/ns/pods/web/status');
    expect(patches[0]!.body.metadata).toEqual({ uid: 'u1' });
    expect(patches[1]!.body.status).toMatchObject({ phase: 'Running', podIP: '10.99.0.7' });
    expect(client.requests[0]!.contentType).toBe('application/strategic-merge-patch+json');
    expect(sm.statusWrites).toBe(2);
  });

  it('does not write a status the API server already has', async () => {
    const pod = apiPod(running);
    const client = new FakeClient(pod);
    const sm = new StatusManager({ client, log });
    sm.setApiPods([pod], []);
    sm.setStatus(pod, running);
    await settle();
    expect(client.requests).toEqual([]);
  });

  it('re-reads the pod on a conflict and writes again', async () => {
    const pod = apiPod();
    const client = new FakeClient(pod);
    client.handlers.push(async () => {
      throw new ApiError(409, 'Conflict', 'the object has been modified');
    });
    const sm = new StatusManager({ client, log });
    sm.setApiPods([pod], []);
    sm.setStatus(pod, running);
    await settle();
    expect(client.requests.map((r) => r.method)).toEqual(['PATCH', 'GET', 'PATCH']);
    expect(client.stored.status?.phase).toBe('Running');
  });

  it('drops the status of a pod replaced under the same name (UID precondition failed)', async () => {
    const pod = apiPod();
    const client = new FakeClient(pod);
    client.handlers.push(async () => {
      throw new ApiError(409, 'Conflict', 'Precondition failed: UID in precondition: u1, UID in object meta: u2');
    });
    client.stored = apiPod({ phase: 'Pending' }, { uid: 'u2' });
    const sm = new StatusManager({ client, log });
    sm.setApiPods([pod], []);
    sm.setStatus(pod, running);
    await settle();
    expect(client.requests.map((r) => r.method)).toEqual(['PATCH', 'GET']);
  });

  it('never writes a non-terminal phase over a terminal one', async () => {
    const pod = apiPod({ phase: 'Failed', reason: 'OutOfcpu' });
    const client = new FakeClient(pod);
    const sm = new StatusManager({ client, log });
    sm.setApiPods([pod], []);
    sm.setStatus(pod, running);
    await settle();
    expect(client.requests).toEqual([]);
  });

  it('writes the final status of a deleted pod, then deletes it with grace 0 and a UID precondition', async () => {
    const pod = apiPod(running, { deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30 });
    const client = new FakeClient(pod);
    const sm = new StatusManager({ client, log });
    sm.setApiPods([pod], []);
    sm.setStatus(pod, { ...running, containerStatuses: [{ name: 'c', ready: false, restartCount: 0, image: 'busybox', imageID: '', state: { terminated: { exitCode: 137, reason: 'Error' } } }] }, true);
    sm.podTerminated(pod);
    await settle();
    expect(client.requests.map((r) => r.method)).toEqual(['PATCH', 'DELETE']);
    expect(client.patches()[0]!.body.status).toMatchObject({ phase: 'Failed' });
    expect(client.requests[1]).toMatchObject({
      path: '/api/v1/namespaces/ns/pods/web',
      body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid: 'u1' } },
    });
  });

  it('a deleted pod the node never ran is finished from its stored status', async () => {
    const pod = apiPod({ phase: 'Pending' }, { deletionTimestamp: new Date() });
    const client = new FakeClient(pod);
    const sm = new StatusManager({ client, log });
    sm.setApiPods([pod], []);
    sm.podTerminated(pod);
    await settle();
    expect(client.requests.map((r) => r.method)).toEqual(['PATCH', 'DELETE']);
    expect(client.patches()[0]!.body.status).toMatchObject({ phase: 'Failed' });
  });

  it("writes a static pod's status to its mirror pod once that exists", async () => {
    const staticPod: V1Pod = { ...apiPod(), metadata: { name: 'web', namespace: 'ns', uid: 'static-hash', annotations: { 'kubernetes.io/config.source': 'file' } } };
    const mirror = apiPod({ phase: 'Pending' }, { uid: 'mirror-uid', annotations: { 'kubernetes.io/config.mirror': 'static-hash' } });
    const client = new FakeClient(mirror);
    const sm = new StatusManager({ client, log });
    sm.setApiPods([], []);
    sm.setStatus(staticPod, running);
    await settle();
    expect(client.requests).toEqual([]);
    sm.setApiPods([], [mirror]);
    await settle();
    expect(client.patches()).toHaveLength(1);
    expect(client.patches()[0]!.body.metadata).toEqual({ uid: 'mirror-uid' });
    expect(client.patches()[0]!.path).toBe('/api/v1/namespaces/ns/pods/web/status');
  });

  it('retries a failed write later', async () => {
    const pod = apiPod();
    const client = new FakeClient(pod);
    client.handlers.push(async () => {
      throw new ApiError(500, 'InternalError', 'etcd timeout');
    });
    const sm = new StatusManager({ client, log, retryMs: 5 });
    sm.setApiPods([pod], []);
    sm.setStatus(pod, running);
    await settle();
    expect(client.requests.map((r) => r.method)).toEqual(['PATCH', 'PATCH']);
    expect(client.stored.status?.phase).toBe('Running');
    sm.stop();
  });
});
