// The seeds' whole pod path against the REAL control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler v1.37 built from the upstream Go modules) with nodelet as the node, the rig's containerd and CNI, and
// the built kubectl. Nothing is simulated but the images (local busybox): a Deployment's controllers make the
// ReplicaSet and the Pods, the scheduler binds them to nodelet's node, nodelet runs them with IPs from the podCIDR the
// controller-manager allocated, the EndpointSlice controller lists them once Ready; a killed container restarts, a
// deleted pod is replaced, scaling lands on the node, cordon and drain (Eviction API) act as on a kubelet node, and
// deleting the Deployment leaves nothing on the node.
import { networkInterfaces } from 'node:os';
import type { CoreV1Event, V1Deployment, V1Lease, V1Node, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { cidrContains, parseCidr, parseIp } from '../../../src/cni/cidr.js';
import { busybox, containerPid, httpGet, runtimeObjects, waitFor } from '../helpers/agent.js';
import { leftovers } from '../helpers/cluster.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';

let cluster: RealCluster;

beforeAll(async () => {
  cluster = await startRealCluster();
}, 420_000);

afterAll(async () => {
  await cluster?.stop();
}, 300_000);

const deploymentYaml = (replicas: number) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: httpd
        image: ${busybox}
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /, port: 8080}
          periodSeconds: 2
`;

const ready = (p: V1Pod) =>
  p.status?.phase === 'Running' && !!p.status.podIP && (p.status.containerStatuses ?? []).length === 1 &&
  p.status.containerStatuses!.every((c) => c.state?.running && c.ready) &&
  (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

/** The Deployment's pods in the API server, not being deleted. */
async function webPods(): Promise<V1Pod[]> {
  const pods = (await cluster.kubectl.get<{ items: V1Pod[] }>('pods', '-n', 'default', '-l', 'app=web')).items;
  for (const p of pods) cluster.uids.add(p.metadata!.uid!);
  return pods.filter((p) => !p.metadata?.deletionTimestamp);
}

/** Waits for exactly n pods of the Deployment, all Ready; returns them. */
async function waitForReadyPods(n: number, timeoutMs = 120_000): Promise<V1Pod[]> {
  let last: V1Pod[] = [];
  return waitFor(`${n} Ready pods of deployment web`, async () => {
    last = await webPods();
    return last.length === n && last.every(ready) ? last : undefined;
  }, timeoutMs, 500).catch((err: Error) => {
    throw new Error(`${err.message}; last: ${JSON.stringify(last.map((p) => ({ name: p.metadata?.name, node: p.spec?.nodeName, status: p.status })))}` +
      `\nnodelet's log (end):\n${cluster.agent.output.split('\n').slice(-20).join('\n')}`);
  });
}

/** The ready sandboxes of the Deployment's pods in containerd. */
async function webSandboxes(): Promise<string[]> {
  const sandboxes = await cluster.cri.listPodSandbox({ state: 'SANDBOX_READY', labelSelector: { app: 'web', 'io.kubernetes.pod.namespace': 'default' } });
  return sandboxes.map((s) => s.id);
}

async function events(): Promise<CoreV1Event[]> {
  return (await cluster.kubectl.get<{ items: CoreV1Event[] }>('events', '-n', 'default')).items;
}

const ipsOf = (pods: V1Pod[]) => pods.map((p) => p.status!.podIP!).sort();

