// The agent's local read-only API on a unix socket: the pods it runs with their status (like kubelet's /pods), listed or watched.
import { createServer, request, type ServerResponse, type Server } from '../core/node-http.js';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { V1Pod } from '@kubernetes/client-node';

/** JSON as the API server writes it: timestamps in RFC 3339 with whole seconds. */
export function toApiJson(value: unknown, indent?: number): string {
  return JSON.stringify(
    value,
    function (this: Record<string, unknown>, key: string, v: unknown) {
      const raw = this[key];
      return raw instanceof Date ? raw.toISOString().replace(/\.\d{3}Z$/, 'Z') : v;
    },
    indent,
  );
}

export function podList(pods: V1Pod[]): object {
  return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: pods };
}

export type PodWatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

/** One event of `GET /pods?watch=true`, as kube's watch.Event: DELETED carries the pod as last sent. */
export interface PodWatchEvent {
  type: PodWatchEventType;
  object: V1Pod;
}

/**
 * On a pod listed by the status socket while it waits for an image pull: the image and the pull's progress ("<image>
 * queued", "<image> 23.4MiB of 50.0MiB (46%)"). Only in listings (`nodelet pods -o wide`); watches do not carry it.
 */
export const imagePullAnnotation = 'nodelet.io/image-pull';

/** The pods with imagePullAnnotation on those that wait for a pull (copies; the pods given are not changed). */
export function withImagePulls(pods: V1Pod[], pullStatus: (podUid: string) => string | undefined): V1Pod[] {
  return pods.map((pod) => {
    const pull = pullStatus(pod.metadata?.uid ?? '');
    if (pull === undefined) return pod;
    return { ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata?.annotations, [imagePullAnnotation]: pull } } };
  });
}

/** Marks the BOOKMARK after a watch's initial events, as kube-apiserver's watch-list (sendInitialEvents=true). */
export const initialEventsEndAnnotation = 'k8s.io/initial-events-end';

const initialEventsEnd = toApiJson({ kind: 'Pod', apiVersion: 'v1', metadata: { annotations: { [initialEventsEndAnnotation]: 'true' } } });

/** Unread watch output a watcher may leave before its watch is ended: kube-apiserver too drops watchers that fall behind. */
const defaultMaxUnreadBytes = 1 << 20;

/** The wire form of an event around an object already serialised: each change is serialised once for all watchers. */
function eventLine(type: PodWatchEventType, objectJson: string): string {
  return `{"type":"${type}","object":${objectJson}}\n`;
}

/**
 * The watchers of the status socket and the pods as last sent to them. A changed pod is serialised once, whatever the
 * number of watchers, and only when someone watches; an unchanged one is not serialised again.
 */
class PodWatchBroadcaster {
  private readonly watchers = new Set<ServerResponse>();
  /** Each pod's JSON as last sent, by UID; kept only while someone watches (the first watcher lists the pods afresh). */
  private readonly sent = new Map<string, string>();

  constructor(
    private readonly pods: () => V1Pod[],
    private readonly maxUnreadBytes = defaultMaxUnreadBytes,
  ) {}

  get watcherCount(): number {
    return this.watchers.size;
  }

  /**
   * A pod's state as `pods()` now shows it, or undefined once it is no longer listed. The pod's owner calls this on every
   * change (status, pod object, worker added or removed); an update that serialises as before sends nothing.
   */
  podChanged(uid: string, pod: V1Pod | undefined): void {
    if (this.watchers.size === 0) return;
    const before = this.sent.get(uid);
    if (!pod) {
      if (before === undefined) return;
      this.sent.delete(uid);
      this.dispatch(eventLine('DELETED', before));
      return;
    }
    const json = toApiJson(pod);
    if (json === before) return;
    this.sent.set(uid, json);
    this.dispatch(eventLine(before === undefined ? 'ADDED' : 'MODIFIED', json));
  }

