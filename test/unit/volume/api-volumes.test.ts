// configMap, secret and projected volume content: items, modes, optional, binaryData, tokens, kubelet's messages.
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { parseQuantity } from '../../../src/core/quantity.js';
import { configMapPayload, payloadDigest, podFsUser, secretPayload, volumePayload, type PayloadContext } from '../../../src/volume/api-volumes.js';
import { FakeApiObjects } from '../controllers/fake-api-objects.js';

const allocatable = async () => ({ cpu: parseQuantity('2'), memory: parseQuantity('1Gi'), 'ephemeral-storage': parseQuantity('10Gi') });
let objects: FakeApiObjects;
let ctx: PayloadContext;
beforeEach(() => {
  objects = new FakeApiObjects();
  ctx = { objects, allocatable };
});

const pod = (volumes: V1Volume[], extra: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({
  metadata: { name: 'web', namespace: 'ns', uid: 'uid-1', labels: { app: 'web' } },
  spec: { serviceAccountName: 'robot', volumes, containers: [{ name: 'c' }], ...extra },
});

/** path -> [mode (octal), content] */
const show = (p: Map<string, { data: Buffer; mode: number; fsUser?: number }> | undefined) =>
  Object.fromEntries([...(p ?? [])].map(([k, f]) => [k, [f.mode.toString(8), f.data.toString(), ...(f.fsUser !== undefined ? [f.fsUser] : [])]]));

test('configMapPayload: all keys (data and binaryData) at defaultMode, or items with their own modes', () => {
  const cm = { data: { 'app.conf': 'x=1', b: 'bee' }, binaryData: { bin: Buffer.from([0, 1, 2]).toString('base64') } };
  const all = configMapPayload(undefined, cm, 0o644, false);
  expect(show(all)).toEqual({ 'app.conf': ['644', 'x=1'], b: ['644', 'bee'], bin: ['644', '\x00\x01\x02'] });
  const items = configMapPayload([{ key: 'app.conf', path: 'conf/app.conf', mode: 0o600 }, { key: 'bin', path: 'raw' }], cm, 0o440, false);
  expect(show(items)).toEqual({ 'conf/app.conf': ['600', 'x=1'], raw: ['440', '\x00\x01\x02'] });
  expect(() => configMapPayload([{ key: 'nope', path: 'n' }], cm, 0o644, false)).toThrow('configmap references non-existent config key: nope');
  expect(show(configMapPayload([{ key: 'nope', path: 'n' }, { key: 'b', path: 'b' }], cm, 0o644, true))).toEqual({ b: ['644', 'bee'] });
});

test('secretPayload: decoded data; a missing item key is kubelet\'s error unless optional', () => {
  const secret = { data: { user: Buffer.from('admin').toString('base64'), pass: Buffer.from('s3cr3t').toString('base64') } };
  expect(show(secretPayload(undefined, secret, 0o400, false))).toEqual({ user: ['400', 'admin'], pass: ['400', 's3cr3t'] });
  expect(show(secretPayload([{ key: 'pass', path: 'p/w', mode: 0o600 }], secret, 0o400, false))).toEqual({ 'p/w': ['600', 's3cr3t'] });
  expect(() => secretPayload([{ key: 'x', path: 'x' }], secret, 0o644, false)).toThrow('references non-existent secret key: x');
});

test('volumePayload: defaults (0644), missing objects with kubelet\'s message, optional ones empty, paths cleaned', async () => {
  objects.configMap('ns', 'cfg', { a: '1' }).secret('ns', 'sec', { token: 't' });
  expect(show(await volumePayload(pod([]), { name: 'v', configMap: { name: 'cfg' } }, ctx))).toEqual({ a: ['644', '1'] });
  expect(show(await volumePayload(pod([]), { name: 'v', configMap: { name: 'cfg', items: [{ key: 'a', path: './dir//a' }] } }, ctx))).toEqual({ 'dir/a': ['644', '1'] });
  expect(show(await volumePayload(pod([]), { name: 'v', secret: { secretName: 'sec', defaultMode: 0o400 } }, ctx))).toEqual({ token: ['400', 't'] });
  await expect(volumePayload(pod([]), { name: 'v', configMap: { name: 'gone' } }, ctx)).rejects.toThrow(/^configmap "gone" not found$/);
  await expect(volumePayload(pod([]), { name: 'v', secret: { secretName: 'gone' } }, ctx)).rejects.toThrow(/^secret "gone" not found$/);
  expect(show(await volumePayload(pod([]), { name: 'v', configMap: { name: 'gone', optional: true } }, ctx))).toEqual({});
  expect(show(await volumePayload(pod([]), { name: 'v', secret: { secretName: 'gone', optional: true, items: [{ key: 'k', path: 'k' }] } }, ctx))).toEqual({});
  expect(await volumePayload(pod([]), { name: 'v', emptyDir: {} }, ctx)).toBeUndefined();
  await expect(volumePayload(pod([]), { name: 'v', configMap: { name: 'cfg' } }, { objects: undefined, allocatable })).rejects.toThrow(
    'configMap volume needs an API server: nodelet runs standalone (start it with --kubeconfig)',
  );
});

test('projected: kube-api-access (token 3607 s, ca.crt, namespace), sources merged, defaultMode, token request defaults', async () => {
  objects.configMap('ns', 'kube-root-ca.crt', { 'ca.crt': 'CA' });
  const kubeApiAccess: V1Volume = {
    name: 'kube-api-access-abcde',
    projected: {
      defaultMode: 0o644,
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
    },
  };
  const p = pod([kubeApiAccess]);
  expect(show(await volumePayload(p, kubeApiAccess, ctx))).toEqual({ token: ['644', objects.token], 'ca.crt': ['644', 'CA'], namespace: ['644', 'ns'] });
  expect(objects.tokenRequests).toEqual([{ pod: 'uid-1', request: { serviceAccountName: 'robot', audiences: [], expirationSeconds: 3607 } }]);

  const custom: V1Volume = { name: 'v', projected: { defaultMode: 0o440, sources: [{ serviceAccountToken: { path: 'vault/token', audience: 'vault' } }] } };
  expect(show(await volumePayload(p, custom, ctx))).toEqual({ 'vault/token': ['440', objects.token] });
  expect(objects.tokenRequests[1]!.request).toEqual({ serviceAccountName: 'robot', audiences: ['vault'], expirationSeconds: 3600 });
});

test('projected token: 0600 with fsGroup or one runAsUser for all containers, owned by that user', async () => {
  const v: V1Volume = { name: 'v', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } };
  expect(show(await volumePayload(pod([v], { securityContext: { fsGroup: 2000 } }), v, ctx))).toEqual({ token: ['600', objects.token] });
  const asUser = pod([v], { securityContext: { runAsUser: 1000 }, containers: [{ name: 'a' }, { name: 'b', securityContext: { runAsUser: 1000 } }] });
  expect(show(await volumePayload(asUser, v, ctx))).toEqual({ token: ['600', objects.token, 1000] });
  expect(podFsUser(pod([], { containers: [{ name: 'a', securityContext: { runAsUser: 1 } }, { name: 'b' }] }))).toBeUndefined();
  expect(podFsUser(pod([], { containers: [{ name: 'a', securityContext: { runAsUser: 1 } }, { name: 'b', securityContext: { runAsUser: 2 } }] }))).toBeUndefined();
});

