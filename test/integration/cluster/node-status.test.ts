// Cluster mode's node side against the real control plane (kube-apiserver, kube-controller-manager, kube-scheduler of
// test/cluster), the real containerd and the built kubectl: registration, Ready, kubeletVersion by the API server's
// minor, Lease, the controller-manager's pod CIDR.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Lease, V1Node } from '@kubernetes/client-node';
import { cidrContains, parseCidr, parseIp } from '../../../src/cni/cidr.js';
import { busybox, isRunning, startContainerd, stopContainerd, waitFor, type AgentProcess } from '../helpers/agent.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';
import { nodeletVersion } from '../../../src/agent/version.js';

const configDir = await mkdtemp(join(tmpdir(), 'nodelet-config-'));
let cluster: RealCluster;
let agent: AgentProcess;
let testNode: string;

async function kubectl(...args: string[]): Promise<string> {
  return cluster.kubectl.run(...args);
}

async function getJson<T>(...args: string[]): Promise<T> {
  return cluster.kubectl.get<T>(...args);
}

beforeAll(async () => {
  const config = join(configDir, 'kubelet.yaml');
  await writeFile(
    config,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      'failCgroupV1: false',
      'nodeStatusUpdateFrequency: 2s',
      'nodeStatusReportFrequency: 1m0s',
      // Renewed every 2 s, so the test sees renewals quickly.
      'nodeLeaseDurationSeconds: 8',
      'maxPods: 50',
      'systemReserved:',
      '  cpu: 100m',
      '',
    ].join('\n'),
  );
  cluster = await startRealCluster({ agentArgs: ['--config', config] });
  agent = cluster.agent;
  testNode = cluster.nodeName;
}, 300_000);

afterAll(async () => {
  try {
    await agent?.removeManifest('cidr.yaml');
    await cluster?.stop();
  } finally {
    await rm(configDir, { recursive: true, force: true });
  }
}, 300_000);

