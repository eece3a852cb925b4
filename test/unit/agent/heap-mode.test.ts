// The agent's heap mode: V8's memory saver mode while the event loop is quiet, off at once when it is busy.
import { pino } from 'pino';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { defaultHeapModePolicy, HeapMode, initialHeapModeState, nextHeapMode } from '../../../src/agent/heap-mode.js';
import { FakeClock } from '../core/fake-clock.js';

const policy = defaultHeapModePolicy;
const run = promisify(execFile);

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

  test('the switch takes effect in the running isolate: the same allocations peak at a much smaller heap with the saver mode on', async () => {
    // Each mode in a fresh Node with the agent's own heap flags (bin/nodelet.js), switched at run time as the loop does.
    const script = `
      const { setV8MemorySaverMode } = await import(${JSON.stringify(new URL('../../../src/agent/heap-mode.js', import.meta.url).href)});
      setV8MemorySaverMode(process.argv[1] === 'on');
      let keep = [], peak = 0;
      for (let round = 0; round < 150; round++) {
        for (let i = 0; i < 20000; i++) keep.push({ i, s: 'x' + i, a: [i] });
        if (keep.length > 200000) keep = keep.slice(100000);
        await new Promise((r) => setTimeout(r, 2));
        peak = Math.max(peak, process.memoryUsage().heapTotal);
      }
      console.log(peak);`;
    // Measured: peaks of 45 MB on, 77-81 MB off.
    const heapTotal = async (mode: string) => {
      const { stdout } = await run(process.execPath, ['--max-semi-space-size=1', '--max-old-space-size=512', '--input-type=module', '-e', script, mode]);
      return Number(stdout.trim());
    };
    const on = await heapTotal('on');
    const off = await heapTotal('off');
    expect(on).toBeGreaterThan(0);
    expect(on).toBeLessThan(off * 0.75);
  }, 60_000);
});
