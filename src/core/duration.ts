// Go's duration syntax, as kubelet reads it in flags and in its configuration file (time.ParseDuration).

const goDurationUnits: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a Go duration ("10s", "1m0s", "1h30m", "250ms", "0") into milliseconds, as time.ParseDuration. */
export function parseGoDuration(text: string): number {
  const match = /^([-+]?)(.*)$/.exec(text)!;
  const body = match[2]!;
  if (body === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy;
  let total = 0;
  let end = 0;
  for (let m = re.exec(body); m; m = re.exec(body)) {
    total += Number(m[1]) * goDurationUnits[m[2]!]!;
    end = re.lastIndex;
  }
  if (end === 0 || end !== body.length) throw new Error(`time: invalid duration "${text}"`);
  return match[1] === '-' ? -total : total;
}

/** Go's time.Duration String of a whole number of milliseconds (kubelet truncates pull times to ms): 523ms, 1.234s, 2m3.5s. */
export function formatGoDuration(ms: number): string {
  const total = Math.max(0, Math.floor(ms));
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const s = ((total % 60_000) / 1000).toFixed(3).replace(/\.?0+$/, '');
  return h > 0 ? `${h}h${m}m${s}s` : m > 0 ? `${m}m${s}s` : `${s}s`;
}
