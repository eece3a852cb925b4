// Test API server watches: resume from a resourceVersion, initial state, selector transitions, bookmarks, 410 Gone, timeouts.
import { openWatch } from '../test-client.js';
import { startTestApiServer, type TestApiServer } from '../test-apiserver.js';
import { bindPod } from '../scheduler.js';
import { CONFIGMAPS, PODS, configMap, ok, pod, rv, type Obj } from './server-fixture.js';

let server: TestApiServer;
beforeAll(async () => {
  server = await startTestApiServer({ nodeNames: ['n1'], watchWindow: 5, bookmarkIntervalMs: 200 });
});
afterAll(async () => server.stop());

const name = (o: Obj): string => String((o.metadata as Obj).name);

test('a watch from a resourceVersion replays the later events, then new ones, in order', async () => {
  const a = await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('resume-a', { k: '1' }) });
  await ok(server.admin, 'PUT', `${CONFIGMAPS}/resume-a`, { body: { ...configMap('resume-a', { k: '2' }), metadata: { name: 'resume-a', resourceVersion: String(rv(a)) } } });
  await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('resume-b') });
  const w = await openWatch(server.admin, `${CONFIGMAPS}?watch=true&resourceVersion=${rv(a)}`);
  try {
    expect(w.status).toBe(200);
    const first = await w.next();
    expect([first?.type, name(first?.object as Obj), (first?.object.data as Obj).k]).toEqual(['MODIFIED', 'resume-a', '2']);
    const second = await w.next();
    expect([second?.type, name(second?.object as Obj)]).toEqual(['ADDED', 'resume-b']);
    await ok(server.admin, 'DELETE', `${CONFIGMAPS}/resume-a`);
    const third = await w.next();
    expect([third?.type, name(third?.object as Obj)]).toEqual(['DELETED', 'resume-a']);
    expect(rv(third?.object)).toBeGreaterThan(rv(second?.object));
  } finally {
    w.close();
  }
});

test('a watch without resourceVersion starts with the current objects as ADDED', async () => {
  await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('initial-x', {}, { set: 'initial' }) });
  const w = await openWatch(server.admin, `${CONFIGMAPS}?watch=1&labelSelector=set%3Dinitial`);
  try {
    const e = await w.next();
    expect([e?.type, name(e?.object as Obj)]).toEqual(['ADDED', 'initial-x']);
    expect(e?.object.kind).toBe('ConfigMap');
  } finally {
    w.close();
  }
});

test('a field selector sees a pod bound to its node as ADDED and its deletion as DELETED', async () => {
  const created = await ok(server.admin, 'POST', PODS, { body: pod('sel-1') });
  const w = await openWatch(server.admin, `/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dn1&resourceVersion=${rv(created)}`);
  try {
    await bindPod(server, 'default', 'sel-1', 'n1');
    const added = await w.next();
    expect([added?.type, name(added?.object as Obj), (added?.object.spec as Obj).nodeName]).toEqual(['ADDED', 'sel-1', 'n1']);
    await ok(server.admin, 'DELETE', `${PODS}/sel-1`, { body: { gracePeriodSeconds: 0 } });
    const deleted = await w.next();
    expect([deleted?.type, name(deleted?.object as Obj)]).toEqual(['DELETED', 'sel-1']);
  } finally {
    w.close();
  }
});

test('allowWatchBookmarks brings BOOKMARK events carrying the current resourceVersion', async () => {
  const cm = await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('bookmark-1') });
  const w = await openWatch(server.admin, `${CONFIGMAPS}?watch=true&allowWatchBookmarks=true&resourceVersion=${rv(cm)}`);
  try {
    const e = await w.next(2000);
    expect(e?.type).toBe('BOOKMARK');
    expect(e?.object.kind).toBe('ConfigMap');
    expect(rv(e?.object)).toBeGreaterThanOrEqual(rv(cm));
  } finally {
    w.close();
  }
});

test('sendInitialEvents ends the initial state with the initial-events-end bookmark', async () => {
  await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('initial-events', {}, { set: 'sie' }) });
  const w = await openWatch(server.admin, `${CONFIGMAPS}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&labelSelector=set%3Dsie`);
  try {
    expect((await w.next())?.type).toBe('ADDED');
    const end = await w.next();
    expect(end?.type).toBe('BOOKMARK');
    expect((end?.object.metadata as Obj).annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
  } finally {
    w.close();
  }
});

test('a watch from a resourceVersion older than the window gets an ERROR event with 410 Expired', async () => {
  const first = await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('gone-0') });
  for (let i = 1; i <= 6; i++) await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap(`gone-${i}`) });
  const w = await openWatch(server.admin, `${CONFIGMAPS}?watch=true&resourceVersion=${rv(first) - 1}`);
  try {
    expect(w.status).toBe(200);
    const e = await w.next();
    expect(e?.type).toBe('ERROR');
    expect(e?.object).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410 });
    expect(String(e?.object.message)).toMatch(new RegExp(`^too old resource version: ${rv(first) - 1} \\(\\d+\\)$`));
    await w.ended;
  } finally {
    w.close();
  }
});

test('after a restart, a watch from before the restart is 410 and one from the current version works', async () => {
  const cm = await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('restart-watch') });
  await server.restart();
  const old = await openWatch(server.admin, `${CONFIGMAPS}?watch=true&resourceVersion=${rv(cm) - 1}`);
  expect((await old.next())?.object.code).toBe(410);
  old.close();
  const list = await ok<Obj>(server.admin, 'GET', CONFIGMAPS);
  const w = await openWatch(server.admin, `${CONFIGMAPS}?watch=true&resourceVersion=${rv(list)}`);
  try {
    await ok(server.admin, 'POST', CONFIGMAPS, { body: configMap('restart-watch-2') });
    const e = await w.next();
    expect([e?.type, name(e?.object as Obj)]).toEqual(['ADDED', 'restart-watch-2']);
  } finally {
    w.close();
  }
});

test('timeoutSeconds ends the watch', async () => {
  const started = Date.now();
  const w = await openWatch(server.admin, `${CONFIGMAPS}?watch=true&timeoutSeconds=1&resourceVersion=${rv(await ok<Obj>(server.admin, 'GET', CONFIGMAPS))}`);
  await w.ended;
  expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  expect(Date.now() - started).toBeLessThan(5000);
});