test('the node registers and kubectl get nodes -o wide shows it Ready with its address, OS, kernel and runtime', async () => {
  const row = await waitFor('node Ready in kubectl get nodes', async () => {
    const out = await kubectl('get', 'nodes', '-o', 'wide', '--no-headers').catch(() => '');
    const line = out.split('\n').find((l) => l.startsWith(`${testNode} `));
    return line && /\sReady\s/.test(line) ? line : undefined;
  }, 60_000, 500);
  const node = await getJson<V1Node>('node', testNode);
  const internalIP = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
  expect(internalIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  expect(row).toContain(internalIP);
  expect(row).toContain(node.status!.nodeInfo!.osImage);
  expect(row).toContain(release());
  expect(row).toMatch(/containerd:\/\/v2\.\d+\.\d+/);
  expect(row).toMatch(/v1\.37\.0\+nodelet\.\d+\.\d+\.\d+/);

  expect(node.metadata?.labels).toMatchObject({ 'kubernetes.io/hostname': testNode, 'kubernetes.io/os': 'linux' });
  expect(node.status?.capacity?.pods).toBe('50');
  expect(node.status?.allocatable?.cpu).toMatch(/m$/);
  expect(node.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(10250);
  const conditions = (node.status?.conditions ?? []).map((c) => `${c.type}=${c.status}:${c.reason}`);
  expect(conditions).toEqual([
    'MemoryPressure=False:KubeletHasSufficientMemory',
    'DiskPressure=False:KubeletHasNoDiskPressure',
    'PIDPressure=False:KubeletHasSufficientPID',
    'Ready=True:KubeletReady',
  ]);
});

test("kubeletVersion is the API server's minor, read with GET /version before the Node was registered", async () => {
  const { serverVersion } = JSON.parse(await kubectl('version', '-o', 'json')) as { serverVersion: { major: string; minor: string; gitVersion: string } };
  // The control plane built from kube/go.mod: 1.37 (a 1.35 one is not built; see core/kube-minor.ts).
  expect(serverVersion).toMatchObject({ major: '1', minor: '37' });
  const node = await cluster.node();
  expect(node.status?.nodeInfo?.kubeletVersion).toBe(`v1.${serverVersion.minor}.0+nodelet.${nodeletVersion()}`);
  // Never newer than the API server (kubelet's version-skew policy): the same minor, patch 0.
  expect(serverVersion.gitVersion).toMatch(new RegExp(`^v1\\.${serverVersion.minor}\\.\\d+`));

  const byNode = (await cluster.audit()).filter((e) => e.user.username === `system:node:${testNode}`);
  const version = byNode.findIndex((e) => e.requestURI === '/version' && e.verb === 'get');
  const register = byNode.findIndex((e) => e.verb === 'create' && e.objectRef?.resource === 'nodes');
  expect(version).toBeGreaterThanOrEqual(0);
  expect(byNode[version]!.responseStatus?.code).toBe(200);
  expect(byNode[version]!.userAgent).toMatch(/^nodelet\//);
  expect(register).toBeGreaterThan(version);
});

test("kubelet's node events are recorded for the node", async () => {
  const reasons = await waitFor('node events', async () => {
    const list = await getJson<{ items: Array<{ reason?: string; involvedObject?: { kind?: string; name?: string } }> }>('events', '-A').catch(() => undefined);
    const found = (list?.items ?? []).filter((e) => e.involvedObject?.kind === 'Node' && e.involvedObject.name === testNode).map((e) => e.reason);
    return found.includes('NodeHasSufficientPID') ? found : undefined;
  }, 30_000, 500);
  expect(reasons).toEqual(expect.arrayContaining(['NodeHasSufficientMemory', 'NodeHasNoDiskPressure', 'NodeHasSufficientPID']));
});

test("the node's Lease is owned by the Node and its renewTime advances", async () => {
  const node = await getJson<V1Node>('node', testNode);
  const first = await waitFor('node lease', () => getJson<V1Lease>('lease', '-n', 'kube-node-lease', testNode).catch(() => undefined), 30_000, 500);
  expect(first.spec?.holderIdentity).toBe(testNode);
  expect(first.spec?.leaseDurationSeconds).toBe(8);
  expect(first.metadata?.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: testNode, uid: node.metadata!.uid }]);
  const renewed = String(first.spec?.renewTime);
  expect(renewed).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  const later = await waitFor('a newer renewTime', async () => {
    const lease = await getJson<V1Lease>('lease', '-n', 'kube-node-lease', testNode);
    return String(lease.spec?.renewTime) > renewed ? lease : undefined;
  }, 15_000, 500);
  expect(Date.parse(String(later.spec?.renewTime))).toBeGreaterThan(Date.parse(renewed));
});

test("the controller-manager's Node.spec.podCIDR gives new pods IPs from it", async () => {
  // kube-controller-manager (--allocate-node-cidrs) cut it from the cluster CIDR when the Node registered.
  const node = await getJson<V1Node>('node', testNode);
  const nodeCidr = node.spec!.podCIDR!;
  expect(nodeCidr).toMatch(/^\d+\.\d+\.\d+\.0\/24$/);
  expect(node.spec?.podCIDRs).toEqual([nodeCidr]);
  expect(cidrContains(parseCidr(cluster.plane.settings.clusterCidr), parseIp(nodeCidr.replace(/\/24$/, ''))!)).toBe(true);
  await waitFor('the agent to take the pod CIDR', async () =>
    agent.logLines().some((l) => l.podCIDR === nodeCidr && String(l.msg).startsWith('Pod network now allocates')) ? true : undefined,
  30_000, 500);
  await agent.writeManifest(
    'cidr.yaml',
    `apiVersion: v1
kind: Pod
metadata: {name: cidr}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: ${busybox}, command: [sleep, "3600"]}
`,
  );
  const pod = await agent.waitForPod('cidr', 'Running with an IP', isRunning, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}\nagent log:\n${agent.logLines().filter((l) => JSON.stringify(l).includes('cidr')).slice(-15).map((l) => JSON.stringify(l)).join('\n')}`);
  });
  cluster.uids.add(pod.metadata!.uid!);
  expect(cidrContains(parseCidr(nodeCidr), parseIp(pod.status!.podIP!)!)).toBe(true);
});

test("the node turns Ready=False with kubelet's reason when containerd goes away, and Ready again when it is back", async () => {
  const ready = async () => (await getJson<V1Node>('node', testNode)).status?.conditions?.find((c) => c.type === 'Ready');
  await waitFor('Ready=True', async () => ((await ready())?.status === 'True' ? true : undefined), 30_000, 500);
  await stopContainerd();
  try {
    // kubelet calls the runtime down once its last good status answer is 30 s old.
    const down = await waitFor('Ready=False', async () => {
      const c = await ready();
      return c?.status === 'False' ? c : undefined;
    }, 60_000, 1_000);
    expect(down.reason).toBe('KubeletNotReady');
    expect(down.message).toContain('container runtime is down');
  } finally {
    await startContainerd();
  }
  const back = await waitFor('Ready=True again', async () => {
    const c = await ready();
    return c?.status === 'True' ? c : undefined;
  }, 60_000, 1_000);
  expect(back.reason).toBe('KubeletReady');
}, 150_000);
