// PodNetwork with the real reference plugins (/usr/lib/cni) in a test netns: set up, reach the pod, tear down, GC.
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { CniExecutor } from '../../../src/cni/executor.js';
import { PodNetwork } from '../../../src/cni/pod-network.js';
import type { CniRuntimeConf } from '../../../src/cni/types.js';
import { cidrContains, parseCidr, parseIp } from '../../../src/cni/cidr.js';
import { httpGet } from '../helpers/agent.js';
import {
  createNetns,
  ip,
  ipQuiet,
  isRoot,
  linkExists,
  linkFlags,
  netnsAddresses,
  readIpForward,
  restoreIpForward,
  silentLog,
  testNetwork,
  type TestNetwork,
} from './host-fixtures.js';

const describeRoot = isRoot ? describe : describe.skip;

const NETNS = `nlt-pn-${process.pid}`;
const BRIDGE = 'nlt-br0';
const SUBNET = '10.97.0.0/24';
const HTTP_PORT = 18080;

describeRoot('PodNetwork with the reference plugins', () => {
  let root: string;
  let net: TestNetwork;
  let netnsPath: string;
  let executor: CniExecutor;
  let podNetwork: PodNetwork;
  let ipForward: string;
  let httpd: ResultPromise | undefined;

  const rt = (containerId: string, netns = netnsPath): CniRuntimeConf => ({
    containerId,
    netns,
    ifName: 'eth0',
    args: [
      ['IgnoreUnknown', '1'],
      ['K8S_POD_NAMESPACE', 'nlt'],
      ['K8S_POD_NAME', containerId],
    ],
    capabilityArgs: {},
  });

  const reservations = async (): Promise<string[]> =>
    (await readdir(join(net.ipamDataDir, net.networks.main.name)).catch(() => [] as string[])).filter((f) => /^\d+\./.test(f));

  beforeAll(async () => {
    ipForward = await readIpForward();
    root = await mkdtemp(join(tmpdir(), 'nodelet-cni-it-'));
    await ipQuiet(['link', 'del', BRIDGE]);
    net = await testNetwork({ root, bridge: BRIDGE, subnet: SUBNET, name: 'nlt-podnet' });
    netnsPath = await createNetns(NETNS);
    executor = new CniExecutor({ binDirs: ['/usr/lib/cni'], cacheDir: join(root, 'cache'), log: silentLog });
    podNetwork = await PodNetwork.create({ executor, ...net.networks, gcGracePeriodMs: 0, log: silentLog });
  });

  afterAll(async () => {
    httpd?.kill('SIGKILL');
    await httpd?.catch(() => undefined);
    await ipQuiet(['netns', 'del', NETNS]);
    await ipQuiet(['link', 'del', BRIDGE]);
    if (root) await rm(root, { recursive: true, force: true });
    if (ipForward !== undefined) await restoreIpForward(ipForward);
  });

  let podIP: string;

  test('setUp puts eth0 with an address of the subnet in the netns and leaves lo to the runtime', async () => {
    const result = await podNetwork.setUp(rt('nlt-sb-1'));

    const eth0 = result.interfaces?.findIndex((i) => i.name === 'eth0' && i.sandbox === netnsPath);
    expect(eth0).toBeGreaterThanOrEqual(0);
    const address = result.ips?.find((i) => i.interface === eth0)?.address;
    expect(address).toBeDefined();
    podIP = address!.split('/')[0]!;
    expect(cidrContains(parseCidr(SUBNET), parseIp(podIP)!)).toBe(true);
    expect(result.ips?.find((i) => i.interface === eth0)?.gateway).toBe('10.97.0.1');

    expect(await netnsAddresses(NETNS, 'eth0')).toContain(address);
    // containerd's CRI brings lo up itself; the agent does not run the loopback plugin a second time.
    expect(await linkFlags('lo', NETNS)).not.toContain('UP');
    expect(podNetwork.podIPs('nlt-sb-1')).toEqual([podIP]);
    expect(await reservations()).toEqual([podIP]);
    expect(await linkExists(BRIDGE)).toBe(true);
    expect(await ip(['-j', 'addr', 'show', 'dev', BRIDGE])).toContain('"local":"10.97.0.1"');
  });

  test('the host reaches a server in the pod at its IP', async () => {
    const www = join(root, 'www');
    await mkdir(www, { recursive: true });
    await writeFile(join(www, 'index.html'), 'hello from the pod\n');
    httpd = execa('ip', ['netns', 'exec', NETNS, 'busybox', 'httpd', '-f', '-p', `${podIP}:${HTTP_PORT}`, '-h', www], {
      reject: false,
    });
    let body = '';
    for (let attempt = 0; attempt < 50 && body === ''; attempt++) {
      try {
        body = await httpGet(`http://${podIP}:${HTTP_PORT}/index.html`, 2_000);
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(body).toBe('hello from the pod\n');
    httpd.kill('SIGKILL');
    await httpd;
    httpd = undefined;
  });

  test('check passes on a healthy attachment', async () => {
    await expect(podNetwork.check(rt('nlt-sb-1'))).resolves.toBeUndefined();
  });

  test('tearDown removes the veth, the address reservation and an older agent\'s loopback attachment, and is idempotent', async () => {
    // Agents that attached loopback themselves left a cache record for "lo": tearing down removes it too.
    await executor.add(net.networks.loopback, { ...rt('nlt-sb-1'), ifName: 'lo' });
    expect(await linkFlags('lo', NETNS)).toContain('UP');
    await podNetwork.tearDown(rt('nlt-sb-1'));

    expect(await linkExists('eth0', NETNS)).toBe(false);
    expect(await reservations()).toEqual([]);
    expect(podNetwork.podIPs('nlt-sb-1')).toBeUndefined();
    expect(await executor.cachedAttachments()).toEqual([]);
    // containerd's second DEL comes without a netns.
    await podNetwork.tearDown(rt('nlt-sb-1', ''));
    await podNetwork.tearDown(rt('nlt-sb-1'));
  });

  test('after a restart, pod IPs come from the cache and garbage collection removes vanished sandboxes', async () => {
    await podNetwork.setUp(rt('nlt-sb-2'));
    const ipBefore = podNetwork.podIPs('nlt-sb-2');
    expect(await reservations()).toHaveLength(1);

    // A new agent process: nothing in memory, everything from the cache directory.
    const restarted = await PodNetwork.create({ executor, ...net.networks, gcGracePeriodMs: 0, log: silentLog });
    expect(restarted.podIPs('nlt-sb-2')).toEqual(ipBefore);

    const kept = await restarted.garbageCollect(new Set(['nlt-sb-2']));
    expect(kept.removed).toEqual([]);
    const report = await restarted.garbageCollect(new Set());
    expect(report.failed).toEqual([]);
    expect(report.removed.map((r) => `${r.networkName}/${r.ifName}`)).toEqual(['nlt-podnet/eth0']);
    expect(restarted.podIPs('nlt-sb-2')).toBeUndefined();
    expect(await linkExists('eth0', NETNS)).toBe(false);
    expect(await reservations()).toEqual([]);
  });

  test('a failed setUp undoes itself: no veth, no reservation, no cache record', async () => {
    // A last plugin that refuses ADD: bridge and host-local have done their work by then.
    const bin = join(root, 'bin');
    await mkdir(bin, { recursive: true });
    await writeFile(
      join(bin, 'nlt-fail'),
      '#!/bin/sh\ncat >/dev/null\n[ "$CNI_COMMAND" = ADD ] && { echo \'{"cniVersion":"1.0.0","code":7,"msg":"refused"}\'; exit 1; }\nexit 0\n',
    );
    await chmod(join(bin, 'nlt-fail'), 0o755);
    const failing = await PodNetwork.create({
      executor: new CniExecutor({ binDirs: ['/usr/lib/cni', bin], cacheDir: join(root, 'cache'), log: silentLog }),
      main: { ...net.networks.main, plugins: [...net.networks.main.plugins, { type: 'nlt-fail' }] },
      log: silentLog,
    });

    await expect(failing.setUp(rt('nlt-sb-3'))).rejects.toMatchObject({ code: 7, plugin: 'nlt-fail', msg: 'refused' });

    expect(await linkExists('eth0', NETNS)).toBe(false);
    expect(await reservations()).toEqual([]);
    expect(await executor.cachedAttachments()).toEqual([]);
    expect(failing.podIPs('nlt-sb-3')).toBeUndefined();
  });
});
