// Pods the real kube-apiserver accepts but nodelet cannot run, beside a good pod, against the real control plane
// (test/cluster) and runtime: each is Failed with a reason and a Warning event naming it, the good pod runs, the agent
// stays up, and nothing escapes its watch or sync loops.
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { busybox, isRunning, testNode, waitFor } from '../helpers/agent.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';

const cluster: RealCluster = await startRealCluster();
const { kubectl, agent, uids } = cluster;

afterAll(() => cluster.stop(), 300_000);

/** Bound to the node in the manifest: a pod the scheduler would hold back (a missing PVC) still reaches nodelet. */
const podYaml = (name: string, spec: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  nodeName: ${testNode}
  terminationGracePeriodSeconds: 2
  automountServiceAccountToken: false
${spec}`;

const container = (name: string, extra = '') => `  - name: ${name}
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
${extra}`;

// Each variable repeats the one before a hundred times: 1 KB of spec, a megabyte at C, 100 MB at D.
const envBomb = `    env:
    - {name: A, value: "${'x'.repeat(100)}"}
    - {name: B, value: "${'$(A)'.repeat(100)}"}
    - {name: C, value: "${'$(B)'.repeat(100)}"}
    - {name: D, value: "${'$(C)'.repeat(100)}"}
`;

const hostile = [
  {
    name: 'env-bomb',
    spec: `  containers:\n${container('main', envBomb)}`,
    reason: 'PodExceedsLimits',
    message: "Pod default/env-bomb: spec.containers[0].env[2].value: expands to more than 131072 characters, Linux's limit for one argument or environment variable",
  },
  {
    name: 'crowd',
    spec: `  containers:\n${Array.from({ length: 300 }, (_, i) => container(`c${i}`)).join('')}`,
    reason: 'PodExceedsLimits',
    message: 'Pod default/crowd: spec.containers: Too many: 300: must have at most 250 items (init containers included)',
  },
  {
    name: 'claim',
    spec: `  containers:\n${container('main')}  volumes:\n  - name: data\n    persistentVolumeClaim: {claimName: nowhere}\n`,
    reason: 'UnsupportedPodSpec',
    message: 'Pod default/claim uses fields nodelet does not support yet: spec.volumes[0].persistentVolumeClaim',
  },
];

test('each pod nodelet cannot handle is Failed with a reason and an event; the good pod runs beside them', async () => {
  // The ServiceAccount admission plugin refuses pods until the namespace's default ServiceAccount exists.
  await waitFor('the default ServiceAccount', () => kubectl.get('serviceaccount', 'default').catch(() => undefined), 60_000, 500);
  for (const h of hostile) expect(await kubectl.fromFile('create', `${h.name}.yaml`, podYaml(h.name, h.spec))).toBe(`pod/${h.name} created`);
  expect(await kubectl.fromFile('create', 'good.yaml', podYaml('good', `  containers:\n${container('main')}`))).toBe('pod/good created');

  const good = await kubectl.waitForPod('good', 'Running', isRunning, { seen: uids, timeoutMs: 90_000 });
  await cluster.track(good);
  for (const h of hostile) {
    const pod: V1Pod = await kubectl.waitForPod(h.name, 'Failed', (p) => p.status?.phase === 'Failed', { seen: uids });
    expect(pod.status).toMatchObject({ phase: 'Failed', reason: h.reason, message: `Pod was rejected: ${h.message}` });
    const events = await waitFor(`${h.reason} event of ${h.name}`, async () => {
      const list = (await kubectl.get<{ items: CoreV1Event[] }>('events', '-n', 'default')).items;
      const mine = list.filter((e) => e.involvedObject.name === h.name && e.reason === h.reason);
      return mine.length > 0 ? mine : undefined;
    }, 30_000);
    expect(events).toEqual([expect.objectContaining({ type: 'Warning', message: h.message, source: { component: 'kubelet', host: testNode } })]);
  }
  // None of them reached the runtime.
  const sandboxes = (await agent.pods()).filter((p) => hostile.some((h) => h.name === p.metadata?.name) && p.status?.podIP);
  expect(sandboxes).toEqual([]);

  expect(agent.running).toBe(true);
  const escaped = agent.logLines().filter((l) => /Consumer of API objects failed|static pod consumer failed|RangeError|Maximum call stack|unhandled/i.test(JSON.stringify(l)));
  expect(escaped).toEqual([]);

  for (const name of [...hostile.map((h) => h.name), 'good']) await kubectl.run('delete', 'pod', name, '--wait=true', '--timeout=60s');
}, 300_000);
