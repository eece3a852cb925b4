// Test API server writes and reads: kube's Status errors, optimistic concurrency, /status, patches, graceful deletion,
// binding, selectors, logs, namespaces and persistence across a restart.
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestApiServer, type TestApiServer } from '../test-apiserver.js';
import { BindError, bindPod } from '../scheduler.js';
import { CONFIGMAPS, PODS, call, configMap, node, ok, pod, rv, type Obj } from './server-fixture.js';

let server: TestApiServer;
beforeAll(async () => {
  server = await startTestApiServer({ nodeNames: ['n1'] });
  await ok(server.admin, 'POST', '/api/v1/nodes', { body: node('n1') });
});
afterAll(async () => server.stop());

const meta = (o: unknown): Obj => (o as Obj).metadata as Obj;

describe('Status errors as kube-apiserver words them', () => {
  test('NotFound names the resource and has details', async () => {
    const res = await call(server.admin, 'GET', `${PODS}/nope`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'pods "nope" not found', reason: 'NotFound', details: { name: 'nope', kind: 'pods' }, code: 404 });
    const lease = await call(server.admin, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/x');
    expect(lease.body.message).toBe('leases.coordination.k8s.io "x" not found');
  });

  test('AlreadyExists on a second create', async () => {
    await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('dup') });
    const res = await call(server.admin, 'POST', CONFIGMAPS, { body: configMap('dup') });
    expect([res.status, res.body.reason, res.body.message]).toEqual([409, 'AlreadyExists', 'configmaps "dup" already exists']);
  });

  test('Invalid lists the field errors as causes', async () => {
    const bad = pod('invalid-1');
    ((bad.spec as Obj).containers as Obj[])[0] = { name: 'c' };
    const res = await call(server.admin, 'POST', PODS, { body: bad });
    expect(res.status).toBe(422);
    expect(res.body.message).toBe('Pod "invalid-1" is invalid: spec.containers[0].image: Required value');
    expect(res.body.details).toEqual({ name: 'invalid-1', kind: 'Pod', causes: [{ reason: 'FieldValueRequired', message: 'Required value', field: 'spec.containers[0].image' }] });
  });

  test('unknown fields: Strict refuses, Warn warns and drops them', async () => {
    const body = { ...configMap('unknown-1'), bogus: 1 };
    const strict = await call(server.admin, 'POST', `${CONFIGMAPS}?fieldValidation=Strict`, { body });
    expect([strict.status, strict.body.message]).toEqual([400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"']);
    const warn = await call(server.admin, 'POST', CONFIGMAPS, { body });
    expect(warn.status).toBe(201);
    expect(warn.headers.warning).toBe('299 - "unknown field \\"bogus\\""');
    expect(warn.body.bogus).toBeUndefined();
  });

  test('apply patches are refused with 415; a missing collection path is 404', async () => {
    const res = await call(server.admin, 'PATCH', `${CONFIGMAPS}/dup`, { body: '{}', contentType: 'application/apply-patch+yaml' });
    expect([res.status, res.body.reason]).toEqual([415, 'UnsupportedMediaType']);
    expect((await call(server.admin, 'GET', '/api/v1/widgets')).status).toBe(404);
  });
});

describe('optimistic concurrency', () => {
  test('an update with a stale resourceVersion is a Conflict with kube message', async () => {
    const created = await ok<Obj>(server.admin, 'POST', CONFIGMAPS, { body: configMap('occ', { a: '1' }) });
    const first = await ok<Obj>(server.admin, 'PUT', `${CONFIGMAPS}/occ`, { body: { ...created, data: { a: '2' } } });
    expect(rv(first)).toBeGreaterThan(rv(created));
    const stale = await call(server.admin, 'PUT', `${CONFIGMAPS}/occ`, { body: { ...created, data: { a: '3' } } });
    expect(stale.status).toBe(409);
    expect(stale.body.reason).toBe('Conflict');
    expect(stale.body.message).toBe('Operation cannot be fulfilled on configmaps "occ": the object has been modified; please apply your changes to the latest version and try again');
  });

  test('an update without resourceVersion is unconditional; a no-op update keeps the resourceVersion', async () => {
    const created = await ok<Obj>(server.admin, 'POST', CONFIGMAPS, { body: configMap('uncond', { a: '1' }) });
    const same = await ok<Obj>(server.admin, 'PUT', `${CONFIGMAPS}/uncond`, { body: configMap('uncond', { a: '1' }) });
    expect(rv(same)).toBe(rv(created));
    const changed = await ok<Obj>(server.admin, 'PUT', `${CONFIGMAPS}/uncond`, { body: configMap('uncond', { a: '9' }) });
    expect(rv(changed)).toBeGreaterThan(rv(created));
  });
});

