// In-place pod resize (GA in 1.35) against the real control plane, the real runtime and the built kubectl: `kubectl
// patch --subresource resize` applied to the running container and to the pod's cgroup on the host without a restart;
// a resize that does not fit is Deferred with kubelet's message and done once room appears; a memory resize whose
// resizePolicy says RestartContainer restarts the container.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Event, V1Node, V1Pod } from '@kubernetes/client-node';
import { busybox, testNode, waitFor } from '../helpers/agent.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';

// The API server's client certificate is trusted by the kubelet API (kubectl exec reads the containers' cgroups).
const agentArgs = (dir: string) => ['--client-ca-file', join(dir, 'ca.crt')];
const cluster: RealCluster = await startRealCluster({ agentArgs });
const { kubectl, uids } = cluster;

afterAll(() => cluster.stop(), 300_000);
// A failed test leaves no pod holding requests for the next one.
afterEach(async () => {
  await kubectl.tryRun('delete', 'pod', '--all', '--timeout=60s');
}, 90_000);

beforeAll(async () => {
  await waitFor('the default ServiceAccount', () => kubectl.get('serviceaccount', 'default').catch(() => undefined), 60_000, 500);
}, 90_000);

/** A container that sleeps, with more fields (resources, resizePolicy). */
function sleeper(name: string, fields: object): object {
  return { name, image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'], ...fields };
}

/** `kubectl create` of a pod (JSON is YAML), quick to delete. */
async function create(name: string, spec: object): Promise<void> {
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { terminationGracePeriodSeconds: 1, ...spec } };
  expect(await kubectl.fromFile('create', `${name}.yaml`, JSON.stringify(pod))).toBe(`pod/${name} created`);
}

/** A pod of one sleeping container `main` with these fields, once it runs. */
async function createPod(name: string, main: object): Promise<V1Pod> {
  await create(name, { containers: [sleeper('main', main)] });
  return waitForPod(name, 'Running', (p) => p.status?.phase === 'Running' && !!p.status.containerStatuses?.[0]?.state?.running, 90_000);
}

function waitForPod(name: string, what: string, ok: (p: V1Pod) => boolean, timeoutMs = 60_000): Promise<V1Pod> {
  return waitFor(`${name}: ${what}`, async () => {
    const p = await kubectl.get<V1Pod>('pod', name).catch(() => undefined);
    if (p?.metadata?.uid) uids.add(p.metadata.uid);
    return p && ok(p) ? p : undefined;
  }, timeoutMs, 250);
}

function resize(name: string, container: string, resources: object): Promise<string> {
  return kubectl.run('patch', 'pod', name, '--subresource', 'resize', '--type=strategic', '-p', JSON.stringify({ spec: { containers: [{ name: container, resources }] } }));
}

const condition = (p: V1Pod, type: string) => p.status?.conditions?.find((c) => c.type === type);
const resized = (generation: number) => (p: V1Pod) =>
  (p.status?.observedGeneration ?? 0) >= generation && !condition(p, 'PodResizePending') && !condition(p, 'PodResizeInProgress');

/** A v1 control file of the pod's cgroup on the host (this host is cgroup v1, cgroupfs driver). */
function podCgroupFile(pod: V1Pod, controller: string, file: string): string {
  return readFileSync(`/sys/fs/cgroup/${controller}/kubepods/burstable/pod${pod.metadata!.uid}/${file}`, 'utf8').trim();
}

async function podEvents(name: string): Promise<CoreV1Event[]> {
  return (await kubectl.get<{ items: CoreV1Event[] }>('events', '-n', 'default')).items.filter((e) => e.involvedObject.kind === 'Pod' && e.involvedObject.name === name);
}

