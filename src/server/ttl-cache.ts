// A small map whose entries expire on the injected Clock: the webhook answers' caches.
import type { Clock } from '../core/clock.js';

export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();

  constructor(
    private readonly clock: Pick<Clock, 'now'>,
    /** Entries beyond this are dropped oldest first (kube's caches are bounded too). */
    private readonly maxEntries = 4096,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (this.clock.now() >= entry.expires) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** A ttl of 0 or less stores nothing. */
  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expires: this.clock.now() + ttlMs });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  get size(): number {
    return this.entries.size;
  }
}
