// The cluster's CNI handed over to nodelet at run time, against the real control plane, containerd, runc and the
// reference plugins: --cni-conf-dir starts empty (the Node NotReady with kubelet's message, a hostNetwork pod Running,
// a pod network pod waiting with NetworkNotReady), then a kindnet-shaped conflist (ptp + host-local on the Node's podCIDR
// + portmap) is written and the waiting pod gets its IP from it within seconds, without a restart; a second network
// written later takes new pods while the earlier pods keep theirs; deleting the pods leaves no veth, netns, host-local
// reservation or iptables rule of either network.
import { mkdtemp, readdir, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import type { V1Pod } from '@kubernetes/client-node';
import { cidrContains, formatCidr, parseCidr, parseIp } from '../../../src/cni/cidr.js';
import { subnetCollisions } from '../../../src/cni/conflist.js';
import { hostRoutes } from '../../../src/host/routes.js';
import { busybox, httpGet, isRunning, waitFor } from '../helpers/agent.js';
import { startRealCluster, stopAfterAll, type RealCluster } from '../helpers/real-cluster.js';

const work = await mkdtemp(join(tmpdir(), 'nodelet-cni-handover-'));
const confDir = join(work, 'net.d');
const ipamKindnet = join(work, 'ipam-kindnet');
const ipamSecond = join(work, 'ipam-second');
let cluster: RealCluster;
/** The agent's flags: an empty configuration directory of the test's own is the handover's whole switch. */
const agentArgs = ['--config', join(work, 'kubelet.yaml'), '--cni-conf-dir', confDir];

const notReadyMessage =
  'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized';

/** A network shaped as kindnet writes it (kindnetd's cni.go template), on the given subnet and host-local data dir. */
function kindnetShaped(name: string, subnet: string, dataDir: string): string {
  return JSON.stringify({
    cniVersion: '0.3.1',
    name,
    plugins: [
      { type: 'ptp', ipMasq: false, ipam: { type: 'host-local', dataDir, routes: [{ dst: '0.0.0.0/0' }], ranges: [[{ subnet }]] }, mtu: 1500 },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  });
}

/** Written aside and renamed in, as kindnetd writes its conflist: the agent never reads half a file. */
async function writeConf(file: string, text: string): Promise<void> {
  await writeFile(join(confDir, `.${file}.tmp`), text);
  await rename(join(confDir, `.${file}.tmp`), join(confDir, file));
}

function podYaml(name: string, opts: { hostNetwork?: boolean; hostPort?: number } = {}): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName: cluster.nodeName,
      hostNetwork: opts.hostNetwork ?? false,
      // As a CNI DaemonSet's pods: they run on a node that is not ready.
      tolerations: [{ operator: 'Exists' }],
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: 'web',
        image: busybox,
        imagePullPolicy: 'IfNotPresent',
        command: opts.hostNetwork ? ['sleep', '3600'] : ['httpd', '-f', '-p', '8080', '-h', '/etc'],
        ...(opts.hostPort ? { ports: [{ containerPort: 8080, hostPort: opts.hostPort, protocol: 'TCP' }] } : {}),
      }],
    },
  });
}

async function sandboxIdOf(pod: V1Pod): Promise<string> {
  const sandboxes = await cluster.cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': pod.metadata!.uid! } });
  if (sandboxes.length !== 1) throw new Error(`pod ${pod.metadata!.name} has ${sandboxes.length} sandboxes`);
  return sandboxes[0]!.id;
}

/** host-local's reservations in a data dir: one file per IP in each network's directory. */
async function reservations(dataDir: string): Promise<string[]> {
  const nets = await readdir(dataDir).catch(() => [] as string[]);
  const ips: string[] = [];
  for (const n of nets) ips.push(...(await readdir(join(dataDir, n)).catch(() => [] as string[])).filter((f) => parseIp(f) !== undefined));
  return ips;
}

async function iptablesRulesNaming(ids: string[]): Promise<string[]> {
  const { stdout } = await execa('iptables-save', []);
  return stdout.split('\n').filter((l) => ids.some((id) => l.includes(id)));
}

