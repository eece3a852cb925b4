// The pod network's configuration: the pod CIDR applied to host-local networks only, the directory watched (a network
// written later is used within moments, its removal makes the network not ready), and the runtime's NetworkReady as
// the node status reads it.
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseConfList } from '../../../src/cni/conflist.js';
import { CniExecutor } from '../../../src/cni/executor.js';
import { PodNetwork } from '../../../src/cni/pod-network.js';
import type { RuntimeStatus } from '../../../src/cri/types.js';
import { withPodNetworkCondition } from '../../../src/agent/node-heartbeats.js';
import { effectiveNetwork, PodNetworkConfig } from '../../../src/agent/pod-network-config.js';
import { DEFAULT_LOOPBACK } from '../../../src/cni/conflist.js';

const log = pino({ level: 'silent' });
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-netconf-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const kindnet = (subnet: string) => ({
  cniVersion: '0.3.1',
  name: 'kindnet',
  plugins: [
    { type: 'ptp', ipMasq: false, ipam: { type: 'host-local', dataDir: '/run/cni-ipam-state', ranges: [[{ subnet }]] } },
    { type: 'portmap', capabilities: { portMappings: true } },
  ],
});

describe('effectiveNetwork', () => {
  test('a host-local network allocates from the pod CIDR; others are used as written; none stays none', () => {
    const main = parseConfList(JSON.stringify(kindnet('10.244.1.0/24')), '10-kindnet.conflist');
    const applied = effectiveNetwork({ main, loopback: DEFAULT_LOOPBACK }, '10.244.3.0/24')!;
    expect(applied.plugins[0]!.ipam).toEqual({ type: 'host-local', dataDir: '/run/cni-ipam-state', ranges: [[{ subnet: '10.244.3.0/24', gateway: '10.244.3.1' }]] });
    expect(effectiveNetwork({ main, loopback: DEFAULT_LOOPBACK }, undefined)).toBe(main);
    const foreign = parseConfList(JSON.stringify({ cniVersion: '1.0.0', name: 'calico', plugins: [{ type: 'calico', ipam: { type: 'calico-ipam' } }] }), 'x');
    expect(effectiveNetwork({ main: foreign, loopback: DEFAULT_LOOPBACK }, '10.244.3.0/24')).toBe(foreign);
    expect(effectiveNetwork({ loopback: DEFAULT_LOOPBACK, problem: 'none' }, '10.244.3.0/24')).toBeUndefined();
  });
});

describe('withPodNetworkCondition', () => {
  const containerd: RuntimeStatus = {
    conditions: [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ],
  };
  const runtime = (status: RuntimeStatus) => ({
    version: () => Promise.reject(new Error('unused')),
    listImages: () => Promise.resolve([]),
    status: () => Promise.resolve(status),
  });

  test("while nodelet has no network, the runtime's NetworkReady is containerd's \"cni plugin not initialized\"", async () => {
    const network = await PodNetwork.create({ executor: new CniExecutor({ cacheDir: join(dir, 'cache') }), main: undefined, log });
    const config = new PodNetworkConfig({ network, dir, log });
    const wrapped = withPodNetworkCondition(runtime(containerd), config);
    expect((await wrapped.status()).conditions).toEqual([
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' },
    ]);
    // containerd's own failure is the one reported.
    const broken: RuntimeStatus = { conditions: [containerd.conditions[0]!, { type: 'NetworkReady', status: false, reason: 'X', message: 'y' }] };
    expect(await withPodNetworkCondition(runtime(broken), config).status()).toEqual(broken);
    network.setMain(parseConfList(JSON.stringify(kindnet('10.244.1.0/24')), 'k'));
    expect(await wrapped.status()).toEqual(containerd);
  });
});

describe('PodNetworkConfig', () => {
  test('an empty directory gives no network; a file written later is used within moments; its removal takes it away', async () => {
    const network = await PodNetwork.create({ executor: new CniExecutor({ cacheDir: join(dir, 'cache') }), main: undefined, log });
    const confDir = join(dir, 'net.d');
    const config = new PodNetworkConfig({ network, dir: confDir, log, pollIntervalMs: 60_000 });
    await config.load(AbortSignal.timeout(10_000));
    expect(network.main).toBeUndefined();
    const stop = new AbortController();
    let ready = 0;
    const watching = config.watch(stop.signal, () => ready++);
    try {
      const until = async (ok: () => boolean) => {
        for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
        expect(ok()).toBe(true);
      };
      // A network without host-local: no pod subnet to check against the host's routes.
      const plain = (name: string) => JSON.stringify({ cniVersion: '1.0.0', name, plugins: [{ type: 'ptp', ipam: { type: 'static' } }] });
      await until(() => ready === 0);
      // The watch makes the directory as it starts; the test may get there first.
      await mkdir(confDir, { recursive: true });
      // Written aside and renamed in, as kindnet's writer does: the inotify event, not the 60 s poll, picks it up.
      await writeFile(join(confDir, '.tmp'), plain('second'));
      await rename(join(confDir, '.tmp'), join(confDir, '20-second.conflist'));
      await until(() => network.main?.name === 'second');
      expect(ready).toBe(1);
      await writeFile(join(confDir, '10-first.conf'), plain('first'));
      await until(() => network.main?.name === 'first');
      expect(network.main?.source).toBe(join(confDir, '10-first.conf'));
      await rm(join(confDir, '10-first.conf'));
      await until(() => network.main?.name === 'second');
      await rm(join(confDir, '20-second.conflist'));
      await until(() => network.main === undefined);
      expect(network.notReadyCondition()?.reason).toBe('NetworkPluginNotReady');
      await writeFile(join(confDir, '30-third.json'), plain('third'));
      await until(() => network.main?.name === 'third');
      expect(ready).toBe(2);
    } finally {
      stop.abort();
      await watching;
    }
  });
});

