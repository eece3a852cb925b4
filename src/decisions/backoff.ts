// Per-key exponential backoff with kubelet's semantics (flowcontrol.Backoff): crash-loop and image-pull back-off.

export interface BackoffEntry {
  /** Current back-off duration in ms. */
  durationMs: number;
  /** When the entry was last advanced (ms since epoch). */
  lastUpdate: number;
}

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

/** kubelet's defaults for both crash-loop and image-pull back-off: 10 s doubling to 300 s. */
export const kubeletBackoff: BackoffPolicy = { initialMs: 10_000, maxMs: 300_000 };

/**
 * An entry is stale once an event happens more than twice the cap after its last update: a container
 * that ran for 10 minutes (with the 300 s cap) restarts with the initial delay again.
 */
function expired(policy: BackoffPolicy, entry: BackoffEntry, eventTime: number): boolean {
  return eventTime - entry.lastUpdate > policy.maxMs * 2;
}

/** Pure check: is a restart for `entry` still held back at `now`, given the event (e.g. container exit) time? */
export function isInBackoffSince(policy: BackoffPolicy, entry: BackoffEntry | undefined, eventTime: number, now: number): boolean {
  if (!entry || expired(policy, entry, eventTime)) return false;
  return now - eventTime < entry.durationMs;
}

/**
 * The entry after one more attempt at `now`: reset when stale at `eventTime` (for a restart, when the
 * container finished: one that ran for twice the cap starts over), else doubled up to the cap.
 */
export function nextBackoff(policy: BackoffPolicy, entry: BackoffEntry | undefined, now: number, eventTime = now): BackoffEntry {
  if (!entry || expired(policy, entry, eventTime)) return { durationMs: policy.initialMs, lastUpdate: now };
  return { durationMs: Math.min(entry.durationMs * 2, policy.maxMs), lastUpdate: now };
}

/** A keyed table of back-off entries; the clock is passed in so tests are deterministic. */
export class Backoff {
  private readonly entries = new Map<string, BackoffEntry>();

  constructor(readonly policy: BackoffPolicy = kubeletBackoff) {}

  get(key: string): BackoffEntry | undefined {
    return this.entries.get(key);
  }

  isInBackoffSince(key: string, eventTime: number, now: number): boolean {
    return isInBackoffSince(this.policy, this.entries.get(key), eventTime, now);
  }

  /** Held back since the entry's last update (kubelet's IsInBackOffSinceUpdate, used for image pulls). */
  isInBackoffSinceUpdate(key: string, now: number): boolean {
    const entry = this.entries.get(key);
    if (!entry || expired(this.policy, entry, now)) return false;
    return now - entry.lastUpdate < entry.durationMs;
  }

  next(key: string, now: number, eventTime = now): BackoffEntry {
    const entry = nextBackoff(this.policy, this.entries.get(key), now, eventTime);
    this.entries.set(key, entry);
    return entry;
  }

  /** Forgets every key starting with `prefix` (e.g. all of a removed pod's containers). */
  forgetPrefix(prefix: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }
}
