// The probe manager: workers per container and probe type, startup gating, results by container ID, wake-ups, removal.
import type { V1Pod } from '@kubernetes/client-node';
import type { ExecSyncResult } from '../../../src/cri/types.js';
import type { PodRuntimeState } from '../../../src/core/runtime-state.js';
import { ProbeManager } from '../../../src/prober/manager.js';
import { createServer, type AddressInfo } from 'node:net';
import { FakeClock } from '../core/fake-clock.js';
import { recordingLogger } from './fake-log.js';

const exec = (name: string, extra = {}) => ({ exec: { command: [name] }, periodSeconds: 1, failureThreshold: 1, ...extra });

function pod(): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'u1' },
    spec: {
      restartPolicy: 'Always',
      containers: [
        { name: 'app', image: 'img', startupProbe: exec('start'), livenessProbe: exec('live'), readinessProbe: exec('ready') },
        { name: 'plain', image: 'img' },
      ],
    },
  };
}

function state(clock: FakeClock, appId = 'app-1', appState: 'running' | 'exited' = 'running'): PodRuntimeState {
  const c = (id: string, name: string, s: 'running' | 'exited') => ({
    id, sandboxId: 'sb', name, attempt: 0, restartCount: 0, hash: '', state: s, createdAt: clock.now(), startedAt: clock.now(), image: 'img', imageRef: 'ref',
    ...(s === 'exited' ? { exitCode: 0, finishedAt: clock.now() } : {}),
  });
  return { uid: 'u1', sandboxes: [{ id: 'sb', attempt: 0, ready: true, createdAt: clock.now(), ips: ['10.99.0.5'] }], containers: [c(appId, 'app', appState), c('plain-1', 'plain', 'running')] };
}

function setup(hostIP = '192.0.2.2') {
  const clock = new FakeClock();
  const exits: Record<string, number> = { start: 1, live: 0, ready: 0 };
  const calls: string[] = [];
  const runtime = {
    async execSync(_id: string, cmd: string[]): Promise<ExecSyncResult> {
      calls.push(cmd[0]!);
      return { exitCode: exits[cmd[0]!] ?? 0, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };
    },
  };
  const { log } = recordingLogger();
  const manager = new ProbeManager({ runtime, hostIP: () => hostIP, hostIPs: () => [], kubeMinor: 37, log, clock, random: () => 0 });
  let wakes = 0;
  const wake = () => wakes++;
  return { clock, exits, calls, manager, wake, wakes: () => wakes };
}

/** Real-time wait for a result that depends on real sockets. */
async function waitUntil(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(ok()).toBe(true);
}

const count = (calls: string[], name: string) => calls.filter((c) => c === name).length;

describe('ProbeManager', () => {
  test('the startup probe gates liveness and readiness; its success starts them and wakes the pod', async () => {
    const { clock, exits, calls, manager, wake, wakes } = setup();
    manager.update(pod(), state(clock), wake);
    await clock.advance(3_500);
    // failureThreshold 1: the first startup failure is published, then the worker holds.
    expect(count(calls, 'start')).toBe(1);
    expect(count(calls, 'live') + count(calls, 'ready')).toBe(0);
    expect(manager.result('startup', 'app-1')).toBe('failure');
    expect(manager.result('readiness', 'app-1')).toBe('failure');
    expect(manager.result('liveness', 'app-1')).toBe('success');
    expect(wakes()).toBe(1);

    // The container is restarted (new ID): this time startup succeeds.
    exits.start = 0;
    manager.update(pod(), state(clock, 'app-2'), wake);
    await clock.advance(1_000);
    expect(manager.result('startup', 'app-2')).toBe('success');
    expect(manager.result('startup', 'app-1')).toBeUndefined();
    await clock.advance(2_000);
    expect(manager.result('readiness', 'app-2')).toBe('success');
    expect(count(calls, 'live')).toBeGreaterThan(0);
    expect(count(calls, 'start')).toBe(2);
    manager.removePod('u1');
  });

  test('a pod sync triggers a readiness run at once while the container is not ready', async () => {
    const { clock, calls, manager, wake } = setup();
    const p = pod();
    delete p.spec!.containers[0]!.startupProbe;
    p.spec!.containers[0]!.readinessProbe = exec('ready', { periodSeconds: 60 });
    manager.update(p, state(clock), wake);
    await clock.advance(0);
    expect(count(calls, 'ready')).toBe(1);
    expect(manager.result('readiness', 'app-1')).toBe('success');
    // Ready now: another sync triggers nothing until the next period.
    manager.update(p, state(clock), wake);
    await clock.advance(1_000);
    expect(count(calls, 'ready')).toBe(1);
    manager.removePod('u1');
  });

  test('removePod stops every worker and drops the results', async () => {
    const { clock, exits, calls, manager, wake } = setup();
    exits.start = 0;
    manager.update(pod(), state(clock), wake);
    await clock.advance(2_000);
    expect(manager.result('readiness', 'app-1')).toBe('success');
    manager.removePod('u1');
    const before = calls.length;
    await clock.advance(5_000);
    expect(calls.length).toBe(before);
    expect(manager.result('readiness', 'app-1')).toBeUndefined();
  });

  test('a changed probe replaces its worker; a finished pod has none', async () => {
    const { clock, calls, manager, wake } = setup();
    const p = pod();
    p.spec!.containers[0] = { name: 'app', image: 'img', readinessProbe: exec('ready') };
    manager.update(p, state(clock), wake);
    await clock.advance(1_500);
    p.spec!.containers[0]!.readinessProbe = exec('ready2');
    manager.update(p, state(clock), wake);
    await clock.advance(1_500);
    expect(count(calls, 'ready2')).toBeGreaterThan(0);
    const before = count(calls, 'ready');
    await clock.advance(2_000);
    expect(count(calls, 'ready')).toBe(before);

    // Every container exited and restartPolicy OnFailure with exit 0: nothing will run again.
    p.spec!.restartPolicy = 'OnFailure';
    const done = state(clock, 'app-1', 'exited');
    done.containers[1]!.state = 'exited';
    done.containers[1]!.exitCode = 0;
    manager.update(p, done, wake);
    const total = calls.length;
    await clock.advance(5_000);
    expect(calls.length).toBe(total);
  });

  test('host-network pods are probed at the node IP', async () => {
    const server = createServer((sock) => sock.destroy());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const { clock, manager, wake, wakes } = setup('127.0.0.1');
    const p: V1Pod = {
      metadata: { name: 'h', namespace: 'default', uid: 'u2' },
      spec: { hostNetwork: true, containers: [{ name: 'app', image: 'img', readinessProbe: { tcpSocket: { port }, periodSeconds: 1 } }] },
    };
    const s = state(clock);
    s.uid = 'u2';
    s.sandboxes[0]!.ips = [];
    manager.update(p, s, wake);
    await clock.advance(0);
    await waitUntil(() => manager.result('readiness', 'app-1') === 'success');
    expect(wakes()).toBe(1);
    manager.removePod('u2');
    await new Promise((r) => server.close(r));
  });
});
