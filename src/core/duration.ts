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
