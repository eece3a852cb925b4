// The shim end to end, invoked as containerd would: compiled nodelet-cni -> CniShimServer -> real plugins; and
// DEL through localExec (dist/src/cni/local-del.js) while the agent is down.
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { cidrContains, parseCidr, parseIp } from '../../../src/cni/cidr.js';
import { CniExecutor } from '../../../src/cni/executor.js';
import { PodNetwork } from '../../../src/cni/pod-network.js';
import { CniShimServer } from '../../../src/cni/shim-server.js';
import type { CniResult } from '../../../src/cni/types.js';
import {
  createNetns,
  ipQuiet,
  isRoot,
  linkExists,
  netnsAddresses,
  readIpForward,
  repoRoot,
  restoreIpForward,
  silentLog,
  testNetwork,
  type TestNetwork,
} from './host-fixtures.js';

const describeRoot = isRoot ? describe : describe.skip;

const NETNS = `nlt-shim-${process.pid}`;
const BRIDGE = 'nlt-br1';
const SUBNET = '10.97.1.0/24';

describeRoot('nodelet-cni shim with the agent side and the DEL fallback', () => {
  let root: string;
  let net: TestNetwork;
  let netnsPath: string;
  let socket: string;
  let shim: string;
  let localExec: string;
  let executor: CniExecutor;
  let server: CniShimServer | undefined;
  let ipForward: string;

  beforeAll(async () => {
    ipForward = await readIpForward();
    root = await mkdtemp(join(tmpdir(), 'nodelet-shim-it-'));
    shim = join(root, 'nodelet-cni');
    await execa('gcc', ['-O2', '-Wall', '-Wextra', '-Werror', '-o', shim, join(repoRoot, 'src/cni/shim/nodelet-cni.c')]);
    await ipQuiet(['link', 'del', BRIDGE]);
    net = await testNetwork({ root, bridge: BRIDGE, subnet: SUBNET, name: 'nlt-shimnet' });
    netnsPath = await createNetns(NETNS);
    const cacheDir = join(root, 'cache');
    executor = new CniExecutor({ binDirs: ['/usr/lib/cni'], cacheDir, log: silentLog });
    const podNetwork = await PodNetwork.create({ executor, ...net.networks, log: silentLog });
    socket = join(root, 'cni.sock');
    server = new CniShimServer({ socketPath: socket, backend: podNetwork, log: silentLog });
    await server.listen();
    // What the rig's nodelet-cni-local does, pointed at this test's cache and the reference plugins.
    localExec = join(root, 'nodelet-cni-local');
    await writeFile(
      localExec,
      [
        '#!/bin/sh',
        `export NODELET_CNI_CACHE_DIR='${cacheDir}'`,
        "export NODELET_CNI_BIN_DIRS='/usr/lib/cni'",
        `exec '${join(repoRoot, 'node_modules/.bin/node')}' '${join(repoRoot, 'dist/src/cni/local-del.js')}'`,
        '',
      ].join('\n'),
    );
    await chmod(localExec, 0o755);
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    await ipQuiet(['netns', 'del', NETNS]);
    await ipQuiet(['link', 'del', BRIDGE]);
    if (root) await rm(root, { recursive: true, force: true });
    if (ipForward !== undefined) await restoreIpForward(ipForward);
  });

  const shimConf = () =>
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'nodelet',
      type: 'nodelet-cni',
      agentSocket: socket,
      localExec,
      capabilities: { portMappings: true },
    });

  function runShim(command: string, sandboxId: string, opts: { netns?: string; prevResult?: CniResult } = {}) {
    const conf = opts.prevResult ? JSON.stringify({ ...JSON.parse(shimConf()), prevResult: opts.prevResult }) : shimConf();
    return execa(shim, [], {
      env: {
        PATH: '/usr/bin:/bin',
        CNI_COMMAND: command,
        CNI_CONTAINERID: sandboxId,
        CNI_NETNS: opts.netns ?? netnsPath,
        CNI_IFNAME: 'eth0',
        CNI_ARGS: `K8S_POD_NAME=${sandboxId};K8S_POD_NAMESPACE=nlt;K8S_POD_UID=u-${sandboxId};K8S_POD_INFRA_CONTAINER_ID=${sandboxId};IgnoreUnknown=1`,
        CNI_PATH: '/opt/nodelet/cni/bin',
      },
      extendEnv: false,
      input: conf,
      reject: false,
      timeout: 60_000,
    });
  }

  const reservations = async (): Promise<string[]> =>
    (await readdir(join(net.ipamDataDir, net.networks.main.name)).catch(() => [] as string[])).filter((f) => /^\d+\./.test(f));

  /** What containerd checks after ADD: an eth0 in the sandbox with an IP. */
  function sandboxIP(result: CniResult): string | undefined {
    const eth0 = result.interfaces?.findIndex((i) => i.name === 'eth0' && i.sandbox === netnsPath) ?? -1;
    return result.ips?.find((i) => i.interface === eth0)?.address;
  }

  test('ADD, CHECK and DEL through the shim and the agent', async () => {
    const add = await runShim('ADD', 'nlt-shim-a');
    expect(add.stderr).toBe('');
    expect(add.exitCode).toBe(0);
    const result = JSON.parse(add.stdout) as CniResult;
    expect(result.cniVersion).toBe('1.0.0');
    const address = sandboxIP(result);
    expect(address).toBeDefined();
    expect(cidrContains(parseCidr(SUBNET), parseIp(address!.split('/')[0]!)!)).toBe(true);
    expect(await netnsAddresses(NETNS, 'eth0')).toContain(address);

    const check = await runShim('CHECK', 'nlt-shim-a', { prevResult: result });
    expect(check.stdout).toBe('');
    expect(check.exitCode).toBe(0);

    const del = await runShim('DEL', 'nlt-shim-a', { prevResult: result });
    expect(del.exitCode).toBe(0);
    expect(del.stdout).toBe('');
    expect(await linkExists('eth0', NETNS)).toBe(false);
    expect(await reservations()).toEqual([]);
    // containerd's second DEL (RemovePodSandbox) has no netns.
    expect((await runShim('DEL', 'nlt-shim-a', { netns: '' })).exitCode).toBe(0);
  });

  test('with the agent stopped, DEL goes through localExec and still releases the IP', async () => {
    const add = await runShim('ADD', 'nlt-shim-b');
    expect(add.exitCode).toBe(0);
    expect(await reservations()).toHaveLength(1);

    await server!.close();
    server = undefined;

    const del = await runShim('DEL', 'nlt-shim-b', { prevResult: JSON.parse(add.stdout) as CniResult });
    expect(del.stdout).toBe('');
    expect(del.exitCode).toBe(0);
    expect(await linkExists('eth0', NETNS)).toBe(false);
    expect(await reservations()).toEqual([]);
    expect(await executor.cachedAttachments()).toEqual([]);

    // Nothing left: a repeated DEL succeeds; ADD cannot work without the agent.
    expect((await runShim('DEL', 'nlt-shim-b', { netns: '' })).exitCode).toBe(0);
    const addDown = await runShim('ADD', 'nlt-shim-c');
    expect(addDown.exitCode).toBe(1);
    expect(JSON.parse(addDown.stdout)).toEqual({ cniVersion: '1.0.0', code: 11, msg: `nodelet agent not reachable at ${socket}` });
    expect(await reservations()).toEqual([]);
  }, 60_000);
});