test("the node is Ready with the host's own address, and kubectl works with it", async () => {
  const node = await cluster.node();
  const hostAddresses = ['127.0.0.1', ...Object.values(networkInterfaces()).flat().map((a) => a?.address)];
  expect(hostAddresses).toContain(cluster.nodeIP);
  expect(node.status?.addresses).toEqual(expect.arrayContaining([{ type: 'InternalIP', address: cluster.nodeIP }, { type: 'Hostname', address: cluster.nodeName }]));
  const row = (await cluster.kubectl.table('nodes', '-o', 'wide')).find((r) => r.NAME === cluster.nodeName);
  expect(row).toMatchObject({ STATUS: 'Ready', 'INTERNAL-IP': cluster.nodeIP });
  expect(row?.['CONTAINER-RUNTIME']).toMatch(/^containerd:\/\/v2\.\d+/);
  expect(node.spec?.podCIDR).toBe(cluster.podCIDR);
  expect(cluster.podCIDR).toMatch(/^10\.244\.\d+\.0\/24$/);
  // The node lifecycle controller took the not-ready taint off again.
  expect(node.spec?.taints ?? []).toEqual([]);
  // The Lease in kube-node-lease, owned by the Node, held by it and renewed.
  const lease = await cluster.kubectl.get<V1Lease>('lease', '-n', 'kube-node-lease', cluster.nodeName);
  expect(lease.spec).toMatchObject({ holderIdentity: cluster.nodeName, leaseDurationSeconds: 40 });
  expect(lease.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Node', name: cluster.nodeName, uid: node.metadata!.uid })]);
});

let first: V1Pod[] = [];

test('a Deployment made with kubectl: the real Deployment and ReplicaSet controllers create the Pods, owned Deployment -> ReplicaSet -> Pod', async () => {
  expect(await cluster.kubectl.fromFile('apply', 'web.yaml', deploymentYaml(3))).toBe('deployment.apps/web created');
  const deployment = await cluster.kubectl.get<V1Deployment>('deployment', 'web');
  const rs = await waitFor('the ReplicaSet', async () => {
    const items = (await cluster.kubectl.get<{ items: V1ReplicaSet[] }>('replicasets', '-l', 'app=web')).items;
    return items.length === 1 ? items[0] : undefined;
  }, 60_000, 500);
  expect(rs.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Deployment', name: 'web', uid: deployment.metadata!.uid, controller: true })]);
  const pods = await waitFor('3 pods', async () => {
    const p = await webPods();
    return p.length === 3 ? p : undefined;
  }, 60_000, 500);
  for (const p of pods) {
    expect(p.metadata?.name).toMatch(new RegExp(`^${rs.metadata!.name}-[a-z0-9]{5}$`));
    expect(p.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'ReplicaSet', name: rs.metadata!.name, uid: rs.metadata!.uid, controller: true })]);
  }
});

test('the real scheduler binds them to the nodelet node (spec.nodeName, Scheduled from default-scheduler)', async () => {
  const pods = await waitFor('3 pods bound', async () => {
    const p = await webPods();
    return p.length === 3 && p.every((x) => x.spec?.nodeName === cluster.nodeName) ? p : undefined;
  }, 60_000, 500);
  const scheduled = await waitFor('Scheduled events for the 3 pods', async () => {
    const ev = (await events()).filter((e) => e.reason === 'Scheduled' && pods.some((p) => p.metadata!.name === e.involvedObject.name));
    return ev.length === 3 ? ev : undefined;
  }, 30_000, 500);
  for (const e of scheduled) {
    expect(e.reportingComponent || e.source?.component).toBe('default-scheduler');
    expect(e.message).toContain(`to ${cluster.nodeName}`);
  }
});

test('nodelet runs them on containerd with CNI: Running and Ready with IPs from the podCIDR, each answering the host on :8080', async () => {
  first = await waitForReadyPods(3);
  const cidr = parseCidr(cluster.podCIDR);
  for (const p of first) {
    expect(cidrContains(cidr, parseIp(p.status!.podIP!)!)).toBe(true);
    expect(p.status?.podIPs).toEqual([{ ip: p.status!.podIP }]);
    expect(p.status?.hostIP).toBe(cluster.nodeIP);
    expect(p.status?.containerStatuses?.[0]?.containerID).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);
    expect((await httpGet(`http://${p.status!.podIP}:8080/`)).trim()).toBe(p.metadata!.name);
    await cluster.track(p);
  }
  expect(new Set(ipsOf(first)).size).toBe(3);
  expect((await webSandboxes()).length).toBe(3);
});

