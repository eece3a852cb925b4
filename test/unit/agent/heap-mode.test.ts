// The agent's heap mode: V8's memory saver mode while the event loop is quiet, off at once when it is busy. What the
// mode saves is a figure of the benchmark's probe load (README), not asserted here: a heap's peak depends on the
// machine's load (45 against 77-81 MB on a quiet machine, 66 against 80 MB beside the integration tests).
import { pino } from 'pino';
import { defaultHeapModePolicy, HeapMode, initialHeapModeState, nextHeapMode } from '../../../src/agent/heap-mode.js';
import { FakeClock } from '../core/fake-clock.js';

const policy = defaultHeapModePolicy;

describe('the next heap mode', () => {
  test('the saver mode comes on after quietSamplesToSave quiet samples in a row, not before', () => {
    let state = initialHeapModeState;
    for (let i = 1; i < policy.quietSamplesToSave; i++) {
      state = nextHeapMode(state, 0.01, policy);
      expect(state).toEqual({ saving: false, quietSamples: i });
    }
    state = nextHeapMode(state, 0.01, policy);
    expect(state.saving).toBe(true);
    expect(nextHeapMode(state, 0.01, policy).saving).toBe(true);
  });

  test('one busy sample turns it off and starts the quiet count again', () => {
    const saving = { saving: true, quietSamples: 40 };
    expect(nextHeapMode(saving, policy.busyUtilization, policy)).toEqual({ saving: false, quietSamples: 0 });
    expect(nextHeapMode(saving, 0.9, policy)).toEqual({ saving: false, quietSamples: 0 });
    const almost = { saving: false, quietSamples: policy.quietSamplesToSave - 1 };
    expect(nextHeapMode(almost, 0.5, policy)).toEqual({ saving: false, quietSamples: 0 });
  });
});

describe('the heap mode loop', () => {
  const loop = (samples: number[]) => {
    const clock = new FakeClock();
    const switched: Array<[number, boolean]> = [];
    const mode = new HeapMode({
      clock,
      log: pino({ level: 'silent' }),
      utilization: () => samples.shift() ?? 0,
      setSaving: (saving) => switched.push([clock.now() - t0, saving]),
      policy,
    });
    const t0 = clock.now();
    const ac = new AbortController();
    const done = mode.run(ac.signal);
    return { clock, switched, mode, stop: async () => (ac.abort(), await done) };
  };

  test('switches the saver mode on when quiet, off when busy, and off when it stops', async () => {
    const { clock, switched, stop } = loop([0.02, 0.02, 0.02, 0.02, 0.02, 0.03, 0.6, 0.5, 0.01, 0.01, 0.01, 0.01, 0.01]);
    await clock.advance(13 * policy.sampleMs);
    // On at the 5th quiet second, off at the busy 7th, on again after five quiet ones (the 13th).
    expect(switched).toEqual([[5_000, true], [7_000, false], [13_000, true]]);
    await stop();
    expect(switched.at(-1)).toEqual([13_000, false]);
  });

  test('work marked busy (a stats scrape) turns it off at once, whatever the loop utilization, until quiet again', async () => {
    const { clock, switched, mode, stop } = loop([]);
    await clock.advance(6 * policy.sampleMs);
    expect(switched).toEqual([[5_000, true]]);
    await clock.advance(500);
    mode.busy();
    mode.busy();
    expect(switched).toEqual([[5_000, true], [6_500, false]]);
    await clock.advance(4 * policy.sampleMs);
    expect(switched).toHaveLength(2);
    await clock.advance(policy.sampleMs);
    expect(switched.at(-1)).toEqual([11_000, true]);
    await stop();
  });
});
