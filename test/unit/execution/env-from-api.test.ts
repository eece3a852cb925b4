// Container env from configMaps and secrets: envFrom with prefix and optional, any key, keyRefs, kubelet's messages.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerEnv, type PodEnvContext } from '../../../src/execution/env.js';
import { SyncError } from '../../../src/core/sync-result.js';
import { parseQuantity } from '../../../src/core/quantity.js';
import { FakeApiObjects } from '../controllers/fake-api-objects.js';

let objects: FakeApiObjects;
let ctx: PodEnvContext;
beforeEach(() => {
  objects = new FakeApiObjects();
  ctx = {
    podIPs: ['10.99.0.5'],
    hostIP: '192.0.2.1',
    allocatable: async () => ({ cpu: parseQuantity('2'), memory: parseQuantity('1Gi'), 'ephemeral-storage': parseQuantity('1Gi') }),
    objects,
    volumePath: () => undefined,
  };
});

const pod = (c: V1Container): V1Pod => ({ metadata: { name: 'web', namespace: 'ns', uid: 'u' }, spec: { containers: [c] } });
const env = (c: V1Container) => containerEnv(pod(c), c, 'spec.containers[0]', ctx);
const failure = async (c: V1Container) => {
  const err = await env(c).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SyncError);
  expect((err as SyncError).code).toBe('CreateContainerConfigError');
  return (err as SyncError).message;
};

test('envFrom: configMaps and secrets in order with their prefix, then env (which overrides and may expand them)', async () => {
  objects.configMap('ns', 'cfg', { MODE: 'prod', LEVEL: 'info' }, { BIN: Buffer.from('x').toString('base64') });
  objects.secret('ns', 'sec', { PASSWORD: 'hunter2' });
  const result = await env({
    name: 'c',
    envFrom: [{ configMapRef: { name: 'cfg' } }, { prefix: 'DB_', secretRef: { name: 'sec' } }, { configMapRef: { name: 'absent', optional: true } }],
    env: [
      { name: 'LEVEL', value: 'debug' },
      { name: 'URL', value: 'db://$(DB_PASSWORD)@$(MODE)' },
      { name: 'KEY', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'MODE' } } },
      { name: 'PW', valueFrom: { secretKeyRef: { name: 'sec', key: 'PASSWORD' } } },
      { name: 'OPT', valueFrom: { secretKeyRef: { name: 'sec', key: 'nope', optional: true } } },
      { name: 'OPT2', valueFrom: { configMapKeyRef: { name: 'absent', key: 'k', optional: true } } },
    ],
  });
  // binaryData never reaches the environment; optional misses set nothing.
  expect(Object.fromEntries(result)).toEqual({
    MODE: 'prod',
    LEVEL: 'debug',
    DB_PASSWORD: 'hunter2',
    URL: 'db://hunter2@prod',
    KEY: 'prod',
    PW: 'hunter2',
  });
});

test('every configMap and secret read carries the sync\'s signal, so a cancelled sync does not wait on the API', async () => {
  objects.configMap('ns', 'cfg', { MODE: 'prod' });
  objects.secret('ns', 'sec', { PASSWORD: 'hunter2' });
  const sync = new AbortController();
  ctx.signal = sync.signal;
  await env({
    name: 'c',
    envFrom: [{ configMapRef: { name: 'cfg' } }, { secretRef: { name: 'sec' } }],
    env: [
      { name: 'KEY', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'MODE' } } },
      { name: 'PW', valueFrom: { secretKeyRef: { name: 'sec', key: 'PASSWORD' } } },
    ],
  });
  expect(objects.readSignals).toEqual([sync.signal, sync.signal, sync.signal, sync.signal]);
});

test('every key is taken with its prefix, whatever its characters (kubelet 1.37 validates none)', async () => {
  objects.configMap('ns', 'cfg', { 'good.key-1': 'a', '1bad key': 'x', 'é': 'y' });
  const result = await env({ name: 'c', envFrom: [{ configMapRef: { name: 'cfg' }, prefix: 'p-' }] });
  expect(Object.fromEntries(result)).toEqual({ 'p-good.key-1': 'a', 'p-1bad key': 'x', 'p-é': 'y' });
});

test('a missing object or key is CreateContainerConfigError with kubelet\'s message', async () => {
  objects.configMap('ns', 'cfg', { A: '1' }).secret('ns', 'sec', { B: '2' });
  expect(await failure({ name: 'c', envFrom: [{ configMapRef: { name: 'x' } }] })).toBe('configmap "x" not found');
  expect(await failure({ name: 'c', envFrom: [{ secretRef: { name: 's' } }] })).toBe('secret "s" not found');
  expect(await failure({ name: 'c', env: [{ name: 'V', valueFrom: { configMapKeyRef: { name: 'x', key: 'k' } } }] })).toBe('configmap "x" not found');
  expect(await failure({ name: 'c', env: [{ name: 'V', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } }] })).toBe('couldn\'t find key k in ConfigMap ns/cfg');
  expect(await failure({ name: 'c', env: [{ name: 'V', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] })).toBe('secret "s" not found');
  expect(await failure({ name: 'c', env: [{ name: 'V', valueFrom: { secretKeyRef: { name: 'sec', key: 'k' } } }] })).toBe('couldn\'t find key k in Secret ns/sec');
});

test('without an API server (standalone), kubelet\'s no-kubeClient message', async () => {
  delete ctx.objects;
  expect(await failure({ name: 'c', env: [{ name: 'V', valueFrom: { configMapKeyRef: { name: 'x', key: 'k' } } }] })).toBe(
    "couldn't get configMap ns/x, no kubeClient defined",
  );
  expect(await failure({ name: 'c', envFrom: [{ secretRef: { name: 's' } }] })).toBe("couldn't get secret ns/s, no kubeClient defined");
});
