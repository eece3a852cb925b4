// Time as the prober sees it: injected so tests drive ticks, delays and timeouts deterministically.

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Real time; timers never keep the process alive. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.max(0, ms)).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
};
