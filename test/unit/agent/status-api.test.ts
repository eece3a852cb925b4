// The status socket's pod watch over a real unix socket with a controllable pod set: events, serialisation, slow and leaving watchers; the stream decoder.
import { createServer, request, type IncomingMessage, type RequestListener } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import {
  fetchPods,
  initialEventsEndAnnotation,
  PodWatchDecoder,
  StatusApi,
  watchPods,
  WatchDecodeError,
  type PodWatchEvent,
} from '../../../src/agent/status-api.js';

/** What the agent's pod workers are to the status API: the listed pods, and a call on every change of one. */
class FakePodSource {
  readonly pods = new Map<string, V1Pod>();
  api?: StatusApi;

  set(pod: V1Pod): void {
    this.pods.set(pod.metadata!.uid!, pod);
    this.api!.podChanged(pod.metadata!.uid!, pod);
  }

  remove(uid: string): void {
    this.pods.delete(uid);
    this.api!.podChanged(uid, undefined);
  }
}

/** Serialisations of the pods made with it: JSON.stringify calls a toJSON it finds once per serialisation. */
const serialisations = { count: 0 };

function pod(name: string, phase = 'Pending', extra: Record<string, string> = {}): V1Pod {
  const annotations = { ...extra, toJSON: () => (serialisations.count++, extra) };
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, annotations: annotations as unknown as Record<string, string> },
    spec: { containers: [{ name: 'main', image: 'busybox' }] },
    status: { phase, ...(phase === 'Running' ? { podIP: `10.99.0.${name.length}` } : {}) },
  };
}

let dir: string;
let socketPath: string;
let source: FakePodSource;
let api: StatusApi | undefined;
const stops: AbortController[] = [];

/** (Re)starts the status API on the test's socket; every test has one with the default limit to begin with. */
async function startApi(opts: { maxUnreadWatchBytes?: number } = {}): Promise<void> {
  await api?.close();
  api = new StatusApi(socketPath, () => [...source.pods.values()], opts);
  source.api = api;
  await api.listen();
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-status-api-'));
  socketPath = join(dir, 'nodelet.sock');
  source = new FakePodSource();
  serialisations.count = 0;
  api = undefined;
  await startApi();
});

afterEach(async () => {
  for (const s of stops.splice(0)) s.abort();
  await api!.close();
  await rm(dir, { recursive: true, force: true });
});

