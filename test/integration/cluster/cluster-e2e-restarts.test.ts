// Cluster mode end to end through restarts and outages, with the real control plane (test/cluster), the real
// containerd and CNI, the real nodelet and the built kubectl: restarting nodelet changes nothing (kube-apiserver's audit
// log shows no write); a pod deleted while nodelet is down is torn down when it starts; a 30 s kube-apiserver outage (its
// process stopped, etcd kept) ends with nodelet relisting, reporting and heartbeating again.
import type { V1Lease, V1Node, V1Pod } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { runningPids, startComponent, stopComponent } from '../../cluster/control-plane.js';
import { busybox, containerPid, httpGet, runtimeObjects, sleep, staticName, testNode, waitFor } from '../helpers/agent.js';
import { leftovers, podFootprint } from '../helpers/cluster.js';
import { startRealCluster, type AuditEvent, type RealCluster } from '../helpers/real-cluster.js';

// kube-apiserver's audit log (the fixture's): every request at Metadata, watches as they start too, and the bodies of
// pod status writes (so a failure shows what was written).
const auditPolicy = stringify({
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['RequestReceived'],
  rules: [
    { level: 'Request', verbs: ['patch', 'update'], resources: [{ group: '', resources: ['pods/status'] }] },
    { level: 'Metadata' },
  ],
});
const cluster: RealCluster = await startRealCluster({ auditPolicy });
const { kubectl, agent, cri, uids } = cluster;

afterAll(async () => {
  // Whatever a failed test left stopped comes back first: the clean-up needs the API server.
  for (const component of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const) await startComponent(cluster.dir, component).catch(() => undefined);
  await cluster.stop();
}, 400_000);

beforeAll(async () => {
  await agent.writeManifest('static-keep.yaml', `apiVersion: v1
kind: Pod
metadata: {name: static-keep, namespace: default}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`);
  // Pods are admitted once the namespace's ServiceAccount exists (the ServiceAccount admission plugin mounts its token).
  await waitFor('the default ServiceAccount', () => kubectl.get('serviceaccount', 'default').catch(() => undefined), 60_000, 500);
}, 90_000);

/** kubectl's view of a pod (JSON); its UID is remembered for the clean-up. */
const getPod = (name: string): Promise<V1Pod> => kubectl.pod(name, uids);

const waitForPod = (name: string, what: string, ok: (p: V1Pod) => boolean, timeoutMs = 60_000): Promise<V1Pod> =>
  kubectl.waitForPod(name, what, ok, { seen: uids, timeoutMs });

