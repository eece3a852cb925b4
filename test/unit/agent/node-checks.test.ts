// The start-up checks kubelet's container manager makes, and its healthz server: swap, the runtime's cgroup driver, /healthz.
import { request } from 'node:http';
import { pino } from 'pino';
import { effectiveCgroupDriver, AgentConfigError } from '../../../src/agent/agent.js';
import { runHealthzServer } from '../../../src/agent/healthz.js';
import { cgroupDriverFromStatusInfo } from '../../../src/cri/runtime-info.js';
import { isSwapOnAccordingToProcSwaps } from '../../../src/host/swap.js';
import { createServer, type AddressInfo } from 'node:net';

test('swap is on when /proc/swaps lists anything below its header (kubelet isSwapOnAccordingToProcSwaps)', () => {
  expect(isSwapOnAccordingToProcSwaps('Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n')).toBe(false);
  expect(isSwapOnAccordingToProcSwaps('')).toBe(false);
  expect(isSwapOnAccordingToProcSwaps('Filename\tType\tSize\tUsed\tPriority\n/swapfile\tfile\t1048572\t0\t-2\n')).toBe(true);
});

describe('the cgroup driver', () => {
  const info = (runc: unknown, defaultRuntimeName = 'runc') => ({ config: JSON.stringify({ containerd: { defaultRuntimeName, runtimes: { runc } } }) });

  test("read from containerd's verbose Status: the default runtime's SystemdCgroup option", () => {
    expect(cgroupDriverFromStatusInfo(info({ runtimeType: 'io.containerd.runc.v2', options: { SystemdCgroup: false } }))).toBe('cgroupfs');
    expect(cgroupDriverFromStatusInfo(info({ options: { SystemdCgroup: true } }))).toBe('systemd');
    expect(cgroupDriverFromStatusInfo(info({ options: null }))).toBe('cgroupfs');
    expect(cgroupDriverFromStatusInfo(info({ options: {} }, 'kata'))).toBeUndefined();
    expect(cgroupDriverFromStatusInfo({})).toBeUndefined();
    expect(cgroupDriverFromStatusInfo({ config: 'not json' })).toBeUndefined();
  });

  test("a configured driver that differs from the runtime's is refused naming both; systemd without systemd or cgroup v2 is refused naming the field", () => {
    const v2 = { systemdRunning: true, unified: true };
    expect(effectiveCgroupDriver('cgroupfs', 'cgroupfs', v2)).toBe('cgroupfs');
    expect(effectiveCgroupDriver('cgroupfs', undefined, v2)).toBe('cgroupfs');
    expect(effectiveCgroupDriver('systemd', 'systemd', v2)).toBe('systemd');
    expect(effectiveCgroupDriver('systemd', undefined, v2)).toBe('systemd');
    expect(() => effectiveCgroupDriver('systemd', 'cgroupfs', v2)).toThrow(AgentConfigError);
    expect(() => effectiveCgroupDriver('systemd', 'cgroupfs', v2)).toThrow(
      'cgroupDriver: "systemd" does not match the container runtime\'s cgroup driver "cgroupfs" (its runc runtime\'s SystemdCgroup = false): ' +
        "configure both alike, cgroupDriver in --config and SystemdCgroup in the runtime's configuration",
    );
    expect(() => effectiveCgroupDriver('cgroupfs', 'systemd', v2)).toThrow(/^cgroupDriver: "cgroupfs" does not match the container runtime's cgroup driver "systemd" \(its runc runtime's SystemdCgroup = true\)/);
    // This machine's kind: cgroup v1 without systemd.
    const v1 = { systemdRunning: false, unified: false };
    expect(effectiveCgroupDriver('cgroupfs', 'cgroupfs', v1)).toBe('cgroupfs');
    expect(() => effectiveCgroupDriver('systemd', 'systemd', v1)).toThrow(
      /^cgroupDriver: systemd \(--config, and the container runtime's SystemdCgroup = true\) cannot be used: systemd is not running as PID 1/,
    );
    expect(() => effectiveCgroupDriver('systemd', undefined, { systemdRunning: true, unified: false })).toThrow(
      /^cgroupDriver: systemd \(--config\) cannot be used: nodelet implements it on cgroup v2 hosts only/,
    );
  });
});

describe('healthz', () => {
  const get = (port: number, path: string, method = 'GET') =>
    new Promise<{ status: number; body: string; type: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body, type: String(res.headers['content-type']) }));
      });
      req.on('error', reject);
      req.end();
    });
  const freePort = () => new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

  test('GET /healthz is "ok" (plain text), ?verbose lists the ping check, other paths 404; it stops with the signal', async () => {
    const port = await freePort();
    const stop = new AbortController();
    const served = runHealthzServer({ address: '127.0.0.1', port, log: pino({ level: 'silent' }) }, stop.signal);
    let first: { status: number; body: string; type: string } | undefined;
    for (let i = 0; i < 50 && !first; i++) first = await get(port, '/healthz').catch(() => new Promise<undefined>((r) => setTimeout(() => r(undefined), 20)));
    expect(first).toEqual({ status: 200, body: 'ok', type: 'text/plain; charset=utf-8' });
    expect(await get(port, '/healthz/ping')).toMatchObject({ status: 200, body: 'ok' });
    expect(await get(port, '/healthz?verbose')).toMatchObject({ status: 200, body: '[+]ping ok\nhealthz check passed\n' });
    expect((await get(port, '/metrics')).status).toBe(404);
    expect((await get(port, '/healthz', 'POST')).status).toBe(405);
    stop.abort();
    await served;
    await expect(get(port, '/healthz')).rejects.toThrow(/ECONNREFUSED/);
  });

  test('port 0 disables it; a taken port is logged and retried, as kubelet does', async () => {
    await runHealthzServer({ address: '127.0.0.1', port: 0, log: pino({ level: 'silent' }) }, new AbortController().signal);
    const blocker = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    const { port } = blocker.address() as AddressInfo;
    const stop = new AbortController();
    const errors: string[] = [];
    const log = pino({ level: 'error' }, { write: (l: string) => void errors.push((JSON.parse(l) as { msg: string }).msg) });
    const served = runHealthzServer({ address: '127.0.0.1', port, log, retryMs: 10_000, sleep: async () => stop.abort() }, stop.signal);
    await served;
    expect(errors).toEqual(['Failed to start healthz server']);
    blocker.close();
  });
});
