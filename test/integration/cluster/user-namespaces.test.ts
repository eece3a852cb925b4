// Pods with their own user namespace in cluster mode, with the real control plane and kubectl: the Node says its runtime
// handlers have user namespaces, a hostUsers: false pod created with kubectl runs in the range nodelet allocated with its
// ServiceAccount token (projected, tmpfs) and a secret readable as root's, procMount Unmasked works, deleting it releases
// the range, and the API server refuses hostNetwork with hostUsers false (UserNamespacesHostNetworkSupport is off).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Node } from '@kubernetes/client-node';
import { mappingsFileName, parseMappingsFile } from '../../../src/host/user-namespaces.js';
import { busybox, isRunning, testNode, waitFor, waitForRuntimeGone } from '../helpers/agent.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';

// The API server's client certificate is accepted by nodelet's kubelet API (for kubectl exec).
const cluster: RealCluster = await startRealCluster({ agentArgs: (dir) => ['--client-ca-file', join(dir, 'ca.crt')] });
const { kubectl, agent, cri, uids } = cluster;

afterAll(() => cluster.stop(), 300_000);

beforeAll(async () => {
  await kubectl.fromFile('create', 'secret-db.json', JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, stringData: { user: 'admin' } }));
  // Pods are admitted once the namespace's ServiceAccount exists (its admission plugin mounts the token).
  await waitFor('the default ServiceAccount', () => kubectl.get('serviceaccount', 'default').catch(() => undefined), 60_000, 500);
}, 90_000);

const podYaml = (name: string, extraSpec = '') => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  hostUsers: false
${extraSpec}  terminationGracePeriodSeconds: 2
  volumes:
  - {name: db, secret: {secretName: db}}
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    securityContext: {procMount: Unmasked}
    volumeMounts:
    - {name: db, mountPath: /etc/db}
`;

async function exec(name: string, script: string): Promise<string> {
  return (await kubectl.run('exec', name, '--', 'sh', '-c', script)).trim();
}

test("the Node's runtime handlers have user namespaces (runc on a kernel that mounts tmpfs idmapped)", async () => {
  const node = await waitFor('runtimeHandlers reported', async () => {
    const n = await kubectl.get<V1Node>('node', testNode);
    return n.status?.runtimeHandlers?.length ? n : undefined;
  }, 60_000, 500);
  expect(node.status!.runtimeHandlers).toContainEqual({ name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } });
});

test('a hostUsers: false pod runs in its range, reads its token and secret as root, /proc unmasked; deleting it releases the range', async () => {
  expect(await kubectl.fromFile('create', 'userns.yaml', podYaml('userns'))).toBe('pod/userns created');
  const p = await kubectl.waitForPod('userns', 'Running', isRunning, { seen: uids, timeoutMs: 90_000 });
  const file = join(agent.rootDir, 'pods', p.metadata!.uid!, mappingsFileName);
  const range = parseMappingsFile(await readFile(file, 'utf8'));
  expect((await exec('userns', 'cat /proc/self/uid_map')).split(/\s+/).map(Number)).toEqual([0, range.firstId, 65536]);
  expect((await exec('userns', 'cat /proc/self/gid_map')).split(/\s+/).map(Number)).toEqual([0, range.firstId, 65536]);
  // The projected ServiceAccount token and the secret are tmpfs files of the host's root, mounted idmapped.
  const token = '/var/run/secrets/kubernetes.io/serviceaccount/token';
  expect(await exec('userns', `stat -L -c "%u %g" ${token} /etc/db/user && cat /etc/db/user`)).toBe('0 0\n0 0\nadmin');
  expect((await exec('userns', `cat ${token}`)).split('.')).toHaveLength(3);
  expect(await exec('userns', 'grep -c " /proc/keys " /proc/mounts || true')).toBe('0');

  await kubectl.run('delete', 'pod', 'userns', '--wait=true', '--timeout=60s');
  await waitForRuntimeGone(cri, [p.metadata!.uid!], 60_000);
  await waitFor('the userns file gone', async () => !existsSync(file), 30_000);
  expect(agent.logLines().some((l) => l.msg === 'Released the pod user namespace' && l.podUid === p.metadata!.uid)).toBe(true);
});

test('the API server refuses hostNetwork with hostUsers false', async () => {
  const refused = await kubectl.fromFile('create', 'userns-hostnet.yaml', podYaml('userns-hostnet', '  hostNetwork: true\n')).then(
    () => '',
    (err: Error) => err.message,
  );
  expect(refused).toContain('spec.hostNetwork: Forbidden: when `hostUsers` is false');
});
