// kubelet's event recorder: events about pods, their containers and the node, written to the API server as client-go's
// record package does (correlated, queued, retried), or in standalone mode only logged.
import type { V1ObjectReference, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../core/log.js';
import { ApiError, ApiUnavailableError, isNotFound, strategicMergePatch, type KubeClient } from '../kubeapi/client.js';
import type { EventRecorder, EventType, PodEventRef } from '../core/events.js';
import { EventCorrelator, eventName, metaTime, type CorrelateResult, type EventObject } from './event-correlator.js';
import { systemClock, type Clock } from '../core/clock.js';

/** kubelet's GenerateContainerRef field path: `spec.containers{name}`; undefined for a container not in the spec. */
export function containerFieldPath(pod: V1Pod, containerName: string): string | undefined {
  const spec = pod.spec;
  if (spec?.containers?.some((c) => c.name === containerName)) return `spec.containers{${containerName}}`;
  if (spec?.initContainers?.some((c) => c.name === containerName)) return `spec.initContainers{${containerName}}`;
  if (spec?.ephemeralContainers?.some((c) => c.name === containerName)) return `spec.ephemeralContainers{${containerName}}`;
  return undefined;
}

/**
 * The involvedObject of a pod event; undefined when it names a container the pod's spec does not have (kubelet then
 * records nothing either: a pod known only from the runtime has no spec).
 */
export function podReference(ref: PodEventRef): V1ObjectReference | undefined {
  const m = ref.pod.metadata ?? {};
  const fieldPath = ref.containerName === undefined ? undefined : containerFieldPath(ref.pod, ref.containerName);
  if (ref.containerName !== undefined && fieldPath === undefined) return undefined;
  return {
    kind: 'Pod',
    namespace: m.namespace ?? 'default',
    name: m.name ?? '',
    uid: m.uid ?? '',
    apiVersion: 'v1',
    ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
    ...(fieldPath ? { fieldPath } : {}),
  };
}

/** kubelet's nodeRef: its UID is the node's name, and with no namespace its events land in "default". */
export function nodeReference(nodeName: string): V1ObjectReference {
  return { kind: 'Node', name: nodeName, uid: nodeName };
}

/** client-go's makeEvent: a new event with count 1, named after the object and the time. */
export function makeEvent(involved: V1ObjectReference, type: EventType, reason: string, message: string, nodeName: string, now: number): EventObject {
  const at = metaTime(now);
  return {
    metadata: { name: eventName(involved.name ?? '', now), namespace: involved.namespace || 'default' },
    involvedObject: involved,
    reason,
    message,
    source: { component: 'kubelet', host: nodeName },
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
    type,
    reportingComponent: 'kubelet',
    reportingInstance: nodeName,
  };
}

/** kubelet logs every event it records (at verbosity 3): here at debug, with the object's identity. */
function logEvent(log: Logger, e: EventObject): void {
  const o = e.involvedObject;
  const who =
    o.kind === 'Pod'
      ? { pod: `${o.namespace}/${o.name}`, podUid: o.uid, ...(o.fieldPath ? { fieldPath: o.fieldPath } : {}) }
      : { object: `${o.kind}/${o.name}` };
  log.debug({ ...who, eventType: e.type, reason: e.reason }, e.message);
}

/** Standalone mode: no API server to write to, so events only reach the log (as kubelet without an API client). */
export class LogEventRecorder implements EventRecorder {
  constructor(
    private readonly log: Logger,
    private readonly nodeName: string,
    private readonly clock: Pick<Clock, 'now'> = systemClock,
  ) {}

  event(ref: PodEventRef, type: EventType, reason: string, message: string): void {
    const involved = podReference(ref);
    if (involved) logEvent(this.log, makeEvent(involved, type, reason, message, this.nodeName, this.clock.now()));
  }

  nodeEvent(type: EventType, reason: string, message: string): void {
    logEvent(this.log, makeEvent(nodeReference(this.nodeName), type, reason, message, this.nodeName, this.clock.now()));
  }
}

export interface ApiEventRecorderOptions {
  /** kubelet writes events through its own client (eventRecordQPS 50, eventBurst 100), apart from status writes. */
  client: Pick<KubeClient, 'request'>;
  nodeName: string;
  log: Logger;
  clock?: Pick<Clock, 'now' | 'sleep'>;
  /** Events waiting to be sent; beyond this they are dropped (client-go: 1000). */
  maxQueued?: number;
  /** Attempts per event while the API server is unreachable (client-go: 12)... */
  maxTries?: number;
  /** ...this far apart (client-go: 10 s; the first wait is a random part of it, so nodes do not retry in step). */
  retryIntervalMs?: number;
  random?: () => number;
}

/** An error worth another try: the server was unreachable or timed out (client-go's transport errors), or was overloaded. */
function isRetryable(err: unknown): boolean {
  if (err instanceof ApiError) return err.code === 429 || err.code >= 500;
  return err instanceof ApiUnavailableError;
}

/**
 * Cluster mode: events go to the API server one at a time in order, as client-go's recordToSink: correlated first
 * (a repeat PATCHes count and lastTimestamp with a strategic merge patch, a rate-limited one is dropped), then created
 * or patched, retried while the server is unreachable. A retrying event holds the ones behind it, as in client-go.
 */
export class ApiEventRecorder implements EventRecorder {
  private readonly queue: EventObject[] = [];
  private readonly correlator: EventCorrelator;
  private readonly clock: Pick<Clock, 'now' | 'sleep'>;
  private readonly maxQueued: number;
  private readonly maxTries: number;
  private readonly retryIntervalMs: number;
  private readonly random: () => number;
  private readonly stopping = new AbortController();
  private sending = false;
  private dropped = 0;

  constructor(private readonly opts: ApiEventRecorderOptions) {
    this.clock = opts.clock ?? systemClock;
    this.correlator = new EventCorrelator({ now: () => this.clock.now() });
    this.maxQueued = opts.maxQueued ?? 1000;
    this.maxTries = opts.maxTries ?? 12;
    this.retryIntervalMs = opts.retryIntervalMs ?? 10_000;
    this.random = opts.random ?? Math.random;
  }

  event(ref: PodEventRef, type: EventType, reason: string, message: string): void {
    const involved = podReference(ref);
    if (involved) this.enqueue(makeEvent(involved, type, reason, message, this.opts.nodeName, this.clock.now()));
  }

  nodeEvent(type: EventType, reason: string, message: string): void {
    this.enqueue(makeEvent(nodeReference(this.opts.nodeName), type, reason, message, this.opts.nodeName, this.clock.now()));
  }

  /** Stops sending: queued events are dropped, a request in flight is cancelled. */
  stop(): void {
    this.stopping.abort(new Error('event recorder stopped'));
    this.queue.length = 0;
  }

  private enqueue(e: EventObject): void {
    if (this.stopping.signal.aborted) return;
    logEvent(this.opts.log, e);
    if (this.queue.length >= this.maxQueued) {
      // Said once per run of drops, not once per event: a full queue means the server has been away a while.
      if (this.dropped++ === 0) this.opts.log.warn({ queued: this.queue.length, reason: e.reason }, 'Too many queued events; dropping events');
      return;
    }
    if (this.dropped > 0) this.opts.log.info({ dropped: this.dropped }, 'Event queue has room again');
    this.dropped = 0;
    this.queue.push(e);
    if (!this.sending) void this.drain();
  }

  private async drain(): Promise<void> {
    this.sending = true;
    try {
      while (this.queue.length > 0 && !this.stopping.signal.aborted) {
        // Recording must never fail its caller; an unexpected error costs this one event only.
        await this.record(this.queue.shift()!).catch((err: unknown) => this.opts.log.warn({ err }, 'Unable to record event'));
      }
    } finally {
      this.sending = false;
    }
  }

  private async record(incoming: EventObject): Promise<void> {
    const result = this.correlator.correlate(incoming);
    if (result.skip) return;
    for (let tries = 1; ; tries++) {
      try {
        this.correlator.updateState(await this.write(result.event, result.patch));
        return;
      } catch (err) {
        if (this.stopping.signal.aborted) return;
        const what = { reason: result.event.reason, object: `${result.event.involvedObject.kind}/${result.event.involvedObject.name}`, err };
        if (!isRetryable(err)) {
          // Another node's event of the same name, or a namespace going away: nothing a retry would change.
          const expected = err instanceof ApiError && (err.reason === 'AlreadyExists' || !!err.status?.details?.causes?.some((c) => c.reason === 'NamespaceTerminating'));
          if (expected) this.opts.log.debug(what, 'Server rejected event (will not retry)');
          else this.opts.log.warn(what, 'Server rejected event (will not retry)');
          return;
        }
        if (tries >= this.maxTries) {
          this.opts.log.warn({ ...what, tries }, 'Unable to write event (retry limit exceeded)');
          return;
        }
        this.opts.log.debug({ ...what, tries }, 'Unable to write event (will retry)');
        await this.sleep(tries === 1 ? this.retryIntervalMs * this.random() : this.retryIntervalMs);
        if (this.stopping.signal.aborted) return;
      }
    }
  }

  /** PATCH a repeat (falling back to create when it is gone from the server), else create. */
  private async write(e: EventObject, patch: CorrelateResult['patch']): Promise<EventObject> {
    const base = `/api/v1/namespaces/${encodeURIComponent(e.metadata.namespace)}/events`;
    const signal = this.stopping.signal;
    if (patch) {
      try {
        return await this.opts.client.request<EventObject>({
          method: 'PATCH',
          path: `${base}/${encodeURIComponent(e.metadata.name)}`,
          body: patch,
          contentType: strategicMergePatch,
          signal,
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    const { resourceVersion: _dropped, ...metadata } = e.metadata;
    return this.opts.client.request<EventObject>({
      method: 'POST',
      path: base,
      body: { apiVersion: 'v1', kind: 'Event', ...e, metadata },
      signal,
    });
  }

  private sleep(ms: number): Promise<void> {
    return this.clock.sleep(ms, this.stopping.signal);
  }
}