test('kubectl patch --subresource resize changes the running container and the pod cgroup in place, and the status reports it', async () => {
  const before = await createPod('resize-cpu-mem', { resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } } });
  expect(before.spec!.nodeName).toBe(testNode);
  expect(before.status!.containerStatuses![0]).toMatchObject({
    allocatedResources: { cpu: '100m', memory: '64Mi' },
    resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } },
  });
  expect(podCgroupFile(before, 'memory', 'memory.limit_in_bytes')).toBe(String(128 * 2 ** 20));
  expect(podCgroupFile(before, 'cpu', 'cpu.cfs_quota_us')).toBe('20000');

  expect(await resize('resize-cpu-mem', 'main', { requests: { cpu: '150m', memory: '96Mi' }, limits: { cpu: '300m', memory: '192Mi' } })).toBe('pod/resize-cpu-mem patched');
  const after = await waitForPod('resize-cpu-mem', 'resized', resized(2));
  const status = after.status!.containerStatuses![0]!;
  // The same container, never restarted.
  expect(status.containerID).toBe(before.status!.containerStatuses![0]!.containerID);
  expect(status.restartCount).toBe(0);
  expect(status.allocatedResources).toEqual({ cpu: '150m', memory: '96Mi' });
  expect(status.resources).toEqual({ requests: { cpu: '150m', memory: '96Mi' }, limits: { cpu: '300m', memory: '192Mi' } });
  // The pod's cgroup on the host, and the container's own as it sees it.
  expect(podCgroupFile(after, 'memory', 'memory.limit_in_bytes')).toBe(String(192 * 2 ** 20));
  expect(podCgroupFile(after, 'cpu', 'cpu.cfs_quota_us')).toBe('30000');
  expect(podCgroupFile(after, 'cpu', 'cpu.shares')).toBe('153');
  expect(await kubectl.run('exec', 'resize-cpu-mem', '--', 'cat', '/sys/fs/cgroup/memory/memory.limit_in_bytes')).toBe(String(192 * 2 ** 20));
  expect(await kubectl.run('exec', 'resize-cpu-mem', '--', 'cat', '/sys/fs/cgroup/cpu/cpu.cfs_quota_us')).toBe('30000');
  // kubelet's events, with the allocated resources and the generation.
  const events = await waitFor('ResizeCompleted', async () => {
    const list = await podEvents('resize-cpu-mem');
    return list.some((e) => e.reason === 'ResizeCompleted') ? list : undefined;
  }, 30_000);
  const summary = '{"containers":[{"name":"main","resources":{"limits":{"cpu":"300m","memory":"192Mi"},"requests":{"cpu":"150m","memory":"96Mi"}}}],"generation":2}';
  expect(events.find((e) => e.reason === 'ResizeStarted')).toMatchObject({ type: 'Normal', message: `Pod resize started: ${summary}` });
  expect(events.find((e) => e.reason === 'ResizeCompleted')).toMatchObject({ type: 'Normal', message: `Pod resize completed: ${summary}` });
  expect(await kubectl.run('delete', 'pod', 'resize-cpu-mem', '--timeout=60s')).toBe('pod "resize-cpu-mem" deleted from default namespace');
}, 240_000);

test('a resize that does not fit is Deferred with the node admission message, done once room appears; RestartContainer restarts', async () => {
  const node = await kubectl.get<V1Node>('node', testNode);
  const allocatable = Number((node.status!.allocatable!.cpu as string).replace(/m$/, '')) * ((node.status!.allocatable!.cpu as string).endsWith('m') ? 1 : 1000);
  const pod = await createPod('resize-deferred', {
    resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }],
    resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { memory: '64Mi' } },
  });
  const filler = Math.floor(allocatable / 2);
  await createPod('resize-filler', { resources: { requests: { cpu: `${filler}m` } } });
  // More than is left next to the filler, less than the node has (the API server refuses more than allocatable).
  const wanted = allocatable - filler + 100;
  await resize('resize-deferred', 'main', { requests: { cpu: `${wanted}m`, memory: '32Mi' }, limits: { memory: '64Mi' } });
  const deferred = await waitForPod('resize-deferred', 'PodResizePending', (p) => !!condition(p, 'PodResizePending'));
  expect(condition(deferred, 'PodResizePending')).toMatchObject({
    status: 'True',
    reason: 'Deferred',
    observedGeneration: 2,
    message: `Node didn't have enough resource: cpu, requested: ${wanted}, used: ${filler}, capacity: ${allocatable}`,
  });
  // Still running with what it had.
  expect(deferred.status!.containerStatuses![0]!.allocatedResources).toEqual({ cpu: '100m', memory: '32Mi' });
  expect((await podEvents('resize-deferred')).find((e) => e.reason === 'ResizeDeferred')).toMatchObject({ type: 'Warning' });

  expect(await kubectl.run('delete', 'pod', 'resize-filler', '--timeout=60s')).toBe('pod "resize-filler" deleted from default namespace');
  const done = await waitForPod('resize-deferred', 'resized once the filler is gone', resized(2));
  expect(done.status!.containerStatuses![0]).toMatchObject({ restartCount: 0, allocatedResources: { cpu: `${wanted}m`, memory: '32Mi' } });
  expect(podCgroupFile(done, 'cpu', 'cpu.shares')).toBe(String(Math.floor((wanted * 1024) / 1000)));

  // Memory's resizePolicy is RestartContainer: the container is restarted with the new limit.
  await resize('resize-deferred', 'main', { requests: { cpu: `${wanted}m`, memory: '48Mi' }, limits: { memory: '96Mi' } });
  const restarted = await waitForPod('resize-deferred', 'restarted for memory', (p) => resized(3)(p) && p.status?.containerStatuses?.[0]?.restartCount === 1 && !!p.status.containerStatuses[0].state?.running);
  expect(restarted.status!.containerStatuses![0]!.resources).toMatchObject({ limits: { memory: '96Mi' }, requests: { memory: '48Mi' } });
  expect(await kubectl.run('exec', 'resize-deferred', '--', 'cat', '/sys/fs/cgroup/memory/memory.limit_in_bytes')).toBe(String(96 * 2 ** 20));
  expect(pod.metadata!.uid).toBe(restarted.metadata!.uid);
  expect(await kubectl.run('delete', 'pod', 'resize-deferred', '--timeout=60s')).toBe('pod "resize-deferred" deleted from default namespace');
}, 300_000);

