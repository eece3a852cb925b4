// A manual clock: timers and sleeps end only when the test advances time, in order, with promises settled between.
import type { Clock } from '../../../src/core/clock.js';

/** Lets pending promise callbacks (probe runs resolving, workers rescheduling) run. */
export const settle = () => new Promise<void>((r) => setImmediate(r));

export class FakeClock implements Clock {
  time: number;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();
  private seq = 0;

  constructor(start = 1_000_000) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.time + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves time forward, firing due timers one by one (earliest first) and settling after each. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await settle();
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) if (entry[1].at <= end && (!next || entry[1].at < next[1].at)) next = entry;
      if (!next) break;
      this.timers.delete(next[0]);
      this.time = next[1].at;
      next[1].fn();
      await settle();
    }
    this.time = end;
    await settle();
  }

  /** Waits `ms` of fake time (e.g. inside a fake probe run); ends at once when the signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = this.setTimeout(resolve, ms);
      signal?.addEventListener('abort', () => (this.clearTimeout(timer), resolve()), { once: true });
    });
  }
}