describe('status subresource', () => {
  test('writes to the pod ignore status; writes to pods/status ignore spec', async () => {
    const created = await ok<Obj>(server.admin, 'POST', PODS, { body: pod('status-1') });
    expect(created.status).toMatchObject({ phase: 'Pending', qosClass: 'BestEffort' });
    const viaMain = await ok<Obj>(server.admin, 'PUT', `${PODS}/status-1`, { body: { ...created, status: { phase: 'Running' } } });
    expect((viaMain.status as Obj).phase).toBe('Pending');
    const spec = structuredClone(viaMain.spec) as Obj;
    ((spec.containers as Obj[])[0] as Obj).image = 'other:1';
    const viaStatus = await ok<Obj>(server.admin, 'PUT', `${PODS}/status-1/status`, { body: { ...viaMain, spec, status: { phase: 'Running' } } });
    expect((viaStatus.status as Obj).phase).toBe('Running');
    expect((((viaStatus.spec as Obj).containers as Obj[])[0] as Obj).image).toBe('localhost/nodelet/busybox:1.35');
  });

  test('a strategic merge patch of pods/status merges conditions and containerStatuses by key', async () => {
    await ok(server.admin, 'POST', PODS, { body: pod('smp-1') });
    const path = `${PODS}/smp-1/status`;
    const smp = { contentType: 'application/strategic-merge-patch+json' };
    await ok(server.admin, 'PATCH', path, { ...smp, body: { status: { conditions: [{ type: 'Initialized', status: 'True' }, { type: 'Ready', status: 'False' }] } } });
    const after = await ok<Obj>(server.admin, 'PATCH', path, { ...smp, body: { status: { conditions: [{ type: 'Ready', status: 'True' }] } } });
    expect(((after.status as Obj).conditions as Obj[]).map((c) => `${String(c.type)}=${String(c.status)}`)).toEqual(['Initialized=True', 'Ready=True']);
  });

  test('a patch whose metadata.uid differs from the pod is refused (the kubelet status precondition)', async () => {
    await ok(server.admin, 'POST', PODS, { body: pod('uid-pre') });
    const res = await call(server.admin, 'PATCH', `${PODS}/uid-pre/status`, {
      contentType: 'application/strategic-merge-patch+json',
      body: { metadata: { uid: '00000000-0000-0000-0000-000000000000' }, status: { phase: 'Running' } },
    });
    expect(res.status).toBe(422);
    expect(String(res.body.message)).toContain('metadata.uid: Invalid value: "00000000-0000-0000-0000-000000000000": field is immutable');
  });

  test('writes to nodes ignore status; nodes/status ignores spec', async () => {
    const n = await ok<Obj>(server.admin, 'GET', '/api/v1/nodes/n1');
    const viaMain = await ok<Obj>(server.admin, 'PATCH', '/api/v1/nodes/n1', { contentType: 'application/merge-patch+json', body: { spec: { podCIDR: '10.99.0.0/24' }, status: { capacity: { pods: '1' } } } });
    expect((viaMain.spec as Obj).podCIDR).toBe('10.99.0.0/24');
    expect(((viaMain.status as Obj).capacity as Obj | undefined)?.pods).toBe(((n.status as Obj).capacity as Obj | undefined)?.pods);
    const viaStatus = await ok<Obj>(server.admin, 'PATCH', '/api/v1/nodes/n1/status', { contentType: 'application/merge-patch+json', body: { spec: { unschedulable: true }, status: { capacity: { pods: '110' } } } });
    expect((viaStatus.spec as Obj).unschedulable).toBeUndefined();
    expect(((viaStatus.status as Obj).capacity as Obj).pods).toBe('110');
  });
});

