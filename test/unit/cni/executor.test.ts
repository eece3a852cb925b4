// CniExecutor against fake plugin scripts, run through the nodelet-spawn helper as the agent runs them: chaining, injection, capabilities, DEL/CHECK semantics, errors, cache, GC.
import { mkdtemp, readFile, rm, utimes, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { CniExecutor, parseBinDirs } from '../../../src/cni/executor.js';
import { CniError, type CniRuntimeConf, type NetConfList } from '../../../src/cni/types.js';
import { SpawnHelperRunner } from '../../../src/host/program-runner.js';
import { compileSpawnHelper, type CompiledHelper } from '../host/spawn-helper-binary.js';
import { defaultResult, FakePlugins } from './fake-plugins.js';

const log = pino({ level: 'silent' });

let root: string;
let fakes: FakePlugins;
let cacheDir: string;
let helper: CompiledHelper;
let programs: SpawnHelperRunner;

beforeAll(async () => {
  helper = await compileSpawnHelper();
  programs = await SpawnHelperRunner.start(helper.path, log);
}, 60_000);

afterAll(async () => {
  programs.close();
  await helper.remove();
});

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'nodelet-cni-exec-'));
  fakes = new FakePlugins(root);
  cacheDir = join(root, 'cache');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function executor(extra: { pluginTimeoutMs?: number } = {}): CniExecutor {
  return new CniExecutor({ binDirs: [join(root, 'missing-dir'), fakes.binDir], cacheDir, log, programs, ...extra });
}

function list(plugins: NetConfList['plugins'], extra: Partial<NetConfList> = {}): NetConfList {
  return { cniVersion: '1.0.0', name: 'testnet', disableCheck: false, plugins, source: 'test', ...extra };
}

function rt(overrides: Partial<CniRuntimeConf> = {}): CniRuntimeConf {
  return {
    containerId: 'c1',
    netns: '/run/netns/fake',
    ifName: 'eth0',
    args: [
      ['K8S_POD_NAMESPACE', 'default'],
      ['K8S_POD_NAME', 'web'],
    ],
    capabilityArgs: {},
    ...overrides,
  };
}

const resultB = {
  cniVersion: '1.0.0',
  interfaces: [{ name: 'eth0', mac: '02:00:00:00:00:02', sandbox: '/run/netns/fake' }],
  ips: [{ address: '10.1.0.9/24', gateway: '10.1.0.1', interface: 0 }],
};

