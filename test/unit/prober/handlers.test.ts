// tcpSocket against a local listener, exec through a fake RuntimeService, and handler resolution (ports, hosts, URL).
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { V1Container } from '@kubernetes/client-node';
import { CriError } from '../../../src/cri/errors.js';
import type { CallOptions, ExecSyncResult } from '../../../src/cri/types.js';
import { execProbe } from '../../../src/prober/exec-probe.js';
import { ProbeError } from '../../../src/prober/outcome.js';
import { isAllowedProbeHost, probeUrl, resolveContainerPort, runProbe, type ProbeRunContext } from '../../../src/prober/run-probe.js';
import { tcpProbe } from '../../../src/prober/tcp-probe.js';

async function listener(): Promise<{ server: Server; port: number; accepted: () => number }> {
  let accepted = 0;
  const server = createServer((s) => (accepted++, s.destroy()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, accepted: () => accepted };
}
const close = (s: Server) => new Promise((r) => s.close(r));

describe('tcpProbe', () => {
  test('an open port succeeds and the connection is closed again', async () => {
    const { server, port, accepted } = await listener();
    expect(await tcpProbe('127.0.0.1', port, 1_000)).toEqual({ result: 'success', output: '' });
    await new Promise((r) => setTimeout(r, 20));
    expect(accepted()).toBe(1);
    await close(server);
  });

  test('a closed port fails with the dial error', async () => {
    const { server, port } = await listener();
    await close(server);
    expect(await tcpProbe('127.0.0.1', port, 1_000)).toEqual({ result: 'failure', output: `dial tcp 127.0.0.1:${port}: connect: connection refused` });
  });
});

class FakeExecRuntime {
  calls: Array<{ containerId: string; cmd: string[]; timeoutSeconds: number }> = [];
  constructor(private readonly answer: () => ExecSyncResult | Error) {}
  async execSync(containerId: string, cmd: string[], timeoutSeconds: number, _opts?: CallOptions): Promise<ExecSyncResult> {
    this.calls.push({ containerId, cmd, timeoutSeconds });
    const a = this.answer();
    if (a instanceof Error) throw a;
    return a;
  }
}
const result = (exitCode: number, stdout = '', stderr = ''): ExecSyncResult => ({ exitCode, stdout: Buffer.from(stdout), stderr: Buffer.from(stderr) });

describe('execProbe', () => {
  test('exit 0 succeeds; the timeout goes to ExecSync', async () => {
    const rt = new FakeExecRuntime(() => result(0, 'fine\n'));
    expect(await execProbe(rt, 'c1', ['cat', '/tmp/healthy'], 3)).toEqual({ result: 'success', output: 'fine\n' });
    expect(rt.calls).toEqual([{ containerId: 'c1', cmd: ['cat', '/tmp/healthy'], timeoutSeconds: 3 }]);
  });

  test('a non-zero exit fails with stdout then stderr, at most 10 KiB', async () => {
    expect(await execProbe(new FakeExecRuntime(() => result(1, 'out ', 'err')), 'c1', ['x'], 1)).toEqual({ result: 'failure', output: 'out err' });
    const long = await execProbe(new FakeExecRuntime(() => result(2, 'a'.repeat(20_000))), 'c1', ['x'], 1);
    expect(long.output).toHaveLength(10 * 1024);
  });

  test('the runtime\'s deadline is a failure worded as kubelet\'s', async () => {
    const rt = new FakeExecRuntime(() => new CriError('DeadlineExceeded', 'RuntimeService/ExecSync', 'timeout 1s exceeded'));
    expect(await execProbe(rt, 'c1', ['sleep', '5'], 1)).toEqual({ result: 'failure', output: 'command "sleep 5" timed out' });
  });

  test("other runtime errors make the run error, worded as kubelet's CRI client words them", async () => {
    const rt = new FakeExecRuntime(() => new CriError('Unknown', 'RuntimeService/ExecSync', 'container is in CONTAINER_EXITED state', 2));
    await expect(execProbe(rt, 'c1', ['true'], 1)).rejects.toBeInstanceOf(ProbeError);
    await expect(execProbe(rt, 'c1', ['true'], 1)).rejects.toThrow(/^rpc error: code = Unknown desc = container is in CONTAINER_EXITED state$/);
  });
});

const container: V1Container = {
  name: 'app',
  image: 'img',
  ports: [{ name: 'http', containerPort: 8080 }],
  env: [{ name: 'FILE', value: '/tmp/healthy' }],
};

describe('handler resolution', () => {
  test('ports by number or by the container port\'s name; a missing name names container and field', () => {
    expect(resolveContainerPort(9000, container, 'f')).toBe(9000);
    expect(resolveContainerPort('http', container, 'f')).toBe(8080);
    expect(() => resolveContainerPort('web', container, 'spec.containers[0].livenessProbe.httpGet.port')).toThrow(
      new ProbeError('port "web" not found in the ports of container "app" (spec.containers[0].livenessProbe.httpGet.port)'),
    );
  });

  test('probes reach only the pod\'s IPs, loopback and this host', () => {
    const pod = ['10.99.0.5'];
    const host = ['192.0.2.10'];
    for (const ok of ['10.99.0.5', '127.0.0.1', 'localhost', '::1', '[::1]', '192.0.2.10']) expect(isAllowedProbeHost(ok, pod, host)).toBe(true);
    for (const no of ['10.99.0.6', '8.8.8.8', 'example.com', '']) expect(isAllowedProbeHost(no, pod, host)).toBe(false);
  });

  test("the other pods of this node, in the pod network's subnets, are reachable too; nothing else", () => {
    const subnets = ['10.99.0.0/24'];
    for (const ok of ['10.99.0.6', '10.99.0.254']) expect(isAllowedProbeHost(ok, ['10.99.0.5'], [], subnets)).toBe(true);
    for (const no of ['10.99.1.6', '10.98.0.6', '8.8.8.8', 'example.com']) expect(isAllowedProbeHost(no, ['10.99.0.5'], [], subnets)).toBe(false);
  });

  test('the path cannot move the request to another host', () => {
    expect(probeUrl('http', '10.99.0.5', 80, '//evil.example/x?y=1').href).toBe('http://10.99.0.5//evil.example/x?y=1');
    expect(probeUrl('https', '::1', 8443, 'healthz').href).toBe('https://[::1]:8443/healthz');
  });

  function ctx(extra: Partial<ProbeRunContext> = {}): ProbeRunContext {
    return { container, containerId: 'c1', field: 'spec.containers[0].readinessProbe', podIPs: ['10.99.0.5'], hostIPs: [], runtime: new FakeExecRuntime(() => result(0)), userAgent: 'kube-probe/1.37', ...extra };
  }

  test('exec commands get $(VAR) from the container\'s plain env values', async () => {
    const rt = new FakeExecRuntime(() => result(0));
    await runProbe({ exec: { command: ['cat', '$(FILE)', '$(NOPE)'] }, timeoutSeconds: 2 }, ctx({ runtime: rt }));
    expect(rt.calls[0]).toEqual({ containerId: 'c1', cmd: ['cat', '/tmp/healthy', '$(NOPE)'], timeoutSeconds: 2 });
  });

  test('a host outside the pod and this host is refused before any traffic', async () => {
    await expect(runProbe({ tcpSocket: { port: 80, host: '203.0.113.9' } }, ctx())).rejects.toThrow(
      'host "203.0.113.9" is neither a pod of this node nor an address of this host; nodelet probes nothing else (spec.containers[0].readinessProbe.tcpSocket.host)',
    );
  });

  test('tcpSocket with host 127.0.0.1 and a named port probes the listener', async () => {
    const { server, port } = await listener();
    const c = { ...container, ports: [{ name: 'svc', containerPort: port }] };
    expect((await runProbe({ tcpSocket: { port: 'svc', host: '127.0.0.1' } }, ctx({ container: c }))).result).toBe('success');
    await close(server);
  });
});