  /**
   * Streams a watch on `res` until the client leaves or `endAll`: ADDED for every current pod (as a kube watch without
   * resourceVersion), with `initialEventsEnd` the BOOKMARK that closes those, then one event per change.
   */
  watch(res: ServerResponse, opts: { initialEventsEnd: boolean }): void {
    if (this.watchers.size === 0) for (const pod of this.pods()) this.sent.set(pod.metadata!.uid!, toApiJson(pod));
    this.watchers.add(res);
    res.once('close', () => this.forget(res));
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    let initial = '';
    for (const json of this.sent.values()) initial += eventLine('ADDED', json);
    if (opts.initialEventsEnd) initial += eventLine('BOOKMARK', initialEventsEnd);
    // No pods and no bookmark: the headers go out alone, so the client knows its watch is established.
    if (initial) res.write(initial);
    else res.flushHeaders();
  }

  /** Ends every watch (the agent is stopping). */
  endAll(): void {
    for (const res of this.watchers) res.end();
  }

  private dispatch(line: string): void {
    for (const res of this.watchers) {
      res.write(line);
      // The socket's buffer grows while the client does not read: past the limit its memory is freed with the
      // connection, rather than kept until a clean end could be flushed. The client lists and watches again.
      if (res.writableLength > this.maxUnreadBytes) {
        this.forget(res);
        res.destroy();
      }
    }
  }

  private forget(res: ServerResponse): void {
    this.watchers.delete(res);
    if (this.watchers.size === 0) this.sent.clear();
  }
}

/** A query parameter's truth as Go's strconv.ParseBool reads it (kube-apiserver's query parameters). */
function queryFlag(value: string | null): boolean {
  return value !== null && ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(value);
}

export class StatusApi {
  private server?: Server;
  private readonly watch: PodWatchBroadcaster;

  constructor(
    private readonly socketPath: string,
    private readonly pods: () => V1Pod[],
    private readonly opts: { maxUnreadWatchBytes?: number; pullStatus?: (podUid: string) => string | undefined } = {},
  ) {
    this.watch = new PodWatchBroadcaster(pods, opts.maxUnreadWatchBytes);
  }

  /** See PodWatchBroadcaster.podChanged: the pod source tells every change of what `pods()` lists. */
  podChanged(uid: string, pod: V1Pod | undefined): void {
    this.watch.podChanged(uid, pod);
  }

  get watcherCount(): number {
    return this.watch.watcherCount;
  }

  async listen(): Promise<void> {
    await mkdir(dirname(this.socketPath), { recursive: true });
    await rm(this.socketPath, { force: true });
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://nodelet');
      const query = url.searchParams;
      if (req.method === 'GET' && url.pathname === '/pods' && queryFlag(query.get('watch'))) {
        const sendInitialEvents = queryFlag(query.get('sendInitialEvents'));
        // As kube-apiserver: the end of the initial events is told by a bookmark, which the client must accept.
        if (sendInitialEvents && !queryFlag(query.get('allowWatchBookmarks'))) {
          res.writeHead(400, { 'content-type': 'text/plain' });
          res.end('sendInitialEvents requires allowWatchBookmarks=true');
          return;
        }
        this.watch.watch(res, { initialEventsEnd: sendInitialEvents });
      } else if (req.method === 'GET' && url.pathname === '/pods') {
        res.writeHead(200, { 'content-type': 'application/json' });
        const pods = this.pods();
        res.end(toApiJson(podList(this.opts.pullStatus ? withImagePulls(pods, this.opts.pullStatus) : pods)));
      } else if (req.method === 'GET' && url.pathname === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.socketPath, () => resolve());
    });
    await chmod(this.socketPath, 0o600);
    this.server = server;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.watch.endAll();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(this.socketPath, { force: true });
  }
}

