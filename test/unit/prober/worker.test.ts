// The probe worker against a fake clock: ticks, no overlapping runs, thresholds, hold, errors and the Unhealthy log.
import { ProbeError, type ProbeOutcome } from '../../../src/prober/outcome.js';
import type { ProbeType } from '../../../src/core/probe-results.js';
import { probeSettings, type ProbeSettings } from '../../../src/prober/probe-spec.js';
import type { ProbeResult } from '../../../src/core/probe-results.js';
import { ProbeWorker, type ProbeWorkerHost } from '../../../src/prober/worker.js';
import type { ProbeTarget } from '../../../src/prober/worker-state.js';
import { FakeClock } from '../core/fake-clock.js';
import { recordingLogger } from './fake-log.js';

class FakeHost implements ProbeWorkerHost {
  current: ProbeTarget | undefined;
  isStarted = true;
  published: Array<[string, ProbeResult]> = [];
  forgotten: string[] = [];
  runs = 0;
  active = 0;
  maxActive = 0;
  signals: AbortSignal[] = [];

  constructor(
    private readonly clock: FakeClock,
    /** Each run's outcome (or error) and how long it takes in fake time. */
    public behave: (run: number) => { outcome?: ProbeOutcome; error?: Error; durationMs?: number },
  ) {
    this.current = { containerId: 'c1', state: 'running', startedAt: clock.now() };
  }

  target() {
    return this.current;
  }
  started() {
    return this.isStarted;
  }
  restartPolicy() {
    return 'Always';
  }
  publish(id: string, result: ProbeResult) {
    this.published.push([id, result]);
  }
  forget(id: string) {
    this.forgotten.push(id);
  }
  async run(_id: string, signal: AbortSignal): Promise<ProbeOutcome> {
    const n = ++this.runs;
    this.signals.push(signal);
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      const b = this.behave(n);
      if (b.durationMs) await this.clock.sleep(b.durationMs);
      if (b.error) throw b.error;
      return b.outcome!;
    } finally {
      this.active--;
    }
  }
}

const ok: ProbeOutcome = { result: 'success', output: '' };
const bad: ProbeOutcome = { result: 'failure', output: "cat: can't open '/tmp/healthy': No such file or directory\n" };

function setup(type: ProbeType, extra: Partial<ProbeSettings>, behave: FakeHost['behave']) {
  const clock = new FakeClock();
  const host = new FakeHost(clock, behave);
  const { log, records } = recordingLogger();
  const worker = new ProbeWorker(type, { ...probeSettings({}), periodSeconds: 1, ...extra }, host, clock, log);
  return { clock, host, worker, records };
}

describe('ProbeWorker', () => {
  test('runs at once, then once per period', async () => {
    const { clock, host, worker } = setup('readiness', {}, () => ({ outcome: ok }));
    worker.start();
    await clock.advance(0);
    expect(host.runs).toBe(1);
    await clock.advance(4_500);
    expect(host.runs).toBe(5);
    worker.stop();
  });

  test('a probe slower than its period never overlaps itself and does not pile up', async () => {
    const { clock, host, worker } = setup('readiness', { timeoutSeconds: 5 }, () => ({ outcome: ok, durationMs: 2_500 }));
    worker.start();
    await clock.advance(0);
    for (let i = 0; i < 10; i++) {
      await clock.advance(1_000);
      worker.trigger(); // manual triggers while a run is going add at most one run after it
    }
    expect(host.maxActive).toBe(1);
    // Runs back to back: 10 s / 2.5 s, plus the one going at the end.
    expect(host.runs).toBeGreaterThanOrEqual(4);
    expect(host.runs).toBeLessThanOrEqual(5);
    worker.stop();
  });

  test('readiness: failure until the first success, flips with the thresholds', async () => {
    const outcomes = [bad, ok, ok, bad, bad, ok];
    const { clock, host, worker } = setup('readiness', { successThreshold: 2, failureThreshold: 2 }, (n) => ({ outcome: outcomes[n - 1] ?? ok }));
    worker.start();
    await clock.advance(5_500);
    expect(host.published).toEqual([
      ['c1', 'failure'],
      ['c1', 'success'],
      ['c1', 'failure'],
    ]);
    worker.stop();
  });

  test('liveness: the failure is published after failureThreshold runs, then nothing runs until a new container', async () => {
    const { clock, host, worker, records } = setup('liveness', { failureThreshold: 3 }, () => ({ outcome: bad }));
    worker.start();
    await clock.advance(10_000);
    expect(host.runs).toBe(3);
    expect(host.published).toEqual([
      ['c1', 'success'],
      ['c1', 'failure'],
    ]);
    const unhealthy = records.filter((r) => r.reason === 'Unhealthy');
    expect(unhealthy).toHaveLength(3);
    expect(unhealthy[0]).toMatchObject({ level: 40, msg: "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory", containerId: 'c1' });

    host.current = { containerId: 'c2', state: 'running', startedAt: clock.now() };
    host.behave = () => ({ outcome: ok });
    await clock.advance(1_000);
    expect(host.forgotten).toEqual(['c1']);
    expect(host.published.at(-1)).toEqual(['c2', 'success']);
    expect(host.runs).toBe(4);
    worker.stop();
  });

  test('an errored run is retried three times, logged once and counts for nothing', async () => {
    const { clock, host, worker, records } = setup(
      'liveness',
      { failureThreshold: 1 },
      () => ({ error: new ProbeError('port "web" not found in the ports of container "app"', 'spec.containers[0].livenessProbe.httpGet.port') }),
    );
    worker.start();
    await clock.advance(0);
    expect(host.runs).toBe(3);
    expect(host.published).toEqual([['c1', 'success']]);
    const errored = records.filter((r) => r.msg.startsWith('Liveness probe errored and resulted in unknown state'));
    expect(errored).toEqual([
      expect.objectContaining({
        msg: 'Liveness probe errored and resulted in unknown state: port "web" not found in the ports of container "app"',
        field: 'spec.containers[0].livenessProbe.httpGet.port',
      }),
    ]);
    worker.stop();
  });

  test('stop cancels the run in flight, drops its result and the container\'s', async () => {
    const { clock, host, worker } = setup('readiness', {}, () => ({ outcome: ok, durationMs: 5_000 }));
    worker.start();
    await clock.advance(100);
    worker.stop();
    expect(host.signals[0]!.aborted).toBe(true);
    await clock.advance(10_000);
    expect(host.published).toEqual([['c1', 'failure']]);
    expect(host.forgotten).toEqual(['c1']);
    expect(host.runs).toBe(1);
  });

  test('the start delay postpones the first run', async () => {
    const { clock, host, worker } = setup('readiness', {}, () => ({ outcome: ok }));
    worker.start(700);
    await clock.advance(699);
    expect(host.runs).toBe(0);
    await clock.advance(1);
    expect(host.runs).toBe(1);
    worker.stop();
  });
});