/** UpdateContainerResources calls containerd logged for a container. */
function updateCalls(containerID: string): number {
  const id = containerID.replace(/^containerd:\/\//, '');
  return readFileSync('/var/log/nodelet/containerd.log', 'utf8').split('\n').filter((l) => l.includes(`UpdateContainerResources for \\"${id}\\" returns successfully`)).length;
}

test('the allocation and what was applied survive a restart of nodelet: nothing is undone or applied twice; a resize made while it was down is applied at start', async () => {
  const { agent } = cluster;
  await createPod('resize-restart', { resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } } });
  await resize('resize-restart', 'main', { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '300m', memory: '64Mi' } });
  const first = await waitForPod('resize-restart', 'resized', resized(2));
  const containerID = first.status!.containerStatuses![0]!.containerID!;
  const calls = updateCalls(containerID);
  expect(calls).toBeGreaterThan(0);

  await agent.stop();
  await agent.start(agentArgs(cluster.dir));
  // Synced again after the restart (a fresh status write), the same container with the same values, and no new update.
  await waitFor('a sync after the restart', async () => ((await agent.pods()).some((p) => p.metadata?.name === 'resize-restart' && p.status?.phase === 'Running') ? true : undefined), 60_000);
  const again = await waitForPod('resize-restart', 'resized', resized(2));
  expect(again.status!.containerStatuses![0]).toMatchObject({ containerID, restartCount: 0, resources: { limits: { cpu: '300m', memory: '64Mi' } } });
  expect(podCgroupFile(again, 'cpu', 'cpu.cfs_quota_us')).toBe('30000');
  expect(updateCalls(containerID)).toBe(calls);

  await agent.stop();
  try {
    await resize('resize-restart', 'main', { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '400m', memory: '64Mi' } });
  } finally {
    await agent.start(agentArgs(cluster.dir));
  }
  const later = await waitForPod('resize-restart', 'resized after the restart', (p) => resized(3)(p) && p.status?.containerStatuses?.[0]?.resources?.limits?.cpu === '400m', 90_000);
  expect(later.status!.containerStatuses![0]).toMatchObject({ containerID, restartCount: 0 });
  expect(podCgroupFile(later, 'cpu', 'cpu.cfs_quota_us')).toBe('40000');
}, 300_000);

test('the node declares InPlacePodVerticalScalingInitContainers, and a running init container (not a sidecar) is resized in place', async () => {
  const node = await kubectl.get<V1Node>('node', testNode);
  expect((node.status as { declaredFeatures?: string[] }).declaredFeatures).toEqual(['InPlacePodVerticalScalingInitContainers']);
  await create('resize-init', {
    initContainers: [sleeper('setup', { resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } } })],
    containers: [sleeper('main', {})],
  });
  const before = await waitForPod('resize-init', 'init container running', (p) => !!p.status?.initContainerStatuses?.[0]?.state?.running);
  const patch = { spec: { initContainers: [{ name: 'setup', resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '400m', memory: '96Mi' } } }] } };
  expect(await kubectl.run('patch', 'pod', 'resize-init', '--subresource', 'resize', '--type=strategic', '-p', JSON.stringify(patch))).toBe('pod/resize-init patched');
  const after = await waitForPod('resize-init', 'init container resized', (p) => resized(2)(p) && p.status?.initContainerStatuses?.[0]?.resources?.limits?.cpu === '400m');
  expect(after.status!.initContainerStatuses![0]).toMatchObject({
    containerID: before.status!.initContainerStatuses![0]!.containerID,
    restartCount: 0,
    resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '400m', memory: '96Mi' } },
  });
  expect(await kubectl.run('exec', 'resize-init', '-c', 'setup', '--', 'cat', '/sys/fs/cgroup/cpu/cpu.cfs_quota_us')).toBe('40000');
  expect(await kubectl.run('exec', 'resize-init', '-c', 'setup', '--', 'cat', '/sys/fs/cgroup/memory/memory.limit_in_bytes')).toBe(String(96 * 2 ** 20));
}, 240_000);
