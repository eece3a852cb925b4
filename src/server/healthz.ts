// kubelet's /healthz: the ping, log and syncloop checks, each also on its own path, with apiserver's healthz output.

export interface HealthCheck {
  name: string;
  /** Resolves with an error message when unhealthy, undefined when healthy. */
  check(): string | undefined;
}

export interface HealthzAnswer {
  status: number;
  body: string;
}

/** /healthz (all checks; `verbose` lists them), or /healthz/<name> for one. */
export function healthz(checks: HealthCheck[], name: string | undefined, verbose: boolean): HealthzAnswer | undefined {
  if (name !== undefined) {
    const check = checks.find((c) => c.name === name);
    if (!check) return undefined;
    const failure = check.check();
    return failure === undefined ? { status: 200, body: 'ok' } : { status: 500, body: `internal server error: ${failure}` };
  }
  const lines: string[] = [];
  let failed = false;
  for (const check of checks) {
    const failure = check.check();
    if (failure === undefined) lines.push(`[+]${check.name} ok`);
    else {
      failed = true;
      // The reason goes to the log, not to the caller (apiserver's healthz).
      lines.push(`[-]${check.name} failed: reason withheld`);
    }
  }
  if (failed) return { status: 500, body: `${lines.join('\n')}\nhealthz check failed\n` };
  return { status: 200, body: verbose ? `${lines.join('\n')}\nhealthz check passed\n` : 'ok' };
}

/** kubelet's syncloop check: unhealthy when the loop was last entered more than max(2 x resync, 5 min) ago. */
export function syncLoopCheck(lastEntry: () => number | undefined, resyncIntervalMs: number, now: () => number): HealthCheck {
  const limit = Math.max(2 * resyncIntervalMs, 5 * 60_000);
  return {
    name: 'syncloop',
    check: () => {
      const entered = lastEntry();
      return entered !== undefined && now() > entered + limit ? 'sync Loop took longer than expected' : undefined;
    },
  };
}

/** The log check: unhealthy while the log output has been blocked (not drained) for over a minute. */
export function logCheck(output: { writableNeedDrain: boolean }, now: () => number): HealthCheck {
  let blockedSince: number | undefined;
  return {
    name: 'log',
    check: () => {
      if (!output.writableNeedDrain) {
        blockedSince = undefined;
        return undefined;
      }
      blockedSince ??= now();
      return now() - blockedSince > 60_000 ? 'logging blocked' : undefined;
    },
  };
}

export const pingCheck: HealthCheck = { name: 'ping', check: () => undefined };