async function until(what: string, ok: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A watch through the real client, collecting its events; `initial` resolves at the initial-events-end bookmark. */
function watch() {
  const stop = new AbortController();
  stops.push(stop);
  const events: PodWatchEvent[] = [];
  let initialDone!: () => void;
  const initial = new Promise<void>((r) => (initialDone = r));
  const done = watchPods(socketPath, { signal: stop.signal, sendInitialEvents: true }, (e) => {
    if (e.type === 'BOOKMARK') initialDone();
    events.push(e);
  });
  done.catch(() => undefined);
  /** The events after the bookmark, as type and pod name. */
  const changes = () => events.slice(events.findIndex((e) => e.type === 'BOOKMARK') + 1).map((e) => `${e.type} ${e.object.metadata?.name}`);
  return { events, initial, done, stop, changes };
}

/** A raw request: the answer's head, and its body (for watches, what arrived until `settleMs` passed). */
function raw(path: string, settleMs = 100): Promise<{ res: IncomingMessage; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ res, body }));
      setTimeout(() => {
        resolve({ res, body });
        req.destroy();
      }, settleMs);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('GET /pods?watch=true', () => {
  test('answers a chunked JSON stream: ADDED for every current pod, then the initial-events-end BOOKMARK', async () => {
    source.pods.set('uid-a', pod('a', 'Running'));
    source.pods.set('uid-b', pod('b'));
    const { res, body } = await raw('/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['transfer-encoding']).toBe('chunked');
    const lines = body.split('\n');
    expect(lines.pop()).toBe('');
    const events = lines.map((l) => JSON.parse(l) as PodWatchEvent);
    expect(events.map((e) => [e.type, e.object.metadata?.name])).toEqual([['ADDED', 'a'], ['ADDED', 'b'], ['BOOKMARK', undefined]]);
    expect(events[0]!.object.status).toEqual({ phase: 'Running', podIP: '10.99.0.1' });
    expect(events[2]!.object).toEqual({ kind: 'Pod', apiVersion: 'v1', metadata: { annotations: { [initialEventsEndAnnotation]: 'true' } } });
  });

  test('without sendInitialEvents no bookmark; sendInitialEvents needs allowWatchBookmarks, as in kube', async () => {
    source.pods.set('uid-a', pod('a'));
    const plain = await raw('/pods?watch=true');
    expect(plain.body.trim().split('\n').map((l) => (JSON.parse(l) as PodWatchEvent).type)).toEqual(['ADDED']);
    const refused = await raw('/pods?watch=true&sendInitialEvents=true');
    expect(refused.res.statusCode).toBe(400);
    expect(refused.body).toMatch(/allowWatchBookmarks/);
  });

  test('an empty pod set still establishes the watch (headers sent at once)', async () => {
    const { res, body } = await raw('/pods?watch=true');
    expect(res.statusCode).toBe(200);
    expect(body).toBe('');
  });

  test('GET /pods without watch still lists every pod', async () => {
    source.pods.set('uid-a', pod('a'));
    expect((await fetchPods(socketPath)).map((p) => p.metadata?.name)).toEqual(['a']);
    expect((await raw('/pods?watch=false')).body).toMatch(/^\{"kind":"PodList"/);
  });

  test('MODIFIED only when the pod serialises differently: an equal re-sync sends nothing', async () => {
    source.pods.set('uid-a', pod('a'));
    const w = watch();
    await w.initial;
    source.set(pod('a')); // a new object with the same content, as every sync derives
    source.set(pod('a', 'Running'));
    source.set(pod('a', 'Running'));
    source.set(pod('a', 'Succeeded'));
    await until('two changes', () => w.changes().length >= 2);
    await new Promise((r) => setTimeout(r, 50));
    expect(w.changes()).toEqual(['MODIFIED a', 'MODIFIED a']);
    expect(w.events.filter((e) => e.type === 'MODIFIED').map((e) => e.object.status?.phase)).toEqual(['Running', 'Succeeded']);
  });

  test('ADDED for a new pod, DELETED with its last state once it is gone; an unknown pod going away sends nothing', async () => {
    const w = watch();
    await w.initial;
    source.set(pod('b', 'Running'));
    source.remove('uid-b');
    source.remove('uid-never-listed');
    source.set(pod('c'));
    await until('three changes', () => w.changes().length >= 3);
    expect(w.changes()).toEqual(['ADDED b', 'DELETED b', 'ADDED c']);
    expect(w.events.find((e) => e.type === 'DELETED')!.object.status?.phase).toBe('Running');
  });

  test('each change is serialised once for all watchers, and not at all while nobody watches', async () => {
    source.set(pod('a'));
    source.set(pod('a', 'Running'));
    expect(serialisations.count).toBe(0);

    const watchers = [watch(), watch(), watch()];
    await Promise.all(watchers.map((w) => w.initial));
    // The first watcher lists the pods; the others get the same serialised state.
    expect(serialisations.count).toBe(1);
    source.set(pod('a', 'Succeeded'));
    expect(serialisations.count).toBe(2);
    source.set(pod('a', 'Succeeded'));
    expect(serialisations.count).toBe(3);
    await until('the change at every watcher', () => watchers.every((w) => w.changes().length === 1));
    for (const w of watchers) expect(w.changes()).toEqual(['MODIFIED a']);
  });

  test('a watcher that leaves is forgotten; with none left, changes cost nothing again', async () => {
    source.set(pod('a'));
    const w = watch();
    await w.initial;
    expect(api!.watcherCount).toBe(1);
    w.stop.abort();
    await w.done;
    await until('the watcher to be forgotten', () => api!.watcherCount === 0);
    serialisations.count = 0;
    source.set(pod('a', 'Running'));
    expect(serialisations.count).toBe(0);
    // A new watcher sees the current state, not what the old one was last sent.
    const again = watch();
    await again.initial;
    expect(again.events[0]!.object.status?.phase).toBe('Running');
  });

  test('a watcher that does not read is cut off past the limit; the others keep their watch', async () => {
    await startApi({ maxUnreadWatchBytes: 64 * 1024 });
    source.set(pod('a'));
    const reader = watch();
    await reader.initial;
    const slow = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request({ socketPath, path: '/pods?watch=true', agent: false }, (res) => {
        res.pause(); // reads nothing: the agent's buffer for it grows
        resolve(res);
      });
      req.on('error', reject);
      req.end();
    });
    await until('both watchers', () => api!.watcherCount === 2);
    const filler = 'x'.repeat(16 * 1024);
    let sent = 0;
    for (; api!.watcherCount === 2 && sent < 1_000; sent++) {
      source.set(pod('a', 'Running', { filler: `${sent}${filler}` }));
      await new Promise((r) => setImmediate(r));
    }
    expect(api!.watcherCount).toBe(1);
    // Reading again, the slow client finds its watch broken off (no clean end: the agent dropped what it had buffered).
    const closed = new Promise((r) => slow.once('close', r));
    slow.resume();
    await closed;
    expect(slow.complete).toBe(false);
    await until('every change at the reading watcher', () => reader.changes().length === sent);
  });

  test('close() ends every watch', async () => {
    source.set(pod('a'));
    const watchers = [watch(), watch()];
    await Promise.all(watchers.map((w) => w.initial));
    await api!.close();
    await Promise.all(watchers.map((w) => expect(w.done).resolves.toBeUndefined()));
    expect(api!.watcherCount).toBe(0);
  });
});

