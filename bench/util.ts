// Small helpers of every bench module: progress lines, the clock, statistics, formatting and error text.

export const now = () => performance.now();
export const toEpoch = (t: number) => performance.timeOrigin + t;

/** A progress line on stderr (stdout is for the figures). */
export function progress(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Nearest-rank percentile (p99 of 30 values is the largest). */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

export const min = (xs: number[]) => (xs.length ? Math.min(...xs) : NaN);
export const round1 = (x: number) => Math.round(x * 10) / 10;
export const round2 = (x: number) => Math.round(x * 100) / 100;
export const round3 = (x: number) => Math.round(x * 1000) / 1000;

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`;
}

export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause ? `${err.message} (${errorText(err.cause)})` : err.message;
}

export type StepMedians<K extends string> = Partial<Record<K, { lastMs: number; medianPodMs: number }>>;

/**
 * Per step of a pod's start (times in ms by pod, one map per repetition): the median over the repetitions of the median
 * pod's time and of the last pod's time. A step is left out of a repetition unless every pod of it has one.
 */
export function stepMedians<K extends string>(keys: readonly K[], reps: Map<string, Partial<Record<K, number>>>[]): StepMedians<K> {
  const out: StepMedians<K> = {};
  for (const key of keys) {
    const last: number[] = [];
    const mid: number[] = [];
    for (const steps of reps) {
      const ts = [...steps.values()].map((s) => s[key]).filter((t): t is number => t !== undefined);
      if (ts.length !== steps.size || ts.length === 0) continue;
      last.push(Math.max(...ts));
      mid.push(median(ts));
    }
    if (last.length) out[key] = { lastMs: round1(median(last)), medianPodMs: round1(median(mid)) };
  }
  return out;
}

/** A clean-up's steps: each runs even when an earlier one failed; their failures are collected in `errors`, named. */
export function cleanupSteps(): { errors: string[]; step: (what: string, fn: () => Promise<void>) => Promise<void> } {
  const errors: string[] = [];
  const step = async (what: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      errors.push(`${what}: ${errorText(err)}`);
    }
  };
  return { errors, step };
}
