// Time as nodelet sees it, injected into every schedule, timer and back-off so tests drive them deterministically.
// Request deadlines inside the boundaries (CRI calls, CNI plugins, sockets, HTTP) stay on Node's own timers: they bound
// one operation, they do not schedule work.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` after `ms` (at least 0); the timer never keeps the process alive. */
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Resolves after `ms`, or at once and without an error when the signal aborts: waits between retries end when work stops. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Real time. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.max(0, ms)).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    }),
};
