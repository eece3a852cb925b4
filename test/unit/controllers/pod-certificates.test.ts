// The pod certificate manager against a fake API server: the request it creates, waiting, issuance, refresh from
// beginRefreshAt, denial, and forgetting a pod; kubelet's messages and events.
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { PodCertificateManager, type PodCertificateRequest } from '../../../src/controllers/pod-certificates.js';
import type { ApiRequest, WatchRequest } from '../../../src/kubeapi/client.js';
import { until } from './fake-object-api.js';

const log = pino({ level: 'silent' });

/** PodCertificateRequests in memory: POST creates one, the list + watch of the node's requests reports them. */
class FakePcrApi {
  readonly requests: PodCertificateRequest[] = [];
  readonly posts: ApiRequest[] = [];
  private watcher?: WatchRequest<PodCertificateRequest>;
  private rv = 1;
  fieldSelector?: unknown;

  readonly client = {
    request: async <T>(req: ApiRequest): Promise<T> => {
      if (req.method === 'GET' && req.path === '/api/v1/namespaces/ns/serviceaccounts/robot') return { metadata: { uid: 'sa-uid' } } as T;
      if (req.method === 'GET' && req.path === '/apis/certificates.k8s.io/v1/podcertificaterequests') {
        this.fieldSelector = req.query?.fieldSelector;
        return { metadata: { resourceVersion: String(this.rv) }, items: this.requests } as T;
      }
      if (req.method === 'POST' && req.path === '/apis/certificates.k8s.io/v1/namespaces/ns/podcertificaterequests') {
        this.posts.push(req);
        const body = req.body as PodCertificateRequest;
        const pcr = { ...body, metadata: { ...body.metadata, name: `req-${this.posts.length}`, uid: `pcr-${this.posts.length}`, resourceVersion: String(++this.rv), creationTimestamp: new Date().toISOString() } };
        this.requests.push(pcr);
        this.watcher?.onEvent({ type: 'ADDED', object: pcr });
        return pcr as T;
      }
      throw new Error(`unexpected ${req.method} ${req.path}`);
    },
    watch: <T>(req: WatchRequest<T>): Promise<void> => {
      this.watcher = req as unknown as WatchRequest<PodCertificateRequest>;
      return new Promise((resolve) => req.signal.addEventListener('abort', () => resolve(), { once: true }));
    },
  };

  /** The signer sets a status. */
  answer(name: string, status: PodCertificateRequest['status']): void {
    const pcr = this.requests.find((r) => r.metadata?.name === name)!;
    pcr.status = status;
    pcr.metadata!.resourceVersion = String(++this.rv);
    this.watcher!.onEvent({ type: 'MODIFIED', object: pcr });
  }
}

const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'ns', uid: 'pod-uid' },
  spec: {
    serviceAccountName: 'robot',
    containers: [{ name: 'c' }],
    volumes: [{ name: 'certs', projected: { sources: [{ configMap: { name: 'x' } }, { podCertificate: { signerName: 'example.com/s', keyType: 'ECDSAP256', maxExpirationSeconds: 3600, userAnnotations: { 'example.com/a': 'b' } } as never }] } }],
  },
};

let api: FakePcrApi;
let manager: PodCertificateManager;
let now: number;
let woken: string[][];
let events: string[];
beforeEach(() => {
  api = new FakePcrApi();
  now = Date.now();
  woken = [];
  events = [];
  manager = new PodCertificateManager({
    client: api.client,
    log,
    nodeName: 'n1',
    nodeUid: () => 'node-uid',
    now: () => now,
    onPodsChanged: (uids) => woken.push(uids),
    events: { event: (_ref, type, reason, message) => events.push(`${type} ${reason} ${message}`), nodeEvent: () => {} },
  });
});
afterEach(() => manager.stop());

