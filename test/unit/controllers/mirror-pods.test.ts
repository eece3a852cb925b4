// MirrorPodManager against a recording client: mirror pods created, replaced and removed as kubelet's mirror client does,
// and requests in flight cancelled when the agent stops.
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { ApiRequest } from '../../../src/kubeapi/client.js';
import { MirrorPodManager } from '../../../src/controllers/mirror-pods.js';

const log = pino({ level: 'silent' });

function staticPod(hash: string): V1Pod {
  return {
    metadata: { name: 'web-node1', namespace: 'kube-system', uid: 'static-uid', annotations: { 'kubernetes.io/config.hash': hash } },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
  };
}

function mirror(hash: string, uid = 'mirror-uid'): V1Pod {
  return { metadata: { name: 'web-node1', namespace: 'kube-system', uid, annotations: { 'kubernetes.io/config.mirror': hash } }, spec: { containers: [] } };
}

/** A client whose every request waits until the test answers it. */
class RecordingClient {
  readonly requests: { req: ApiRequest; answer: (err?: Error) => void }[] = [];
  private waiters: (() => void)[] = [];

  request<T>(req: ApiRequest): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      req.signal?.addEventListener('abort', () => reject(req.signal!.reason as Error), { once: true });
      this.requests.push({ req, answer: (err) => (err ? reject(err) : resolve({} as T)) });
      for (const w of this.waiters.splice(0)) w();
    });
  }

  async next(count: number): Promise<void> {
    while (this.requests.length < count) await new Promise<void>((r) => this.waiters.push(r));
  }
}

let client: RecordingClient;
let manager: MirrorPodManager;

beforeEach(() => {
  client = new RecordingClient();
  manager = new MirrorPodManager({ client, nodeName: 'node1', nodeUid: async () => 'node-uid', log, retryMs: 60_000 });
});

afterEach(() => manager.stop());

test('creates the mirror pod of a static pod: bound here, marked with its hash, owned by the Node', async () => {
  manager.sync([staticPod('h1')], []);
  await client.next(1);
  const { req, answer } = client.requests[0]!;
  expect(req.method).toBe('POST');
  expect(req.path).toBe('/api/v1/namespaces/kube-system/pods');
  const body = req.body as V1Pod;
  expect(body.metadata?.annotations?.['kubernetes.io/config.mirror']).toBe('h1');
  expect(body.metadata?.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: 'node1', uid: 'node-uid', controller: true }]);
  expect(body.spec?.nodeName).toBe('node1');
  answer();
  // Its watch event arrives: nothing more to do.
  manager.sync([staticPod('h1')], [mirror('h1')]);
  await new Promise((r) => setTimeout(r, 20));
  expect(client.requests).toHaveLength(1);
});

test('an outdated mirror pod is deleted at once with its UID as precondition, then the current one is created', async () => {
  manager.sync([staticPod('h2')], [mirror('h1', 'old-uid')]);
  await client.next(1);
  expect(client.requests[0]!.req).toMatchObject({
    method: 'DELETE',
    path: '/api/v1/namespaces/kube-system/pods/web-node1',
    body: { gracePeriodSeconds: 0, preconditions: { uid: 'old-uid' } },
  });
  client.requests[0]!.answer();
  await client.next(2);
  expect(client.requests[1]!.req.method).toBe('POST');
});

test('stop() cancels the request in flight', async () => {
  manager.sync([staticPod('h1')], []);
  await client.next(1);
  const signal = client.requests[0]!.req.signal;
  expect(signal?.aborted).toBe(false);
  manager.stop();
  expect(signal?.aborted).toBe(true);
});
