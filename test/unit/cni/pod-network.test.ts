// PodNetwork across network changes, against fake plugin scripts: each sandbox is torn down (and checked, and garbage
// collected) with the network its cached ADD result records, also after an agent restart; without a network, nothing is set up.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { CniExecutor } from '../../../src/cni/executor.js';
import { NETWORK_PLUGIN_NOT_READY, PodNetwork } from '../../../src/cni/pod-network.js';
import type { CniRuntimeConf, NetConfList } from '../../../src/cni/types.js';
import { defaultResult, FakePlugins } from './fake-plugins.js';

const log = pino({ level: 'silent' });
let root: string;
let fakes: FakePlugins;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'nodelet-podnet-'));
  fakes = new FakePlugins(root);
  await fakes.install('alpha', { addResult: { ...defaultResult('alpha'), ips: [{ address: '10.1.0.5/24', interface: 0 }] } });
  await fakes.install('beta', { addResult: { ...defaultResult('beta'), ips: [{ address: '10.2.0.7/24', interface: 0 }] } });
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const executor = () => new CniExecutor({ binDirs: [fakes.binDir], cacheDir: join(root, 'cache'), log });
const network = (name: string, type: string): NetConfList => ({ cniVersion: '1.0.0', name, disableCheck: false, plugins: [{ type }], source: `/conf/${name}.conflist` });
const rt = (containerId: string, netns = '/run/netns/fake'): CniRuntimeConf => ({ containerId, netns, ifName: 'eth0', args: [['K8S_POD_NAME', containerId]], capabilityArgs: {} });
const calls = async () => (await fakes.calls()).map((c) => `${c.plugin} ${c.command} ${c.env.CNI_CONTAINERID} ${String(c.stdin.name)}`);

test('without a network nothing is set up and the network is not ready with containerd\'s condition', async () => {
  const pods = await PodNetwork.create({ executor: executor(), main: undefined, log });
  expect(pods.notReadyCondition()).toEqual({
    type: 'NetworkReady',
    status: false,
    reason: 'NetworkPluginNotReady',
    message: 'Network plugin returns error: cni plugin not initialized',
  });
  await expect(pods.setUp(rt('sb1'))).rejects.toMatchObject({ code: 11, msg: NETWORK_PLUGIN_NOT_READY.message });
  expect(await calls()).toEqual([]);
  // A DEL for a sandbox nodelet never attached has nothing to run and succeeds.
  await pods.tearDown(rt('sb1'));
  pods.setMain(network('anet', 'alpha'));
  expect(pods.notReadyCondition()).toBeUndefined();
});

test('each sandbox keeps the network it was set up with: teardown, check and IPs, also after a restart', async () => {
  const pods = await PodNetwork.create({ executor: executor(), main: network('anet', 'alpha'), log });
  await pods.setUp(rt('sb1'));
  pods.setMain(network('bnet', 'beta'));
  await pods.setUp(rt('sb2'));
  expect(pods.podIPs('sb1')).toEqual(['10.1.0.5']);
  expect(pods.podIPs('sb2')).toEqual(['10.2.0.7']);
  await pods.check(rt('sb1'));
  await fakes.clearCalls();

  // A restarted agent whose directory now offers a third network still knows both.
  await fakes.install('gamma');
  const restarted = await PodNetwork.create({ executor: executor(), main: network('cnet', 'gamma'), log });
  expect(restarted.podIPs('sb1')).toEqual(['10.1.0.5']);
  expect(restarted.podIPs('sb2')).toEqual(['10.2.0.7']);
  await restarted.tearDown(rt('sb1'));
  await restarted.tearDown(rt('sb2'));
  expect(await calls()).toEqual(['alpha DEL sb1 anet', 'beta DEL sb2 bnet']);
  expect(restarted.podIPs('sb1')).toBeUndefined();

  // containerd's second DEL (no netns, the record gone): the current network's plugins release what they may hold.
  await fakes.clearCalls();
  await restarted.tearDown(rt('sb1', ''));
  expect(await calls()).toEqual(['gamma DEL sb1 cnet']);
  expect(await restarted.executor.cachedAttachments()).toEqual([]);
});

test('garbage collection removes the attachments of gone sandboxes in every network nodelet used', async () => {
  const pods = await PodNetwork.create({ executor: executor(), main: network('anet', 'alpha'), gcGracePeriodMs: 0, log });
  await pods.setUp(rt('sb1'));
  pods.setMain(network('bnet', 'beta'));
  await pods.setUp(rt('sb2'));
  await pods.setUp(rt('sb3'));
  await pods.tearDown(rt('sb3'));
  await fakes.clearCalls();
  // A fresh process has touched nothing: sb1 and sb2 are gone from the runtime, sb3 already torn down.
  const restarted = await PodNetwork.create({ executor: executor(), main: undefined, gcGracePeriodMs: 0, log });
  const report = await restarted.garbageCollect(new Set());
  expect(report.removed.map((r) => `${r.networkName}/${r.containerId}`).sort()).toEqual(['anet/sb1', 'bnet/sb2']);
  expect((await calls()).sort()).toEqual(['alpha DEL sb1 anet', 'beta DEL sb2 bnet']);
  expect(restarted.podIPs('sb1')).toBeUndefined();
});