const webPod = (name: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && echo ${name} > /www/index.html && exec httpd -f -p 8080 -h /www"]
`;

/** `kubectl create -f`, then kube-scheduler binds the pod to this node (the only one). */
async function createAndBind(name: string): Promise<void> {
  expect(await kubectl.fromFile('create', `${name}.yaml`, webPod(name))).toBe(`pod/${name} created`);
  const bound = await waitForPod(name, 'bound by kube-scheduler', (p) => !!p.spec?.nodeName, 60_000);
  expect(bound.spec!.nodeName).toBe(testNode);
}

const running = (p: V1Pod) =>
  p.status?.phase === 'Running' && !!p.status.podIP && (p.status.containerStatuses ?? []).length > 0 && p.status.containerStatuses!.every((c) => c.state?.running && c.ready);
const containerId = (p: V1Pod) => p.status!.containerStatuses![0]!.containerID!.replace(/^containerd:\/\//, '');
const renewTime = async () => new Date((await kubectl.get<V1Lease>('lease', '-n', 'kube-node-lease', testNode)).spec!.renewTime as unknown as string).getTime();
const nodeReady = async () => (await kubectl.get<V1Node>('node', testNode)).status?.conditions?.find((c) => c.type === 'Ready');

/** The node's requests kube-apiserver logged since `since` (ms); watches as they start, others when answered. */
async function nodeRequests(since: number): Promise<AuditEvent[]> {
  return (await cluster.audit())
    .filter((e) => e.user.username === `system:node:${testNode}` && (e.stage === 'ResponseComplete' || (e.verb === 'watch' && e.stage === 'ResponseStarted')) && new Date(e.requestReceivedTimestamp!).getTime() >= since);
}

test('restarting nodelet while pods run changes nothing: same containers, restart counts, sandboxes, and no status writes', async () => {
  await createAndBind('keep');
  const keep = await waitForPod('keep', 'Running', running, 90_000);
  const mirrorName = staticName('static-keep');
  const mirror = await waitForPod(mirrorName, 'Running', running, 60_000);
  const staticUid = (await agent.pods()).find((p) => p.metadata?.name === mirrorName)!.metadata!.uid!;
  uids.add(staticUid);
  // Settled: the status written, nothing more to say (status writes would move the resourceVersion).
  await sleep(3_000);
  const before = { keep: await getPod('keep'), mirror: await getPod(mirrorName) };
  const sorted = async () => {
    const { sandboxes, containers } = await runtimeObjects(cri, [keep.metadata!.uid!, staticUid]);
    return { sandboxes: sandboxes.sort(), containers: containers.sort() };
  };
  const runtimeBefore = await sorted();
  expect(runtimeBefore.sandboxes).toHaveLength(2);
  expect(runtimeBefore.containers).toHaveLength(2);

  await agent.stop();
  const restarted = Date.now();
  await agent.start();
  // Up again: heartbeating (the Lease renewed by the new process) and the pods synced (its status API shows them Running).
  await waitFor('the Lease renewed after the restart', async () => ((await renewTime()) >= restarted - 1_000 ? true : undefined), 30_000, 500);
  await waitFor('the new agent runs both pods', async () => {
    const pods = await agent.pods();
    return pods.filter((p) => p.status?.phase === 'Running').length === 2 ? true : undefined;
  }, 30_000, 250);
  // Give the status manager time to write anything it would write.
  await sleep(5_000);

  const after = { keep: await getPod('keep'), mirror: await getPod(mirrorName) };
  for (const name of ['keep', 'mirror'] as const) {
    expect(after[name].metadata!.uid).toBe(before[name].metadata!.uid);
    expect(after[name].status?.phase).toBe('Running');
    expect(containerId(after[name])).toBe(containerId(before[name]));
    expect(after[name].status!.containerStatuses![0]!.restartCount).toBe(before[name].status!.containerStatuses![0]!.restartCount);
    expect(after[name].status).toEqual(before[name].status);
    // No write of any kind to the pod (a status write moves its resourceVersion).
    expect(after[name].metadata!.resourceVersion).toBe(before[name].metadata!.resourceVersion);
  }
  expect(mirror.metadata!.uid).toBe(after.mirror.metadata!.uid);
  expect(await sorted()).toEqual(runtimeBefore);
  const writes = (await nodeRequests(restarted)).filter((e) => e.objectRef?.resource === 'pods' && ['create', 'update', 'patch', 'delete'].includes(e.verb));
  expect(writes.map((e) => `${e.verb} ${e.objectRef?.name}/${e.objectRef?.subresource ?? ''}${e.requestObject ? ` ${JSON.stringify(e.requestObject)}` : ''}`)).toEqual([]);
  expect(await httpGet(`http://${after.keep.status!.podIP}:8080/`)).toBe('keep\n');
}, 180_000);

test('a pod deleted through the API while nodelet is stopped is torn down when it starts, and its API object goes', async () => {
  await createAndBind('gone');
  const pod = await waitForPod('gone', 'Running', running, 90_000);
  const fp = await podFootprint(cri, agent.rootDir, pod.metadata!.uid!, pod.status!.podIP!);
  await agent.stop();
  try {
    // Bound to a node, the pod is only marked for deletion; the node finishes it.
    expect(await kubectl.run('delete', 'pod', 'gone', '--wait=false')).toBe('pod "gone" deleted from default namespace');
    const marked = await getPod('gone');
    expect(marked.metadata?.deletionTimestamp).toBeTruthy();
    expect(marked.metadata?.deletionGracePeriodSeconds).toBe(2);
    // Nobody tears it down while nodelet is away.
    expect((await runtimeObjects(cri, [fp.uid])).containers).toHaveLength(1);
  } finally {
    await agent.start();
  }
  await waitFor('gone deleted from the API server', async () => {
    const left = await kubectl.run('get', 'pod', 'gone', '--ignore-not-found');
    return left === '' ? true : undefined;
  }, 60_000, 500);
  expect(await runtimeObjects(cri, [fp.uid])).toEqual({ sandboxes: [], containers: [] });
  await waitFor('nothing of gone left on the node', async () => ((await leftovers(cri, fp)).length === 0 ? true : undefined), 20_000, 250).catch(async (err: Error) => {
    throw new Error(`${err.message}; left: ${(await leftovers(cri, fp)).join(', ')}`);
  });
  // The other pod was not touched.
  expect((await getPod('keep')).status?.containerStatuses?.[0]?.restartCount).toBe(0);
}, 180_000);

