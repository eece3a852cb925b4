// CniShimServer over a real unix socket with a fake pod network: request decoding, CNI mapping, errors, lifecycle.
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { pino } from 'pino';
import { CniShimServer, parseShimRequest } from '../../../src/cni/shim-server.js';
import { CniError, type CniResult } from '../../../src/cni/types.js';
import { FakeBackend, fakeResult as result } from './fake-backend.js';

const log = pino({ level: 'silent' });

let dir: string;
let socketPath: string;
let backend: FakeBackend;
let server: CniShimServer;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-shim-server-'));
  socketPath = join(dir, 'run', 'cni.sock');
  backend = new FakeBackend();
  server = new CniShimServer({ socketPath, backend, log });
  await server.listen();
});

afterEach(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

/** Sends a request as the shim does and returns the raw answer. */
function call(env: Record<string, string>, stdin: string | object, path = socketPath): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    const chunks: Buffer[] = [];
    socket.on('connect', () => {
      const head = Object.entries(env)
        .map(([k, v]) => `${k}=${v}\n`)
        .join('');
      socket.end(`${head}\n${typeof stdin === 'string' ? stdin : JSON.stringify(stdin)}`);
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      const nl = text.indexOf('\n');
      resolve({ code: Number(text.slice(0, nl)), stdout: text.slice(nl + 1) });
    });
  });
}

const shimConf = {
  cniVersion: '1.0.0',
  name: 'nodelet',
  type: 'nodelet-cni',
  agentSocket: '/run/nodelet/cni.sock',
  capabilities: { portMappings: true },
};
const env = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'sb1',
  CNI_NETNS: '/var/run/netns/cni-1',
  CNI_IFNAME: 'eth0',
  CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=sb1;IgnoreUnknown=1',
  CNI_PATH: '/opt/nodelet/cni/bin',
};

test('ADD sets the pod network up with the env and runtimeConfig, answering the result', async () => {
  const portMappings = [{ hostPort: 8080, containerPort: 80, protocol: 'tcp', hostIP: '' }];
  const answer = await call(env, { ...shimConf, runtimeConfig: { portMappings } });
  expect(answer.code).toBe(0);
  expect(JSON.parse(answer.stdout)).toEqual(result);
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
          ['K8S_POD_INFRA_CONTAINER_ID', 'sb1'],
          ['IgnoreUnknown', '1'],
        ],
        capabilityArgs: { portMappings },
      },
    },
  ]);
});

test('the result is expressed in the cniVersion of the shim config', async () => {
  const answer = await call(env, { ...shimConf, cniVersion: '0.4.0' });
  const parsed = JSON.parse(answer.stdout) as CniResult;
  expect(parsed.cniVersion).toBe('0.4.0');
  expect(parsed.ips![0]!.version).toBe('4');
});

test('DEL and CHECK map to tearDown and check and print nothing; DEL needs no netns', async () => {
  const del = await call({ ...env, CNI_COMMAND: 'DEL', CNI_NETNS: '' }, { ...shimConf, prevResult: result });
  expect(del).toEqual({ code: 0, stdout: '' });
  const check = await call({ ...env, CNI_COMMAND: 'CHECK' }, { ...shimConf, prevResult: result });
  expect(check).toEqual({ code: 0, stdout: '' });
  expect(backend.calls.map((c) => `${c.op} ${c.rt.netns}`)).toEqual(['tearDown ', 'check /var/run/netns/cni-1']);
});

test('VERSION answers the supported versions', async () => {
  const answer = await call({ CNI_COMMAND: 'VERSION' }, { cniVersion: '1.0.0' });
  expect(answer.code).toBe(0);
  expect(JSON.parse(answer.stdout)).toEqual({ cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] });
});