test('a Service: its Endpoints and EndpointSlice list exactly the Ready pod IPs', async () => {
  expect(await cluster.kubectl.run('expose', 'deployment', 'web', '--port', '80', '--target-port', '8080')).toBe('service/web exposed');
  const want = ipsOf(first);
  await waitFor('the EndpointSlice with the 3 pod IPs', async () => {
    const slices = (await cluster.kubectl.get<{ items: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean }; nodeName?: string }[]; ports?: { port?: number }[] }[] }>(
      'endpointslices', '-l', 'kubernetes.io/service-name=web')).items;
    const eps = slices.flatMap((s) => s.endpoints ?? []);
    const ips = eps.filter((e) => e.conditions?.ready).flatMap((e) => e.addresses).sort();
    return JSON.stringify(ips) === JSON.stringify(want) && eps.every((e) => e.nodeName === cluster.nodeName) &&
      slices.every((s) => s.ports?.[0]?.port === 8080) ? true : undefined;
  }, 60_000, 500);
  const endpoints = await cluster.kubectl.get<{ subsets?: { addresses?: { ip: string }[]; notReadyAddresses?: unknown[] }[] }>('endpoints', 'web');
  expect((endpoints.subsets ?? []).flatMap((s) => (s.addresses ?? []).map((a) => a.ip)).sort()).toEqual(want);
  expect((endpoints.subsets ?? []).flatMap((s) => s.notReadyAddresses ?? [])).toEqual([]);
});

