// One probe worker (container x probe type): runs its probe on kubelet's ticker, one run at a time, and publishes results.
import type { Logger } from '../core/log.js';
import type { Clock } from '../core/clock.js';
import { ProbeError, type ProbeOutcome } from './outcome.js';
import type { ProbeResult, ProbeType } from '../core/probe-results.js';
import { probeTitles, type ProbeSettings } from './probe-spec.js';
import { initialWorkerState, nextTickDelay, recordOutcome, tick, type ProbeTarget, type WorkerState } from './worker-state.js';

/** What a worker needs from its manager; every call returns the latest known state. */
export interface ProbeWorkerHost {
  /** The latest instance of the worker's container, undefined when there is none. */
  target(): ProbeTarget | undefined;
  /** Whether the container counts as started (its startup probe succeeded, or it has none). */
  started(containerId: string): boolean;
  restartPolicy(): string;
  publish(containerId: string, result: ProbeResult): void;
  forget(containerId: string): void;
  /** Runs the probe handler once against the container. */
  run(containerId: string, signal: AbortSignal): Promise<ProbeOutcome>;
  /** Records a Warning event about the container (kubelet's Unhealthy and ProbeWarning). */
  warningEvent?(reason: 'Unhealthy' | 'ProbeWarning', message: string): void;
  /** A run concluded (kubelet's prober_probe_total and prober_probe_duration_seconds). */
  recordResult?(result: 'successful' | 'failed', seconds: number): void;
  /** The worker ended for good (its metric series go). */
  stopped?(): void;
}

/** kubelet runs an errored probe up to three times before giving up on that tick. */
const maxProbeAttempts = 3;

export class ProbeWorker {
  private state: WorkerState = initialWorkerState;
  /** Start of the tick grid (the first run); undefined before it. */
  private origin?: number;
  private timer?: unknown;
  private running = false;
  private triggered = false;
  private stopped = false;
  private finished = false;
  private inFlight?: AbortController;

  constructor(
    readonly type: ProbeType,
    private readonly settings: ProbeSettings,
    private readonly host: ProbeWorkerHost,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** The first run comes after `delayMs` (kubelet spreads workers started right after it started). */
  start(delayMs = 0): void {
    this.schedule(delayMs);
  }

  /** Runs the probe as soon as possible; while a run is going, right after it (never beside it). */
  trigger(): void {
    if (this.stopped || this.finished || this.origin === undefined) return;
    if (this.running) this.triggered = true;
    else this.schedule(0);
  }

  /** Ends the worker: no further runs, a run in flight is cancelled and its result dropped. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.inFlight?.abort(new Error('probe worker stopped'));
    if (this.state.containerId) this.host.forget(this.state.containerId);
    this.host.stopped?.();
  }

  private schedule(delayMs: number): void {
    this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => void this.runOnce(), delayMs);
  }

  private async runOnce(): Promise<void> {
    if (this.stopped || this.running) return;
    this.timer = undefined;
    this.running = true;
    this.triggered = false;
    const startedAt = this.clock.now();
    this.origin ??= startedAt;
    try {
      await this.probeOnce();
    } catch (err) {
      this.log.error({ err }, 'Probe worker failed');
    } finally {
      this.running = false;
    }
    if (this.stopped || this.finished) return;
    const periodMs = this.settings.periodSeconds * 1000;
    this.schedule(this.triggered ? 0 : nextTickDelay(this.origin, periodMs, startedAt, this.clock.now()));
  }

  private apply(next: WorkerState): void {
    const before = this.state;
    this.state = next;
    if (before.containerId && before.containerId !== next.containerId) this.host.forget(before.containerId);
    if (next.result !== undefined && (next.result !== before.result || next.containerId !== before.containerId)) {
      this.host.publish(next.containerId, next.result);
    }
  }

  private async probeOnce(): Promise<void> {
    const target = this.host.target();
    const { state, decision } = tick(this.state, {
      type: this.type,
      settings: this.settings,
      target,
      started: target ? this.host.started(target.containerId) : false,
      restartPolicy: this.host.restartPolicy(),
      now: this.clock.now(),
    });
    this.apply(state);
    if (decision === 'finish') this.finished = true;
    if (decision !== 'probe') return;

    const containerId = state.containerId;
    const title = probeTitles[this.type];
    const clog = this.log.child({ containerId });
    let outcome: ProbeOutcome;
    const startedAt = this.clock.now();
    try {
      outcome = await this.runWithRetries(containerId);
    } catch (err) {
      if (this.stopped) return;
      // A ProbeError's message says it all; anything else is unexpected and keeps its details.
      const details = err instanceof ProbeError ? (err.field ? { field: err.field } : {}) : { err };
      // kubelet 1.37's words: an errored run's result is probe.Unknown.
      const message = `${title} probe errored and resulted in unknown state: ${err instanceof Error ? err.message : String(err)}`;
      clog.warn({ reason: 'Unhealthy', ...details }, message);
      this.host.warningEvent?.('Unhealthy', message);
      return;
    }
    if (this.stopped || this.state.containerId !== containerId) return;
    this.host.recordResult?.(outcome.result === 'failure' ? 'failed' : 'successful', (this.clock.now() - startedAt) / 1000);
    if (outcome.result === 'failure') {
      clog.warn({ reason: 'Unhealthy', output: outcome.output }, `${title} probe failed: ${outcome.output.trimEnd()}`);
      this.host.warningEvent?.('Unhealthy', `${title} probe failed: ${outcome.output}`);
    } else if (outcome.result === 'warning') {
      clog.warn({ reason: 'ProbeWarning', output: outcome.output }, `${title} probe warning: ${outcome.output.trimEnd()}`);
      this.host.warningEvent?.('ProbeWarning', `${title} probe warning: ${outcome.output}`);
    } else {
      clog.debug(`${title} probe succeeded`);
    }
    this.apply(recordOutcome(this.state, this.type, this.settings, outcome.result === 'failure' ? 'failure' : 'success'));
  }

  private async runWithRetries(containerId: string): Promise<ProbeOutcome> {
    const controller = new AbortController();
    this.inFlight = controller;
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.host.run(containerId, controller.signal);
        } catch (err) {
          if (controller.signal.aborted || attempt >= maxProbeAttempts) throw err;
        }
      }
    } finally {
      this.inFlight = undefined;
    }
  }
}
