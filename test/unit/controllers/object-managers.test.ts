// The configmap/secret managers (one watch per referenced object, refcounted, cached) and their pod registration.
import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { WatchedObjectCache } from '../../../src/controllers/object-cache.js';
import { ClusterObjectSource } from '../../../src/controllers/object-managers.js';
import { isObjectNotFound, podObjectReferences } from '../../../src/core/api-objects.js';
import { FakeObjectApi, until } from './fake-object-api.js';

const log = pino({ level: 'silent' });
let api: FakeObjectApi;
let changes: string[];
let cache: WatchedObjectCache<V1ConfigMap>;

beforeEach(() => {
  api = new FakeObjectApi();
  changes = [];
  cache = new WatchedObjectCache<V1ConfigMap>({
    client: api.client,
    resource: 'configmaps',
    kind: 'configmap',
    log,
    onChange: (ns, name) => changes.push(`${ns}/${name}`),
    syncTimeoutMs: 200,
    backoff: { initialMs: 5, maxMs: 20 },
  });
});
afterEach(() => cache.stop());

test('a registered object is listed, then followed by its watch; NotFound when it does not exist or was deleted', async () => {
  api.put('configmaps', 'ns', 'cfg', { data: { a: '1' } });
  cache.acquire('ns', 'cfg');
  expect((await cache.get('ns', 'cfg')).data).toEqual({ a: '1' });
  await until('watch open', () => api.openWatches === 1);

  api.put('configmaps', 'ns', 'cfg', { data: { a: '2' } });
  expect((await cache.get('ns', 'cfg')).data).toEqual({ a: '2' });
  expect(changes).toEqual(['ns/cfg', 'ns/cfg']);

  api.delete('configmaps', 'ns', 'cfg');
  const err = await cache.get('ns', 'cfg').catch((e: unknown) => e);
  expect(isObjectNotFound(err)).toBe(true);
  expect((err as Error).message).toBe('configmap "cfg" not found');

  cache.acquire('ns', 'missing');
  await expect(cache.get('ns', 'missing')).rejects.toThrow('configmap "missing" not found');
  await expect(cache.get('ns', 'other')).rejects.toThrow('object "ns"/"other" not registered');
});

test('refcounted: one watch per object, stopped with the last reference', async () => {
  cache.acquire('ns', 'cfg');
  cache.acquire('ns', 'cfg');
  await until('watch open', () => api.openWatches === 1);
  expect(cache.size).toBe(1);
  cache.release('ns', 'cfg');
  expect(api.openWatches).toBe(1);
  cache.release('ns', 'cfg');
  await until('watch closed', () => api.openWatches === 0);
  expect(cache.size).toBe(0);
});

test('an unreachable API server leaves the last copy; the watch resumes and sees what changed meanwhile', async () => {
  api.put('configmaps', 'ns', 'cfg', { data: { a: '1' } });
  cache.acquire('ns', 'cfg');
  await cache.get('ns', 'cfg');
  await until('watch open', () => api.openWatches === 1);
  api.goDown();
  expect((await cache.get('ns', 'cfg')).data).toEqual({ a: '1' });
  api.up();
  api.put('configmaps', 'ns', 'cfg', { data: { a: '3' } });
  await until('relisted', () => changes.length === 2);
  expect((await cache.get('ns', 'cfg')).data).toEqual({ a: '3' });
});

test('a first list that does not answer in time fails like kubelet; an immutable object is not watched', async () => {
  api.goDown();
  cache.acquire('ns', 'cfg');
  await expect(cache.get('ns', 'cfg')).rejects.toThrow('failed to sync configmap cache: timed out waiting for the condition');
  api.up();
  api.put('configmaps', 'ns', 'frozen', { data: { a: '1' }, immutable: true });
  cache.acquire('ns', 'frozen');
  expect((await cache.get('ns', 'frozen')).data).toEqual({ a: '1' });
  await until('cfg watch open', () => api.openWatches === 1);
  await new Promise((r) => setTimeout(r, 30));
  expect(api.openWatches).toBe(1);
});

function pod(uid: string, cms: string[], secrets: string[]): V1Pod {
  return {
    metadata: { name: `p-${uid}`, namespace: 'ns', uid },
    spec: {
      volumes: [
        ...cms.slice(0, 1).map((name) => ({ name: 'v1', configMap: { name } })),
        { name: 'v2', projected: { sources: [...cms.slice(1).map((name) => ({ configMap: { name } })), ...secrets.slice(1).map((name) => ({ secret: { name } }))] } },
      ],
      containers: [{ name: 'c', envFrom: secrets.slice(0, 1).map((name) => ({ secretRef: { name } })) }],
    },
  };
}

test('podObjectReferences: imagePullSecrets, volumes, projected sources, envFrom and keyRefs of every container', () => {
  const refs = podObjectReferences({
    spec: {
      imagePullSecrets: [{ name: 'pull' }],
      volumes: [{ name: 'a', configMap: { name: 'c1' } }, { name: 'b', secret: { secretName: 's1' } }, { name: 'p', projected: { sources: [{ configMap: { name: 'c2' } }, { secret: { name: 's2' } }, { serviceAccountToken: { path: 't' } }] } }],
      initContainers: [{ name: 'i', envFrom: [{ configMapRef: { name: 'c3' } }] }],
      containers: [{ name: 'm', envFrom: [{ secretRef: { name: 's3' } }], env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'c4', key: 'k' } } }, { name: 'Y', valueFrom: { secretKeyRef: { name: 's4', key: 'k' } } }] }],
    },
  });
  expect([...refs.configMaps]).toEqual(['c1', 'c2', 'c3', 'c4']);
  expect([...refs.secrets]).toEqual(['pull', 's1', 's2', 's3', 's4']);
});

test('ClusterObjectSource: registration keeps one watch per object; a change wakes exactly the pods that read it', async () => {
  const woken: string[][] = [];
  const source = new ClusterObjectSource({ client: api.client, log, nodeName: 'n1', nodeUid: () => undefined, onPodsChanged: (uids) => woken.push(uids), syncTimeoutMs: 200 });
  try {
    api.put('configmaps', 'ns', 'shared', { data: { a: '1' } });
    source.registerPod(pod('u1', ['shared', 'only1'], ['s1']));
    source.registerPod(pod('u2', ['shared'], ['s1', 's2']));
    expect(source.watched).toEqual({ configMaps: 2, secrets: 2 });
    expect((await source.getConfigMap('ns', 'shared')).data).toEqual({ a: '1' });
    // Registering the same spec again changes nothing.
    source.registerPod(pod('u1', ['shared', 'only1'], ['s1']));
    expect(source.watched).toEqual({ configMaps: 2, secrets: 2 });
    await until('watches', () => api.openWatches === 4);

    woken.length = 0;
    api.put('configmaps', 'ns', 'shared', { data: { a: '2' } });
    api.put('configmaps', 'ns', 'only1', { data: {} });
    api.put('secrets', 'ns', 's2', { data: {} });
    expect(woken).toEqual([['u1', 'u2'], ['u1'], ['u2']]);

    source.unregisterPod('u1');
    expect(source.watched).toEqual({ configMaps: 1, secrets: 2 });
    source.unregisterPod('u2');
    expect(source.watched).toEqual({ configMaps: 0, secrets: 0 });
    await until('no watch', () => api.openWatches === 0);
  } finally {
    source.stop();
  }
});
