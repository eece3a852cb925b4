// The decisions of one probe worker as kubelet's doProbe makes them (pure): when to probe, and what a run's outcome publishes.
import type { ObservedContainerState } from '../core/runtime-state.js';
import type { ProbeResult, ProbeType } from '../core/probe-results.js';
import type { ProbeSettings } from './probe-spec.js';
import { initialResult } from './results.js';

/** The latest instance of the worker's container, as last observed. */
export interface ProbeTarget {
  containerId: string;
  state: ObservedContainerState;
  /** When the container started (ms since epoch); the initial delay counts from here. */
  startedAt?: number;
}

export interface WorkerState {
  /** The container the published result belongs to; '' before any was seen. */
  containerId: string;
  /** The result published for containerId; undefined before any container was seen. */
  result?: ProbeResult;
  /** The last run's outcome and how many runs in a row had it. */
  lastOutcome?: ProbeResult;
  run: number;
  /** After a liveness or startup failure nothing is probed until a new container replaces the failed one. */
  onHold: boolean;
}

export const initialWorkerState: WorkerState = { containerId: '', run: 0, onHold: false };

export interface TickInput {
  type: ProbeType;
  settings: ProbeSettings;
  /** Undefined while the container has not been created (or is gone). */
  target: ProbeTarget | undefined;
  /** Whether the target container counts as started (its startup probe succeeded, or it has none). */
  started: boolean;
  restartPolicy: string;
  now: number;
}

/**
 * - wait: nothing to run at this tick;
 * - probe: run the probe now against state.containerId;
 * - finish: the container ended and will not run again (restartPolicy Never): no more ticks.
 */
export type TickDecision = 'wait' | 'probe' | 'finish';

/**
 * What a tick does, in kubelet's order: follow a new container (its result starts at the initial
 * value and the counts start over), hold after a liveness/startup failure, mark a container that
 * is not running as failed, wait out initialDelaySeconds (whole seconds since start, truncated),
 * then let only the startup probe run until the container has started, and only the others after.
 */
export function tick(state: WorkerState, input: TickInput): { state: WorkerState; decision: TickDecision } {
  const { target, type } = input;
  if (!target) return { state, decision: 'wait' };
  let next = state;
  if (target.containerId !== state.containerId) {
    next = { containerId: target.containerId, result: initialResult(type), run: 0, onHold: false };
  }
  if (next.onHold) return { state: next, decision: 'wait' };
  if (target.state !== 'running') {
    next = { ...next, result: 'failure' };
    const final = target.state === 'exited' && input.restartPolicy === 'Never';
    return { state: next, decision: final ? 'finish' : 'wait' };
  }
  const startedAt = target.startedAt ?? input.now;
  if (Math.trunc((input.now - startedAt) / 1000) < input.settings.initialDelaySeconds) return { state: next, decision: 'wait' };
  // A started container needs no more startup probing (the worker stays for a restarted one).
  const gated = type === 'startup' ? input.started : !input.started;
  if (gated) return { state: next, decision: 'wait' };
  return { state: next, decision: 'probe' };
}

/**
 * Applies one run's outcome: the published result changes only once the same outcome came
 * successThreshold (success) or failureThreshold (failure) times in a row. A liveness or startup
 * failure that is published puts the worker on hold until a new container appears.
 */
export function recordOutcome(state: WorkerState, type: ProbeType, settings: ProbeSettings, outcome: 'success' | 'failure'): WorkerState {
  const run = state.lastOutcome === outcome ? state.run + 1 : 1;
  const next: WorkerState = { ...state, lastOutcome: outcome, run };
  const threshold = outcome === 'success' ? settings.successThreshold : settings.failureThreshold;
  if (run < threshold) return next;
  next.result = outcome;
  if (outcome === 'failure' && type !== 'readiness') {
    next.onHold = true;
    next.run = 0;
  }
  return next;
}

/**
 * How long until the worker's next periodic run, with Go ticker semantics: ticks fall on a fixed
 * grid from `origin`; a tick that came while the last run was going is kept (one, not all) and runs
 * at once, so a slow probe runs back to back instead of piling up.
 */
export function nextTickDelay(origin: number, periodMs: number, runStartedAt: number, now: number): number {
  const elapsedTicks = Math.floor((now - origin) / periodMs);
  const lastTick = origin + elapsedTicks * periodMs;
  if (elapsedTicks >= 1 && lastTick > runStartedAt) return 0;
  return lastTick + periodMs - now;
}
