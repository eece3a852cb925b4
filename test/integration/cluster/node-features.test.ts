// kubelet's node features of 1.33-1.35 on a nodelet node of the real control plane, the real containerd 2.4.2 and runc:
// node.status.features and runtimeHandlers as containerd's Status tells them; supplementalGroupsPolicy (GA 1.35) seen in
// the process (`id -G`) and in containerStatuses[].user, Merge adding the groups the image's /etc/group gives the user
// and Strict not; recursive read-only mounts (GA 1.33), a tmpfs mounted under a read-only hostPath becoming read-only
// in the container with recursiveReadOnly and staying writable without, as status.volumeMounts say; spec.hostnameOverride
// (GA 1.37) as the pod's hostname, without a domain; sleep lifecycle actions of 0 seconds (allowed since 1.34).
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { busybox, waitFor } from '../helpers/agent.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';
import { layerOf, randomImageLayers, startRegistry, type Registry } from '../helpers/registry.js';

const cluster: RealCluster = await startRealCluster();
const { kubectl, uids } = cluster;
let registry: Registry | undefined;
/** An image with the user and groups of Kubernetes' e2e SupplementalGroupsPolicy test (agnhost's): uid 1000, in group 50000. */
let groupsImage = '';
/** A host directory with a tmpfs mounted at sub/: the hostPath of the recursive read-only test. */
const hostDir = await mkdtemp(join(tmpdir(), 'nodelet-rro-'));
let tmpfsMounted = false;

beforeAll(async () => {
  registry = await startRegistry();
  const etc = await mkdtemp(join(tmpdir(), 'nodelet-groups-image-'));
  try {
    await mkdir(join(etc, 'etc'));
    await writeFile(join(etc, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n');
    await writeFile(join(etc, 'etc/group'), 'root:x:0:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n');
    await registry.upload('nodelet/groups:1', [...(await randomImageLayers(0, 0)), await layerOf(etc)]);
  } finally {
    await rm(etc, { recursive: true, force: true });
  }
  groupsImage = `${registry.host}/nodelet/groups:1`;
  await mkdir(join(hostDir, 'sub'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'nodelet-rro-test', join(hostDir, 'sub')]);
  tmpfsMounted = true;
}, 120_000);

afterAll(async () => {
  try {
    await cluster.stop();
  } finally {
    await registry?.stop();
    if (tmpfsMounted) execFileSync('umount', [join(hostDir, 'sub')]);
    await rm(hostDir, { recursive: true, force: true });
  }
}, 300_000);

/** Creates a pod whose one container runs `script` once, and returns it when that container has terminated. */
async function runToCompletion(name: string, spec: Record<string, unknown>, container: Record<string, unknown>, script: string): Promise<V1Pod> {
  await kubectl.fromFile('create', `${name}.json`, JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { restartPolicy: 'Never', terminationGracePeriodSeconds: 1, ...spec, containers: [{ name: 'main', command: ['sh', '-c', script], ...container }] },
  }));
  return waitFor(`pod ${name}'s container terminated`, async () => {
    const p = await kubectl.get<V1Pod>('pod', name);
    uids.add(p.metadata!.uid!);
    return p.status?.containerStatuses?.[0]?.state?.terminated ? p : undefined;
  }, 120_000, 500);
}

test("node.status.features and runtimeHandlers say what containerd's Status says (user namespaces: none through nodelet)", async () => {
  const node = await waitFor('node.status.features', async () => {
    const n = await cluster.node();
    return n.status?.features ? n : undefined;
  }, 30_000, 500);
  expect(node.status!.features).toEqual({ supplementalGroupsPolicy: true });
  const handlers = node.status!.runtimeHandlers ?? [];
  // containerd lists its default handler as '' beside its runtimes by name; runc 1.5.3 on this kernel (>= 5.12) has rro.
  expect(handlers.find((h) => h.name === '')).toEqual({ name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } });
  expect(handlers.find((h) => h.name === 'runc')?.features).toEqual({ recursiveReadOnlyMounts: true, userNamespaces: true });
});

