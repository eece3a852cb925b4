// Init containers run one at a time, in order, each to success, before the app containers; sidecars keep running.
import { readFile } from 'node:fs/promises';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { podUidLabel } from '../../../src/core/labels.js';
import { busybox, containerPid, staticName, testAgent } from '../helpers/agent.js';

const { agent, cri, uids } = await testAgent();

beforeAll(async () => {
  await agent.start();
});



async function waitPod(name: string, what: string, ok: (p: V1Pod) => boolean, timeoutMs = 60_000): Promise<V1Pod> {
  const p = await agent.waitForPod(name, what, ok, timeoutMs);
  uids.add(p.metadata!.uid!);
  return p;
}

const terminated = (s: V1ContainerStatus | undefined) => s?.state?.terminated;
const time = (d: Date | string | undefined) => new Date(d as string).getTime();

test('two init containers run in order, each to success, then the app container starts', async () => {
  await agent.writeManifest('ordered.yaml', `apiVersion: v1
kind: Pod
metadata: {name: ordered}
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: first, image: ${busybox}, command: ["sh", "-c", "echo first; sleep 1"]}
  - {name: second, image: ${busybox}, command: ["sh", "-c", "echo second; sleep 1"]}
  containers:
  - {name: app, image: ${busybox}, command: ["sh", "-c", "echo app; exec sleep 3600"]}
`);
  const pod = await waitPod('ordered', 'Running', (p) => p.status?.phase === 'Running' && !!p.status.containerStatuses?.[0]?.state?.running);
  const [first, second] = pod.status!.initContainerStatuses!;
  expect(terminated(first)).toMatchObject({ exitCode: 0, reason: 'Completed' });
  expect(terminated(second)).toMatchObject({ exitCode: 0, reason: 'Completed' });
  // The runtime's own start and finish times show the order: first ends before second starts, second before app.
  expect(time(terminated(first)!.finishedAt)).toBeLessThanOrEqual(time(terminated(second)!.startedAt));
  expect(time(terminated(second)!.finishedAt)).toBeLessThanOrEqual(time(pod.status!.containerStatuses![0]!.state!.running!.startedAt));
  expect(pod.status!.conditions!.find((c) => c.type === 'Initialized')!.status).toBe('True');
  const logDir = `${agent.podLogsDir}/default_${staticName('ordered')}_${pod.metadata!.uid}`;
  expect(await readFile(`${logDir}/first/0.log`, 'utf8')).toContain('first');
  expect(await readFile(`${logDir}/second/0.log`, 'utf8')).toContain('second');
});

test('a failing init container under restartPolicy Never fails the pod and no app container is ever created', async () => {
  await agent.writeManifest('broken-init.yaml', `apiVersion: v1
kind: Pod
metadata: {name: broken-init}
spec:
  restartPolicy: Never
  initContainers:
  - {name: setup, image: ${busybox}, command: ["sh", "-c", "exit 5"]}
  containers:
  - {name: app, image: ${busybox}, command: ["sleep", "3600"]}
`);
  const pod = await waitPod('broken-init', 'Failed', (p) => p.status?.phase === 'Failed');
  expect(terminated(pod.status!.initContainerStatuses![0])).toMatchObject({ exitCode: 5, reason: 'Error' });
  expect(pod.status!.containerStatuses![0]!.state!.waiting!.reason).toBe('PodInitializing');
  const containers = await cri.listContainers({ labelSelector: { [podUidLabel]: pod.metadata!.uid! } });
  expect(containers.map((c) => c.metadata.name)).toEqual(['setup']);
});

