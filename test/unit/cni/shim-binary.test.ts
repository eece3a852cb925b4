// The C shim (src/cni/shim/nodelet-cni.c), compiled with gcc, against the shim server, raw sockets and no agent.
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { pino } from 'pino';
import { CniShimServer } from '../../../src/cni/shim-server.js';
import { CniError } from '../../../src/cni/types.js';
import { FakeBackend, fakeResult } from './fake-backend.js';

const log = pino({ level: 'silent' });
const shimSource = fileURLToPath(new URL('../../../../src/cni/shim/nodelet-cni.c', import.meta.url));

let dir: string;
let shim: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-shim-bin-'));
  shim = join(dir, 'nodelet-cni');
  // -Werror: the shim must build warning-free with the flags the rig uses and more.
  await execa('gcc', ['-O2', '-Wall', '-Wextra', '-Werror', '-o', shim, shimSource]);
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const cniEnv = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'sb1',
  CNI_NETNS: '/var/run/netns/cni-1',
  CNI_IFNAME: 'eth0',
  CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;IgnoreUnknown=1',
  CNI_PATH: '/opt/nodelet/cni/bin',
};

/** The shim config containerd would pass, with "/" escaped as "\/" to exercise the shim's JSON reader. */
function shimConf(socket: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'nodelet',
    type: 'nodelet-cni',
    capabilities: { portMappings: true },
    nested: { agentSocket: '/wrong', list: [1, 'a"b', { localExec: '/wrong' }], n: -1.5e3, t: true, z: null },
    agentSocket: socket,
    ...extra,
  }).replace(/\//g, '\\/');
}

function runShim(env: Record<string, string>, stdin: string) {
  return execa(shim, [], { env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent', ...env }, extendEnv: false, input: stdin, reject: false });
}

describe('with the agent', () => {
  let socket: string;
  let backend: FakeBackend;
  let server: CniShimServer;

  beforeEach(async () => {
    socket = join(dir, `agent-${Date.now()}.sock`);
    backend = new FakeBackend();
    server = new CniShimServer({ socketPath: socket, backend, log });
    await server.listen();
  });
  afterEach(async () => {
    await server.close();
  });

  test('ADD goes to the agent with the CNI env and stdin; the result is printed', async () => {
    const portMappings = [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }];
    const r = await runShim(cniEnv, shimConf(socket, { runtimeConfig: { portMappings } }));
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(fakeResult);
    expect(backend.calls).toEqual([
      {
        op: 'setUp',
        rt: {
          containerId: 'sb1',
          netns: '/var/run/netns/cni-1',
          ifName: 'eth0',
          args: [
            ['K8S_POD_NAMESPACE', 'default'],
            ['K8S_POD_NAME', 'web'],
            ['IgnoreUnknown', '1'],
          ],
          capabilityArgs: { portMappings },
        },
      },
    ]);
  });

  test("an agent error is printed as CNI error JSON with the agent's exit code", async () => {
    backend.fail = new CniError({ code: 7, msg: 'no IP addresses available', plugin: 'bridge' });
    const r = await runShim(cniEnv, shimConf(socket));
    expect(r.exitCode).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ cniVersion: '1.0.0', code: 7, msg: 'bridge: no IP addresses available' });
  });

  test('DEL goes to the agent', async () => {
    const r = await runShim({ ...cniEnv, CNI_COMMAND: 'DEL', CNI_NETNS: '' }, shimConf(socket, { localExec: '/bin/false' }));
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect(backend.calls.map((c) => c.op)).toEqual(['tearDown']);
  });
});

describe('protocol bytes', () => {
  let server: Server;
  let socket: string;
  let received: Buffer[];
  let answer: (req: Buffer) => string | undefined;

  beforeEach(async () => {
    socket = join(dir, `raw-${Date.now()}.sock`);
    received = [];
    server = createServer({ allowHalfOpen: true }, (conn) => {
      const chunks: Buffer[] = [];
      conn.on('data', (c: Buffer) => chunks.push(c));
      conn.on('end', () => {
        const req = Buffer.concat(chunks);
        received.push(req);
        const out = answer(req);
        if (out === undefined) conn.destroy();
        else conn.end(out);
      });
    });
    await new Promise<void>((r) => server.listen(socket, r));
  });
  afterEach(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  test('sends only CNI_* variables, an empty line and stdin verbatim; relays exit code and stdout', async () => {
    answer = () => '3\nsome output\nacross lines';
    const stdin = shimConf(socket);
    const r = await runShim({ ...cniEnv, CNI_EXTRA: 'x=y', NOT_CNI: 'secret' }, stdin);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toBe('some output\nacross lines');
    const text = received[0]!.toString();
    const sep = text.indexOf('\n\n');
    const lines = text.slice(0, sep).split('\n').sort();
    expect(lines).toEqual(
      [...Object.entries(cniEnv).map(([k, v]) => `${k}=${v}`), 'CNI_EXTRA=x=y'].sort(),
    );
    expect(text.slice(sep + 2)).toBe(stdin);
  });

  test('an agent that closes without answering fails ADD with code 11', async () => {
    answer = () => undefined;
    const r = await runShim(cniEnv, shimConf(socket));
    expect(r.exitCode).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: 11, msg: expect.stringContaining('without answering') });
  });

  test('a malformed status line fails ADD with code 11', async () => {
    answer = () => 'ok\n{}';
    const r = await runShim(cniEnv, shimConf(socket));
    expect(r.exitCode).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: 11, msg: expect.stringContaining('malformed answer') });
  });

  test('DEL falls back to localExec when the agent gives no answer', async () => {
    answer = () => undefined;
    const localExec = await recordingLocalExec('fallback-noanswer', 0, '');
    const r = await runShim({ ...cniEnv, CNI_COMMAND: 'DEL' }, shimConf(socket, { localExec: localExec.path }));
    expect(r.exitCode).toBe(0);
    expect(await readFile(localExec.stdinFile, 'utf8')).toBe(shimConf(socket, { localExec: localExec.path }));
  });
});