test.each([
  ['Merge', '1000 50000 60000', [1000, 50000, 60000]],
  ['Strict', '1000 60000', [1000, 60000]],
])('supplementalGroupsPolicy %s: the process\'s groups (id -G) and containerStatuses[].user', async (policy, idG, groups) => {
  const pod = await runToCompletion(`groups-${policy.toLowerCase()}`,
    { securityContext: { runAsUser: 1000, supplementalGroups: [60000], supplementalGroupsPolicy: policy } },
    { image: groupsImage }, 'busybox id -G > /dev/termination-log');
  const status = pod.status!.containerStatuses![0]!;
  expect(status.state!.terminated).toMatchObject({ exitCode: 0, message: `${idG}\n` });
  expect(status.user).toEqual({ linux: { uid: 1000, gid: 1000, supplementalGroups: groups } });
}, 180_000);

test('recursiveReadOnly: a submount of a read-only hostPath is read-only too with Enabled and IfPossible, writable without', async () => {
  const probe = (dir: string) => `if touch ${dir}/sub/probe 2>/dev/null; then echo writable; else echo read-only; fi`;
  const pod = await runToCompletion('rro', { volumes: [{ name: 'host', hostPath: { path: hostDir, type: 'Directory' } }] }, {
    image: busybox,
    volumeMounts: [
      { name: 'host', mountPath: '/enabled', readOnly: true, recursiveReadOnly: 'Enabled' },
      { name: 'host', mountPath: '/ifpossible', readOnly: true, recursiveReadOnly: 'IfPossible' },
      { name: 'host', mountPath: '/plain', readOnly: true },
    ],
  }, `{ ${probe('/enabled')}; ${probe('/ifpossible')}; ${probe('/plain')}; touch /plain/top 2>/dev/null || echo top read-only; } > /dev/termination-log`);
  const status = pod.status!.containerStatuses![0]!;
  expect(status.state!.terminated).toMatchObject({ exitCode: 0, message: 'read-only\nread-only\nwritable\ntop read-only\n' });
  // (The ServiceAccount token's mount follows: read-only, Disabled.)
  expect(status.volumeMounts?.filter((m) => m.name === 'host')).toEqual([
    { name: 'host', mountPath: '/enabled', readOnly: true, recursiveReadOnly: 'Enabled' },
    { name: 'host', mountPath: '/ifpossible', readOnly: true, recursiveReadOnly: 'Enabled' },
    { name: 'host', mountPath: '/plain', readOnly: true, recursiveReadOnly: 'Disabled' },
  ]);
}, 180_000);

test("hostnameOverride is the pod's hostname, in its UTS namespace and /etc/hosts, with no domain though it has a subdomain", async () => {
  const pod = await runToCompletion('named', { hostnameOverride: 'custom-host.example', subdomain: 'sub' }, { image: busybox },
    'hostname > /dev/termination-log; echo "$HOSTNAME" >> /dev/termination-log; tail -n 1 /etc/hosts >> /dev/termination-log');
  expect(pod.status!.containerStatuses![0]!.state!.terminated).toMatchObject({
    exitCode: 0,
    message: `custom-host.example\ncustom-host.example\n${pod.status!.podIP}\tcustom-host.example\n`,
  });
}, 180_000);

test('sleep lifecycle actions of 0 seconds: postStart and preStop return at once', async () => {
  await kubectl.fromFile('create', 'sleep-zero.json', JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'sleep-zero' },
    spec: {
      terminationGracePeriodSeconds: 30,
      containers: [{
        name: 'main',
        image: busybox,
        command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 0.2; done"],
        lifecycle: { postStart: { sleep: { seconds: 0 } }, preStop: { sleep: { seconds: 0 } } },
      }],
    },
  }));
  const running = await waitFor('pod sleep-zero running', async () => {
    const p = await kubectl.get<V1Pod>('pod', 'sleep-zero');
    uids.add(p.metadata!.uid!);
    return p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
  }, 120_000, 500);
  expect(running.status!.containerStatuses![0]!.restartCount).toBe(0);
  // The preStop hook sleeps 0 s, then the container's TERM trap ends it: far within the 30 s grace period.
  const t0 = Date.now();
  await kubectl.run('delete', 'pod', 'sleep-zero', '--wait=true', '--timeout=60s');
  expect(Date.now() - t0).toBeLessThan(15_000);
  const events = (await kubectl.get<{ items: CoreV1Event[] }>('events', '--field-selector', `involvedObject.uid=${running.metadata!.uid}`)).items;
  expect(events.filter((e) => /Hook/.test(e.reason ?? '')).map((e) => `${e.reason}: ${e.message}`)).toEqual([]);
}, 180_000);