const chain = (n: number) => `-----BEGIN CERTIFICATE-----\nAAAA${n}A==\n-----END CERTIFICATE-----\n`;
const issued = (n: number, beginRefreshAt: number) => ({
  conditions: [{ type: 'Issued', status: 'True', reason: 'R', message: 'm' }],
  certificateChain: `junk\n${chain(n)}`,
  notBefore: new Date(now).toISOString(),
  beginRefreshAt: new Date(beginRefreshAt).toISOString(),
  notAfter: new Date(now + 3600_000).toISOString(),
});

test('a request per projection; waiting, then the issued chain; refreshed from beginRefreshAt with a new key', async () => {
  expect(() => manager.credentials(pod, 'certs', 1)).toThrow('no credentials yet for key={ns web pod-uid certs 1}');
  manager.trackPod(pod);
  await until('the request', () => api.posts.length === 1, 5_000);
  expect(api.fieldSelector).toBe('spec.nodeName=n1');
  const spec = (api.posts[0]!.body as PodCertificateRequest).spec!;
  expect(spec).toMatchObject({
    signerName: 'example.com/s', podName: 'web', podUID: 'pod-uid', serviceAccountName: 'robot', serviceAccountUID: 'sa-uid',
    nodeName: 'n1', nodeUID: 'node-uid', maxExpirationSeconds: 3600, unverifiedUserAnnotations: { 'example.com/a': 'b' },
  });
  expect(spec.stubPKCS10Request.length).toBeGreaterThan(100);
  expect((api.posts[0]!.body as PodCertificateRequest).metadata).toMatchObject({ generateName: 'req-', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'pod-uid' }] });
  await until('wait state', () => { try { manager.credentials(pod, 'certs', 1); return false; } catch (e) { return (e as Error).message === 'credential bundle is not issued yet'; } });

  api.answer('req-1', issued(1, now + 1800_000));
  await until('issued', () => woken.length === 1);
  expect(woken).toEqual([['pod-uid']]);
  const first = manager.credentials(pod, 'certs', 1);
  expect(first.certificateChain.toString()).toBe(chain(1));
  expect(first.privateKey.toString()).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);

  // Before beginRefreshAt (plus up to 5 minutes of jitter) nothing happens; after it, a new request while the old credentials stay.
  manager.trackPod({ ...pod });
  await new Promise((r) => setTimeout(r, 50));
  expect(api.posts).toHaveLength(1);
  now += 1800_000 + 5 * 60_000 + 1000;
  manager.trackPod({ ...pod });
  await until('the refresh request', () => api.posts.length === 2, 5_000);
  expect(manager.credentials(pod, 'certs', 1).certificateChain.toString()).toBe(chain(1));
  api.answer('req-2', issued(2, now + 1800_000));
  await until('refreshed', () => woken.length === 2);
  const second = manager.credentials(pod, 'certs', 1);
  expect(second.certificateChain.toString()).toBe(chain(2));
  expect(second.privateKey.equals(first.privateKey)).toBe(false);

  manager.forgetPod('pod-uid');
  expect(() => manager.credentials(pod, 'certs', 1)).toThrow('no credentials yet for key={ns web pod-uid certs 1}');
});

test('a denied request fails the projection for good with kubelet\'s message and a Warning event; no new request', async () => {
  manager.trackPod(pod);
  await until('the request', () => api.posts.length === 1, 5_000);
  api.answer('req-1', { conditions: [{ type: 'Denied', status: 'True', reason: 'UnsupportedKeyType', message: 'use ED25519' }] });
  await until('denied', () => events.length === 1);
  expect(events).toEqual(['Warning Denied PodCertificateRequest ns/req-1 was denied, reason="UnsupportedKeyType", message="use ED25519"']);
  expect(() => manager.credentials(pod, 'certs', 1)).toThrow('PodCertificateRequest was permanently denied: reason="UnsupportedKeyType" message="use ED25519"');
  manager.trackPod({ ...pod });
  await new Promise((r) => setTimeout(r, 50));
  expect(api.posts).toHaveLength(1);
});
