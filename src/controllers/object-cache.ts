// kubelet's watch-based object manager for one resource: one list + watch per referenced object (fieldSelector metadata.name), refcounted and cached.
import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { Logger } from '../core/log.js';
import { ObjectNotFoundError, type ObjectKind } from '../core/api-objects.js';
import { Reflector, type ListWatchClient, type ReflectorBackoff } from '../kubeapi/reflector.js';

interface CachedObject {
  metadata?: Pick<V1ObjectMeta, 'uid' | 'name' | 'namespace' | 'resourceVersion'>;
  immutable?: boolean;
}

export interface ObjectCacheOptions {
  client: ListWatchClient;
  /** The API resource, plural (configmaps, secrets). */
  resource: string;
  kind: ObjectKind;
  log: Logger;
  /** Called when a watched object appears, changes or goes (after its first list, too). */
  onChange: (namespace: string, name: string) => void;
  /** How long a get waits for the first list of an object just registered (kubelet polls for 1 s). */
  syncTimeoutMs?: number;
  /** Reconnect back-off after a failed list or watch (the reflector's default unless given). */
  backoff?: ReflectorBackoff;
}

interface Entry<T> {
  namespace: string;
  name: string;
  refs: number;
  controller: AbortController;
  /** Set once the first list answered: from then on `object` is what the API server said last. */
  synced: boolean;
  object?: T;
  waiters: Set<() => void>;
}

const key = (namespace: string, name: string) => `${namespace}/${name}`;

/**
 * Objects of one resource the node's pods reference. Each referenced object gets its own list + watch while at
 * least one pod references it; an object marked immutable is not watched after it was read. When the API server
 * cannot be reached the last copy stays (as a reflector's store does); a deleted object reads as NotFound.
 */
export class WatchedObjectCache<T extends CachedObject> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly syncTimeoutMs: number;

  constructor(private readonly opts: ObjectCacheOptions) {
    this.syncTimeoutMs = opts.syncTimeoutMs ?? 1_000;
  }

  /** One more reference to the object: its watch starts with the first. */
  acquire(namespace: string, name: string): void {
    const k = key(namespace, name);
    const existing = this.entries.get(k);
    if (existing) {
      existing.refs++;
      return;
    }
    const entry: Entry<T> = { namespace, name, refs: 1, controller: new AbortController(), synced: false, waiters: new Set() };
    this.entries.set(k, entry);
    void this.run(entry);
  }

  /** One reference less: the watch stops and the copy is dropped with the last. */
  release(namespace: string, name: string): void {
    const k = key(namespace, name);
    const entry = this.entries.get(k);
    if (!entry) return;
    if (--entry.refs > 0) return;
    this.entries.delete(k);
    entry.controller.abort();
    for (const wake of entry.waiters) wake();
  }

  /** Number of objects watched (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * The cached object. Rejects with ObjectNotFoundError when the API server has none, and as kubelet does when the
   * object is not referenced by a registered pod or its first list has not answered within the sync timeout.
   */
  async get(namespace: string, name: string, signal?: AbortSignal): Promise<T> {
    const entry = this.entries.get(key(namespace, name));
    if (!entry) throw new Error(`object "${namespace}"/"${name}" not registered`);
    if (!entry.synced) await this.waitForSync(entry, signal);
    if (!entry.synced) throw new Error(`failed to sync ${this.opts.kind} cache: timed out waiting for the condition`);
    if (!entry.object) throw new ObjectNotFoundError(this.opts.kind, namespace, name);
    return entry.object;
  }

  /** Stops every watch (the agent is stopping). */
  stop(): void {
    for (const entry of this.entries.values()) entry.controller.abort();
    this.entries.clear();
  }

  private waitForSync(entry: Entry<T>, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        entry.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, this.syncTimeoutMs);
      entry.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  private set(entry: Entry<T>, object: T | undefined): void {
    const before = entry.object;
    const wasSynced = entry.synced;
    entry.object = object;
    entry.synced = true;
    for (const wake of [...entry.waiters]) wake();
    const same = wasSynced && before?.metadata?.uid === object?.metadata?.uid && before?.metadata?.resourceVersion === object?.metadata?.resourceVersion;
    if (!same && this.entries.get(key(entry.namespace, entry.name)) === entry) this.opts.onChange(entry.namespace, entry.name);
  }

  /** The object's own list + watch (a reflector with fieldSelector metadata.name); ends when released or once it is immutable. */
  private async run(entry: Entry<T>): Promise<void> {
    const { client, resource, log } = this.opts;
    const name = key(entry.namespace, entry.name);
    const reflector = new Reflector<T>({
      client,
      path: `/api/v1/namespaces/${encodeURIComponent(entry.namespace)}/${resource}`,
      fieldSelector: `metadata.name=${entry.name}`,
      what: `${this.opts.kind} ${name}`,
      log: log.child({ [this.opts.kind]: name }),
      onChange: (objects) => {
        this.set(entry, objects.find((o) => o.metadata?.name === entry.name));
        // An immutable object never changes: kubelet stops its reflector once it has it.
        if (entry.object?.immutable) entry.controller.abort();
      },
      ...(this.opts.backoff ? { backoff: this.opts.backoff } : {}),
    });
    await reflector.run(entry.controller.signal);
  }
}
