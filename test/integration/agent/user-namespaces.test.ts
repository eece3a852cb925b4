// Pods with their own user namespace (hostUsers: false) on the real containerd and runc: the range nodelet allocated is
// the pod's uid_map and gid_map, its volumes (emptyDir on disk, downwardAPI on tmpfs) are mounted idmapped so root's
// files are root's inside, procMount Unmasked leaves /proc unmasked, a restarted agent keeps the pod's range (containerd
// refuses a container whose user namespace differs from its sandbox's) and gives the next pod another, and nothing of
// a removed pod's allocation stays behind.
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { mappingsFileName, parseMappingsFile, type IdRange } from '../../../src/host/user-namespaces.js';
import { busybox, containerPid, isRunning, waitFor, waitForRuntimeGone, testAgent } from '../helpers/agent.js';

const { agent, cri, uids: seenUids } = await testAgent();

const loop = 'trap "exit 0" TERM; while true; do sleep 1; done';

function manifest(name: string, hostUsers: boolean | undefined): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, labels: {app: ${name}}}
spec:
  terminationGracePeriodSeconds: 2
${hostUsers === undefined ? '' : `  hostUsers: ${hostUsers}\n`}  volumes:
  - {name: cache, emptyDir: {}}
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
  containers:
  - name: main
    image: ${busybox}
    command: ["sh", "-c", ${JSON.stringify(`echo from-main > /cache/by-main; ${loop}`)}]
${hostUsers === false ? '    securityContext: {procMount: Unmasked}\n' : ''}    volumeMounts:
    - {name: cache, mountPath: /cache}
    - {name: podinfo, mountPath: /etc/podinfo}
  - name: masked
    image: ${busybox}
    command: ["sh", "-c", ${JSON.stringify(loop)}]
`;
}

async function runningPod(name: string): Promise<V1Pod> {
  const p = await agent.waitForPod(name, 'Running', isRunning, 90_000);
  seenUids.add(p.metadata!.uid!);
  return p;
}

const containerId = (p: V1Pod, name: string) =>
  p.status!.containerStatuses!.find((c) => c.name === name)!.containerID!.replace('containerd://', '');

async function exec(p: V1Pod, container: string, script: string): Promise<string> {
  const r = await cri.execSync(containerId(p, container), ['sh', '-c', script], 10);
  if (r.exitCode !== 0) throw new Error(`${script}: exit ${r.exitCode}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** /proc/self/uid_map or gid_map read inside the container: its lines as numbers. */
async function idMap(p: V1Pod, container: string, which: 'uid_map' | 'gid_map'): Promise<number[][]> {
  return (await exec(p, container, `cat /proc/self/${which}`)).split('\n').map((l) => l.trim().split(/\s+/).map(Number));
}

const podDir = (p: V1Pod) => join(agent.rootDir, 'pods', p.metadata!.uid!);

async function allocatedRange(p: V1Pod): Promise<IdRange> {
  return parseMappingsFile(await readFile(join(podDir(p), mappingsFileName), 'utf8'));
}

/** The host uid the container's first process runs as (Uid: real effective saved fs). */
async function hostUid(p: V1Pod, container: string): Promise<number> {
  const status = await readFile(`/proc/${await containerPid(cri, containerId(p, container))}/status`, 'utf8');
  return Number(/^Uid:\s+(\d+)/m.exec(status)![1]);
}

beforeAll(async () => {
  await agent.start();
});

test("containerd's Status tells its runtime handlers, the default one with user namespaces (runc's idmapped mounts)", async () => {
  const { handlers } = await cri.status();
  expect(handlers).toContainEqual({ name: '', recursiveReadOnlyMounts: true, userNamespaces: true });
  expect(handlers).toContainEqual(expect.objectContaining({ name: 'runc', userNamespaces: true }));
});