describe('watchPods', () => {
  test('rejects with what the event handler throws, and stops the watch', async () => {
    source.set(pod('a'));
    await expect(watchPods(socketPath, {}, () => {
      throw new Error('handler failed');
    })).rejects.toThrow('handler failed');
    await until('the watcher to be forgotten', () => api!.watcherCount === 0);
  });

  /** A stand-in agent answering every request with `handler`. */
  async function fakeAgent(handler: RequestListener): Promise<{ socket: string; close: () => Promise<void> }> {
    const socket = join(dir, 'fake.sock');
    const server = createServer(handler);
    await new Promise<void>((r) => server.listen(socket, r));
    return {
      socket,
      close: () => {
        server.closeAllConnections();
        return new Promise((r) => server.close(() => r()));
      },
    };
  }

  test('rejects when the agent is not there or refuses the watch', async () => {
    await expect(watchPods(join(dir, 'missing.sock'), {}, () => undefined)).rejects.toThrow(/cannot reach nodelet at .*missing\.sock/);
    const refusing = await fakeAgent((_req, res) => res.writeHead(404).end('not found'));
    try {
      await expect(watchPods(refusing.socket, {}, () => undefined)).rejects.toThrow('nodelet answered 404: not found');
    } finally {
      await refusing.close();
    }
  });

  test('rejects when the stream breaks off, or ends inside an event', async () => {
    const breaking = await fakeAgent((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MOD');
      setTimeout(() => res.destroy(), 20);
    });
    const seen: string[] = [];
    try {
      await expect(watchPods(breaking.socket, {}, (e) => seen.push(e.type))).rejects.toThrow(/broke off/);
      expect(seen).toEqual(['ADDED']);
    } finally {
      await breaking.close();
    }
    const cut = await fakeAgent((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"type":"MOD');
    });
    try {
      await expect(watchPods(cut.socket, {}, () => undefined)).rejects.toThrow(WatchDecodeError);
    } finally {
      await cut.close();
    }
  });

  test('resolves at once for an aborted signal', async () => {
    await expect(watchPods(join(dir, 'missing.sock'), { signal: AbortSignal.abort() }, () => undefined)).resolves.toBeUndefined();
  });
});

describe('PodWatchDecoder', () => {
  const events: PodWatchEvent[] = [
    { type: 'ADDED', object: { metadata: { name: 'a', annotations: { note: 'grüße ✓ 🚀' } } } },
    { type: 'MODIFIED', object: { metadata: { name: 'a' }, status: { phase: 'Running' } } },
    { type: 'DELETED', object: { metadata: { name: 'b' } } },
  ];
  const stream = Buffer.from(events.map((e) => `${JSON.stringify(e)}\n`).join(''));

  test('several events in one chunk', () => {
    const d = new PodWatchDecoder();
    expect(d.write(stream)).toEqual(events);
    expect(() => d.end()).not.toThrow();
  });

  test('split at every byte, mid-line and mid-character', () => {
    for (let cut = 1; cut < stream.length; cut++) {
      const d = new PodWatchDecoder();
      expect([...d.write(stream.subarray(0, cut)), ...d.write(stream.subarray(cut))]).toEqual(events);
      d.end();
    }
  });

  test('one byte at a time', () => {
    const d = new PodWatchDecoder();
    const out: PodWatchEvent[] = [];
    for (let i = 0; i < stream.length; i++) out.push(...d.write(stream.subarray(i, i + 1)));
    expect(out).toEqual(events);
  });

  test('a stream that ends inside an event, or a line that is not an event, is an error', () => {
    const cutOff = new PodWatchDecoder();
    cutOff.write(stream.subarray(0, 20));
    expect(() => cutOff.end()).toThrow(WatchDecodeError);
    expect(() => new PodWatchDecoder().write(Buffer.from('{"type":"ADDED"\n'))).toThrow(WatchDecodeError);
    expect(() => new PodWatchDecoder().write(Buffer.from('{"type":"ERROR","object":{}}\n'))).toThrow(/not a watch event/);
  });
});
