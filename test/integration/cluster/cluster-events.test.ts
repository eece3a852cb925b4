// Cluster mode's events against the real control plane (test/cluster), the real runtime and the built kubectl: a pod's
// Pulled, Created and Started events about its container, and a crash-looping container's BackOff as one event whose
// count grows.
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { busybox, isRunning, testNode, waitFor } from '../helpers/agent.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';

const cluster: RealCluster = await startRealCluster();
const { kubectl, agent, uids } = cluster;

afterAll(() => cluster.stop(), 300_000);

beforeAll(async () => {
  // Pods are admitted once the namespace's ServiceAccount exists (the ServiceAccount admission plugin mounts its token).
  await waitFor('the default ServiceAccount', () => kubectl.get('serviceaccount', 'default').catch(() => undefined), 60_000, 500);
}, 90_000);

/** `kubectl create -f`, then kube-scheduler binds the pod to this node (the only one). */
async function createPod(yaml: string, name: string): Promise<void> {
  expect(await kubectl.fromFile('create', `${name}.yaml`, yaml)).toBe(`pod/${name} created`);
  await waitFor(`${name} bound by kube-scheduler`, async () => ((await kubectl.get<V1Pod>('pod', name)).spec?.nodeName === testNode ? true : undefined), 60_000, 500);
}

function waitForPod(name: string, what: string, ok: (p: V1Pod) => boolean, timeoutMs = 60_000): Promise<V1Pod> {
  return waitFor(`${name}: ${what}`, async () => {
    const p = (await agent.pods()).find((x) => x.metadata?.name === name && x.metadata?.namespace === 'default');
    if (p) uids.add(p.metadata!.uid!);
    return p && ok(p) ? p : undefined;
  }, timeoutMs);
}

/** The events about one pod, as `kubectl get events -o json` lists them. */
async function podEvents(name: string): Promise<CoreV1Event[]> {
  return (await kubectl.get<{ items: CoreV1Event[] }>('events', '-n', 'default')).items.filter((e) => e.involvedObject.kind === 'Pod' && e.involvedObject.name === name);
}

test('a started pod has Pulled, Created and Started events about its container, shown by kubectl', async () => {
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: ev-web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, 'ev-web');
  const pod = await waitForPod('ev-web', 'Running', isRunning, 90_000);
  const events = await waitFor('Started event of ev-web', async () => {
    const list = await podEvents('ev-web');
    return list.some((e) => e.reason === 'Started') ? list : undefined;
  }, 30_000);

  const byReason = (reason: string) => events.filter((e) => e.reason === reason);
  for (const [reason, message] of [
    ['Pulled', `Container image "${busybox}" already present on machine`],
    ['Created', 'Container created'],
    ['Started', 'Container started'],
  ] as const) {
    expect(byReason(reason)).toHaveLength(1);
    expect(byReason(reason)[0]).toMatchObject({
      type: 'Normal',
      message,
      count: 1,
      involvedObject: { kind: 'Pod', apiVersion: 'v1', namespace: 'default', name: 'ev-web', uid: pod.metadata!.uid, fieldPath: 'spec.containers{web}' },
      source: { component: 'kubelet', host: testNode },
      reportingComponent: 'kubelet',
      reportingInstance: testNode,
    });
    expect(byReason(reason)[0]!.metadata.name).toMatch(/^ev-web\.[0-9a-f]+$/);
  }

  // kubectl's own rendering: OBJECT pod/<name>; -o wide adds SUBOBJECT (the field path), SOURCE and COUNT.
  const wide = await kubectl.run('get', 'events', '-n', 'default', '-o', 'wide');
  const started = wide.split('\n').find((l) => l.includes('Container started') && l.includes('pod/ev-web'));
  expect(started).toBeDefined();
  expect(started).toContain('pod/ev-web');
  expect(started).toContain('spec.containers{web}');
  expect(started).toContain(`kubelet, ${testNode}`);
}, 150_000);

test('a crash-looping container gives one BackOff event whose count grows', async () => {
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: ev-crash}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: crash
    image: ${busybox}
    command: ["sh", "-c", "exit 3"]
`, 'ev-crash');
  await waitForPod('ev-crash', 'in CrashLoopBackOff', (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff', 90_000);
  const first = await waitFor('a BackOff event', async () => (await podEvents('ev-crash')).find((e) => e.reason === 'BackOff'), 60_000);
  expect(first).toMatchObject({
    type: 'Warning',
    message: expect.stringMatching(/^Back-off restarting failed container crash in pod ev-crash_default\(.+\)$/),
    involvedObject: { name: 'ev-crash', fieldPath: 'spec.containers{crash}' },
  });
  const grown = await waitFor('the BackOff count to grow', async () => {
    const backOffs = (await podEvents('ev-crash')).filter((e) => e.reason === 'BackOff');
    return backOffs.length === 1 && (backOffs[0]!.count ?? 0) > (first.count ?? 0) ? backOffs[0] : undefined;
  }, 120_000, 1_000);
  // Still the first event, patched: same name and first time, a later last time.
  expect(grown.metadata.name).toBe(first.metadata.name);
  expect(grown.firstTimestamp).toBe(first.firstTimestamp);
  expect(new Date(grown.lastTimestamp!).getTime()).toBeGreaterThanOrEqual(new Date(first.lastTimestamp!).getTime());
  expect((await podEvents('ev-crash')).filter((e) => e.reason === 'BackOff')).toHaveLength(1);
  // Every restart reports its container again: "Started" is one event counted up, not one per restart.
  const startedEvents = (await podEvents('ev-crash')).filter((e) => e.reason === 'Started');
  expect(startedEvents).toHaveLength(1);
  expect(startedEvents[0]!.count).toBeGreaterThanOrEqual(2);
}, 240_000);