describe('hostUsers: false', () => {
  let first: V1Pod;
  let range: IdRange;

  test("the pod's uid_map and gid_map are the range nodelet allocated and wrote to the pod's directory", async () => {
    await agent.writeManifest('userns-a.yaml', manifest('userns-a', false));
    first = await runningPod('userns-a');
    range = await allocatedRange(first);
    expect(range.length).toBe(65536);
    expect(range.firstId % 65536).toBe(0);
    expect(range.firstId).toBeGreaterThanOrEqual(65536);
    for (const container of ['main', 'masked']) {
      expect(await idMap(first, container, 'uid_map')).toEqual([[0, range.firstId, 65536]]);
      expect(await idMap(first, container, 'gid_map')).toEqual([[0, range.firstId, 65536]]);
      // Root in the pod is the range's first ID on the host.
      expect(await exec(first, container, 'id -u')).toBe('0');
      expect(await hostUid(first, container)).toBe(range.firstId);
    }
  });

  test('volumes are mounted idmapped: root-owned files are root-owned inside, on disk and on tmpfs', async () => {
    // emptyDir on the node's disk: a file root in the pod wrote is root's on the host too (not the range's ID).
    const cacheDir = join(podDir(first), 'volumes/kubernetes.io~empty-dir/cache');
    await waitFor('main to write its file', async () => existsSync(join(cacheDir, 'by-main')));
    expect(await exec(first, 'main', 'cat /cache/by-main && stat -c "%u %g" /cache /cache/by-main')).toBe('from-main\n0 0\n0 0');
    const onHost = await stat(join(cacheDir, 'by-main'));
    expect([onHost.uid, onHost.gid]).toEqual([0, 0]);
    // downwardAPI on tmpfs (Linux 6.3 mounts tmpfs idmapped): readable, root's, not the overflow ID 65534.
    expect(await exec(first, 'main', 'cat /etc/podinfo/labels')).toBe('app="userns-a"');
    expect(await exec(first, 'main', 'stat -L -c "%u %g" /etc/podinfo/labels')).toBe('0 0');
  });

  test('procMount Unmasked leaves /proc unmasked in its container; the other container keeps the masked paths', async () => {
    // Two of kubelet's masked paths every kernel has (this host's has no /proc/kcore); masked is /dev/null mounted over.
    const maskedMounts = (text: string) => text.split('\n').filter((l) => / \/proc\/(keys|timer_list) /.test(l));
    expect(maskedMounts(await exec(first, 'main', 'cat /proc/mounts'))).toEqual([]);
    expect(maskedMounts(await exec(first, 'masked', 'cat /proc/mounts'))).toHaveLength(2);
    // /proc/sys is read-only for Default, writable (as far as the namespace goes) for Unmasked.
    expect(await exec(first, 'main', 'grep " /proc/sys " /proc/mounts || echo none')).toBe('none');
    expect(await exec(first, 'masked', 'grep " /proc/sys " /proc/mounts')).toMatch(/ ro,/);
  });

  test("a restarted agent keeps the pod's range (its restarted container joins the sandbox's user namespace); the next pod gets another", async () => {
    await agent.stop();
    await agent.start();
    // containerd refuses a container whose user namespace options differ from its sandbox's: the restart shows the
    // range was read back from the pod's file.
    process.kill(await containerPid(cri, containerId(first, 'main')), 'SIGKILL');
    first = await agent.waitForPod('userns-a', 'main restarted', (p) => {
      const main = p.status?.containerStatuses?.find((c) => c.name === 'main');
      return main?.restartCount === 1 && !!main.state?.running;
    }, 90_000);
    expect(await idMap(first, 'main', 'uid_map')).toEqual([[0, range.firstId, 65536]]);
    expect(await allocatedRange(first)).toEqual(range);

    await agent.writeManifest('userns-b.yaml', manifest('userns-b', false));
    const second = await runningPod('userns-b');
    const other = await allocatedRange(second);
    expect(other.firstId).not.toBe(range.firstId);
    expect(await idMap(second, 'main', 'uid_map')).toEqual([[0, other.firstId, 65536]]);
  });

  test("a pod without hostUsers runs in the host's user namespace (identity map, no userns file)", async () => {
    await agent.writeManifest('host-users.yaml', manifest('host-users', undefined));
    const p = await runningPod('host-users');
    expect(await idMap(p, 'main', 'uid_map')).toEqual([[0, 0, 4294967295]]);
    expect(existsSync(join(podDir(p), mappingsFileName))).toBe(false);
  });

  test('removed pods leave no allocation: their directories and userns files are gone, their ranges released', async () => {
    const pods = await agent.pods();
    const uids = pods.map((p) => p.metadata!.uid!);
    for (const file of ['userns-a.yaml', 'userns-b.yaml', 'host-users.yaml']) await agent.removeManifest(file);
    await waitForRuntimeGone(cri, uids, 60_000);
    await waitFor('pod directories removed', async () => uids.every((uid) => !existsSync(join(agent.rootDir, 'pods', uid))), 30_000);
    const released = agent.logLines().filter((l) => l.msg === 'Released the pod user namespace').map((l) => l.podUid);
    expect(released.sort()).toEqual(pods.filter((p) => p.spec?.hostUsers === false).map((p) => p.metadata!.uid).sort());
  });
});

test('hostUsers false with hostNetwork is refused as the apiserver refuses it', async () => {
  await agent.writeManifest('userns-hostnet.yaml', manifest('userns-hostnet', false).replace('  hostUsers: false\n', '  hostUsers: false\n  hostNetwork: true\n'));
  await waitFor('the manifest refused', async () =>
    agent.output.includes('spec.hostNetwork: Forbidden: when `hostUsers` is false') ? true : undefined, 30_000);
  expect(await agent.pod('userns-hostnet')).toBeUndefined();
  await agent.removeManifest('userns-hostnet.yaml');
});
