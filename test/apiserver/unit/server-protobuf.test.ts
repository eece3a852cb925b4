// Protobuf request bodies end to end: kubectl's typed commands (create configmap/secret/namespace/serviceaccount/token),
// and raw protobuf writes (update, delete options, refused kinds) answered in JSON.
import { join } from 'node:path';
import { Kubectl } from '../../integration/helpers/kubectl.js';
import { startTestApiServer, type TestApiServer } from '../test-apiserver.js';
import { CONFIGMAPS, PODS, call, configMap, ok, type Obj } from './server-fixture.js';
import { protobufBody } from './protobuf-encode.js';

const PROTOBUF = 'application/vnd.kubernetes.protobuf';

let server: TestApiServer;
beforeAll(async () => {
  server = await startTestApiServer();
});
afterAll(async () => server.stop());

// A private cache dir: discovery is cached per server URL, and every test server has a new port.
const kubectl = (...args: string[]): Promise<string> => new Kubectl(server.adminKubeconfig, join(server.dir, 'kubectl-cache'), server.dir).run(...args);

function jwtClaims(token: string): Obj {
  return JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString('utf8')) as Obj;
}

test('kubectl create configmap, secret generic, namespace and serviceaccount; delete configmap', async () => {
  expect(await kubectl('create', 'configmap', 'c', '--from-literal=a=b')).toBe('configmap/c created');
  expect(JSON.parse(await kubectl('get', 'configmap', 'c', '-o', 'json'))).toMatchObject({ kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, data: { a: 'b' } });

  expect(await kubectl('create', 'secret', 'generic', 's', '--from-literal=p=q')).toBe('secret/s created');
  expect(JSON.parse(await kubectl('get', 'secret', 's', '-o', 'json'))).toMatchObject({ type: 'Opaque', data: { p: Buffer.from('q').toString('base64') } });

  expect(await kubectl('create', 'namespace', 'x')).toBe('namespace/x created');
  expect(JSON.parse(await kubectl('get', 'namespace', 'x', '-o', 'json'))).toMatchObject({ spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } });

  expect(await kubectl('create', 'serviceaccount', 'sa')).toBe('serviceaccount/sa created');
  expect(await kubectl('get', 'serviceaccount', 'sa', '-o', 'name')).toBe('serviceaccount/sa');

  expect(await kubectl('delete', 'configmap', 'c')).toBe('configmap "c" deleted');
  await expect(kubectl('create', 'configmap', 'Bad_Name', '--from-literal=a=b')).rejects.toThrow('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"');
});

test('kubectl create token prints a service account token with the audiences and duration asked for', async () => {
  const token = (await kubectl('create', 'token', 'default')).trim();
  expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  expect(jwtClaims(token)).toMatchObject({ sub: 'system:serviceaccount:default:default', aud: ['https://kubernetes.default.svc.cluster.local'] });

  const claims = jwtClaims((await kubectl('create', 'token', 'default', '--audience=a1', '--duration=2h')).trim());
  expect(claims.aud).toEqual(['a1']);
  expect(Number(claims.exp) - Number(claims.iat)).toBe(7200);
  await expect(kubectl('create', 'token', 'default', '--duration=1s')).rejects.toThrow('spec.expirationSeconds: Invalid value: 1: may not specify a duration less than 10 minutes');
});

test('a protobuf update and protobuf delete options go through the JSON write path', async () => {
  const created = await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('u', { a: '1' }) });
  const uid = String((created.metadata as Obj).uid);
  const updated = await ok(server.admin, 'PUT', `${CONFIGMAPS}/u`, {
    contentType: PROTOBUF,
    accept: `${PROTOBUF},application/json`,
    body: protobufBody({ apiVersion: 'v1', kind: 'ConfigMap' }, 'ConfigMap', { metadata: { name: 'u' }, data: { a: '2' }, binaryData: { b: Buffer.from([0xff]) } }),
  });
  expect(updated).toMatchObject({ data: { a: '2' }, binaryData: { b: '/w==' } });

  const wrongUid = await call(server.admin, 'DELETE', `${CONFIGMAPS}/u`, {
    contentType: PROTOBUF,
    body: protobufBody({ apiVersion: 'v1', kind: 'DeleteOptions' }, 'DeleteOptions', { preconditions: { uid: 'other' } }),
  });
  expect(wrongUid.status).toBe(409);
  await ok(server.admin, 'DELETE', `${CONFIGMAPS}/u`, {
    contentType: PROTOBUF,
    body: protobufBody({ apiVersion: 'v1', kind: 'DeleteOptions' }, 'DeleteOptions', { preconditions: { uid } }),
  });
});

test('protobuf bodies of kinds without a message here, or not protobuf at all, are refused', async () => {
  const pod = await call(server.admin, 'POST', PODS, { contentType: PROTOBUF, body: protobufBody({ apiVersion: 'v1', kind: 'Pod' }, 'ConfigMap', { metadata: { name: 'p' } }) });
  expect(pod.status).toBe(415);
  expect(pod.body).toMatchObject({ reason: 'UnsupportedMediaType' });

  const json = await call(server.admin, 'POST', CONFIGMAPS, { contentType: PROTOBUF, body: configMap('j') });
  expect(json.status).toBe(400);
  expect(json.body).toMatchObject({ reason: 'BadRequest', message: expect.stringContaining('provided data does not appear to be a protobuf message') });

  const secret = await call(server.admin, 'POST', CONFIGMAPS, { contentType: PROTOBUF, body: protobufBody({ apiVersion: 'v1', kind: 'Secret' }, 'Secret', { metadata: { name: 's' } }) });
  expect(secret.status).toBe(400);
});