test('a 30 s kube-apiserver outage: nodelet keeps the pods, then relists, reports a restart made during it, heartbeats, and runs new pods', async () => {
  await createAndBind('survivor');
  const survivor = await waitForPod('survivor', 'Running', running, 90_000);
  const keepBefore = await getPod('keep');
  expect((await nodeReady())?.status).toBe('True');

  // kube-apiserver's process stopped (etcd, the controller-manager and the scheduler keep running).
  expect(await stopComponent(cluster.dir, 'kube-apiserver')).toBe(true);
  const down = Date.now();
  try {
    await sleep(3_000);
    // A container dies while the API server is away: nodelet restarts it at once, and can only say so later.
    process.kill(await containerPid(cri, containerId(survivor)), 'SIGKILL');
    await waitFor('survivor restarted in the runtime', async () => {
      const { containers } = await runtimeObjects(cri, [survivor.metadata!.uid!]);
      const statuses = await Promise.all(containers.map((c) => cri.containerStatus(c)));
      return statuses.some((s) => s.state === 'CONTAINER_RUNNING' && s.metadata.attempt === 1) ? true : undefined;
    }, 20_000, 250);
    await sleep(Math.max(0, 30_000 - (Date.now() - down)));
  } finally {
    await startComponent(cluster.dir, 'kube-apiserver');
  }
  const up = Date.now();
  // The controller-manager and the scheduler exit when they cannot renew their leader lease through the API server
  // (as on kubeadm's nodes, where the kubelet restarts their static pods): started again where they did.
  for (const component of ['kube-controller-manager', 'kube-scheduler'] as const) {
    if (!(await runningPids(cluster.dir))[component]) await startComponent(cluster.dir, component);
  }
  expect(agent.running).toBe(true);

  const restarted = await waitForPod('survivor', 'restartCount 1 reported after the outage', (p) => running(p) && p.status!.containerStatuses![0]!.restartCount === 1, 90_000);
  expect(containerId(restarted)).not.toBe(containerId(survivor));
  expect(restarted.status!.containerStatuses![0]!.lastState?.terminated).toMatchObject({ exitCode: 137, reason: 'Error' });
  await waitFor('the Lease renewed after the outage', async () => ((await renewTime()) > up ? true : undefined), 60_000, 500);
  expect((await nodeReady())?.status).toBe('True');
  // It relisted its pods (the complete set, from storage) and watches them again.
  // (its reflector's back-off, capped at 30 s as client-go's, may still be running when the status and Lease got through).
  await waitFor('the pods relisted and watched after the outage', async () => {
    const verbs = (await nodeRequests(up)).filter((e) => e.objectRef?.resource === 'pods' && !e.objectRef.name).map((e) => e.verb);
    return verbs.includes('list') && verbs.slice(verbs.indexOf('list')).includes('watch') ? true : undefined;
  }, 60_000, 500);

  // The watch is back: a pod created and bound now runs, and answers.
  await createAndBind('after');
  const after = await waitForPod('after', 'Running', running, 90_000);
  expect(await waitFor('after answers', () => httpGet(`http://${after.status!.podIP}:8080/`), 15_000, 300)).toBe('after\n');
  // The pod that saw nothing kept its container.
  const keepAfter = await getPod('keep');
  expect(containerId(keepAfter)).toBe(containerId(keepBefore));
  expect(keepAfter.status?.containerStatuses?.[0]?.restartCount).toBe(0);
  expect(await httpGet(`http://${restarted.status!.podIP}:8080/`)).toBe('survivor\n');
}, 240_000);
