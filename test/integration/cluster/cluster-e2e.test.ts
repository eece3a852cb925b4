// Cluster mode end to end, as a user sees it: the real control plane (kube-apiserver, kube-controller-manager,
// kube-scheduler of test/cluster), the real containerd and CNI, the real nodelet and the built kubectl. The node is Ready
// and its Lease renews; a pod created with kubectl and bound by kube-scheduler runs, answers on its IP, restarts when
// killed, crash-loops when failing, reads a configMap volume that follows updates, has its events, is refused by
// admission when too big, and leaves nothing behind when kubectl deletes it; a static pod gets its mirror pod.
import { networkInterfaces } from 'node:os';
import type { CoreV1Event, V1Lease, V1Node, V1Pod } from '@kubernetes/client-node';
import { parseQuantity } from '../../../src/core/quantity.js';
import { busybox, containerPid, httpGet, runtimeObjects, staticName, testNode, waitFor } from '../helpers/agent.js';
import { containerdLogMentions, leftovers, podFootprint } from '../helpers/cluster.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';

const cluster: RealCluster = await startRealCluster();
const { kubectl, agent, cri, uids } = cluster;
const staticManifests = ['static-web.yaml'];

// The static pods go first (their mirror pods would come back), then the fixture's clean-up proves nothing is left.
afterAll(async () => {
  for (const file of staticManifests) await agent.removeManifest(file);
  await cluster.stop();
}, 300_000);

const staticManifest = `apiVersion: v1
kind: Pod
metadata: {name: static-web, namespace: default, labels: {app: static-web}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`;

beforeAll(async () => {
  // Written once nodelet runs (the fixture starts it): the file source picks the new file up.
  await agent.writeManifest('static-web.yaml', staticManifest);
  // Pods are admitted once the namespace's ServiceAccount exists (the ServiceAccount admission plugin mounts its token).
  await waitFor('the default ServiceAccount', () => kubectl.get('serviceaccount', 'default').catch(() => undefined), 60_000, 500);
}, 90_000);
/** kubectl's view of a pod (JSON); its UID is remembered for the clean-up. */
const getPod = (name: string): Promise<V1Pod> => kubectl.pod(name, uids);

const waitForPod = (name: string, what: string, ok: (p: V1Pod) => boolean, timeoutMs = 60_000): Promise<V1Pod> =>
  kubectl.waitForPod(name, what, ok, { seen: uids, timeoutMs });

/** `kubectl create -f <name>.yaml`, then kube-scheduler binds it to this node (the only one). */
async function createAndBind(name: string, yaml: string): Promise<void> {
  expect(await kubectl.fromFile('create', `${name}.yaml`, yaml)).toBe(`pod/${name} created`);
  const bound = await waitForPod(name, 'bound by kube-scheduler', (p) => !!p.spec?.nodeName, 60_000);
  expect(bound.spec!.nodeName).toBe(testNode);
}

const running = (p: V1Pod) =>
  p.status?.phase === 'Running' && !!p.status.podIP && (p.status.containerStatuses ?? []).length > 0 && p.status.containerStatuses!.every((c) => c.state?.running && c.ready);