describe('graceful deletion (pod strategy)', () => {
  test('a pod not bound to a node goes at once', async () => {
    await ok(server.admin, 'POST', PODS, { body: pod('unbound-del') });
    const res = await ok<Obj>(server.admin, 'DELETE', `${PODS}/unbound-del`);
    expect(res.kind).toBe('Pod');
    expect((await call(server.admin, 'GET', `${PODS}/unbound-del`)).status).toBe(404);
  });

  test('a bound pod gets deletionTimestamp and grace; a later delete may only shorten it; 0 removes it', async () => {
    await ok(server.admin, 'POST', PODS, { body: pod('bound-del', { grace: 30 }) });
    await bindPod(server, 'default', 'bound-del', 'n1');
    const before = Date.now();
    const first = await ok<Obj>(server.admin, 'DELETE', `${PODS}/bound-del`);
    expect(meta(first).deletionGracePeriodSeconds).toBe(30);
    const deadline = Date.parse(String(meta(first).deletionTimestamp));
    expect(deadline).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 29_000);
    const longer = await ok<Obj>(server.admin, 'DELETE', `${PODS}/bound-del`, { body: { gracePeriodSeconds: 60 } });
    expect([meta(longer).deletionGracePeriodSeconds, meta(longer).deletionTimestamp]).toEqual([30, meta(first).deletionTimestamp]);
    const shorter = await ok<Obj>(server.admin, 'DELETE', `${PODS}/bound-del`, { body: { gracePeriodSeconds: 10 } });
    expect(meta(shorter).deletionGracePeriodSeconds).toBe(10);
    expect(Date.parse(String(meta(shorter).deletionTimestamp))).toBe(deadline - 20_000);
    const uidMismatch = await call(server.admin, 'DELETE', `${PODS}/bound-del`, { body: { gracePeriodSeconds: 0, preconditions: { uid: 'other' } } });
    expect(uidMismatch.status).toBe(409);
    expect(uidMismatch.body.message).toBe(`Operation cannot be fulfilled on pods "bound-del": Precondition failed: UID in precondition: other, UID in object meta: ${String(meta(first).uid)}`);
    await ok(server.admin, 'DELETE', `${PODS}/bound-del`, { body: { gracePeriodSeconds: 0, preconditions: { uid: meta(first).uid } } });
    expect((await call(server.admin, 'GET', `${PODS}/bound-del`)).status).toBe(404);
  });

  test('a bound pod that finished goes at once; other resources answer with a Success Status', async () => {
    await ok(server.admin, 'POST', PODS, { body: pod('done-del') });
    await bindPod(server, 'default', 'done-del', 'n1');
    await ok(server.admin, 'PATCH', `${PODS}/done-del/status`, { contentType: 'application/merge-patch+json', body: { status: { phase: 'Succeeded' } } });
    await ok(server.admin, 'DELETE', `${PODS}/done-del`);
    expect((await call(server.admin, 'GET', `${PODS}/done-del`)).status).toBe(404);
    const cm = await ok<Obj>(server.admin, 'POST', CONFIGMAPS, { body: configMap('del-cm') });
    const status = await ok<Obj>(server.admin, 'DELETE', `${CONFIGMAPS}/del-cm`);
    expect(status).toEqual({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: 'del-cm', kind: 'configmaps', uid: meta(cm).uid } });
  });
});

describe('binding', () => {
  test('binding sets nodeName and PodScheduled; a second binding is a Conflict', async () => {
    await ok(server.admin, 'POST', PODS, { body: pod('bind-1') });
    await bindPod(server, 'default', 'bind-1', 'n1');
    const bound = await ok<Obj>(server.admin, 'GET', `${PODS}/bind-1`);
    expect((bound.spec as Obj).nodeName).toBe('n1');
    expect((bound.status as Obj).conditions).toEqual([{ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: expect.any(String) }]);
    const again = await bindPod(server, 'default', 'bind-1', 'n2').catch((e: unknown) => e);
    expect(again).toBeInstanceOf(BindError);
    expect((again as BindError).status).toBe(409);
    expect(((again as BindError).body as Obj).message).toBe('Operation cannot be fulfilled on pods/binding "bind-1": pod bind-1 is already assigned to node "n1"');
  });
});

describe('selectors', () => {
  test('label selectors with =, !=, in, notin, exists and !exists', async () => {
    await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('sel-a', {}, { tier: 'web', env: 'prod' }) });
    await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('sel-b', {}, { tier: 'db' }) });
    const names = async (selector: string): Promise<string[]> => {
      const list = await ok<Obj>(server.admin, 'GET', `${CONFIGMAPS}?labelSelector=${encodeURIComponent(selector)}`);
      return (list.items as Obj[]).map((i) => String(meta(i).name)).filter((n) => n.startsWith('sel-'));
    };
    expect(await names('tier=web')).toEqual(['sel-a']);
    expect(await names('tier==db')).toEqual(['sel-b']);
    expect(await names('tier,tier!=web')).toEqual(['sel-b']);
    expect(await names('tier in (web, db)')).toEqual(['sel-a', 'sel-b']);
    expect(await names('tier notin (web)')).toEqual(['sel-b']);
    expect(await names('tier,!env')).toEqual(['sel-b']);
    expect(await names('env')).toEqual(['sel-a']);
  });

  test('field selectors: spec.nodeName and metadata.name; unknown labels are 400', async () => {
    await ok(server.admin, 'POST', PODS, { body: pod('field-1') });
    await ok(server.admin, 'POST', PODS, { body: pod('field-2') });
    await bindPod(server, 'default', 'field-2', 'n1');
    const onNode = await ok<Obj>(server.admin, 'GET', `/api/v1/pods?fieldSelector=${encodeURIComponent('spec.nodeName=n1,metadata.name=field-2')}`);
    expect((onNode.items as Obj[]).map((i) => meta(i).name)).toEqual(['field-2']);
    const unbound = await ok<Obj>(server.admin, 'GET', `${PODS}?fieldSelector=${encodeURIComponent('spec.nodeName=,metadata.name=field-1')}`);
    expect((unbound.items as Obj[]).map((i) => meta(i).name)).toEqual(['field-1']);
    const bad = await call(server.admin, 'GET', `${PODS}?fieldSelector=spec.foo%3Dx`);
    expect([bad.status, bad.body.message]).toEqual([400, 'field label not supported: spec.foo']);
  });

  test('list items carry no kind or apiVersion; the list carries its resourceVersion', async () => {
    const list = await ok<Obj>(server.admin, 'GET', CONFIGMAPS);
    expect([list.kind, list.apiVersion]).toEqual(['ConfigMapList', 'v1']);
    expect(rv(list)).toBeGreaterThan(0);
    expect((list.items as Obj[])[0]?.kind).toBeUndefined();
  });
});