test('projected: every source is tried; errors are aggregated as kubelet\'s [a, b]', async () => {
  const v: V1Volume = {
    name: 'v',
    projected: { sources: [{ configMap: { name: 'nocm' } }, { secret: { name: 'nosecret' } }, { secret: { name: 'opt', optional: true } }] },
  };
  await expect(volumePayload(pod([v]), v, ctx)).rejects.toThrow('[configmap "nocm" not found, secret "nosecret" not found]');
});

test('payloadDigest changes with content, mode and owner, not with order', () => {
  const a = new Map([['x', { data: Buffer.from('1'), mode: 0o644 }], ['y', { data: Buffer.from('2'), mode: 0o644 }]]);
  const b = new Map([['y', { data: Buffer.from('2'), mode: 0o644 }], ['x', { data: Buffer.from('1'), mode: 0o644 }]]);
  expect(payloadDigest(a)).toBe(payloadDigest(b));
  expect(payloadDigest(a)).not.toBe(payloadDigest(new Map([['x', { data: Buffer.from('1'), mode: 0o600 }]])));
  expect(payloadDigest(new Map([['x', { data: Buffer.from('1'), mode: 0o600 }]]))).not.toBe(payloadDigest(new Map([['x', { data: Buffer.from('1'), mode: 0o600, fsUser: 1 }]])));
});

test('a configMap or secret larger than the API server stores (1 MiB of data) is refused, naming it', () => {
  const fits = { metadata: { name: 'fits' }, data: { k: 'a'.repeat(1024 * 1024 - 1) } };
  expect(configMapPayload(undefined, fits, 0o644, false).get('k')!.data.length).toBe(1024 * 1024 - 1);
  const big = { metadata: { name: 'big' }, data: { k: 'a'.repeat(600_000) }, binaryData: { b: Buffer.alloc(600_000).toString('base64') } };
  expect(() => configMapPayload(undefined, big, 0o644, false)).toThrow('configmap "big" is too large: its data must have at most 1048576 bytes');
  const secret = { metadata: { name: 'blob' }, data: { k: Buffer.alloc(1024 * 1024).toString('base64') } };
  expect(() => secretPayload(undefined, secret, 0o644, false)).toThrow('secret "blob" is too large: its data must have at most 1048576 bytes');
});
