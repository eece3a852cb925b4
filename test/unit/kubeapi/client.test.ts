// KubeClient against a local HTTP server: JSON requests, Status errors, deadlines, watch streams and their failures.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, ApiUnavailableError, isConflict, isGone, isNotFound, KubeClient, strategicMergePatch, type WatchEvent } from '../../../src/kubeapi/client.js';
import { TokenBucket } from '../../../src/kubeapi/token-bucket.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

let server: Server;
let handler: Handler;
let client: KubeClient;

beforeEach(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => handler(req, body, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  client = new KubeClient({ server: new URL(`http://127.0.0.1:${port}`), insecureSkipTLSVerify: false, source: 'test', token: 'tok' }, { timeoutMs: 2_000 });
});

afterEach(async () => {
  client.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message }));
}

test('sends the query, body, content type and bearer token, and decodes the JSON answer', async () => {
  let seen: { url?: string; method?: string; type?: string; auth?: string; body?: string } = {};
  handler = (req, body, res) => {
    seen = { url: req.url, method: req.method, type: req.headers['content-type'], auth: req.headers.authorization, body };
    res.end(JSON.stringify({ kind: 'Pod', metadata: { name: 'p' } }));
  };
  const pod = await client.request<{ metadata: { name: string } }>({
    method: 'PATCH',
    path: '/api/v1/namespaces/default/pods/p/status',
    query: { fieldManager: 'nodelet', skipped: undefined },
    body: { status: { phase: 'Running' } },
    contentType: strategicMergePatch,
  });
  expect(pod.metadata.name).toBe('p');
  expect(seen).toEqual({
    url: '/api/v1/namespaces/default/pods/p/status?fieldManager=nodelet',
    method: 'PATCH',
    type: strategicMergePatch,
    auth: 'Bearer tok',
    body: '{"status":{"phase":"Running"}}',
  });
});

test('an error Status becomes an ApiError with its code, reason and message', async () => {
  handler = (_req, _body, res) => status(res, 404, 'NotFound', 'pods "p" not found');
  const err = await client.request({ method: 'GET', path: '/api/v1/namespaces/default/pods/p' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApiError);
  expect(isNotFound(err)).toBe(true);
  expect((err as ApiError).message).toBe('pods "p" not found');

  handler = (_req, _body, res) => status(res, 409, 'Conflict', 'Operation cannot be fulfilled');
  expect(isConflict(await client.request({ method: 'PUT', path: '/x', body: {} }).catch((e: unknown) => e))).toBe(true);

  handler = (_req, _body, res) => {
    res.writeHead(503);
    res.end('overloaded');
  };
  const plain = (await client.request({ method: 'GET', path: '/y' }).catch((e: unknown) => e)) as ApiError;
  expect(plain.code).toBe(503);
  expect(plain.message).toContain('overloaded');
});

test('a request that gets no answer in time fails as unavailable, and so does a refused connection', async () => {
  handler = () => undefined; // never answers
  const err = await client.request({ method: 'GET', path: '/slow', timeoutMs: 100 }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApiUnavailableError);
  expect((err as Error).message).toBe('GET /slow: timed out');

  const refused = new KubeClient({ server: new URL('http://127.0.0.1:1'), insecureSkipTLSVerify: false, source: 'test' });
  const err2 = await refused.request({ method: 'GET', path: '/' }).catch((e: unknown) => e);
  expect(err2).toBeInstanceOf(ApiUnavailableError);
  expect((err2 as Error).message).toContain('ECONNREFUSED');
  refused.close();
});

test('a watch delivers events split across chunks, and resolves when the server ends it', async () => {
  handler = (req, _body, res) => {
    expect(req.url).toBe('/api/v1/pods?resourceVersion=5&watch=true');
    res.writeHead(200, { 'Content-Type': 'application/json' });
    const line1 = JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '6' } } });
    const line2 = JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '9' } } });
    res.write(line1.slice(0, 10));
    setTimeout(() => {
      res.write(line1.slice(10) + '\n' + line2 + '\n');
      res.end();
    }, 20);
  };
  const events: WatchEvent<{ metadata: { resourceVersion: string } }>[] = [];
  await client.watch<{ metadata: { resourceVersion: string } }>({ path: '/api/v1/pods', query: { resourceVersion: '5' }, signal: new AbortController().signal, idleTimeoutMs: 1_000, onEvent: (e) => events.push(e) });
  expect(events.map((e) => [e.type, e.object.metadata.resourceVersion])).toEqual([
    ['ADDED', '6'],
    ['BOOKMARK', '9'],
  ]);
});

