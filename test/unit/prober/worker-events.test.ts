// The probe worker's Warning events: kubelet's Unhealthy for failures and errors, ProbeWarning for warnings.
import { ProbeError, type ProbeOutcome } from '../../../src/prober/outcome.js';
import type { ProbeType } from '../../../src/core/probe-results.js';
import { probeSettings } from '../../../src/prober/probe-spec.js';
import { ProbeWorker, type ProbeWorkerHost } from '../../../src/prober/worker.js';
import { FakeClock } from '../core/fake-clock.js';
import { recordingLogger } from './fake-log.js';

function setup(type: ProbeType, run: () => Promise<ProbeOutcome>) {
  const clock = new FakeClock();
  const events: [string, string][] = [];
  const host: ProbeWorkerHost = {
    target: () => ({ containerId: 'c1', state: 'running', startedAt: clock.now() }),
    started: () => true,
    restartPolicy: () => 'Always',
    publish: () => {},
    forget: () => {},
    run,
    warningEvent: (reason, message) => events.push([reason, message]),
  };
  const worker = new ProbeWorker(type, { ...probeSettings({}), periodSeconds: 1 }, host, clock, recordingLogger().log);
  return { clock, worker, events };
}

test('a failed liveness probe records Unhealthy with the probe output', async () => {
  const { clock, worker, events } = setup('liveness', async () => ({ result: 'failure', output: 'HTTP probe failed with statuscode: 500' }));
  worker.start();
  await clock.advance(1_500);
  worker.stop();
  expect(events).toEqual([
    ['Unhealthy', 'Liveness probe failed: HTTP probe failed with statuscode: 500'],
    ['Unhealthy', 'Liveness probe failed: HTTP probe failed with statuscode: 500'],
  ]);
});

test('a probe warning records ProbeWarning; an errored run records Unhealthy with the unknown state', async () => {
  let n = 0;
  const { clock, worker, events } = setup('readiness', async () => {
    if (++n === 1) return { result: 'warning', output: 'Probe terminated redirects' };
    throw new ProbeError('port "web" not found in the ports of container "app"');
  });
  worker.start();
  await clock.advance(1_500);
  worker.stop();
  expect(events).toEqual([
    ['ProbeWarning', 'Readiness probe warning: Probe terminated redirects'],
    ['Unhealthy', 'Readiness probe errored and resulted in unknown state: port "web" not found in the ports of container "app"'],
  ]);
});
