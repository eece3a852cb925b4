// Watch streams: initial state or replay from a resourceVersion, selector transitions (a change into or out of a
// selector is ADDED or DELETED, as kube's cacher sends it), bookmarks, timeouts, and the ERROR event for 410 Gone.
import type { ServerResponse } from 'node:http';
import { ApiError } from './api-errors.js';
import type { Registry } from './registry.js';
import { objectFields, type Obj, type ResourceDef } from './resources.js';
import { matchesFields, matchesLabels, type FieldRequirement, type LabelRequirement } from './selectors.js';
import type { StoreEvent } from './store.js';

export interface WatchOptions {
  namespace: string;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
  /** The resourceVersion query parameter ('' when absent). */
  resourceVersion: string;
  allowBookmarks: boolean;
  sendInitialEvents: boolean;
  timeoutMs: number;
  bookmarkIntervalMs: number;
  /** Turns an event's object into what is sent (a plain object, or a Table for kubectl get -w). */
  encode(obj: Obj, type: string): Obj;
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: Obj;
}

/** Decides whether and how an event reaches a watcher with selectors (kube's cacher filter). */
export function filterEvent(def: ResourceDef, options: Pick<WatchOptions, 'namespace' | 'labels' | 'fields'>, event: StoreEvent): StoreEvent['type'] | undefined {
  const matches = (obj: Obj): boolean => {
    const meta = obj.metadata as Obj;
    if (def.namespaced && options.namespace !== '' && meta.namespace !== options.namespace) return false;
    return matchesLabels(options.labels, meta.labels as Record<string, string> | undefined) && matchesFields(options.fields, objectFields(def, obj));
  };
  const now = matches(event.object);
  if (event.type !== 'MODIFIED') return now ? event.type : undefined;
  const before = event.prev ? matches(event.prev) : now;
  if (now && before) return 'MODIFIED';
  if (now) return 'ADDED';
  if (before) return 'DELETED';
  return undefined;
}

/**
 * Serves one watch on `res` until the timeout, the client going away, or `stopAll` (server shutdown). Returns a promise
 * that settles when the stream ended. Errors starting the watch (410, too large) become an ERROR event, as in kube.
 */
export function serveWatch(registry: Registry, def: ResourceDef, options: WatchOptions, res: ServerResponse, stopAll: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    // Clients wait for the headers before reading events: send them now, not with the first event.
    res.flushHeaders();
    const send = (event: WatchEvent): void => {
      if (!res.writableEnded) res.write(JSON.stringify(event) + '\n');
    };
    const bookmark = (annotations?: Record<string, string>): void => {
      const metadata: Obj = { resourceVersion: String(registry.store.resourceVersion) };
      if (annotations) metadata.annotations = annotations;
      send({ type: 'BOOKMARK', object: { kind: def.kind, apiVersion: def.group ? `${def.group}/${def.version}` : def.version, metadata } });
    };
    const deliver = (event: StoreEvent): void => {
      const type = filterEvent(def, options, event);
      if (type) send({ type, object: options.encode(registry.present(def, event.object), type) });
    };

    let cancel: (() => void) | undefined;
    let timeout: NodeJS.Timeout | undefined;
    let bookmarkTimer: NodeJS.Timeout | undefined;
    const finish = (): void => {
      cancel?.();
      clearTimeout(timeout);
      clearTimeout(bookmarkTimer);
      stopAll.removeEventListener('abort', finish);
      if (!res.writableEnded) res.end();
      resolve();
    };
    res.on('close', finish);
    stopAll.addEventListener('abort', finish);

    try {
      const rv = options.resourceVersion;
      const fromState = rv === '' || rv === '0' || options.sendInitialEvents;
      if (fromState) {
        const { items, resourceVersion } = registry.store.list(def.storage, def.namespaced && options.namespace !== '' ? options.namespace : undefined);
        for (const obj of items) deliver({ type: 'ADDED', object: obj, resourceVersion: Number((obj.metadata as Obj).resourceVersion) });
        cancel = registry.store.watch(def.storage, resourceVersion, deliver);
        if (options.sendInitialEvents && options.allowBookmarks) bookmark({ 'k8s.io/initial-events-end': 'true' });
      } else {
        const n = Number(rv);
        if (!Number.isInteger(n) || n < 0) throw new ApiError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `invalid resource version: ${rv}`, reason: 'BadRequest', code: 400 });
        cancel = registry.store.watch(def.storage, n, deliver);
      }
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      send({ type: 'ERROR', object: err.status as unknown as Obj });
      finish();
      return;
    }
    timeout = setTimeout(finish, options.timeoutMs);
    if (options.allowBookmarks) {
      const tick = (): void => {
        bookmark();
        bookmarkTimer = setTimeout(tick, options.bookmarkIntervalMs);
      };
      bookmarkTimer = setTimeout(tick, options.bookmarkIntervalMs);
    }
  });
}
