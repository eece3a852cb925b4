// The DEL fallback program (dist/src/cni/local-del.js) run as a process against fake plugins and a temp cache.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { pino } from 'pino';
import { CniExecutor } from '../../../src/cni/executor.js';
import type { CniRuntimeConf, NetConfList } from '../../../src/cni/types.js';
import { defaultResult, FakePlugins } from './fake-plugins.js';

const localDelJs = fileURLToPath(new URL('../../../src/cni/local-del.js', import.meta.url));
const log = pino({ level: 'silent' });

let root: string;
let fakes: FakePlugins;
let cacheDir: string;
let executor: CniExecutor;

const mainNet: NetConfList = {
  cniVersion: '1.0.0',
  name: 'mainnet',
  disableCheck: false,
  plugins: [{ type: 'alpha', capabilities: { portMappings: true } }, { type: 'beta' }],
  source: 'test',
};
const loNet: NetConfList = { cniVersion: '1.0.0', name: 'lonet', disableCheck: false, plugins: [{ type: 'loopback' }], source: 'test' };
const shimNet: NetConfList = { cniVersion: '1.0.0', name: 'nodelet', disableCheck: false, plugins: [{ type: 'nodelet-cni' }], source: 'test' };
const portMappings = [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }];

const rt = (containerId: string, ifName = 'eth0'): CniRuntimeConf => ({
  containerId,
  ifName,
  netns: '/run/netns/gone',
  args: [['K8S_POD_NAME', 'web']],
  capabilityArgs: { portMappings },
});

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'nodelet-local-del-'));
  fakes = new FakePlugins(root);
  cacheDir = join(root, 'cache');
  for (const name of ['alpha', 'beta', 'loopback', 'nodelet-cni']) await fakes.install(name);
  executor = new CniExecutor({ binDirs: [fakes.binDir], cacheDir, log });
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function runLocalDel(env: Record<string, string>, stdin = JSON.stringify({ cniVersion: '1.0.0', name: 'nodelet', type: 'nodelet-cni' })) {
  return execa(process.execPath, [localDelJs], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      CNI_COMMAND: 'DEL',
      CNI_CONTAINERID: 'sb1',
      CNI_NETNS: '',
      CNI_IFNAME: 'eth0',
      CNI_PATH: join(root, 'no-such-dir'),
      NODELET_CNI_CACHE_DIR: cacheDir,
      NODELET_CNI_BIN_DIRS: fakes.binDir,
      ...env,
    },
    extendEnv: false,
    input: stdin,
    reject: false,
  });
}

test("deletes the sandbox's cached attachments (pod interface, then loopback) and only those", async () => {
  await executor.add(loNet, { ...rt('sb1', 'lo'), capabilityArgs: {} });
  await executor.add(mainNet, rt('sb1'));
  await executor.add(mainNet, rt('sb2'));
  // containerd's own record of the shim network: running it from here would loop into the fallback again.
  await executor.add(shimNet, rt('sb1'));
  await fakes.clearCalls();

  const r = await runLocalDel({});

  expect(r.stderr).not.toContain('"level":50');
  expect(r.exitCode).toBe(0);
  expect(r.stdout).toBe('');
  const calls = await fakes.calls();
  expect(calls.map((c) => `${c.plugin} ${c.command} ${c.env.CNI_IFNAME}`)).toEqual([
    'beta DEL eth0',
    'alpha DEL eth0',
    'loopback DEL lo',
  ]);
  expect(calls[1]!.stdin.runtimeConfig).toEqual({ portMappings });
  expect(calls[1]!.stdin.prevResult).toEqual(defaultResult('beta'));
  expect(calls[1]!.env.CNI_NETNS).toBe('');
  expect(calls[1]!.env.CNI_ARGS).toBe('K8S_POD_NAME=web');
  expect((await readdir(join(cacheDir, 'results'))).sort()).toEqual(['mainnet-sb2-eth0', 'nodelet-sb1-eth0']);

  await fakes.clearCalls();
  const again = await runLocalDel({});
  expect(again.exitCode).toBe(0);
  expect(again.stdout).toBe('');
  expect(await fakes.calls()).toEqual([]);
});

test('exits 0 when the cache directory does not exist', async () => {
  const r = await runLocalDel({ NODELET_CNI_CACHE_DIR: join(root, 'never-created') });
  expect(r.exitCode).toBe(0);
  expect(r.stdout).toBe('');
});

test('a failing plugin makes it print CNI error JSON and exit non-zero, keeping the record', async () => {
  await fakes.install('beta', { failOn: { commands: ['DEL'], code: 5, msg: 'iptables: resource busy' } });
  await executor.add(mainNet, rt('sb1'));

  const r = await runLocalDel({}, JSON.stringify({ cniVersion: '0.4.0', name: 'nodelet', type: 'nodelet-cni' }));

  expect(r.exitCode).toBe(1);
  expect(JSON.parse(r.stdout)).toEqual({ cniVersion: '0.4.0', code: 5, msg: 'beta: iptables: resource busy' });
  expect(await readdir(join(cacheDir, 'results'))).toEqual(['mainnet-sb1-eth0']);
});

test('refuses anything but DEL, and a missing container id', async () => {
  const add = await runLocalDel({ CNI_COMMAND: 'ADD' });
  expect(add.exitCode).toBe(1);
  expect(JSON.parse(add.stdout)).toMatchObject({ code: 4, msg: expect.stringContaining('only performs DEL') });
  const noId = await runLocalDel({ CNI_CONTAINERID: '' });
  expect(JSON.parse(noId.stdout)).toMatchObject({ code: 4, msg: 'missing environment variables: CNI_CONTAINERID' });
  const badStdin = await runLocalDel({}, 'not json');
  expect(JSON.parse(badStdin.stdout)).toMatchObject({ code: 6 });
});