test("a container killed on the node shows its restart in kubectl (restartCount 1) and serves again", async () => {
  const victim = first[0]!;
  const id = victim.status!.containerStatuses![0]!.containerID!.replace(/^containerd:\/\//, '');
  process.kill(await containerPid(cluster.cri, id), 'SIGKILL');
  const after = await cluster.kubectl.waitForPod(victim.metadata!.name!, 'restartCount 1 and Ready again',
    (p) => p.status?.containerStatuses?.[0]?.restartCount === 1 && ready(p), { timeoutMs: 60_000 });
  expect(after.metadata?.uid).toBe(victim.metadata?.uid);
  expect(after.status?.containerStatuses?.[0]?.lastState?.terminated).toMatchObject({ exitCode: 137, reason: 'Error' });
  expect(after.status?.podIP).toBe(victim.status?.podIP);
  expect((await httpGet(`http://${after.status!.podIP}:8080/`)).trim()).toBe(victim.metadata!.name);
  const row = (await cluster.kubectl.table('pods')).find((r) => r.NAME === victim.metadata!.name);
  expect(row?.RESTARTS).toMatch(/^1( \(.* ago\))?$/);
});

test('a deleted pod is replaced by the ReplicaSet controller: a new pod runs on the node, the old one is gone from it', async () => {
  const old = first[1]!;
  const oldFp = cluster.footprints.find((f) => f.uid === old.metadata!.uid)!;
  await cluster.kubectl.run('delete', 'pod', old.metadata!.name!, '--wait=false');
  const pods = await waitForReadyPods(3);
  const replacement = pods.find((p) => !first.some((f) => f.metadata!.uid === p.metadata!.uid));
  expect(replacement).toBeDefined();
  expect(replacement!.metadata!.name).not.toBe(old.metadata!.name);
  expect(replacement!.spec?.nodeName).toBe(cluster.nodeName);
  await cluster.track(replacement!);
  // nodelet tore the old pod down and then deleted it from the API server (grace 0, as kubelet).
  await waitFor('the old pod gone from the API server', async () =>
    (await cluster.kubectl.tryRun('get', 'pod', old.metadata!.name!)).exitCode !== 0 ? true : undefined, 60_000, 500);
  expect(await leftovers(cluster.cri, oldFp)).toEqual([]);
  expect((await webSandboxes()).length).toBe(3);
});

test('kubectl scale up to 5 and down to 2 lands on the node (its sandboxes follow)', async () => {
  await cluster.kubectl.run('scale', 'deployment', 'web', '--replicas=5');
  const five = await waitForReadyPods(5);
  for (const p of five) if (!cluster.footprints.some((f) => f.uid === p.metadata!.uid)) await cluster.track(p);
  expect((await webSandboxes()).length).toBe(5);
  await cluster.kubectl.run('scale', 'deployment', 'web', '--replicas=2');
  const two = await waitForReadyPods(2);
  await waitFor('3 sandboxes torn down', async () => ((await webSandboxes()).length === 2 ? true : undefined), 60_000, 500);
  const gone = five.filter((p) => !two.some((t) => t.metadata!.uid === p.metadata!.uid));
  expect(gone.length).toBe(3);
  await waitFor('the scaled-down pods gone from the node', async () => {
    const rt = await runtimeObjects(cluster.cri, gone.map((p) => p.metadata!.uid!));
    return rt.sandboxes.length + rt.containers.length === 0 ? true : undefined;
  }, 60_000, 500);
  for (const p of gone) expect(await leftovers(cluster.cri, cluster.footprints.find((f) => f.uid === p.metadata!.uid)!)).toEqual([]);
});

test("kubectl cordon: new pods stay Pending with the scheduler's FailedScheduling; uncordon lets them run", async () => {
  await cluster.kubectl.run('cordon', cluster.nodeName);
  expect((await cluster.kubectl.get<V1Node>('node', cluster.nodeName)).spec?.unschedulable).toBe(true);
  await cluster.kubectl.run('scale', 'deployment', 'web', '--replicas=3');
  const pending = await waitFor('a third pod', async () => {
    const p = (await webPods()).filter((x) => !x.spec?.nodeName);
    return p.length === 1 ? p[0] : undefined;
  }, 30_000, 500);
  const failed = await waitFor('FailedScheduling for it', async () =>
    (await events()).find((e) => e.reason === 'FailedScheduling' && e.involvedObject.name === pending.metadata!.name), 60_000, 500);
  expect(failed.message).toMatch(/0\/1 nodes are available: 1 node\(s\) were unschedulable/);
  await new Promise((r) => setTimeout(r, 3_000));
  const still = await cluster.kubectl.pod(pending.metadata!.name!);
  expect(still.status?.phase).toBe('Pending');
  expect(still.spec?.nodeName).toBeUndefined();
  expect((await webSandboxes()).length).toBe(2);

  await cluster.kubectl.run('uncordon', cluster.nodeName);
  const three = await waitForReadyPods(3);
  expect(three.find((p) => p.metadata!.uid === pending.metadata!.uid)?.spec?.nodeName).toBe(cluster.nodeName);
  for (const p of three) if (!cluster.footprints.some((f) => f.uid === p.metadata!.uid)) await cluster.track(p);
  expect((await webSandboxes()).length).toBe(3);
});

test('kubectl drain evicts the pods through the Eviction API and nodelet tears them down; after uncordon they run again', async () => {
  const before = await webPods();
  const { exitCode, stdout, stderr } = await cluster.kubectl.tryRun('drain', cluster.nodeName, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=120s');
  expect({ exitCode, stderr: exitCode === 0 ? '' : stderr }).toEqual({ exitCode: 0, stderr: '' });
  for (const p of before) expect(stdout).toContain(`pod/${p.metadata!.name} evicted`);
  expect(stdout).toContain(`node/${cluster.nodeName} drained`);
  await waitFor('the evicted pods gone from the node', async () => {
    const rt = await runtimeObjects(cluster.cri, before.map((p) => p.metadata!.uid!));
    return rt.sandboxes.length + rt.containers.length === 0 ? true : undefined;
  }, 60_000, 500);
  for (const p of before) expect(await leftovers(cluster.cri, cluster.footprints.find((f) => f.uid === p.metadata!.uid)!)).toEqual([]);
  // The ReplicaSet made replacements; the node is cordoned, so they wait.
  const replacements = await webPods();
  expect(replacements.length).toBe(3);
  expect(replacements.every((p) => !p.spec?.nodeName && !before.some((b) => b.metadata!.uid === p.metadata!.uid))).toBe(true);
  expect(await webSandboxes()).toEqual([]);

  await cluster.kubectl.run('uncordon', cluster.nodeName);
  for (const p of await waitForReadyPods(3)) await cluster.track(p);
});

test('kubectl delete deployment leaves nothing on the node', async () => {
  await cluster.kubectl.run('delete', 'deployment', 'web');
  await waitFor('no pod of web in the API server', async () => ((await cluster.kubectl.get<{ items: V1Pod[] }>('pods', '-l', 'app=web')).items.length === 0 ? true : undefined), 90_000, 500);
  await waitFor('nothing of web in the runtime', async () => {
    const rt = await runtimeObjects(cluster.cri, [...cluster.uids]);
    return rt.sandboxes.length + rt.containers.length === 0 ? true : undefined;
  }, 30_000, 500);
  for (const fp of cluster.footprints) expect({ uid: fp.uid, left: await leftovers(cluster.cri, fp) }).toEqual({ uid: fp.uid, left: [] });
  expect((await cluster.kubectl.get<{ items: unknown[] }>('replicasets', '-l', 'app=web')).items).toEqual([]);
  expect(await cluster.nodePods()).toEqual([]);
});

test("the real kube-apiserver refused none of the node's requests (audit log): Node, Lease, pods, status, events, tokens", async () => {
  const node = (await cluster.audit()).filter((e) => e.user.username === `system:node:${cluster.nodeName}`);
  const refused = node.filter((e) => (e.responseStatus?.code ?? 0) >= 400)
    // As kubelet: the Lease is read before it exists, then created.
    .filter((e) => !(e.verb === 'get' && e.objectRef?.resource === 'leases' && e.responseStatus?.code === 404))
    // Known race, kept in the README's known gaps: a pod's configMap reflector or token refresh that runs as the pod is
    // deleted is refused by the node authorizer / NodeRestriction (the node no longer has a relationship to it; kubelet's
    // reflectors log the same "no relationship found" refusals). Any other refusal fails the test.
    .filter((e) => !(e.responseStatus?.code === 403 && ['configmaps', 'secrets', 'serviceaccounts'].includes(e.objectRef?.resource ?? '') &&
      /no relationship found between node|node requested token bound to a pod scheduled on a different node/.test(e.responseStatus?.message ?? '')));
  expect(refused.map((e) => `${e.verb} ${e.requestURI}: ${e.responseStatus?.code} ${e.responseStatus?.message ?? ''}`)).toEqual([]);
  const did = new Set(node.map((e) => `${e.verb} ${e.objectRef?.resource ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`));
  for (const what of ['create nodes', 'patch nodes/status', 'create leases', 'update leases', 'list pods', 'patch pods/status', 'delete pods',
    'create events', 'create serviceaccounts/token']) expect([...did]).toContain(what);
});

test('nodelet never wrote a pod status patch identical to its previous one for that pod (audit log)', async () => {
  const patches = (await cluster.audit()).filter((e) => e.user.username === `system:node:${cluster.nodeName}` && e.verb === 'patch' &&
    e.objectRef?.resource === 'pods' && e.objectRef.subresource === 'status' && e.responseStatus?.code === 200);
  expect(patches.length).toBeGreaterThan(0);
  const last = new Map<string, string>();
  const repeated: string[] = [];
  for (const e of patches) {
    const body = JSON.stringify(e.requestObject);
    if (last.get(e.requestURI) === body) repeated.push(`${e.requestURI} ${body.slice(0, 300)}`);
    last.set(e.requestURI, body);
  }
  expect(repeated).toEqual([]);
});