test('a watch ERROR event with 410 rejects as Gone; an error answer rejects with its Status', async () => {
  handler = (_req, _body, res) => {
    res.writeHead(200);
    res.write(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 1 (20)' } }) + '\n');
  };
  const err = await client.watch({ path: '/api/v1/pods', signal: new AbortController().signal, idleTimeoutMs: 1_000, onEvent: () => undefined }).catch((e: unknown) => e);
  expect(isGone(err)).toBe(true);
  expect((err as Error).message).toBe('too old resource version: 1 (20)');

  handler = (_req, _body, res) => status(res, 403, 'Forbidden', 'pods is forbidden');
  const forbidden = (await client.watch({ path: '/api/v1/pods', signal: new AbortController().signal, idleTimeoutMs: 1_000, onEvent: () => undefined }).catch((e: unknown) => e)) as ApiError;
  expect(forbidden.code).toBe(403);
});

test('a silent watch ends as unavailable; an aborted one resolves quietly', async () => {
  handler = (_req, _body, res) => {
    res.writeHead(200);
    res.write('');
  };
  const err = await client.watch({ path: '/w', signal: new AbortController().signal, idleTimeoutMs: 150, onEvent: () => undefined }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApiUnavailableError);
  expect((err as Error).message).toBe('watch /w: no event for 150 ms');

  const stop = new AbortController();
  setTimeout(() => stop.abort(), 50);
  await expect(client.watch({ path: '/w', signal: stop.signal, idleTimeoutMs: 5_000, onEvent: () => undefined })).resolves.toBeUndefined();
});

test('open watches, more than the requests\' 16 connections, never hold up a request', async () => {
  const held: ServerResponse[] = [];
  handler = (req, _body, res) => {
    if (req.url?.includes('watch=true')) {
      // A watch the server keeps open without an event (as a quiet configMap's).
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('');
      held.push(res);
      return;
    }
    res.end(JSON.stringify({ kind: 'Lease' }));
  };
  const stop = new AbortController();
  const watches = Array.from({ length: 20 }, (_, i) =>
    client.watch({ path: `/api/v1/namespaces/ns/configmaps/cm-${i}`, signal: stop.signal, idleTimeoutMs: 10_000, onEvent: () => undefined }));
  while (held.length < 20) await new Promise((r) => setTimeout(r, 10));
  await expect(client.request<{ kind: string }>({ method: 'PUT', path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n', body: {}, timeoutMs: 1_000 }))
    .resolves.toEqual({ kind: 'Lease' });
  stop.abort();
  await Promise.all(watches);
});

test('the token bucket lets a burst through and then spaces callers by 1/qps', async () => {
  let t = 0;
  const bucket = new TokenBucket(10, 2, () => t);
  await bucket.take();
  await bucket.take();
  let third = false;
  const pending = bucket.take().then(() => (third = true));
  await new Promise((r) => setTimeout(r, 20));
  expect(third).toBe(false);
  t = 100; // the clock has refilled one token by the time the wait ends
  await pending;
  expect(third).toBe(true);
  const aborted = new AbortController();
  aborted.abort(new Error('gone'));
  await expect(bucket.take(aborted.signal)).rejects.toThrow('gone');
});
