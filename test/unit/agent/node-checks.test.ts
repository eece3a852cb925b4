// The start-up checks kubelet makes of its host and runtime, and its healthz server: the cgroup version (failCgroupV1),
// swap, the runtime's cgroup driver (CRI RuntimeConfig), /healthz.
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { pino } from 'pino';
import {
  cgroupDriverFromCri,
  cgroupV1DeprecatedWarning,
  cgroupV2KernelWarning,
  cgroupVersionCheck,
  effectiveCgroupDriver,
  AgentConfigError,
} from '../../../src/agent/agent.js';
import { runHealthzServer } from '../../../src/agent/healthz.js';
import { CriError } from '../../../src/cri/errors.js';
import { cgroupDriverFromRuntimeConfig, cgroupDriverFromStatusInfo } from '../../../src/cri/runtime-info.js';
import type { RuntimeConfig } from '../../../src/cri/types.js';
import { detectCgroupVersion } from '../../../src/host/cgroups.js';
import { isSwapOnAccordingToProcSwaps } from '../../../src/host/swap.js';
import { createServer, type AddressInfo } from 'node:net';

describe('the cgroup version (kubelet 1.37: failCgroupV1, cgroupVersionCheck)', () => {
  test('a cgroup v1 host is refused with failCgroupV1 (the default), in kubelet\'s words named by the field', () => {
    const v1 = { version: 1, rootCpuStat: false } as const;
    expect(() => cgroupVersionCheck(true, v1)).toThrow(AgentConfigError);
    expect(() => cgroupVersionCheck(true, v1)).toThrow(
      new AgentConfigError('failCgroupV1: kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release'),
    );
  });

  test('with failCgroupV1 false it starts: the deprecation warning, logged and as a Warning event CgroupV1 on the Node', () => {
    expect(cgroupVersionCheck(false, { version: 1, rootCpuStat: false })).toEqual({
      version: 1,
      warning: cgroupV1DeprecatedWarning,
      event: { reason: 'CgroupV1', message: cgroupV1DeprecatedWarning },
    });
    expect(cgroupV1DeprecatedWarning).toBe(
      'cgroup v1 detected. cgroup v1 support is deprecated and will be removed in a future release. Please migrate to cgroup v2. More information at https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1',
    );
  });

  test('cgroup v2 starts whatever failCgroupV1 says; a root cgroup without cpu.stat is only logged', () => {
    for (const fail of [true, false]) {
      expect(cgroupVersionCheck(fail, { version: 2, rootCpuStat: true })).toEqual({ version: 2 });
      expect(cgroupVersionCheck(fail, { version: 2, rootCpuStat: false })).toEqual({ version: 2, warning: cgroupV2KernelWarning });
    }
    expect(cgroupV2KernelWarning).toBe("cgroup v2 is being used on a kernel, which doesn't support root `cpu.stat`.Kubelet will continue, but may experience instability or wrong behavior");
  });

  test('detection: only a cgroup2 filesystem at the mount point is cgroup v2; a missing one is cgroup v1, as libcontainer assumes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nodelet-cgroup-version-'));
    try {
      expect(await detectCgroupVersion(dir)).toEqual({ version: 1, rootCpuStat: false });
      expect(await detectCgroupVersion(join(dir, 'missing'))).toEqual({ version: 1, rootCpuStat: false });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

test('swap is on when /proc/swaps lists anything below its header (kubelet isSwapOnAccordingToProcSwaps)', () => {
  expect(isSwapOnAccordingToProcSwaps('Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n')).toBe(false);
  expect(isSwapOnAccordingToProcSwaps('')).toBe(false);
  expect(isSwapOnAccordingToProcSwaps('Filename\tType\tSize\tUsed\tPriority\n/swapfile\tfile\t1048572\t0\t-2\n')).toBe(true);
});

describe("the runtime's cgroup driver from CRI RuntimeConfig (kubelet 1.37's getCgroupDriverFromCRI)", () => {
  test("the answer's driver; none without a Linux configuration; an unknown one is refused", () => {
    expect(cgroupDriverFromRuntimeConfig({ linux: { cgroupDriver: 'SYSTEMD' } })).toBe('systemd');
    expect(cgroupDriverFromRuntimeConfig({ linux: { cgroupDriver: 'CGROUPFS' } })).toBe('cgroupfs');
    expect(cgroupDriverFromRuntimeConfig({})).toBeUndefined();
    expect(() => cgroupDriverFromRuntimeConfig({ linux: { cgroupDriver: 7 } })).toThrow('runtime returned an unknown cgroup driver 7');
  });

  /** A runtime answering RuntimeConfig with each of `answers` in turn (an Error is thrown). */
  const probe = (answers: (RuntimeConfig | Error)[]) => {
    const calls: number[] = [];
    const sleeps: number[] = [];
    const losing: string[] = [];
    const lines: { level: number; msg: string }[] = [];
    const log = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as { level: number; msg: string }) });
    const run = () =>
      cgroupDriverFromCri({
        runtime: {
          runtimeConfig: async () => {
            calls.push(calls.length);
            const next = answers.shift();
            if (next instanceof Error) throw next;
            if (!next) throw new Error('no more answers');
            return next;
          },
        },
        log,
        sleep: async (ms) => void sleeps.push(ms),
        losingSupport: (v) => void losing.push(v),
      });
    return { run, calls, sleeps, losing, lines };
  };
  const unavailable = () => new CriError('Unavailable', 'RuntimeConfig', 'connect ENOENT', GrpcStatus.UNAVAILABLE);

  test('the runtime tells: its driver, at the first answer', async () => {
    const p = probe([{ linux: { cgroupDriver: 'CGROUPFS' } }]);
    expect(await p.run()).toBe('cgroupfs');
    expect(p.calls).toHaveLength(1);
    expect(p.losing).toEqual([]);
  });

  test('Unimplemented: kubelet_cri_losing_support{version="1.38.0"} and kubelet\'s line, the configured driver stays', async () => {
    const p = probe([new CriError('Unknown', 'RuntimeConfig', 'unknown method RuntimeConfig', GrpcStatus.UNIMPLEMENTED)]);
    expect(await p.run()).toBeUndefined();
    expect(p.calls).toHaveLength(1);
    expect(p.sleeps).toEqual([]);
    expect(p.losing).toEqual(['1.38.0']);
    expect(p.lines.map((l) => l.msg)).toEqual(['CRI implementation should be updated to support RuntimeConfig. Falling back to using cgroupDriver from kubelet config.']);
  });

  test('other failures are tried 3 times, 2 s apart; a runtime still down keeps the configured driver, with a warning', async () => {
    const recovered = probe([unavailable(), unavailable(), { linux: { cgroupDriver: 'SYSTEMD' } }]);
    expect(await recovered.run()).toBe('systemd');
    expect(recovered.sleeps).toEqual([2_000, 2_000]);
    const down = probe([unavailable(), unavailable(), unavailable(), { linux: { cgroupDriver: 'SYSTEMD' } }]);
    expect(await down.run()).toBeUndefined();
    expect(down.calls).toHaveLength(3);
    expect(down.sleeps).toEqual([2_000, 2_000]);
    expect(down.losing).toEqual([]);
    expect(down.lines.map((l) => l.msg)).toEqual(['Container runtime not reachable: using cgroupDriver from the configuration']);
  });

  test('an unknown driver refuses the start; an answer without a Linux configuration leaves the configured driver', async () => {
    const refused = await probe([{ linux: { cgroupDriver: 3 } }]).run().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(AgentConfigError);
    expect((refused as Error).message).toBe('runtime returned an unknown cgroup driver 3');
    expect(await probe([{}]).run()).toBeUndefined();
  });
});

describe('the cgroup driver', () => {
  const info = (runc: unknown, defaultRuntimeName = 'runc') => ({ config: JSON.stringify({ containerd: { defaultRuntimeName, runtimes: { runc } } }) });

  test("read from containerd's verbose Status (the bench's floor): the default runtime's SystemdCgroup option", () => {
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
