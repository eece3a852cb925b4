// The agent's heap mode: V8's memory saver mode while the agent is quiet, V8's default heuristics while it works.
// Quiet is the usual state of a node (relists, probes, heartbeats: a few % of one core), and there the saver mode keeps
// the heap near its live size (collections sooner, pages compacted): about 7 MB less RSS under 30 probed pods and
// half the RSS after a 110-pod burst. While pods start or stop in numbers, or stats are scraped back to back, the same
// mode costs a quarter more CPU per pod and start-up latency, so it is off then.
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';

export interface HeapModePolicy {
  /** A sample whose event-loop utilization (0-1) is at least this is busy: the saver mode goes off at once. */
  busyUtilization: number;
  /** The saver mode comes on after this many quiet samples in a row. */
  quietSamplesToSave: number;
  /** Between samples. */
  sampleMs: number;
}

export const defaultHeapModePolicy: HeapModePolicy = { busyUtilization: 0.3, quietSamplesToSave: 5, sampleMs: 1_000 };

export interface HeapModeState {
  saving: boolean;
  quietSamples: number;
}

/** The agent starts busy (adopting pods, loading its modules): default heuristics until it has been quiet a while. */
export const initialHeapModeState: HeapModeState = { saving: false, quietSamples: 0 };

/** The next state after a sample of the event loop's utilization. */
export function nextHeapMode(state: HeapModeState, utilization: number, policy: HeapModePolicy): HeapModeState {
  if (utilization >= policy.busyUtilization) return { saving: false, quietSamples: 0 };
  const quietSamples = state.quietSamples + 1;
  return { saving: state.saving || quietSamples >= policy.quietSamplesToSave, quietSamples };
}

export interface HeapModeDeps {
  clock: Clock;
  log: Logger;
  /** The event loop's utilization since the previous call (the first call: since the sampler was made). */
  utilization?: () => number;
  /** Switches V8's memory saver mode. */
  setSaving?: (saving: boolean) => void;
  policy?: HeapModePolicy;
}

function eventLoopUtilizationSampler(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const delta = performance.eventLoopUtilization(now, last);
    last = now;
    return delta.utilization;
  };
}

/**
 * V8 reads the flag at each collection's heuristics; Node leaves V8's flags unfrozen after start, so this takes effect
 * for the running isolate (a flag that only sizes the heap's growth, not one that changes generated code).
 */
const setV8MemorySaverMode = (saving: boolean) => setFlagsFromString(saving ? '--memory-saver-mode' : '--no-memory-saver-mode');

/**
 * The mode's switch: sampled every second from the event loop, and told of work that allocates much per unit of CPU
 * (a stats scrape waits on the runtime most of its time, so its loop utilization stays low while its collections,
 * in the saver mode, cost it half again).
 */
export class HeapMode {
  private state = initialHeapModeState;
  private readonly policy: HeapModePolicy;
  private readonly setSaving: (saving: boolean) => void;

  constructor(private readonly deps: HeapModeDeps) {
    this.policy = deps.policy ?? defaultHeapModePolicy;
    this.setSaving = deps.setSaving ?? setV8MemorySaverMode;
  }

  /** Allocation-heavy work starts: the saver mode off now, and on again only after the quiet samples. */
  busy(): void {
    this.update({ saving: false, quietSamples: 0 }, undefined);
  }

  /** Samples the event loop until the signal aborts; leaves the saver mode off at the end. */
  async run(signal: AbortSignal): Promise<void> {
    const utilization = this.deps.utilization ?? eventLoopUtilizationSampler();
    try {
      while (!signal.aborted) {
        await this.deps.clock.sleep(this.policy.sampleMs, signal);
        if (signal.aborted) break;
        const sampled = utilization();
        this.update(nextHeapMode(this.state, sampled, this.policy), sampled);
      }
    } finally {
      this.busy();
    }
  }

  private update(next: HeapModeState, utilization: number | undefined): void {
    if (next.saving !== this.state.saving) {
      this.setSaving(next.saving);
      const fields = { memorySaver: next.saving, ...(utilization === undefined ? {} : { eventLoopUtilization: Math.round(utilization * 1000) / 1000 }) };
      this.deps.log.debug(fields, next.saving ? 'Agent quiet: V8 memory saver mode on' : 'Agent busy: V8 memory saver mode off');
    }
    this.state = next;
  }
}
