// Keeps a local copy of a set of API objects with list + watch, as client-go's reflector: relists on 410, reconnects with capped backoff.
import type { KubeClient, WatchEvent } from './client.js';
import { isGone } from './client.js';
import type { Logger } from '../core/log.js';
import { systemClock, type Clock } from '../core/clock.js';
import { boundedCopy, ObjectLimitError } from '../core/bounded-walk.js';

/** What the reflector needs of the API client (a fake stands in for it in tests). */
export type ListWatchClient = Pick<KubeClient, 'request' | 'watch'>;

export interface KubeObject {
  metadata?: { uid?: string; name?: string; namespace?: string; resourceVersion?: string };
}

interface ObjectList<T> {
  metadata?: { resourceVersion?: string };
  items?: T[];
}

export interface ReflectorBackoff {
  /** First delay after a failure; doubles per consecutive failure up to maxMs. */
  initialMs: number;
  maxMs: number;
}

export interface ReflectorOptions<T extends KubeObject> {
  client: ListWatchClient;
  /** Collection path, e.g. /api/v1/pods */
  path: string;
  fieldSelector?: string;
  /** What the objects are, for logs ("pods bound to node n1"). */
  what: string;
  log: Logger;
  /** The complete current set after every change (SET semantics); the first call follows the first list. */
  onChange: (objects: T[]) => void;
  backoff?: ReflectorBackoff;
  /** Waits between attempts and times outages. */
  clock?: Pick<Clock, 'now' | 'sleep'>;
  random?: () => number;
  /** The server-side watch timeout of one watch request; client-go picks 5-10 min at random. */
  watchTimeoutSeconds?: () => number;
  /** Request deadline of a list. */
  listTimeoutMs?: number;
}

export const defaultReflectorBackoff: ReflectorBackoff = { initialMs: 800, maxMs: 30_000 };

const minWatchTimeoutSeconds = 300;

export class Reflector<T extends KubeObject> {
  private readonly objects = new Map<string, T>();
  /** The resourceVersion last refused per UID, so a refused object is logged once per version. */
  private readonly refused = new Map<string, string | undefined>();
  private resourceVersion = '';
  private synced = false;
  private failures = 0;
  /** Set while the API server is unreachable, so an outage is logged once, not per retry. */
  private outageSince?: number;
  private readonly backoff: ReflectorBackoff;
  private readonly clock: Pick<Clock, 'now' | 'sleep'>;
  private readonly random: () => number;
  private readonly watchTimeoutSeconds: () => number;

  constructor(private readonly opts: ReflectorOptions<T>) {
    this.backoff = opts.backoff ?? defaultReflectorBackoff;
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
    this.watchTimeoutSeconds = opts.watchTimeoutSeconds ?? (() => Math.floor(minWatchTimeoutSeconds * (1 + this.random())));
  }

  /** Whether the first list has been delivered. */
  get hasSynced(): boolean {
    return this.synced;
  }

  /** The current objects. */
  list(): T[] {
    return [...this.objects.values()];
  }

  /** Lists, then watches from the list's version, until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.relist(signal);
          needList = false;
        }
        await this.watch(signal);
        // The server ended the watch at its timeout: watch again from where it stopped, no relist needed.
        this.failures = 0;
        this.reachable();
      } catch (err) {
        if (signal.aborted) return;
        needList = true;
        if (isGone(err)) {
          // The version we hold is older than the server keeps: a consistent list (resourceVersion "") at once.
          this.opts.log.info({ what: this.opts.what, resourceVersion: this.resourceVersion }, 'Watch expired (410); listing again');
          this.resourceVersion = '';
          continue;
        }
        const delay = this.nextDelay();
        if (this.outageSince === undefined) {
          this.outageSince = this.clock.now();
          this.opts.log.warn({ err, what: this.opts.what, path: this.opts.path }, 'Lost the API server; retrying with back-off');
        } else {
          this.opts.log.debug({ err, what: this.opts.what, retryInMs: delay }, 'API server still unreachable');
        }
        await this.clock.sleep(delay, signal);
      }
    }
  }

  /**
   * Full list, reported as the complete set. As client-go's reflector, a relist after a broken watch asks for "not
   * older than" the last version seen (the API server answers from its cache); the first list and the one after a
   * 410 use "" (a consistent read from storage).
   */
  private async relist(signal: AbortSignal): Promise<void> {
    const list = await this.opts.client.request<ObjectList<T>>({
      method: 'GET',
      path: this.opts.path,
      query: { fieldSelector: this.opts.fieldSelector, resourceVersion: this.resourceVersion },
      timeoutMs: this.opts.listTimeoutMs ?? 60_000,
      signal,
    });
    this.objects.clear();
    for (const item of list.items ?? []) {
      const uid = item.metadata?.uid;
      const accepted = uid ? this.accept(item) : undefined;
      if (uid && accepted) this.objects.set(uid, accepted);
    }
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    this.synced = true;
    // A list that works says nothing of the watch after it: a watch that keeps failing at once must still back off
    // (client-go resets its back-off only after a quiet period), so only a watch event or a watch's normal end resets it.
    this.reachable();
    this.publish();
  }

  private async watch(signal: AbortSignal): Promise<void> {
    const timeoutSeconds = this.watchTimeoutSeconds();
    await this.opts.client.watch<T>({
      path: this.opts.path,
      query: {
        fieldSelector: this.opts.fieldSelector,
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
      },
      signal,
      // The server must end the watch by its timeout; silence well past it means a dead connection.
      idleTimeoutMs: (timeoutSeconds + 60) * 1000,
      onEvent: (event) => this.apply(event),
    });
  }

  private apply(event: WatchEvent<T>): void {
    this.failures = 0;
    const obj = event.object;
    const rv = obj?.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    if (event.type === 'BOOKMARK') return;
    const uid = obj?.metadata?.uid;
    if (!uid) return;
    if (event.type === 'DELETED') this.refused.delete(uid);
    const accepted = event.type === 'DELETED' ? undefined : this.accept(obj);
    if (accepted) this.objects.set(uid, accepted);
    else this.objects.delete(uid);
    this.publish();
  }

  /**
   * The object as a plain copy, or undefined when it nests too deep or refers to itself: the API server's schema
   * never gives such an object, so one is a broken or hostile server's, refused with one line naming it.
   */
  private accept(obj: T): T | undefined {
    try {
      return boundedCopy(obj) as T;
    } catch (err) {
      if (!(err instanceof ObjectLimitError)) throw err;
      const m = obj.metadata;
      const uid = m?.uid ?? '';
      if (this.refused.get(uid) !== m?.resourceVersion) {
        this.opts.log.warn({ what: this.opts.what, object: `${m?.namespace ?? ''}/${m?.name ?? ''}`, field: err.field }, `API object refused: ${err.message}`);
      }
      this.refused.set(uid, m?.resourceVersion);
      return undefined;
    }
  }

  private publish(): void {
    try {
      this.opts.onChange(this.list());
    } catch (err) {
      this.opts.log.error({ err, what: this.opts.what }, 'Consumer of API objects failed');
    }
  }

  private reachable(): void {
    if (this.outageSince !== undefined) {
      this.opts.log.info({ what: this.opts.what, downForMs: this.clock.now() - this.outageSince }, 'API server reachable again; relisted');
      this.outageSince = undefined;
    }
  }

  /** Capped exponential back-off with up to 20% jitter. */
  private nextDelay(): number {
    const base = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** this.failures);
    this.failures++;
    return Math.round(base * (1 + 0.2 * this.random()));
  }
}
