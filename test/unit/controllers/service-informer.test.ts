// The Service informer: lists and watches every Service of the cluster; not synced until the first list.
import { pino } from 'pino';
import type { V1Service } from '@kubernetes/client-node';
import type { ApiRequest, WatchRequest } from '../../../src/kubeapi/client.js';
import { ServiceInformer } from '../../../src/controllers/service-informer.js';

const service = (namespace: string, name: string, clusterIP: string, rv: string): V1Service => ({
  metadata: { namespace, name, uid: `${namespace}/${name}`, resourceVersion: rv },
  spec: { clusterIP, ports: [{ port: 443 }] },
});

test('lists /api/v1/services (all namespaces), then follows the watch; hasSynced after the first list', async () => {
  const controller = new AbortController();
  const requests: ApiRequest[] = [];
  const watches: WatchRequest<V1Service>[] = [];
  let releaseList!: () => void;
  const listed = new Promise<void>((r) => (releaseList = r));
  let watching!: () => void;
  const watchStarted = new Promise<void>((r) => (watching = r));
  const informer = new ServiceInformer({
    log: pino({ level: 'silent' }),
    client: {
      request: async <T>(req: ApiRequest) => {
        requests.push(req);
        await listed;
        return { metadata: { resourceVersion: '10' }, items: [service('default', 'kubernetes', '10.96.0.1', '5')] } as T;
      },
      watch: async <T>(req: WatchRequest<T>) => {
        watches.push(req as unknown as WatchRequest<V1Service>);
        watching();
        await new Promise<void>((r) => req.signal.addEventListener('abort', () => r()));
      },
    },
  });
  const run = informer.run(controller.signal);
  expect(informer.hasSynced()).toBe(false);
  expect(informer.list()).toEqual([]);
  releaseList();
  await watchStarted;
  expect(informer.hasSynced()).toBe(true);
  expect(requests.map((r) => [r.method, r.path])).toEqual([['GET', '/api/v1/services']]);
  expect(watches[0]!.path).toBe('/api/v1/services');
  expect(watches[0]!.query).toMatchObject({ resourceVersion: '10' });
  watches[0]!.onEvent({ type: 'ADDED', object: service('test1', 'web', '10.96.0.20', '11') });
  expect(informer.list().map((s) => `${s.metadata!.namespace}/${s.metadata!.name}`).sort()).toEqual(['default/kubernetes', 'test1/web']);
  watches[0]!.onEvent({ type: 'DELETED', object: service('test1', 'web', '10.96.0.20', '12') });
  expect(informer.list().map((s) => s.metadata!.name)).toEqual(['kubernetes']);
  controller.abort();
  await run;
});