test('a failing init container under OnFailure is retried with a growing restart count, app still waiting', async () => {
  await agent.writeManifest('retry-init.yaml', `apiVersion: v1
kind: Pod
metadata: {name: retry-init}
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: setup, image: ${busybox}, command: ["sh", "-c", "exit 1"]}
  containers:
  - {name: app, image: ${busybox}, command: ["sleep", "3600"]}
`);
  const pod = await waitPod('retry-init', 'init retried', (p) => (p.status?.initContainerStatuses?.[0]?.restartCount ?? 0) >= 1, 40_000);
  expect(pod.status!.phase).toBe('Pending');
  expect(pod.status!.conditions!.find((c) => c.type === 'Initialized')).toMatchObject({ status: 'False', reason: 'ContainersNotInitialized' });
  const names = (await cri.listContainers({ labelSelector: { [podUidLabel]: pod.metadata!.uid! } })).map((c) => c.metadata.name);
  expect(names).not.toContain('app');
  await agent.removeManifest('retry-init.yaml');
});

test('a sidecar starts first, keeps running beside the app, and is restarted when it dies', async () => {
  await agent.writeManifest('sidecar.yaml', `apiVersion: v1
kind: Pod
metadata: {name: sidecar}
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: proxy, image: ${busybox}, restartPolicy: Always, command: ["sleep", "3600"]}
  - {name: setup, image: ${busybox}, command: ["true"]}
  containers:
  - {name: app, image: ${busybox}, command: ["sleep", "3600"]}
`);
  const pod = await waitPod('sidecar', 'Running with sidecar', (p) =>
    p.status?.phase === 'Running' && !!p.status.containerStatuses?.[0]?.state?.running && !!p.status.initContainerStatuses?.[0]?.state?.running);
  const proxy = pod.status!.initContainerStatuses![0]!;
  expect(proxy).toMatchObject({ ready: true, started: true, restartCount: 0 });
  expect(time(proxy.state!.running!.startedAt)).toBeLessThanOrEqual(time(terminated(pod.status!.initContainerStatuses![1])!.startedAt));

  process.kill(await containerPid(cri, proxy.containerID!.replace('containerd://', '')), 'SIGKILL');
  const after = await waitPod('sidecar', 'sidecar restarted', (p) => {
    const s = p.status?.initContainerStatuses?.[0];
    return s?.restartCount === 1 && !!s.state?.running;
  }, 30_000);
  // The app container was not touched, and initialization did not run again.
  expect(after.status!.containerStatuses![0]!.containerID).toBe(pod.status!.containerStatuses![0]!.containerID);
  expect(after.status!.initContainerStatuses![1]!.restartCount).toBe(0);
});

test('a sidecar\'s startup probe holds the next init container back; its readiness joins the pod\'s', async () => {
  await agent.writeManifest('sidecar-probes.yaml', `apiVersion: v1
kind: Pod
metadata: {name: sidecar-probes}
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: proxy
    image: ${busybox}
    restartPolicy: Always
    command: ["sh", "-c", "sleep 3; touch /tmp/started; exec sleep 3600"]
    startupProbe: {exec: {command: ["test", "-f", "/tmp/started"]}, periodSeconds: 1, failureThreshold: 30}
    readinessProbe: {exec: {command: ["test", "-f", "/tmp/ready"]}, periodSeconds: 1}
  - {name: setup, image: ${busybox}, command: ["true"]}
  containers:
  - {name: app, image: ${busybox}, command: ["sleep", "3600"]}
`);
  const pod = await waitPod('sidecar-probes', 'app running', (p) => !!p.status?.containerStatuses?.[0]?.state?.running, 60_000);
  const proxy = pod.status!.initContainerStatuses![0]!;
  const setup = terminated(pod.status!.initContainerStatuses![1])!;
  // The proxy makes its startup probe pass only after 3 s: setup cannot have started before that.
  expect(time(setup.startedAt) - time(proxy.state!.running!.startedAt)).toBeGreaterThanOrEqual(3_000);
  expect(proxy).toMatchObject({ started: true, ready: false });
  expect(pod.status!.conditions!.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', message: 'containers with unready status: [proxy]' });

  await cri.execSync(proxy.containerID!.replace('containerd://', ''), ['touch', '/tmp/ready'], 5);
  await waitPod('sidecar-probes', 'Ready once the sidecar is', (p) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True', 20_000);
});
