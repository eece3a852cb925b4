// The probe worker's decisions as a table: initial delay, thresholds, startup gating, hold and reset on a new container.
import type { ProbeType } from '../../../src/core/probe-results.js';
import { probeSettings, type ProbeSettings } from '../../../src/prober/probe-spec.js';
import {
  initialWorkerState,
  nextTickDelay,
  recordOutcome,
  tick,
  type ProbeTarget,
  type TickDecision,
  type TickInput,
  type WorkerState,
} from '../../../src/prober/worker-state.js';

const t0 = 1_000_000;
const running = (id = 'c1', startedAt = t0): ProbeTarget => ({ containerId: id, state: 'running', startedAt });
const settings = (extra: Partial<ProbeSettings> = {}): ProbeSettings => ({ ...probeSettings({}), ...extra });

function input(type: ProbeType, extra: Partial<TickInput> = {}): TickInput {
  return { type, settings: settings(), target: running(), started: type !== 'startup', restartPolicy: 'Always', now: t0 + 60_000, ...extra };
}

describe('tick', () => {
  const cases: Array<{ name: string; state?: WorkerState; input: TickInput; decision: TickDecision; result?: string; containerId?: string }> = [
    { name: 'no container yet: wait, nothing published', input: input('readiness', { target: undefined }), decision: 'wait', containerId: '' },
    { name: 'new container: readiness starts as failure and probes', input: input('readiness'), decision: 'probe', result: 'failure', containerId: 'c1' },
    { name: 'new container: liveness starts as success', input: input('liveness'), decision: 'probe', result: 'success' },
    { name: 'new container: startup starts as unknown', input: input('startup'), decision: 'probe', result: 'unknown' },
    {
      name: 'initial delay not over (4.9 s of 5 s, truncated to 4): wait',
      input: input('liveness', { settings: settings({ initialDelaySeconds: 5 }), now: t0 + 4_900 }),
      decision: 'wait',
      result: 'success',
    },
    {
      name: 'initial delay over at exactly 5 s: probe',
      input: input('liveness', { settings: settings({ initialDelaySeconds: 5 }), now: t0 + 5_000 }),
      decision: 'probe',
    },
    { name: 'liveness waits until the container has started', input: input('liveness', { started: false }), decision: 'wait' },
    { name: 'readiness waits until the container has started', input: input('readiness', { started: false }), decision: 'wait', result: 'failure' },
    { name: 'startup stops probing once started (the worker stays)', input: input('startup', { started: true }), decision: 'wait' },
    {
      name: 'on hold after a liveness failure: no probing of the same container',
      state: { containerId: 'c1', result: 'failure', run: 0, onHold: true, lastOutcome: 'failure' },
      input: input('liveness'),
      decision: 'wait',
      result: 'failure',
    },
    {
      name: 'a new container ends the hold and resets the result and counts',
      state: { containerId: 'c1', result: 'failure', run: 0, onHold: true, lastOutcome: 'failure' },
      input: input('liveness', { target: running('c2') }),
      decision: 'probe',
      result: 'success',
      containerId: 'c2',
    },
    {
      name: 'exited container: failure, keeps waiting for a restart',
      state: { containerId: 'c1', result: 'success', run: 1, onHold: false },
      input: input('readiness', { target: { containerId: 'c1', state: 'exited' } }),
      decision: 'wait',
      result: 'failure',
    },
    {
      name: 'exited container under Never: the worker finishes',
      input: input('readiness', { target: { containerId: 'c1', state: 'exited' }, restartPolicy: 'Never' }),
      decision: 'finish',
      result: 'failure',
    },
  ];
  test.each(cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const { state, decision } = tick(c.state ?? initialWorkerState, c.input);
    expect(decision).toBe(c.decision);
    if (c.result !== undefined) expect(state.result).toBe(c.result);
    if (c.containerId !== undefined) expect(state.containerId).toBe(c.containerId);
  });

  test('a new container resets the run counts', () => {
    const before: WorkerState = { containerId: 'c1', result: 'failure', run: 2, lastOutcome: 'failure', onHold: false };
    const { state } = tick(before, input('readiness', { target: running('c2') }));
    expect(state).toEqual({ containerId: 'c2', result: 'failure', run: 0, onHold: false });
  });
});

/** Feeds outcomes through recordOutcome from a fresh container and returns the published results after each. */
function publish(type: ProbeType, s: ProbeSettings, outcomes: Array<'success' | 'failure'>): Array<string | undefined> {
  let state = tick(initialWorkerState, input(type, { settings: s })).state;
  return outcomes.map((o) => (state = recordOutcome(state, type, s, o)).result);
}

describe('recordOutcome', () => {
  test('failureThreshold 3: the third failure in a row publishes failure', () => {
    expect(publish('liveness', settings(), ['failure', 'failure', 'failure'])).toEqual(['success', 'success', 'failure']);
  });

  test('a success in between starts the failure count over', () => {
    expect(publish('liveness', settings(), ['failure', 'failure', 'success', 'failure', 'failure', 'failure'])).toEqual([
      'success', 'success', 'success', 'success', 'success', 'failure',
    ]);
  });

  test('readiness successThreshold 2: ready after two successes, unready after failureThreshold failures', () => {
    const s = settings({ successThreshold: 2, failureThreshold: 2 });
    expect(publish('readiness', s, ['success', 'success', 'failure', 'failure', 'success', 'success'])).toEqual([
      'failure', 'success', 'success', 'failure', 'failure', 'success',
    ]);
  });

  test('readiness keeps probing after a failure; liveness and startup are put on hold', () => {
    const s = settings({ failureThreshold: 1 });
    const ready = recordOutcome(tick(initialWorkerState, input('readiness')).state, 'readiness', s, 'failure');
    expect(ready.onHold).toBe(false);
    for (const type of ['liveness', 'startup'] as const) {
      const st = recordOutcome(tick(initialWorkerState, input(type)).state, type, s, 'failure');
      expect(st).toMatchObject({ result: 'failure', onHold: true, run: 0 });
      expect(tick(st, input(type, { started: type !== 'startup' })).decision).toBe('wait');
    }
  });

  test('startup success publishes success, after which the startup worker idles and liveness may run', () => {
    const st = recordOutcome(tick(initialWorkerState, input('startup')).state, 'startup', settings(), 'success');
    expect(st.result).toBe('success');
    expect(tick(st, input('startup', { started: true })).decision).toBe('wait');
    expect(tick(initialWorkerState, input('liveness', { started: true })).decision).toBe('probe');
  });
});

describe('nextTickDelay (Go ticker: fixed grid, one missed tick kept)', () => {
  const P = 1_000;
  test('a quick run waits for the next grid point', () => {
    expect(nextTickDelay(0, P, 0, 30)).toBe(970);
    expect(nextTickDelay(0, P, 3_000, 3_010)).toBe(990);
  });
  test('a run longer than the period is followed at once, but only once', () => {
    // Started at tick 0, ended at 2.5 periods: ticks 1 and 2 passed, one is kept -> run now.
    expect(nextTickDelay(0, P, 0, 2_500)).toBe(0);
    // That run started at 2.5 and ended at 2.6: no tick passed during it -> wait for tick 3.
    expect(nextTickDelay(0, P, 2_500, 2_600)).toBe(400);
  });
});
