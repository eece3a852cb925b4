// kubelet's image pullers (pkg/kubelet/images/puller.go): with serializeImagePulls one pull at a time in the order
// asked, else in parallel up to maxParallelImagePulls (no limit when unset). Beyond kubelet, pods asking for the same
// image with the same logins while it is queued or being pulled share that one pull: 10 pods of one image started at
// once make one pull, where kubelet would ask the runtime 10 times (the layers are fetched once either way).

/** What one pull gave, and how long it took from its start (not counting the wait in the queue). */
export interface PullOutcome<T> {
  value: T;
  pullDurationMs: number;
}

export interface ImagePullerOptions {
  /** kubelet's serializeImagePulls (default true). */
  serialize: boolean;
  /** kubelet's maxParallelImagePulls for parallel pulls; undefined: no limit. */
  maxParallel?: number;
  now: () => number;
}

interface Waiter<T> {
  resolve: (outcome: PullOutcome<T>) => void;
  reject: (err: unknown) => void;
}

interface SharedPull<T> {
  run: (signal: AbortSignal) => Promise<T>;
  waiters: Set<Waiter<T>>;
  /** Aborted when every waiter has gone (their pods' syncs were cancelled). */
  abort: AbortController;
  started: boolean;
}

/** An abort of the caller's own wait (its pod's sync was cancelled); the shared pull goes on for the others. */
function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('image pull wait aborted');
}

export class ImagePuller<T> {
  private readonly pulls = new Map<string, SharedPull<T>>();
  private readonly queue: string[] = [];
  private running = 0;
  private readonly limit: number;

  constructor(private readonly options: ImagePullerOptions) {
    this.limit = options.serialize ? 1 : (options.maxParallel ?? Infinity);
  }

  /**
   * Runs `run` when a turn comes, or joins the pull of the same key already queued or running. `signal` ends only
   * this caller's wait; the pull itself is aborted when no caller waits for it any more.
   */
  pull(key: string, run: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<PullOutcome<T>> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    let shared = this.pulls.get(key);
    if (!shared) {
      shared = { run, waiters: new Set(), abort: new AbortController(), started: false };
      this.pulls.set(key, shared);
      this.queue.push(key);
    }
    const pull = shared;
    const result = new Promise<PullOutcome<T>>((resolve, reject) => {
      const waiter: Waiter<T> = { resolve, reject };
      pull.waiters.add(waiter);
      signal?.addEventListener('abort', () => {
        if (!pull.waiters.delete(waiter)) return;
        reject(abortError(signal));
        if (pull.waiters.size > 0) return;
        // Nobody waits: a later caller starts afresh rather than joining a cancelled pull.
        this.forget(key, pull);
        if (!pull.started) this.queue.splice(this.queue.indexOf(key), 1);
        pull.abort.abort(signal.reason);
      }, { once: true });
    });
    this.next();
    return result;
  }

  private forget(key: string, pull: SharedPull<T>): void {
    if (this.pulls.get(key) === pull) this.pulls.delete(key);
  }

  private next(): void {
    while (this.running < this.limit && this.queue.length > 0) {
      const key = this.queue.shift()!;
      const pull = this.pulls.get(key)!;
      pull.started = true;
      this.running++;
      const started = this.options.now();
      // Settled waiters are dropped first, so their abort listeners find nothing, and a caller arriving now starts a new pull.
      const settle = (each: (w: Waiter<T>) => void) => {
        this.forget(key, pull);
        const waiters = [...pull.waiters];
        pull.waiters.clear();
        this.running--;
        waiters.forEach(each);
        this.next();
      };
      void pull.run(pull.abort.signal).then(
        (value) => {
          const outcome = { value, pullDurationMs: this.options.now() - started };
          settle((w) => w.resolve(outcome));
        },
        (err: unknown) => settle((w) => w.reject(err)),
      );
    }
  }
}
