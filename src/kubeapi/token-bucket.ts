// A token-bucket rate limiter like client-go's: `qps` tokens per second refill a bucket of `burst`; a caller waits its turn.

export class TokenBucket {
  private tokens: number;
  private last: number;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** Resolves when the caller may go; callers go in arrival order. Rejects if the signal aborts while waiting. */
  take(signal?: AbortSignal): Promise<void> {
    const turn = this.queue.then(() => this.waitForToken(signal));
    // A caller that gave up must not hold the queue.
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async waitForToken(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    this.refill();
    if (this.tokens < 1) {
      const waitMs = ((1 - this.tokens) / this.qps) * 1000;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, waitMs);
        signal?.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            reject(signal.reason);
          },
          { once: true },
        );
      });
      this.refill();
    }
    this.tokens -= 1;
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
  }
}