test('failures become CNI error JSON with a non-zero exit', async () => {
  backend.fail = new CniError({ code: 7, msg: 'no IP addresses available', details: 'range full', plugin: 'bridge' });
  const add = await call(env, shimConf);
  expect(add.code).toBe(1);
  expect(JSON.parse(add.stdout)).toEqual({
    cniVersion: '1.0.0',
    code: 7,
    msg: 'bridge: no IP addresses available',
    details: 'range full',
  });

  backend.fail = new Error('disk on fire');
  expect(JSON.parse((await call(env, shimConf)).stdout)).toMatchObject({ code: 100, msg: 'disk on fire' });

  const noNetns = await call({ ...env, CNI_NETNS: '' }, shimConf);
  expect(JSON.parse(noNetns.stdout)).toMatchObject({ code: 4, msg: 'missing environment variables: CNI_NETNS' });
  const unknown = await call({ ...env, CNI_COMMAND: 'GC' }, shimConf);
  expect(JSON.parse(unknown.stdout)).toMatchObject({ code: 4, msg: 'CNI_COMMAND GC is not supported' });
  const badJson = await call(env, '{"cniVersion":');
  expect(JSON.parse(badJson.stdout)).toMatchObject({ code: 6 });
  const badVersion = await call(env, { ...shimConf, cniVersion: '0.2.0' });
  expect(JSON.parse(badVersion.stdout)).toMatchObject({ cniVersion: '1.0.0', code: 1 });
  const badArgs = await call({ ...env, CNI_ARGS: 'novalue' }, shimConf);
  expect(JSON.parse(badArgs.stdout)).toMatchObject({ code: 4 });
  expect(backend.calls).toHaveLength(2);
});

test('a truncated request gets an I/O error', async () => {
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = createConnection(socketPath, () => socket.end('CNI_COMMAND=ADD'));
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString()));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  expect(answer.startsWith('1\n')).toBe(true);
  expect(JSON.parse(answer.slice(2))).toMatchObject({ code: 5 });
});

test('parseShimRequest keeps only CNI_* lines and the stdin bytes as sent', () => {
  const req = parseShimRequest(Buffer.from('CNI_COMMAND=DEL\nPATH=/bin\nCNI_ARGS=A=1;B=2\n\n{"x":"\\n"}\n'));
  expect(req.env).toEqual({ CNI_COMMAND: 'DEL', CNI_ARGS: 'A=1;B=2' });
  expect(req.stdin.toString()).toBe('{"x":"\\n"}\n');
  expect(parseShimRequest(Buffer.from('\n{}')).env).toEqual({});
});

test('the socket is owner-only; a stale socket file is replaced; a live one or a non-socket is refused', async () => {
  expect((await stat(socketPath)).mode & 0o777).toBe(0o600);

  const second = new CniShimServer({ socketPath, backend, log });
  await expect(second.listen()).rejects.toThrow('another process is serving');

  // A socket file nobody listens on: left by a process killed without cleanup.
  const stalePath = join(dir, 'stale.sock');
  const holder = execa(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(stalePath)}); setInterval(() => {}, 1000)`]);
  while (!(await stat(stalePath).catch(() => undefined))) await new Promise((r) => setTimeout(r, 10));
  holder.kill('SIGKILL');
  await holder.catch(() => undefined);
  const third = new CniShimServer({ socketPath: stalePath, backend, log });
  await third.listen();
  expect((await call(env, shimConf, stalePath)).code).toBe(0);
  await third.close();

  const filePath = join(dir, 'plain-file');
  await writeFile(filePath, 'x');
  await expect(new CniShimServer({ socketPath: filePath, backend, log }).listen()).rejects.toThrow('is not a socket');
});

test('close waits for requests in progress and stops accepting', async () => {
  let release!: () => void;
  backend.gate = new Promise<void>((r) => (release = r));
  const pending = call(env, shimConf);
  while (backend.calls.length === 0) await new Promise((r) => setTimeout(r, 5));
  let closed = false;
  const closing = server.close().then(() => (closed = true));
  await new Promise((r) => setTimeout(r, 50));
  expect(closed).toBe(false);
  release();
  expect((await pending).code).toBe(0);
  await closing;
  await expect(call(env, shimConf)).rejects.toThrow();
});
