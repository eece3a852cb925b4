// client-go's EventCorrelator with its defaults: repeats of an event become a count patch, floods of similar events one
// combined event, and a token bucket per source and object drops the long tail.
import type { V1EventSource, V1ObjectReference } from '@kubernetes/client-node';
import type { EventType } from '../core/events.js';

/**
 * A core/v1 Event as nodelet writes it. Timestamps are metav1.Time strings (RFC 3339, whole seconds), as client-go
 * sends them; client-node's CoreV1Event types them as Date, which they are not on the wire.
 */
export interface EventObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  involvedObject: V1ObjectReference;
  reason: string;
  message: string;
  source: V1EventSource;
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  type: EventType;
  reportingComponent?: string;
  reportingInstance?: string;
}

/** What to send: a new event to create, or with `patch` an existing one to update; `skip` when rate limited. */
export interface CorrelateResult {
  event: EventObject;
  patch?: { count: number; lastTimestamp: string; message: string };
  skip: boolean;
}

export interface CorrelatorOptions {
  /** Wall clock in ms; tests move it. */
  now: () => number;
  /** Entries of each cache (client-go: 4096). */
  cacheSize?: number;
  /** Distinct messages of one kind within the interval before they are combined (client-go: 10). */
  maxSimilarEvents?: number;
  /** How long events count as similar, and a burst of them as one (client-go: 600 s). */
  aggregateIntervalMs?: number;
  /** Events a source may send about one object at once (client-go: 25)... */
  spamBurst?: number;
  /** ...and how fast that allowance refills (client-go: one per 300 s). */
  spamQps?: number;
}

/** metav1.Time's wire form: RFC 3339 in UTC with whole seconds. */
export function metaTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

let lastNanos = 0n;

/**
 * client-go names an event `<object name>.<unix nanoseconds in hex>`; nodelet's clock has milliseconds, so within one
 * process the nanoseconds are made strictly increasing to keep names unique.
 */
export function eventName(objectName: string, ms: number): string {
  let nanos = BigInt(Math.floor(ms)) * 1_000_000n;
  if (nanos <= lastNanos) nanos = lastNanos + 1n;
  lastNanos = nanos;
  return `${objectName}.${nanos.toString(16)}`;
}

/** An LRU map: reading an entry makes it the newest; the oldest goes beyond `max`. */
class Lru<V> {
  private readonly map = new Map<string, V>();

  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }
}

/** A token bucket that answers at once (client-go's TryAccept). */
class SpamBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly burst: number,
    private readonly qps: number,
    now: number,
  ) {
    this.tokens = burst;
    this.last = now;
  }

  tryAccept(now: number): boolean {
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, now - this.last) / 1000) * this.qps);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

const objectKey = (e: EventObject, withFieldPath: boolean) => {
  const o = e.involvedObject;
  return [e.source.component, e.source.host, o.kind, o.namespace, o.name, ...(withFieldPath ? [o.fieldPath] : []), o.uid, o.apiVersion];
};
/** Identical events: same source, object (field path included), type, reason and message. */
const eventKey = (e: EventObject) => [...objectKey(e, true), e.type, e.reason, e.message].join('\0');
/** Similar events: the same object (any field path), type, reason and reporter; the message may differ. */
const aggregateKey = (e: EventObject) => [...objectKey(e, false), e.type, e.reason, e.reportingComponent, e.reportingInstance].join('\0');
/** The spam filter's unit: one source about one object. */
const spamKey = (e: EventObject) => objectKey(e, false).join('\0');

interface Observation {
  count: number;
  firstTimestamp: string;
  name: string;
  resourceVersion?: string;
}

interface SimilarEvents {
  messages: Set<string>;
  lastSeen: number;
}

export class EventCorrelator {
  private readonly now: () => number;
  private readonly maxSimilar: number;
  private readonly intervalMs: number;
  private readonly burst: number;
  private readonly qps: number;
  private readonly similar: Lru<SimilarEvents>;
  private readonly observations: Lru<Observation>;
  private readonly spam: Lru<SpamBucket>;

  constructor(opts: CorrelatorOptions) {
    this.now = opts.now;
    this.maxSimilar = opts.maxSimilarEvents ?? 10;
    this.intervalMs = opts.aggregateIntervalMs ?? 600_000;
    this.burst = opts.spamBurst ?? 25;
    this.qps = opts.spamQps ?? 1 / 300;
    const size = opts.cacheSize ?? 4096;
    this.similar = new Lru(size);
    this.observations = new Lru(size);
    this.spam = new Lru(size);
  }

  /**
   * In client-go's order: combine similar events, count repeats, then rate-limit. Repeats and combinations are
   * counted even when the rate limit drops them, so the next one sent carries the full count.
   */
  correlate(incoming: EventObject): CorrelateResult {
    const now = this.now();
    const { event, key } = this.aggregate(incoming, now);
    const last = this.observations.get(key);
    let observed = event;
    let patch: CorrelateResult['patch'];
    if (last) {
      observed = {
        ...event,
        metadata: { ...event.metadata, name: last.name, ...(last.resourceVersion ? { resourceVersion: last.resourceVersion } : {}) },
        firstTimestamp: last.firstTimestamp,
        count: last.count + 1,
      };
      patch = { count: observed.count, lastTimestamp: observed.lastTimestamp, message: observed.message };
    }
    this.observe(key, observed);
    const spamKeyOf = spamKey(observed);
    let bucket = this.spam.get(spamKeyOf);
    if (!bucket) bucket = new SpamBucket(this.burst, this.qps, now);
    const skip = !bucket.tryAccept(now);
    this.spam.set(spamKeyOf, bucket);
    return { event: observed, ...(patch ? { patch } : {}), skip };
  }

  /** The server's copy of an event written: its name, resourceVersion and count are what the next repeat patches. */
  updateState(written: EventObject): void {
    this.observe(eventKey(written), written);
  }

  private observe(key: string, e: EventObject): void {
    this.observations.set(key, {
      count: e.count,
      firstTimestamp: e.firstTimestamp,
      name: e.metadata.name,
      ...(e.metadata.resourceVersion ? { resourceVersion: e.metadata.resourceVersion } : {}),
    });
  }

  /** The event itself with its own key, or once too many similar messages came, the combined event with the group's key. */
  private aggregate(e: EventObject, now: number): { event: EventObject; key: string } {
    const group = aggregateKey(e);
    let record = this.similar.get(group);
    if (!record || now - record.lastSeen > this.intervalMs) record = { messages: new Set(), lastSeen: 0 };
    record.messages.add(e.message);
    record.lastSeen = now;
    this.similar.set(group, record);
    if (record.messages.size < this.maxSimilar) return { event: e, key: eventKey(e) };
    // The set stays at the threshold: one message leaves for each that comes.
    record.messages.delete(record.messages.values().next().value!);
    const at = metaTime(now);
    const combined: EventObject = {
      ...e,
      metadata: { name: eventName(e.involvedObject.name ?? '', now), namespace: e.metadata.namespace },
      message: `(combined from similar events): ${e.message}`,
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
    };
    return { event: combined, key: group };
  }
}