beforeAll(async () => {
  await execa('mkdir', ['-p', confDir]);
  await writeFile(agentArgs[1]!, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\nnodeStatusUpdateFrequency: 2s\n');
  // The --cni-conf-dir network is the operator's (kindnet's here): it never takes the podCIDR from nodelet.
  cluster = await startRealCluster({ agentArgs, notReadyOk: true, networkTakesPodCIDR: false });
}, 300_000);

stopAfterAll(() => cluster, work);

test('the CNI configuration is handed over at run time; each pod keeps its network and leaves nothing of it', async () => {
  const k = cluster.kubectl;
  // No network yet: kubelet's Ready condition message, from containerd's NetworkReady condition.
  await waitFor('the Node NotReady for the network', async () => {
    const ready = (await cluster.node()).status?.conditions?.find((c) => c.type === 'Ready');
    return ready?.status === 'False' && ready.message === notReadyMessage ? ready : undefined;
  }, 60_000, 500);

  await k.fromFile('create', 'hostnet.json', podYaml('hostnet', { hostNetwork: true }));
  await k.fromFile('create', 'waiter.json', podYaml('waiter', { hostPort: 18080 }));
  const hostnet = await k.waitForPod('hostnet', 'Running', isRunning);
  cluster.uids.add(hostnet.metadata!.uid!);
  expect(hostnet.status?.podIP).toBe(cluster.nodeIP || hostnet.status?.hostIP);
  await waitFor('the NetworkNotReady event of the waiting pod', async () => {
    const events = await k.get<{ items: { reason: string; message: string; type: string }[] }>(
      'events', '-n', 'default', '--field-selector', 'involvedObject.name=waiter,reason=NetworkNotReady');
    return events.items.find((e) => e.type === 'Warning' && e.message === `network is not ready: ${notReadyMessage}`);
  }, 60_000, 500);
  const waiting = await k.pod('waiter', cluster.uids);
  expect(waiting.status?.phase).toBe('Pending');
  expect(waiting.status?.podIP).toBeUndefined();
  expect(await cluster.cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': waiting.metadata!.uid! } })).toEqual([]);

  // kindnet's conflist, on the Node's podCIDR (kindnetd writes it from Node.spec.podCIDR).
  const subnet = cluster.podCIDR;
  const routes = await hostRoutes();
  expect(subnetCollisions(subnet, routes)).toEqual([]);
  const writtenAt = Date.now();
  await writeConf('10-kindnet.conflist', kindnetShaped('kindnet', subnet, ipamKindnet));
  const waiter = await k.waitForPod('waiter', 'Running with an IP', (p) => isRunning(p) && !!p.status?.podIP, { timeoutMs: 30_000 });
  const handoverMs = Date.now() - writtenAt;
  expect(cidrContains(parseCidr(subnet), parseIp(waiter.status!.podIP!)!)).toBe(true);
  expect(await reservations(ipamKindnet)).toEqual([waiter.status!.podIP]);
  const waiterFp = await cluster.track(waiter);
  const waiterSandbox = await sandboxIdOf(waiter);
  // portmap's DNAT rules for the hostPort name the sandbox.
  expect((await iptablesRulesNaming([waiterSandbox])).length).toBeGreaterThan(0);
  expect(await httpGet(`http://${waiter.status!.podIP}:8080/hostname`)).toBe('waiter\n');
  await waitFor('the Node Ready', async () => {
    const ready = (await cluster.node()).status?.conditions?.find((c) => c.type === 'Ready');
    return ready?.status === 'True' ? true : undefined;
  }, 30_000, 500);

  // A second network that sorts first, on its own subnet (chosen here off the host's routes): new pods join it.
  const base = parseCidr(subnet);
  const second = formatCidr({ ...base, address: base.address + 100n * 256n, prefix: 24 });
  expect(subnetCollisions(second, routes)).toEqual([]);
  await writeConf('05-second.conflist', kindnetShaped('second', second, ipamSecond));
  await new Promise((r) => setTimeout(r, 1_000));
  await k.fromFile('create', 'later.json', podYaml('later'));
  const later = await k.waitForPod('later', 'Running with an IP', (p) => isRunning(p) && !!p.status?.podIP, { timeoutMs: 30_000 });
  expect(cidrContains(parseCidr(second), parseIp(later.status!.podIP!)!)).toBe(true);
  expect(await reservations(ipamSecond)).toEqual([later.status!.podIP]);
  const laterFp = await cluster.track(later);
  const laterSandbox = await sandboxIdOf(later);
  // The earlier pod keeps its address and its network.
  expect((await k.pod('waiter')).status?.podIP).toBe(waiter.status!.podIP);
  expect(await httpGet(`http://${waiter.status!.podIP}:8080/hostname`)).toBe('waiter\n');
  expect(await httpGet(`http://${later.status!.podIP}:8080/hostname`)).toBe('later\n');

  // A restarted agent still knows which network each sandbox joined (their cached results): the pods keep their IPs.
  await cluster.agent.stop();
  await cluster.agent.start(agentArgs);
  await waitFor('the restarted agent reporting both pods with their IPs', async () => {
    const pods = await cluster.agent.pods();
    const ip = (name: string) => pods.find((p) => p.metadata?.name === name)?.status?.podIP;
    return ip('waiter') === waiter.status!.podIP && ip('later') === later.status!.podIP ? true : undefined;
  }, 30_000, 500);

  // Deleting the pods tears each down with its own network.
  await k.run('delete', 'pod', 'waiter', 'later', 'hostnet', '--wait=true', '--timeout=90s');
  expect(await reservations(ipamKindnet)).toEqual([]);
  expect(await reservations(ipamSecond)).toEqual([]);
  expect(await iptablesRulesNaming([waiterSandbox, laterSandbox])).toEqual([]);
  for (const fp of [waiterFp, laterFp]) {
    const { exitCode } = await execa('ip', ['link', 'show', fp.hostVeth], { reject: false });
    expect({ veth: fp.hostVeth, exists: exitCode === 0 }).toEqual({ veth: fp.hostVeth, exists: false });
  }
  const netns = await readdir('/var/run/netns').catch(() => [] as string[]);
  expect(netns.filter((n) => [waiterFp.netns, laterFp.netns].some((p) => p.endsWith(`/${n}`)))).toEqual([]);
  console.log(`CNI handover: the waiting pod Running with its IP ${handoverMs} ms after the conflist was written`);
});