describe('pods/log', () => {
  test('a pod without a node answers nothing; an unreachable kubelet is a 500 like kube-apiserver gives', async () => {
    await ok(server.admin, 'POST', PODS, { body: pod('log-1') });
    const empty = await call(server.admin, 'GET', `${PODS}/log-1/log`);
    expect([empty.status, empty.text]).toEqual([200, '']);
    const badContainer = await call(server.admin, 'GET', `${PODS}/log-1/log?container=x`);
    expect([badContainer.status, badContainer.body.message]).toEqual([400, 'container x is not valid for pod log-1']);
    // A port nothing listens on: bind one, close it.
    const port = await new Promise<number>((resolve) => {
      const s: Server = createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    await ok(server.admin, 'POST', '/api/v1/nodes', { body: node('log-node', '127.0.0.1', port) });
    await bindPod(server, 'default', 'log-1', 'log-node');
    const refused = await call(server.admin, 'GET', `${PODS}/log-1/log`);
    expect(refused.status).toBe(500);
    expect(refused.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `Get "https://127.0.0.1:${port}/containerLogs/default/log-1/c": dial tcp 127.0.0.1:${port}: connect: connection refused`,
      code: 500,
    });
  });
});

describe('namespaces', () => {
  test('every namespace gets a default service account and kube-root-ca.crt; a missing namespace is 404', async () => {
    await ok(server.admin, 'POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } } });
    await ok(server.admin, 'GET', '/api/v1/namespaces/team-a/serviceaccounts/default');
    const ca = await ok<Obj>(server.admin, 'GET', '/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt');
    expect((ca.data as Obj)['ca.crt']).toBe(server.caPem);
    const missing = await call(server.admin, 'POST', '/api/v1/namespaces/nowhere/configmaps', { body: configMap('x') });
    expect([missing.status, missing.body.message]).toEqual([404, 'namespaces "nowhere" not found']);
  });

  test('deleting a namespace removes its content, then the namespace', async () => {
    await ok(server.admin, 'POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-b' } } });
    await ok(server.admin, 'POST', '/api/v1/namespaces/team-b/configmaps', { body: configMap('c1') });
    const terminating = await ok<Obj>(server.admin, 'DELETE', '/api/v1/namespaces/team-b');
    expect((terminating.status as Obj).phase).toBe('Terminating');
    expect((await call(server.admin, 'GET', '/api/v1/namespaces/team-b')).status).toBe(404);
  });
});

test('dryRun=All answers as a create would but stores nothing', async () => {
  const res = await ok<Obj>(server.admin, 'POST', `${CONFIGMAPS}?dryRun=All`, { body: configMap('dry') });
  expect(meta(res).uid).toEqual(expect.any(String));
  expect((await call(server.admin, 'GET', `${CONFIGMAPS}/dry`)).status).toBe(404);
});

test('the state and a monotonic resourceVersion survive a restart', async () => {
  const created = await ok<Obj>(server.admin, 'POST', CONFIGMAPS, { body: configMap('persist', { a: '1' }) });
  await server.restart();
  const again = await ok<Obj>(server.admin, 'GET', `${CONFIGMAPS}/persist`);
  expect(again).toEqual(created);
  const next = await ok<Obj>(server.admin, 'POST', CONFIGMAPS, { body: configMap('persist-2') });
  expect(rv(next)).toBeGreaterThan(rv(created));
});

test('unauthenticated requests are 401', async () => {
  const res = await call({ url: server.url, caPem: server.caPem }, 'GET', PODS);
  expect(res.body).toEqual({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
});