/** A localExec script that records its env and stdin, prints `out` and exits with `code`. */
async function recordingLocalExec(name: string, code: number, out: string) {
  const path = join(dir, `${name}.sh`);
  const stdinFile = join(dir, `${name}.stdin`);
  const envFile = join(dir, `${name}.env`);
  await writeFile(path, `#!/bin/sh\ncat > '${stdinFile}'\nenv > '${envFile}'\nprintf '%s' '${out}'\nexit ${code}\n`);
  await chmod(path, 0o755);
  return { path, stdinFile, envFile };
}

describe('without the agent', () => {
  const nowhere = () => join(dir, 'nobody-listens.sock');

  test('VERSION is answered by the shim itself', async () => {
    const r = await runShim({ CNI_COMMAND: 'VERSION' }, JSON.stringify({ cniVersion: '0.4.0' }));
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ cniVersion: '0.4.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] });
  });

  test('ADD and CHECK fail with code 11 naming the socket', async () => {
    for (const command of ['ADD', 'CHECK']) {
      const r = await runShim({ ...cniEnv, CNI_COMMAND: command }, shimConf(nowhere()));
      expect(r.exitCode).toBe(1);
      expect(JSON.parse(r.stdout)).toEqual({ cniVersion: '1.0.0', code: 11, msg: `nodelet agent not reachable at ${nowhere()}` });
    }
  });

  test('DEL runs localExec with the same env and stdin, and passes on its output and exit code', async () => {
    const ok = await recordingLocalExec('fallback-ok', 0, '');
    const conf = shimConf(nowhere(), { localExec: ok.path, prevResult: fakeResult });
    const r = await runShim({ ...cniEnv, CNI_COMMAND: 'DEL', CNI_NETNS: '' }, conf);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect(await readFile(ok.stdinFile, 'utf8')).toBe(conf);
    const env = await readFile(ok.envFile, 'utf8');
    for (const line of ['CNI_COMMAND=DEL', 'CNI_CONTAINERID=sb1', 'CNI_NETNS=', 'CNI_IFNAME=eth0', `CNI_ARGS=${cniEnv.CNI_ARGS}`]) {
      expect(env.split('\n')).toContain(line);
    }

    const failing = await recordingLocalExec('fallback-fail', 3, '{"code":5}');
    const f = await runShim({ ...cniEnv, CNI_COMMAND: 'DEL' }, shimConf(nowhere(), { localExec: failing.path }));
    expect(f.exitCode).toBe(3);
    expect(f.stdout).toBe('{"code":5}');
  });

  test('DEL without a usable localExec fails with code 11', async () => {
    const none = await runShim({ ...cniEnv, CNI_COMMAND: 'DEL' }, shimConf(nowhere()));
    expect(none.exitCode).toBe(1);
    expect(JSON.parse(none.stdout)).toMatchObject({ code: 11, msg: expect.stringContaining('no localExec configured') });
    const missing = await runShim({ ...cniEnv, CNI_COMMAND: 'DEL' }, shimConf(nowhere(), { localExec: join(dir, 'absent') }));
    expect(missing.exitCode).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ code: 11, msg: expect.stringContaining('failed to start') });
  });

  test('bad input is reported as CNI errors', async () => {
    const noCommand = await runShim({}, shimConf(nowhere()));
    expect(JSON.parse(noCommand.stdout)).toMatchObject({ code: 4 });
    const badJson = await runShim(cniEnv, '{"agentSocket": "/x", ');
    expect(badJson.exitCode).toBe(1);
    expect(JSON.parse(badJson.stdout)).toMatchObject({ code: 6 });
    const nulEscape = await runShim(cniEnv, '{"agentSocket": "/x\\u0000y"}');
    expect(JSON.parse(nulEscape.stdout)).toMatchObject({ code: 6 });
  });
});
