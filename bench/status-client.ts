// The bench's client of the agent's status socket (<root-dir>/nodelet.sock): its pods, listed or watched.
//
// GET /pods returns a PodList; GET /pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true streams kube watch
// events, one JSON object per line: ADDED for each pod, a BOOKMARK ending those, then one event per change.
import { request } from 'node:http';
import type { V1Pod, V1PodList } from '@kubernetes/client-node';

export interface PodEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  object: V1Pod;
}

const eventTypes = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK']);

/** The agent's pods (GET /pods). */
export function listPods(socketPath: string, timeoutMs = 5_000): Promise<V1Pod[]> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/pods', method: 'GET', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`nodelet answered ${res.statusCode}: ${body}`));
        try {
          resolve((JSON.parse(body) as V1PodList).items);
        } catch (err) {
          reject(new Error(`nodelet's pod list is not JSON: ${body.slice(0, 200)}`, { cause: err }));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from nodelet at ${socketPath} within ${timeoutMs} ms`)));
    req.on('error', (err) => reject(new Error(`cannot reach nodelet at ${socketPath}: ${err.message}`, { cause: err })));
    req.end();
  });
}

/**
 * Watches the agent's pods: `onEvent` gets ADDED for every current pod, the BOOKMARK that ends those initial events, then
 * one event per change. Resolves when the agent ends the watch or `signal` aborts; rejects when the agent cannot be
 * reached (within 5 s) or refuses, when the stream breaks off or holds something other than watch events, or with what `onEvent` throws.
 */
export function watchPods(socketPath: string, signal: AbortSignal, onEvent: (event: PodEvent) => void): Promise<void> {
  const timeoutMs = 5_000;
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve();
    // A connection of its own (no keep-alive pool): the stream lives as long as the watch.
    const path = '/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true';
    const req = request({ socketPath, path, method: 'GET', timeout: timeoutMs, agent: false });
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', stop);
      if (err) reject(err);
      else resolve();
      req.destroy();
    };
    const stop = () => finish();
    signal.addEventListener('abort', stop, { once: true });
    req.on('response', (res) => {
      res.setEncoding('utf8');
      if (res.statusCode !== 200) {
        let body = '';
        res.on('data', (d: string) => (body += d));
        res.on('end', () => finish(new Error(`nodelet answered ${res.statusCode}: ${body}`)));
        return;
      }
      // Established: the stream may now rest for as long as no pod changes.
      req.setTimeout(0);
      let rest = '';
      res.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        try {
          for (const line of lines) {
            if (settled) return;
            if (line.trim() !== '') onEvent(parseEvent(line));
          }
        } catch (err) {
          finish(err as Error);
        }
      });
      res.on('end', () => finish(rest.trim() ? new Error(`the watch stream ended inside an event: ${rest.slice(0, 200)}`) : undefined));
      res.on('close', () => {
        if (!res.complete) finish(new Error(`the watch of nodelet at ${socketPath} broke off`));
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from nodelet at ${socketPath} within ${timeoutMs} ms`)));
    req.on('error', (err) => finish(new Error(`cannot reach nodelet at ${socketPath}: ${err.message}`, { cause: err })));
    req.end();
  });
}

function parseEvent(line: string): PodEvent {
  let event: Partial<PodEvent>;
  try {
    event = JSON.parse(line) as Partial<PodEvent>;
  } catch (err) {
    throw new Error(`watch event is not JSON: ${line.slice(0, 200)}`, { cause: err });
  }
  if (!eventTypes.has(event.type ?? '') || typeof event.object !== 'object' || event.object === null) {
    throw new Error(`not a watch event: ${line.slice(0, 200)}`);
  }
  return event as PodEvent;
}

export const isReady = (p: V1Pod) => (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

/** Running with every container running and an IP: the end of a standalone start-up measurement. */
export const isRunning = (p: V1Pod) =>
  p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).length > 0 &&
  (p.status.containerStatuses ?? []).every((c) => c.state?.running) && !!p.status.podIP;