const containerId = (p: V1Pod) => p.status!.containerStatuses![0]!.containerID!.replace(/^containerd:\/\//, '');

/** The events about one pod, as `kubectl get events -o json` lists them. */
async function podEvents(name: string): Promise<CoreV1Event[]> {
  const list = await kubectl.get<{ items: CoreV1Event[] }>('events', '-n', 'default');
  return list.items.filter((e) => e.involvedObject.kind === 'Pod' && e.involvedObject.name === name);
}

test('the node is Ready in kubectl get nodes -o wide with its address and runtime, and its Lease renews', async () => {
  const row = await waitFor('node Ready in kubectl get nodes -o wide', async () => {
    const r = (await kubectl.table('nodes', '-o', 'wide')).find((x) => x.NAME === testNode);
    return r?.STATUS === 'Ready' ? r : undefined;
  }, 60_000, 500);
  const hostAddresses = Object.values(networkInterfaces()).flat().map((a) => a?.address);
  expect(hostAddresses).toContain(row['INTERNAL-IP']);
  expect(row['CONTAINER-RUNTIME']).toMatch(/^containerd:\/\/v2\.\d+\.\d+/);
  const node = await kubectl.get<V1Node>('node', testNode);
  expect(node.status?.addresses).toEqual(expect.arrayContaining([{ type: 'InternalIP', address: row['INTERNAL-IP'] }, { type: 'Hostname', address: testNode }]));

  const lease = () => kubectl.get<V1Lease>('lease', '-n', 'kube-node-lease', testNode);
  // Created once the Node is registered (its owner).
  const first = await waitFor('the node Lease', () => lease().catch(() => undefined), 20_000, 500);
  expect(first.spec).toMatchObject({ holderIdentity: testNode, leaseDurationSeconds: 40 });
  expect(first.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Node', name: testNode, uid: node.metadata!.uid });
  const t0 = new Date(first.spec!.renewTime as unknown as string).getTime();
  // Renewed every 10 s (a quarter of the 40 s duration, with jitter).
  const renewed = await waitFor('the Lease renewed', async () => {
    const t = new Date((await lease()).spec!.renewTime as unknown as string).getTime();
    return t > t0 ? t : undefined;
  }, 25_000, 1_000);
  expect(renewed - t0).toBeGreaterThanOrEqual(5_000);
}, 120_000);

test('kubectl create -f plus a binding: Running, its IP in kubectl get pod -o wide answers from the host; Pulled/Created/Started events', async () => {
  await createAndBind('web', `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && echo hello from web > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports: [{containerPort: 8080}]
`);
  const pod = await waitForPod('web', 'Running', running, 90_000);
  const row = await waitFor('web Running in kubectl get pod -o wide', async () => {
    const r = (await kubectl.table('pod', 'web', '-o', 'wide')).find((x) => x.NAME === 'web');
    return r?.STATUS === 'Running' ? r : undefined;
  }, 10_000, 500);
  expect(row).toMatchObject({ READY: '1/1', RESTARTS: '0', NODE: testNode, IP: pod.status!.podIP });
  expect(row.IP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  expect(pod.status?.podIPs).toEqual([{ ip: row.IP }]);
  expect(pod.status?.hostIP).toBeTruthy();
  expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  expect(await waitFor('web answers on its pod IP', () => httpGet(`http://${row.IP}:8080/`), 15_000, 300)).toBe('hello from web\n');

  // kubelet's events about the container; Scheduled is the scheduler's, never the node's.
  const events = await waitFor('Started event of web', async () => {
    const list = await podEvents('web');
    return list.some((e) => e.reason === 'Started') ? list : undefined;
  }, 30_000, 500);
  for (const [reason, message] of [
    ['Pulled', `Container image "${busybox}" already present on machine`],
    ['Created', 'Container created'],
    ['Started', 'Container started'],
  ] as const) {
    expect(events.filter((e) => e.reason === reason)).toEqual([
      expect.objectContaining({
        type: 'Normal',
        message,
        involvedObject: expect.objectContaining({ kind: 'Pod', name: 'web', namespace: 'default', uid: pod.metadata!.uid, fieldPath: 'spec.containers{web}' }),
        source: { component: 'kubelet', host: testNode },
      }),
    ]);
  }
  expect(events.filter((e) => e.source?.component === 'kubelet' && e.reason === 'Scheduled')).toEqual([]);
  const wide = await kubectl.table('events', '-o', 'wide');
  expect(wide.find((e) => e.REASON === 'Started' && e.OBJECT === 'pod/web')).toMatchObject({ SUBOBJECT: 'spec.containers{web}', SOURCE: `kubelet, ${testNode}`, TYPE: 'Normal' });
}, 150_000);

test("killing the container's process shows restartCount 1 in kubectl, and the new container serves", async () => {
  const before = await waitForPod('web', 'Running', running);
  const pid = await containerPid(cri, containerId(before));
  process.kill(pid, 'SIGKILL');
  const after = await waitForPod('web', 'restarted once and Running', (p) => running(p) && p.status!.containerStatuses![0]!.restartCount === 1, 60_000);
  const cs = after.status!.containerStatuses![0]!;
  expect(containerId(after)).not.toBe(containerId(before));
  expect(cs.lastState?.terminated).toMatchObject({ exitCode: 137, reason: 'Error', containerID: `containerd://${containerId(before)}` });
  expect(after.status!.podIP).toBe(before.status!.podIP);
  expect((await kubectl.table('pod', 'web')).find((x) => x.NAME === 'web')?.RESTARTS).toMatch(/^1 \(\d+s ago\)$/);
  expect(await waitFor('web answers again', () => httpGet(`http://${after.status!.podIP}:8080/`), 15_000, 300)).toBe('hello from web\n');
}, 120_000);

test('a failing pod (exit 1, restartPolicy Always) shows CrashLoopBackOff in kubectl get pod, with a BackOff event', async () => {
  await createAndBind('crash', `apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 2
  containers:
  - name: crash
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exit 1"]
`);
  const row = await waitFor('crash in CrashLoopBackOff (kubectl get pod)', async () => {
    const r = (await kubectl.table('pod', 'crash')).find((x) => x.NAME === 'crash');
    return r?.STATUS === 'CrashLoopBackOff' ? r : undefined;
  }, 90_000, 500);
  expect(row.READY).toBe('0/1');
  // Read again as JSON (it may have left the back-off for an instant to run and fail again meanwhile).
  const pod = await waitForPod('crash', 'waiting in CrashLoopBackOff', (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff');
  const cs = pod.status!.containerStatuses![0]!;
  expect(pod.status?.phase).toBe('Running');
  expect(cs.state?.waiting?.reason).toBe('CrashLoopBackOff');
  expect(cs.state?.waiting?.message).toMatch(/^back-off \d+s restarting failed container=crash pod=crash_default\(.+\)$/);
  expect(cs.lastState?.terminated).toMatchObject({ exitCode: 1, reason: 'Error' });
  const backOff = await waitFor('a BackOff event', async () => (await podEvents('crash')).find((e) => e.reason === 'BackOff'), 60_000, 500);
  expect(backOff).toMatchObject({ type: 'Warning', involvedObject: expect.objectContaining({ fieldPath: 'spec.containers{crash}', uid: pod.metadata!.uid }) });
  expect(backOff.message).toMatch(/^Back-off restarting failed container crash in pod crash_default\(.+\)$/);
}, 150_000);

test('a configMap volume shows its data inside the container, and the new data after kubectl apply of the changed ConfigMap', async () => {
  const configMap = (greeting: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg-data}
data:
  greeting: ${greeting}
`;
  expect(await kubectl.fromFile('apply', 'cfg-data.yaml', configMap('hello'))).toBe('configmap/cfg-data created');
  await createAndBind('cfg', `apiVersion: v1
kind: Pod
metadata: {name: cfg}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: cfg, configMap: {name: cfg-data}}
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: cfg, mountPath: /etc/cfg}
`);
  const pod = await waitForPod('cfg', 'Running', running, 90_000);
  const read = async () => {
    const r = await cri.execSync(containerId(pod), ['cat', '/etc/cfg/greeting'], 10);
    return r.stdout.toString();
  };
  expect(await read()).toBe('hello');
  expect(await kubectl.fromFile('apply', 'cfg-data.yaml', configMap('bonjour'))).toBe('configmap/cfg-data configured');
  await waitFor('the new configMap data in the container', async () => ((await read()) === 'bonjour' ? true : undefined), 30_000, 250);
  // Same container: the volume changed under it.
  expect(containerId(await getPod('cfg'))).toBe(containerId(pod));
  await kubectl.run('patch', 'configmap', 'cfg-data', '--type', 'merge', '-p', '{"data":{"greeting":"hola"}}');
  await waitFor('the patched configMap data in the container', async () => ((await read()) === 'hola' ? true : undefined), 30_000, 250);
}, 150_000);

test('a pod requesting more cpu than the node has is Failed with reason OutOfcpu, and containerd never sees it', async () => {
  const node = await kubectl.get<V1Node>('node', testNode);
  const allocatableCpu = node.status!.allocatable!.cpu!;
  // kube-scheduler would never bind it (Insufficient cpu): it names the node itself, as a pod bound past the scheduler's
  // view (another scheduler, a race) reaches the node, whose own admission must refuse it.
  expect(await kubectl.fromFile('create', 'hog.yaml', `apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  nodeName: ${testNode}
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    resources: {requests: {cpu: "1000"}}
`)).toBe('pod/hog created');
  const pod = await waitForPod('hog', 'Failed', (p) => p.status?.phase === 'Failed', 60_000);
  expect(pod.status?.reason).toBe('OutOfcpu');
  // kubelet's message counts millicores: requested 1000 cpu, against the node's allocatable.
  expect(pod.status?.message).toMatch(/^Pod was rejected: Node didn't have enough resource: cpu, requested: 1000000, used: \d+, capacity: \d+$/);
  expect(pod.status?.message).toContain(`capacity: ${parseQuantity(allocatableCpu).milliValue()}`);
  expect((await kubectl.table('pod', 'hog')).find((x) => x.NAME === 'hog')?.STATUS).toBe('OutOfcpu');
  const rejected = await waitFor('the OutOfcpu event', async () => (await podEvents('hog')).find((e) => e.reason === 'OutOfcpu'), 30_000, 500);
  expect(rejected.type).toBe('Warning');
  // Some seconds later it still never reached containerd: no sandbox, no container, not a line in containerd's log
  // (which does log the pods it ran: the web pod's UID is there).
  await new Promise((r) => setTimeout(r, 3_000));
  expect(await runtimeObjects(cri, [pod.metadata!.uid!])).toEqual({ sandboxes: [], containers: [] });
  expect(await containerdLogMentions((await getPod('web')).metadata!.uid!)).toBeGreaterThan(0);
  expect(await containerdLogMentions(pod.metadata!.uid!)).toBe(0);
  expect((await getPod('hog')).status?.phase).toBe('Failed');
}, 120_000);

test('a static pod from --pod-manifest-path gets its mirror pod <name>-<node> in kubectl get pod, with its status', async () => {
  const name = staticName('static-web');
  const row = await waitFor('the mirror pod Running in kubectl get pod -o wide', async () => {
    const r = (await kubectl.table('pod', '-o', 'wide')).find((x) => x.NAME === name);
    return r?.STATUS === 'Running' ? r : undefined;
  }, 60_000, 500).catch((err: Error) => {
    throw new Error(`${err.message}\nnodelet's mirror pod log:\n${agent.logLines().filter((l) => /mirror/i.test(JSON.stringify(l))).slice(-10).map((l) => JSON.stringify(l)).join('\n')}`);
  });
  expect(row).toMatchObject({ READY: '1/1', NODE: testNode });
  const mirror = await getPod(name);
  expect(mirror.metadata?.annotations?.['kubernetes.io/config.mirror']).toBeTruthy();
  expect(mirror.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Node', name: testNode, controller: true })]);
  expect(mirror.spec?.nodeName).toBe(testNode);
  expect(mirror.status?.podIP).toBe(row.IP);
  expect(mirror.status?.containerStatuses?.[0]).toMatchObject({ name: 'main', ready: true, restartCount: 0 });
  expect(mirror.status?.containerStatuses?.[0]?.state?.running).toBeTruthy();
  // The static pod runs under its own UID (the mirror's differs): its containers are in containerd.
  const local = await agent.pods();
  const staticPod = local.find((p) => p.metadata?.name === name)!;
  uids.add(staticPod.metadata!.uid!);
  expect(staticPod.metadata!.uid).not.toBe(mirror.metadata!.uid);
  expect((await runtimeObjects(cri, [staticPod.metadata!.uid!])).containers).toHaveLength(1);
}, 90_000);

test('a second kubectl delete with a shorter grace period cuts short the termination under way', async () => {
  // Its shell ignores SIGTERM: only the SIGKILL at the end of the grace period stops it.
  await createAndBind(
    'stubborn',
    `apiVersion: v1
kind: Pod
metadata: {name: stubborn, namespace: default}
spec:
  terminationGracePeriodSeconds: 120
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]
`,
  );
  await waitForPod('stubborn', 'Running', running);
  expect(await kubectl.run('delete', 'pod', 'stubborn', '--wait=false')).toBe('pod "stubborn" deleted from default namespace');
  const deleting = await waitForPod('stubborn', 'marked for deletion', (p) => !!p.metadata?.deletionTimestamp);
  expect(deleting.metadata!.deletionGracePeriodSeconds).toBe(120);
  // The node has begun stopping it (SIGTERM, ignored) and would wait 120 s.
  await new Promise((r) => setTimeout(r, 3_000));
  expect((await getPod('stubborn')).metadata!.deletionGracePeriodSeconds).toBe(120);
  const started = Date.now();
  expect(await kubectl.run('delete', 'pod', 'stubborn', '--grace-period=3', '--timeout=90s')).toBe('pod "stubborn" deleted from default namespace');
  expect(Date.now() - started).toBeLessThan(60_000);
  expect(await runtimeObjects(cri, [deleting.metadata!.uid!])).toEqual({ sandboxes: [], containers: [] });
}, 150_000);

test("readiness gates: Ready False (ReadinessGatesNotReady) until another controller sets the gate's condition True, and back", async () => {
  const gate = 'example.com/ready-for-traffic';
  await createAndBind('gated', `apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  readinessGates: [{conditionType: ${gate}}]
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`);
  const ready = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === 'Ready');
  const waiting = await waitForPod('gated', 'Running, its gate missing', (p) => running(p) && ready(p)?.reason === 'ReadinessGatesNotReady');
  expect(ready(waiting)).toMatchObject({ status: 'False', message: `corresponding condition of pod readiness gate "${gate}" does not exist.` });
  expect(waiting.status!.conditions!.find((c) => c.type === 'ContainersReady')?.status).toBe('True');
  // What a load balancer controller does: the gate's condition in the pod's status (nodelet keeps conditions it does not own).
  const setGate = (status: string) =>
    kubectl.run('patch', 'pod', 'gated', '--subresource=status', '--type=strategic', '-p', JSON.stringify({ status: { conditions: [{ type: gate, status }] } }));
  await setGate('True');
  const open = await waitForPod('gated', 'Ready with its gate True', (p) => ready(p)?.status === 'True');
  expect(open.status!.conditions!.find((c) => c.type === gate)?.status).toBe('True');
  await setGate('False');
  const closed = await waitForPod('gated', 'not Ready again', (p) => ready(p)?.status === 'False');
  expect(ready(closed)).toMatchObject({ reason: 'ReadinessGatesNotReady', message: `the status of pod readiness gate "${gate}" is not "True", but False` });
  expect(await kubectl.run('delete', 'pod', 'gated', '--timeout=60s')).toBe('pod "gated" deleted from default namespace');
}, 150_000);

test("observedGeneration (GA in 1.35): the status and nodelet's conditions follow the pod's generation after a spec update", async () => {
  await createAndBind('generations', `apiVersion: v1
kind: Pod
metadata: {name: generations, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`);
  const first = await waitForPod('generations', 'Running', running);
  expect(first.metadata!.generation).toBe(1);
  expect(first.status!.observedGeneration).toBe(1);
  const owned = ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'];
  const generations = (p: V1Pod) => p.status!.conditions!.filter((c) => owned.includes(c.type)).map((c) => [c.type, c.observedGeneration]);
  expect(generations(first).sort()).toEqual(owned.map((t) => [t, 1]).sort());
  // A mutable spec field: the API server raises the generation, and nodelet reports that it has seen it.
  await kubectl.run('patch', 'pod', 'generations', '--type=merge', '-p', JSON.stringify({ spec: { activeDeadlineSeconds: 3600 } }));
  const second = await waitForPod('generations', 'status.observedGeneration 2', (p) => p.status?.observedGeneration === 2);
  expect(second.metadata!.generation).toBe(2);
  expect(generations(second).sort()).toEqual(owned.map((t) => [t, 2]).sort());
  expect(await kubectl.run('delete', 'pod', 'generations', '--timeout=60s')).toBe('pod "generations" deleted from default namespace');
}, 150_000);

test('kubectl delete pod completes once the node has torn the pod down, and nothing of it remains on the node', async () => {
  const pod = await waitForPod('web', 'Running', running);
  const fp = await podFootprint(cri, agent.rootDir, pod.metadata!.uid!, pod.status!.podIP!);
  // The running container and the one killed earlier (kept, as kubelet keeps a pod's last dead container).
  expect(fp.containers).toHaveLength(2);
  // kubectl waits until the object is gone, which happens when nodelet deletes it with grace 0 after the teardown.
  const started = Date.now();
  expect(await kubectl.run('delete', 'pod', 'web', '--timeout=60s')).toBe('pod "web" deleted from default namespace');
  expect(Date.now() - started).toBeLessThan(60_000);
  await expect(kubectl.get('pod', 'web')).rejects.toThrow(/NotFound|not found/);
  // Gone from the runtime before the API object went; the rest (netns, veth, reservation, dir) follows at once.
  expect(await runtimeObjects(cri, [fp.uid])).toEqual({ sandboxes: [], containers: [] });
  await waitFor('nothing of web left on the node', async () => ((await leftovers(cri, fp)).length === 0 ? true : undefined), 20_000, 250).catch(async (err: Error) => {
    throw new Error(`${err.message}; left: ${(await leftovers(cri, fp)).join(', ')}`);
  });
}, 120_000);
