// A node's client certificate against the test API server: what the Node authorizer and NodeRestriction let it do.
import { startTestApiServer, type TestApiServer } from '../test-apiserver.js';
import { bindPod } from '../scheduler.js';
import { PODS, call, node, ok, pod, type Obj } from './server-fixture.js';

let server: TestApiServer;
beforeAll(async () => {
  server = await startTestApiServer({ nodeNames: ['n1', 'n2'] });
  await ok(server.node('n1'), 'POST', '/api/v1/nodes', { body: node('n1') });
  await ok(server.node('n2'), 'POST', '/api/v1/nodes', { body: node('n2') });
});
afterAll(async () => server.stop());

const merge = { contentType: 'application/merge-patch+json' };

test('a node may patch its own Node status but not another node', async () => {
  await ok(server.node('n1'), 'PATCH', '/api/v1/nodes/n1/status', { ...merge, body: { status: { capacity: { pods: '110' } } } });
  const other = await call(server.node('n1'), 'PATCH', '/api/v1/nodes/n2/status', { ...merge, body: { status: { capacity: { pods: '1' } } } });
  expect(other.status).toBe(403);
  expect(other.body.reason).toBe('Forbidden');
  expect(other.body.message).toBe('nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"');
});

test('a node may delete the pods bound to it, not those of another node', async () => {
  await ok(server.admin, 'POST', PODS, { body: pod('on-n2') });
  await bindPod(server, 'default', 'on-n2', 'n2');
  const res = await call(server.node('n1'), 'DELETE', `${PODS}/on-n2`, { body: { gracePeriodSeconds: 0 } });
  expect(res.status).toBe(403);
  expect(String(res.body.message)).toMatch(/^pods "on-n2" is forbidden: /);
  await ok(server.node('n2'), 'DELETE', `${PODS}/on-n2`, { body: { gracePeriodSeconds: 0 } });
});

test('a node may write the status of its pods only', async () => {
  await ok(server.admin, 'POST', PODS, { body: pod('status-n1') });
  await bindPod(server, 'default', 'status-n1', 'n1');
  const smp = { contentType: 'application/strategic-merge-patch+json' };
  await ok(server.node('n1'), 'PATCH', `${PODS}/status-n1/status`, { ...smp, body: { status: { phase: 'Running' } } });
  const res = await call(server.node('n2'), 'PATCH', `${PODS}/status-n1/status`, { ...smp, body: { status: { phase: 'Failed' } } });
  expect(res.status).toBe(403);
});

test('a node reads only the secrets its pods use', async () => {
  const secret = (name: string): Obj => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { k: 'v' } });
  await ok(server.admin, 'POST', '/api/v1/namespaces/default/secrets', { body: secret('used') });
  await ok(server.admin, 'POST', '/api/v1/namespaces/default/secrets', { body: secret('unused') });
  const p = pod('with-secret');
  (p.spec as Obj).volumes = [{ name: 's', secret: { secretName: 'used' } }];
  await ok(server.admin, 'POST', PODS, { body: p });
  await bindPod(server, 'default', 'with-secret', 'n1');
  const used = await ok<Obj>(server.node('n1'), 'GET', '/api/v1/namespaces/default/secrets/used');
  expect(used.data).toEqual({ k: Buffer.from('v').toString('base64') });
  const unused = await call(server.node('n1'), 'GET', '/api/v1/namespaces/default/secrets/unused');
  expect(unused.status).toBe(403);
  expect(String(unused.body.message)).toMatch(/^secrets "unused" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default"/);
  expect((await call(server.node('n2'), 'GET', '/api/v1/namespaces/default/secrets/used')).status).toBe(403);
});

test('a node uses only its own Lease', async () => {
  const lease = (name: string): Obj => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name }, spec: { holderIdentity: name, leaseDurationSeconds: 40 } });
  const leases = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';
  await ok(server.node('n1'), 'POST', leases, { body: lease('n1') });
  const other = await call(server.node('n1'), 'POST', leases, { body: lease('n2') });
  expect(other.status).toBe(403);
});