/** Fetches the running agent's pods (used by `nodelet pods`, tests and the benchmark). */
export function fetchPods(socketPath: string, timeoutMs = 5000): Promise<V1Pod[]> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/pods', method: 'GET', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`nodelet answered ${res.statusCode}: ${body}`));
        try {
          resolve((JSON.parse(body) as { items: V1Pod[] }).items);
        } catch (err) {
          reject(err);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from nodelet at ${socketPath} within ${timeoutMs} ms`)));
    req.on('error', (err) => reject(new Error(`cannot reach nodelet at ${socketPath}: ${err.message}`, { cause: err })));
    req.end();
  });
}

/** A watch stream the client cannot read: not newline-terminated JSON events. */
export class WatchDecodeError extends Error {}

const eventTypes = new Set<string>(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK']);

/** Splits a watch stream into its events: newline-terminated JSON objects, in chunks cut anywhere (mid-line, mid-character). */
export class PodWatchDecoder {
  private readonly utf8 = new StringDecoder('utf8');
  private rest = '';

  /** The events completed by this chunk. */
  write(chunk: Buffer): PodWatchEvent[] {
    const lines = (this.rest + this.utf8.write(chunk)).split('\n');
    this.rest = lines.pop()!;
    return lines.filter((line) => line.trim() !== '').map(parseWatchEvent);
  }

  /** The stream ended: anything left is a cut-off event. */
  end(): void {
    const rest = this.rest + this.utf8.end();
    if (rest.trim() !== '') throw new WatchDecodeError(`watch stream ended inside an event: ${rest.slice(0, 200)}`);
  }
}

function parseWatchEvent(line: string): PodWatchEvent {
  let event: unknown;
  try {
    event = JSON.parse(line);
  } catch (err) {
    throw new WatchDecodeError(`watch event is not JSON: ${line.slice(0, 200)}`, { cause: err });
  }
  const { type, object } = (event ?? {}) as Partial<PodWatchEvent>;
  if (typeof type !== 'string' || !eventTypes.has(type) || typeof object !== 'object' || object === null) {
    throw new WatchDecodeError(`not a watch event: ${line.slice(0, 200)}`);
  }
  return { type, object };
}

export interface WatchPodsOptions {
  /** Stops the watch; the promise then resolves. */
  signal?: AbortSignal;
  /** Ask for the BOOKMARK annotated k8s.io/initial-events-end after the initial ADDED events. */
  sendInitialEvents?: boolean;
  /** How long the agent may take to answer (the stream itself may then rest for any time). */
  timeoutMs?: number;
}

/**
 * Watches the running agent's pods: `onEvent` gets ADDED for every current pod, then one event per change. Resolves when
 * the agent ends the watch or `signal` aborts; rejects when the agent cannot be reached or refuses, when the stream
 * breaks or cannot be read, or with what `onEvent` throws (the watch is then stopped).
 */
export function watchPods(socketPath: string, opts: WatchPodsOptions, onEvent: (event: PodWatchEvent) => void): Promise<void> {
  const { signal, timeoutMs = 5000 } = opts;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return resolve();
    const query = opts.sendInitialEvents ? 'watch=true&sendInitialEvents=true&allowWatchBookmarks=true' : 'watch=true';
    // A connection of its own: a long-lived stream has no business in the keep-alive pool.
    const req = request({ socketPath, path: `/pods?${query}`, method: 'GET', timeout: timeoutMs, agent: false });
    let settled = false;
    const finish = (err?: unknown) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', stop);
      if (err === undefined) resolve();
      else reject(err);
      req.destroy();
    };
    const stop = () => finish();
    signal?.addEventListener('abort', stop, { once: true });
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => finish(new Error(`nodelet answered ${res.statusCode}: ${body}`)));
        return;
      }
      // Established: from now on the stream may rest for as long as no pod changes.
      req.setTimeout(0);
      const decoder = new PodWatchDecoder();
      res.on('data', (chunk: Buffer) => {
        try {
          for (const event of decoder.write(chunk)) {
            if (settled) return;
            onEvent(event);
          }
        } catch (err) {
          finish(err);
        }
      });
      res.on('end', () => {
        try {
          decoder.end();
          finish();
        } catch (err) {
          finish(err);
        }
      });
      res.on('close', () => {
        if (!res.complete) finish(new Error(`the watch of nodelet at ${socketPath} broke off`));
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from nodelet at ${socketPath} within ${timeoutMs} ms`)));
    req.on('error', (err) => finish(new Error(`cannot reach nodelet at ${socketPath}: ${err.message}`, { cause: err })));
    req.end();
  });
}