describe('ADD', () => {
  test('runs plugins in order, chaining prevResult and injecting name and cniVersion', async () => {
    await fakes.install('alpha');
    await fakes.install('beta', { addResult: resultB });
    const net = list([{ type: 'alpha', bridge: 'br-x', name: 'ignored', cniVersion: '0.0.1' }, { type: 'beta' }]);

    const result = await executor().add(net, rt());

    expect(result).toEqual(resultB);
    const calls = await fakes.calls();
    expect(calls.map((c) => `${c.plugin} ${c.command}`)).toEqual(['alpha ADD', 'beta ADD']);
    const [alpha, beta] = calls;
    expect(alpha!.argc).toBe(0);
    expect(alpha!.stdin).toEqual({ cniVersion: '1.0.0', name: 'testnet', type: 'alpha', bridge: 'br-x' });
    expect(beta!.stdin).toEqual({ cniVersion: '1.0.0', name: 'testnet', type: 'beta', prevResult: defaultResult('alpha') });
    expect(alpha!.env).toMatchObject({
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 'c1',
      CNI_NETNS: '/run/netns/fake',
      CNI_IFNAME: 'eth0',
      CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web',
      CNI_PATH: `${join(root, 'missing-dir')}:${fakes.binDir}`,
    });
  });

  test('passes runtimeConfig only for capabilities the plugin declares and the runtime supplied', async () => {
    await fakes.install('alpha');
    await fakes.install('beta');
    await fakes.install('gamma');
    const portMappings = [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }];
    const net = list([
      { type: 'alpha', capabilities: { portMappings: true, bandwidth: false, ipRanges: true } },
      { type: 'beta' },
      { type: 'gamma', capabilities: { dns: true } },
    ]);

    await executor().add(net, rt({ capabilityArgs: { portMappings, bandwidth: { ingressRate: 1 }, mac: 'x' } }));

    const [alpha, beta, gamma] = await fakes.calls();
    expect(alpha!.stdin.runtimeConfig).toEqual({ portMappings });
    expect(alpha!.stdin).not.toHaveProperty('capabilities');
    expect(beta!.stdin).not.toHaveProperty('runtimeConfig');
    expect(gamma!.stdin).not.toHaveProperty('runtimeConfig');
    expect(gamma!.stdin).not.toHaveProperty('capabilities');
  });

  test('caches the final result in libcni layout', async () => {
    await fakes.install('alpha');
    await fakes.install('beta', { addResult: resultB });
    const net = list([{ type: 'alpha', capabilities: { portMappings: true } }, { type: 'beta' }]);
    const capabilityArgs = { portMappings: [{ hostPort: 1, containerPort: 2, protocol: 'udp' }] };

    await executor().add(net, rt({ capabilityArgs }));

    const file = join(cacheDir, 'results', 'testnet-c1-eth0');
    const record = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    expect(record).toMatchObject({
      kind: 'cniCacheV1',
      containerId: 'c1',
      ifName: 'eth0',
      networkName: 'testnet',
      netns: '/run/netns/fake',
      cniArgs: [
        ['K8S_POD_NAMESPACE', 'default'],
        ['K8S_POD_NAME', 'web'],
      ],
      capabilityArgs,
      result: resultB,
      managedBy: 'nodelet',
    });
    const config = JSON.parse(Buffer.from(record.config as string, 'base64').toString()) as Record<string, unknown>;
    expect(config).toEqual({ cniVersion: '1.0.0', name: 'testnet', plugins: net.plugins });
    expect(await executor().cachedResult('c1', 'eth0')).toEqual(resultB);
    expect(await executor().cachedResult('c1', 'eth0', 'testnet')).toEqual(resultB);
    expect(await executor().cachedResult('c1', 'eth1')).toBeUndefined();
  });

  test('surfaces a plugin error with its code, message, details and plugin type; nothing is cached', async () => {
    await fakes.install('alpha');
    await fakes.install('beta', { failOn: { commands: ['ADD'], code: 7, msg: 'bad config', details: 'subnet too small' } });

    const err = await executor()
      .add(list([{ type: 'alpha' }, { type: 'beta' }]), rt())
      .catch((e: unknown) => e);

    expect(err).toBeInstanceOf(CniError);
    expect(err).toMatchObject({ code: 7, msg: 'bad config', details: 'subnet too small', plugin: 'beta' });
    expect((err as CniError).message).toContain('beta');
    expect((err as CniError).toCniJson('1.0.0')).toEqual({
      cniVersion: '1.0.0',
      code: 7,
      msg: 'beta: bad config',
      details: 'subnet too small',
    });
    expect(await executor().cachedResult('c1', 'eth0')).toBeUndefined();
  });

  test('reports a plugin that fails with only stderr, garbage output, a missing binary, or a timeout', async () => {
    await fakes.install('noisy', { stderrFailOn: { commands: ['ADD'], message: 'kaboom' } });
    await fakes.install('garbage', { garbageOnAdd: 'this is not json' });
    await fakes.install('slow', { sleepSeconds: 5 });

    await expect(executor().add(list([{ type: 'noisy' }]), rt())).rejects.toMatchObject({
      code: 100,
      plugin: 'noisy',
      msg: expect.stringContaining('kaboom'),
    });
    await expect(executor().add(list([{ type: 'garbage' }]), rt())).rejects.toMatchObject({ code: 6, plugin: 'garbage' });
    await expect(executor().add(list([{ type: 'absent' }]), rt())).rejects.toMatchObject({
      code: 7,
      plugin: 'absent',
      msg: expect.stringContaining('failed to find plugin "absent"'),
    });
    const started = Date.now();
    await expect(executor({ pluginTimeoutMs: 300 }).add(list([{ type: 'slow' }]), rt())).rejects.toMatchObject({
      code: 11,
      plugin: 'slow',
      temporary: true,
    });
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  test('a plugin removed after it was found is looked for again (and found in a later directory)', async () => {
    await fakes.install('alpha');
    const exec = executor();
    await exec.add(list([{ type: 'alpha' }]), rt());
    const script = await readFile(join(fakes.binDir, 'alpha'));
    // The remembered path no longer starts: the call fails, and the plugin is looked for again next time.
    await rm(join(fakes.binDir, 'alpha'));
    await expect(exec.add(list([{ type: 'alpha' }]), rt({ containerId: 'c2' }))).rejects.toMatchObject({ code: 100, plugin: 'alpha', msg: expect.stringContaining('ENOENT') });
    // It reappears in the first directory of the search path, which did not exist at first.
    await mkdir(join(root, 'missing-dir'));
    await writeFile(join(root, 'missing-dir', 'alpha'), script, { mode: 0o755 });
    await exec.add(list([{ type: 'alpha' }]), rt({ containerId: 'c3' }));
    expect((await fakes.calls()).map((c) => `${c.plugin} ${c.command} ${c.env.CNI_CONTAINERID}`)).toEqual(['alpha ADD c1', 'alpha ADD c3']);
  });

  test('stops when the caller aborts', async () => {
    await fakes.install('slow', { sleepSeconds: 5 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('pod deleted')), 200);
    await expect(executor().add(list([{ type: 'slow' }]), rt(), controller.signal)).rejects.toMatchObject({ code: 11 });
  });

  test('rejects invalid attachment parameters before running anything', async () => {
    await fakes.install('alpha');
    await expect(executor().add(list([{ type: 'alpha' }]), rt({ containerId: '-bad' }))).rejects.toMatchObject({ code: 4 });
    await expect(executor().add(list([{ type: 'alpha' }]), rt({ ifName: 'a/b' }))).rejects.toMatchObject({ code: 4 });
    await expect(executor().add(list([{ type: 'alpha' }]), rt({ netns: '' }))).rejects.toMatchObject({ code: 4 });
    expect(await fakes.calls()).toEqual([]);
  });
});

describe('DEL', () => {
  test('runs plugins in reverse order with the cached result, then drops the cache record', async () => {
    await fakes.install('alpha');
    await fakes.install('beta', { addResult: resultB });
    const portMappings = [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }];
    const net = list([{ type: 'alpha', capabilities: { portMappings: true } }, { type: 'beta' }]);
    await executor().add(net, rt({ capabilityArgs: { portMappings } }));
    await fakes.clearCalls();

    // A DEL without capability args (containerd's second DEL, the local fallback) reuses the cached ones.
    await executor().del(net, rt({ netns: '', args: [] }));

    const calls = await fakes.calls();
    expect(calls.map((c) => `${c.plugin} ${c.command}`)).toEqual(['beta DEL', 'alpha DEL']);
    for (const call of calls) expect(call.stdin.prevResult).toEqual(resultB);
    expect(calls[1]!.stdin.runtimeConfig).toEqual({ portMappings });
    expect(calls[0]!.env.CNI_NETNS).toBe('');
    expect(calls[0]!.env.CNI_ARGS).toBe('K8S_POD_NAMESPACE=default;K8S_POD_NAME=web');
    await expect(readFile(join(cacheDir, 'results', 'testnet-c1-eth0'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  test('is idempotent: without a cache record the plugins still run, without prevResult', async () => {
    await fakes.install('alpha');
    await fakes.install('beta');
    const net = list([{ type: 'alpha' }, { type: 'beta' }]);

    await executor().del(net, rt());
    await executor().del(net, rt());

    const calls = await fakes.calls();
    expect(calls.map((c) => `${c.plugin} ${c.command}`)).toEqual(['beta DEL', 'alpha DEL', 'beta DEL', 'alpha DEL']);
    for (const call of calls) expect(call.stdin).not.toHaveProperty('prevResult');
  });

  test('tolerates a plugin reporting the container unknown (code 3) but not other errors', async () => {
    await fakes.install('alpha');
    await fakes.install('gone', { failOn: { commands: ['DEL'], code: 3, msg: 'no such container' } });
    await fakes.install('broken', { failOn: { commands: ['DEL'], code: 5, msg: 'iptables failed' } });

    await executor().del(list([{ type: 'alpha' }, { type: 'gone' }]), rt());
    expect((await fakes.calls()).map((c) => c.plugin)).toEqual(['gone', 'alpha']);

    await expect(executor().del(list([{ type: 'alpha' }, { type: 'broken' }]), rt())).rejects.toMatchObject({
      code: 5,
      plugin: 'broken',
      msg: 'iptables failed',
    });
  });

  test('ignores an unreadable cache record', async () => {
    await fakes.install('alpha');
    await mkdir(join(cacheDir, 'results'), { recursive: true });
    await writeFile(join(cacheDir, 'results', 'testnet-c1-eth0'), '{not json');
    await executor().del(list([{ type: 'alpha' }]), rt());
    const [call] = await fakes.calls();
    expect(call!.stdin).not.toHaveProperty('prevResult');
    await expect(readFile(join(cacheDir, 'results', 'testnet-c1-eth0'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  test('does not pass prevResult for configurations older than 0.4.0', async () => {
    await fakes.install('alpha', { addResult: { ...defaultResult('alpha'), cniVersion: '0.3.1' } });
    const net = list([{ type: 'alpha' }], { cniVersion: '0.3.1' });
    await executor().add(net, rt());
    await executor().del(net, rt());
    const calls = await fakes.calls();
    expect(calls[1]!.stdin).not.toHaveProperty('prevResult');
    expect(calls[1]!.stdin.cniVersion).toBe('0.3.1');
  });
});

describe('CHECK', () => {
  test('runs plugins in order with the cached result', async () => {
    await fakes.install('alpha');
    await fakes.install('beta', { addResult: resultB });
    const net = list([{ type: 'alpha' }, { type: 'beta' }]);
    await executor().add(net, rt());
    await fakes.clearCalls();

    await executor().check(net, rt());

    const calls = await fakes.calls();
    expect(calls.map((c) => `${c.plugin} ${c.command}`)).toEqual(['alpha CHECK', 'beta CHECK']);
    for (const call of calls) expect(call.stdin.prevResult).toEqual(resultB);
  });

  test('fails without a prior ADD, fails with a plugin error, and skips when disableCheck is set', async () => {
    await fakes.install('alpha', { failOn: { commands: ['CHECK'], code: 111, msg: 'veth missing' } });
    const net = list([{ type: 'alpha' }]);
    await expect(executor().check(net, rt())).rejects.toMatchObject({ code: 3 });
    await executor().add(net, rt());
    await expect(executor().check(net, rt())).rejects.toMatchObject({ code: 111, msg: 'veth missing', plugin: 'alpha' });
    await fakes.clearCalls();
    await executor().check({ ...net, disableCheck: true }, rt());
    expect(await fakes.calls()).toEqual([]);
  });
});

describe('garbageCollect', () => {
  test('deletes cached attachments of containers that are not live, leaving live and foreign records', async () => {
    await fakes.install('alpha');
    const net = list([{ type: 'alpha' }]);
    const other = list([{ type: 'alpha' }], { name: 'othernet' });
    const ex = executor();
    await ex.add(net, rt({ containerId: 'live1' }));
    await ex.add(net, rt({ containerId: 'dead1' }));
    await ex.add(other, rt({ containerId: 'dead2' }));
    await ex.add(net, rt({ containerId: 'dead1', ifName: 'lo' }));
    // A record another runtime (libcni) wrote into the shared directory.
    const foreign = { ...JSON.parse(await readFile(join(cacheDir, 'results', 'testnet-dead1-eth0'), 'utf8')) };
    delete foreign.managedBy;
    foreign.containerId = 'foreign1';
    await writeFile(join(cacheDir, 'results', 'testnet-foreign1-eth0'), JSON.stringify(foreign));
    await writeFile(join(cacheDir, 'results', 'README'), 'not a record');
    await fakes.clearCalls();

    const report = await ex.garbageCollect(new Set(['live1']), { networks: new Set(['testnet']) });

    expect(report.failed).toEqual([]);
    expect(report.removed).toEqual([
      { containerId: 'dead1', networkName: 'testnet', ifName: 'eth0' },
      { containerId: 'dead1', networkName: 'testnet', ifName: 'lo' },
    ]);
    const calls = await fakes.calls();
    expect(calls.map((c) => `${c.env.CNI_CONTAINERID} ${c.env.CNI_IFNAME} ${c.command}`)).toEqual([
      'dead1 eth0 DEL',
      'dead1 lo DEL',
    ]);
    // The cached netns no longer exists, so it is not passed.
    expect(calls[0]!.env.CNI_NETNS).toBe('');
    expect(calls[0]!.stdin.prevResult).toEqual(defaultResult('alpha'));
    const remaining = (await ex.cachedAttachments()).map((a) => `${a.networkName}/${a.containerId}/${a.managed}`).sort();
    expect(remaining).toEqual(['othernet/dead2/true', 'testnet/foreign1/false', 'testnet/live1/true']);

    // Without a network filter the other network's record goes too.
    const all = await ex.garbageCollect(new Set(['live1']));
    expect(all.removed.map((r) => r.containerId)).toEqual(['dead2']);
  });

  test('keeps records younger than minAgeMs and reports failures without stopping', async () => {
    await fakes.install('alpha');
    await fakes.install('broken', { failOn: { commands: ['DEL'], code: 5, msg: 'cannot' } });
    const ex = executor();
    await ex.add(list([{ type: 'alpha' }]), rt({ containerId: 'young' }));
    await ex.add(list([{ type: 'broken' }], { name: 'brokennet' }), rt({ containerId: 'old1' }));
    await ex.add(list([{ type: 'alpha' }]), rt({ containerId: 'old2' }));
    const past = new Date(Date.now() - 600_000);
    await utimes(join(cacheDir, 'results', 'brokennet-old1-eth0'), past, past);
    await utimes(join(cacheDir, 'results', 'testnet-old2-eth0'), past, past);

    const report = await ex.garbageCollect(new Set(), { minAgeMs: 60_000 });

    expect(report.removed.map((r) => r.containerId)).toEqual(['old2']);
    expect(report.failed.map((f) => [f.containerId, (f.error as CniError).code])).toEqual([['old1', 5]]);
    expect((await ex.cachedAttachments()).map((a) => a.containerId).sort()).toEqual(['old1', 'young']);
  });
});

describe('an ADD cut short (the agent killed during it)', () => {
  test('leaves a record without a result, which garbage collection deletes with DEL and no prevResult', async () => {
    await fakes.install('alpha');
    await fakes.install('slow', { sleepSeconds: 1 });
    const net = list([{ type: 'alpha' }, { type: 'slow' }]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('agent killed')), 300);
    await expect(executor().add(net, rt({ containerId: 'cut' }), controller.signal)).rejects.toMatchObject({ code: 11 });

    // A new agent (a new executor) finds it: no result to hand out or CHECK against, but an attachment to delete.
    const ex = executor();
    expect(await ex.cachedResult('cut', 'eth0')).toBeUndefined();
    await expect(ex.check(net, rt({ containerId: 'cut' }))).rejects.toMatchObject({ code: 3 });
    const [pending] = await ex.cachedAttachments({ containerId: 'cut' });
    expect(pending).toMatchObject({ containerId: 'cut', networkName: 'testnet', managed: true });
    expect(pending!.result).toBeUndefined();
    await fakes.clearCalls();

    const report = await ex.garbageCollect(new Set());

    expect(report).toEqual({ removed: [{ containerId: 'cut', networkName: 'testnet', ifName: 'eth0' }], failed: [] });
    const calls = await fakes.calls();
    expect(calls.map((c) => `${c.plugin} ${c.command} ${c.env.CNI_CONTAINERID}`)).toEqual(['slow DEL cut', 'alpha DEL cut']);
    for (const call of calls) expect(call.stdin).not.toHaveProperty('prevResult');
    expect(await ex.cachedAttachments()).toEqual([]);
  });

  test('a finished ADD replaces the record with its result', async () => {
    await fakes.install('alpha');
    await executor().add(list([{ type: 'alpha' }]), rt());
    const [done] = await executor().cachedAttachments();
    expect(done!.result).toEqual(defaultResult('alpha'));
  });
});

describe('validate and version', () => {
  test('accepts installed plugins supporting the version; rejects others', async () => {
    await fakes.install('alpha');
    await expect(executor().validate(list([{ type: 'alpha' }]))).resolves.toBeUndefined();
    await expect(executor().validate(list([{ type: 'alpha' }], { cniVersion: '0.3.0' }))).rejects.toMatchObject({
      code: 1,
      plugin: 'alpha',
    });
    await expect(executor().validate(list([{ type: 'nope' }]))).rejects.toMatchObject({ code: 7, plugin: 'nope' });
    expect(await executor().version('alpha')).toEqual({ cniVersion: '1.0.0', supportedVersions: ['0.3.1', '0.4.0', '1.0.0'] });
  });
});

test('parseBinDirs accepts kubelet commas and CNI_PATH colons', () => {
  expect(parseBinDirs('/usr/lib/cni, /opt/cni/bin')).toEqual(['/usr/lib/cni', '/opt/cni/bin']);
  expect(parseBinDirs('/a:/b,,/c')).toEqual(['/a', '/b', '/c']);
  expect(parseBinDirs('')).toEqual([]);
});