describe('PodNetworkConfig, pod CIDR from the Node', () => {
  // nodelet's own network in cluster mode: a bridge on a host-local range the Node's podCIDR replaces.
  const own = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'nodelet',
    // Not the rig's 10.99.0.0/24: the subnet check reads the host's routes, and the rig's bridge may be up.
    plugins: [{ type: 'bridge', bridge: 'nltest-none0', isGateway: true, ipam: { type: 'host-local', ranges: [[{ subnet: '10.251.6.0/24' }]] } }],
  });
  const setup = async (opts: { podCidr?: string; podCidrFromNode: boolean; podCidrStateFile?: string }) => {
    const network = await PodNetwork.create({ executor: new CniExecutor({ cacheDir: join(dir, 'cache') }), main: undefined, log });
    await writeFile(join(dir, '10-nodelet.conflist'), own);
    const config = new PodNetworkConfig({ network, dir, log, ...opts, ...(opts.podCidr ? { podCidr: opts.podCidr } : {}) });
    await config.load(AbortSignal.timeout(10_000));
    return { network, config };
  };

  test('no network (NetworkPluginNotReady) until Node.spec.podCIDR; then the bridge allocates from exactly that range', async () => {
    const { network, config } = await setup({ podCidrFromNode: true });
    expect(config.awaitingPodCIDR).toBe(true);
    expect(network.main).toBeUndefined();
    expect(network.notReadyCondition()).toMatchObject({ type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady' });
    // The node controller takes '' as "no pod CIDR applied yet": the first podCIDR it reads is applied.
    expect(config.podCIDR).toBe('');
    let ready = 0;
    const stop = new AbortController();
    const watching = config.watch(stop.signal, () => ready++);
    try {
      await config.applyPodCIDR('10.251.7.0/24', AbortSignal.timeout(10_000));
      expect(config.awaitingPodCIDR).toBe(false);
      expect(network.notReadyCondition()).toBeUndefined();
      expect(network.main!.plugins[0]!.ipam).toEqual({ type: 'host-local', ranges: [[{ subnet: '10.251.7.0/24', gateway: '10.251.7.1' }]] });
      expect(config.podCIDR).toBe('10.251.7.0/24');
      // Pods waiting for the network are woken.
      expect(ready).toBe(1);
    } finally {
      stop.abort();
      await watching;
    }
  });

  test('the applied pod CIDR is kept in the state file: a restart has the network at once; an unusable saved one is ignored', async () => {
    const podCidrStateFile = join(dir, 'state', 'pod-cidr');
    await mkdir(join(dir, 'state'));
    const first = await setup({ podCidrFromNode: true, podCidrStateFile });
    await first.config.applyPodCIDR('10.251.9.0/24', AbortSignal.timeout(10_000));
    expect(await readFile(podCidrStateFile, 'utf8')).toBe('10.251.9.0/24\n');
    const restarted = await setup({ podCidrFromNode: true, podCidrStateFile });
    expect(restarted.config.awaitingPodCIDR).toBe(false);
    expect(restarted.config.podCIDR).toBe('10.251.9.0/24');
    expect(restarted.network.main!.plugins[0]!.ipam).toEqual({ type: 'host-local', ranges: [[{ subnet: '10.251.9.0/24', gateway: '10.251.9.1' }]] });
    await writeFile(podCidrStateFile, 'not a cidr\n');
    const broken = await setup({ podCidrFromNode: true, podCidrStateFile });
    expect(broken.config.awaitingPodCIDR).toBe(true);
    expect(broken.network.main).toBeUndefined();
  });

  test('standalone, or with --pod-cidr, the network is there from the start', async () => {
    const standalone = await setup({ podCidrFromNode: false });
    expect(standalone.config.awaitingPodCIDR).toBe(false);
    expect(standalone.network.main!.plugins[0]!.ipam).toEqual({ type: 'host-local', ranges: [[{ subnet: '10.251.6.0/24' }]] });
    const explicit = await setup({ podCidrFromNode: true, podCidr: '10.251.8.0/24' });
    expect(explicit.config.awaitingPodCIDR).toBe(false);
    expect(explicit.network.main!.plugins[0]!.ipam).toEqual({ type: 'host-local', ranges: [[{ subnet: '10.251.8.0/24', gateway: '10.251.8.1' }]] });
  });
});
