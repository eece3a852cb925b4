// Pod volumes against the real runtime: emptyDir (disk and tmpfs), hostPath, subPath, downwardAPI, propagation, image, and their clean-up.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import type { V1Pod } from '@kubernetes/client-node';
import { mountsUnder, readMountInfo } from '../../../src/volume/mounter.js';
import { busybox, isRunning, runtimeObjects, sleep, waitFor, waitForRuntimeGone, testAgent } from '../helpers/agent.js';

const { agent, cri, uids: seenUids } = await testAgent(() => rm(hostDir, { recursive: true, force: true }));
const hostDir = await mkdtemp(join(tmpdir(), 'nodelet-it-hostpath-'));
/** Everything the test created lives under this directory: manifests, root dir, pod logs. */

const infoUid = '5f0c6d8e-1a2b-4c3d-9e8f-0123456789ab';

function remember(p: V1Pod): V1Pod {
  seenUids.add(p.metadata!.uid!);
  return p;
}

const containerId = (p: V1Pod, name: string) =>
  p.status!.containerStatuses!.find((c) => c.name === name)!.containerID!.replace('containerd://', '');

async function exec(p: V1Pod, container: string, script: string): Promise<{ exitCode: number; out: string }> {
  const r = await cri.execSync(containerId(p, container), ['sh', '-c', script], 10);
  return { exitCode: r.exitCode, out: (r.stdout.toString() + r.stderr.toString()).trim() };
}

/** Unmounts whatever is still mounted under the test's directories, deepest first. */

const volumesManifest = `apiVersion: v1
kind: Pod
metadata: {name: vols}
spec:
  terminationGracePeriodSeconds: 2
  securityContext: {fsGroup: 4321}
  volumes:
  - {name: cache, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 16Mi}}
  - {name: host, hostPath: {path: ${hostDir}, type: Directory}}
  containers:
  - name: writer
    image: ${busybox}
    command: ["sh", "-c", "echo shared-data > /cache/msg && mkdir -p /cache/sub && echo in-sub > /cache/sub/file && exec sleep 3600"]
    volumeMounts:
    - {name: cache, mountPath: /cache}
  - name: reader
    image: ${busybox}
    env:
    - {name: SUBDIR, value: sub}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: cache, mountPath: /cache}
    - {name: cache, mountPath: /sub, subPathExpr: "$(SUBDIR)"}
    - {name: cache, mountPath: /fresh, subPath: made/by/nodelet}
    - {name: mem, mountPath: /mem}
    - {name: host, mountPath: /host, readOnly: true}
`;

const infoManifest = (tier: string) => `apiVersion: v1
kind: Pod
metadata:
  name: info
  uid: ${infoUid}
  labels: {app: info, tier: ${tier}}
spec:
  terminationGracePeriodSeconds: 2
  securityContext: {fsGroup: 4321}
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: uid, fieldRef: {fieldPath: metadata.uid}, mode: 0400}
      - {path: mem_limit_mi, resourceFieldRef: {containerName: main, resource: limits.memory, divisor: 1Mi}}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    resources: {limits: {memory: 64Mi}}
    volumeMounts:
    - {name: podinfo, mountPath: /etc/podinfo}
`;

beforeAll(async () => {
  await writeFile(join(hostDir, 'hello.txt'), 'from host\n');
  await writeFile(join(hostDir, 'a-file'), 'not a directory\n');
  await agent.start();
});



describe('pod volumes', () => {
  let vols: V1Pod;

  test('an emptyDir written by one container is read by another; subPath, tmpfs and read-only hostPath mounts', async () => {
    await agent.writeManifest('vols.yaml', volumesManifest);
    vols = remember(await agent.waitForPod('vols', 'Running', isRunning));
    const uid = vols.metadata!.uid!;
    const cacheDir = join(agent.rootDir, 'pods', uid, 'volumes/kubernetes.io~empty-dir/cache');
    expect(existsSync(cacheDir)).toBe(true);

    await waitFor('writer to write', async () => ((await exec(vols, 'reader', 'cat /sub/file')).out === 'in-sub' ? true : undefined), 15_000);
    expect(await exec(vols, 'reader', 'cat /cache/msg')).toEqual({ exitCode: 0, out: 'shared-data' });
    expect(await readFile(join(cacheDir, 'msg'), 'utf8')).toBe('shared-data\n');
    // fsGroup: the emptyDir belongs to the group, setgid, group-writable; files made in it inherit the group.
    expect((await exec(vols, 'reader', 'stat -c "%g %a" /cache /cache/msg')).out).toBe('4321 2777\n4321 644');
    // subPath mounts only the sub directory; a missing one is created by nodelet.
    expect((await exec(vols, 'reader', 'ls /sub')).out).toBe('file');
    expect(existsSync(join(cacheDir, 'made/by/nodelet'))).toBe(true);
    expect(await exec(vols, 'reader', 'ls -A /fresh')).toEqual({ exitCode: 0, out: '' });

    // medium Memory: a tmpfs of the sizeLimit, inside the container and on the host.
    const procMounts = (await exec(vols, 'reader', 'grep " /mem " /proc/mounts')).out;
    expect(procMounts).toMatch(/^tmpfs \/mem tmpfs .*size=16384k/);
    const hostTmpfs = (await readMountInfo()).find((m) => m.mountPoint === join(agent.rootDir, 'pods', uid, 'volumes/kubernetes.io~empty-dir/mem'));
    expect(hostTmpfs?.fsType).toBe('tmpfs');
    expect(await exec(vols, 'reader', 'echo x > /mem/f && cat /mem/f')).toEqual({ exitCode: 0, out: 'x' });

    // hostPath: the host's file, and readOnly refuses writes.
    expect(await exec(vols, 'reader', 'cat /host/hello.txt')).toEqual({ exitCode: 0, out: 'from host' });
    const write = await exec(vols, 'reader', 'touch /host/new');
    expect(write.exitCode).not.toBe(0);
    expect(write.out).toMatch(/Read-only file system/);
    expect(existsSync(join(hostDir, 'new'))).toBe(false);
  });

  test('downwardAPI files show the labels; new labels for the same UID reach the running container', async () => {
    await agent.writeManifest('info.yaml', infoManifest('one'));
    let info = remember(await agent.waitForPod('info', 'Running', isRunning));
    expect(info.metadata!.uid).toBe(infoUid);
    expect(await exec(info, 'main', 'cat /etc/podinfo/labels')).toEqual({ exitCode: 0, out: 'app="info"\ntier="one"' });
    expect((await exec(info, 'main', 'cat /etc/podinfo/name')).out).toBe(info.metadata!.name);
    expect((await exec(info, 'main', 'cat /etc/podinfo/uid')).out).toBe(infoUid);
    expect((await exec(info, 'main', 'cat /etc/podinfo/mem_limit_mi')).out).toBe('64');
    // AtomicWriter layout, read-only in the container, backed by tmpfs.
    expect((await exec(info, 'main', 'readlink /etc/podinfo/..data')).out).toMatch(/^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\w+$/);
    expect((await exec(info, 'main', 'readlink /etc/podinfo/labels')).out).toBe('..data/labels');
    // The item's mode, plus group read for fsGroup (a read-only volume's mask).
    expect((await exec(info, 'main', 'stat -L -c "%g %a" /etc/podinfo/uid /etc/podinfo/labels')).out).toBe('4321 440\n4321 644');
    expect((await exec(info, 'main', 'touch /etc/podinfo/x')).exitCode).not.toBe(0);
    expect((await exec(info, 'main', 'grep " /etc/podinfo " /proc/mounts')).out).toMatch(/^tmpfs \/etc\/podinfo tmpfs ro/);

    const containerBefore = containerId(info, 'main');
    await agent.writeManifest('info.yaml', infoManifest('two'));
    await waitFor('labels file to change in the container', async () =>
      (await exec(info, 'main', 'cat /etc/podinfo/labels')).out === 'app="info"\ntier="two"' ? true : undefined, 30_000, 250);
    info = await agent.waitForPod('info', 'labels updated', (p) => p.metadata?.labels?.tier === 'two');
    // Same pod, same container: only the files changed.
    expect(containerId(info, 'main')).toBe(containerBefore);
  });

  test('a hostPath of the wrong type leaves the pod ContainerCreating (FailedMount), a bad subPathExpr gives CreateContainerConfigError; other pods keep running', async () => {
    await agent.writeManifest('badhost.yaml', `apiVersion: v1
kind: Pod
metadata: {name: badhost}
spec:
  volumes:
  - {name: host, hostPath: {path: ${join(hostDir, 'a-file')}, type: Directory}}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: host, mountPath: /host}
`);
    await agent.writeManifest('badsub.yaml', `apiVersion: v1
kind: Pod
metadata: {name: badsub}
spec:
  volumes:
  - {name: cache, emptyDir: {}}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: cache, mountPath: /data, subPathExpr: "$(NOT_SET)"}
`);
    const waiting = (p: V1Pod) => p.status?.containerStatuses?.[0]?.state?.waiting;
    // As kubelet: a volume that cannot be set up keeps the containers waiting (ContainerCreating) and is retried;
    // the reason is the FailedMount event's (the log's, standalone).
    const failedMount = `hostPath type check failed: ${join(hostDir, 'a-file')} is not a directory, it's a File`;
    await waitFor('the FailedMount reason in the log', async () => agent.output.includes(failedMount), 30_000);
    const badhost = remember(await agent.waitForPod('badhost', 'ContainerCreating', (p) => waiting(p)?.reason === 'ContainerCreating', 30_000));
    expect(badhost.status?.phase).toBe('Pending');
    // Volumes come before the sandbox: nothing of the pod runs.
    expect((await runtimeObjects(cri, [badhost.metadata!.uid!])).sandboxes).toEqual([]);

    const badsub = remember(await agent.waitForPod('badsub', 'CreateContainerConfigError', (p) => waiting(p)?.reason === 'CreateContainerConfigError', 30_000));
    expect(waiting(badsub)!.message).toBe(
      `missing value for NOT_SET (pod default/${badsub.metadata!.name}, container "main", field spec.containers[0].volumeMounts[0].subPathExpr)`,
    );
    for (const name of ['vols', 'info']) expect(isRunning((await agent.pod(name))!)).toBe(true);
    await agent.removeManifest('badhost.yaml');
    await agent.removeManifest('badsub.yaml');
  });

  test('a gitRepo volume is admitted but never set up, as kubelet 1.36+ (GitRepoVolumeDriver locked off): FailedMount, ContainerCreating', async () => {
    await agent.writeManifest('gitrepo.yaml', `apiVersion: v1
kind: Pod
metadata: {name: gitrepo}
spec:
  volumes:
  - {name: src, gitRepo: {repository: "https://example.invalid/repo.git"}}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: src, mountPath: /src}
`);
    // kubelet's words, in the log's MountVolume.SetUp failure.
    const failedMount = 'git-repo volume plugin has been disabled; if necessary, it may be re-enabled by enabling the feature-gate `GitRepoVolumeDriver`';
    await waitFor('the FailedMount reason in the log', async () => agent.output.includes(failedMount), 30_000);
    const p = remember(await agent.waitForPod('gitrepo', 'ContainerCreating', (x) => x.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ContainerCreating', 30_000));
    expect(p.status?.phase).toBe('Pending');
    expect((await runtimeObjects(cri, [p.metadata!.uid!])).sandboxes).toEqual([]);
    await agent.removeManifest('gitrepo.yaml');
  });

  test('Bidirectional: a mount made in a privileged container shows on the host and is unmounted with the pod', async () => {
    await agent.writeManifest('bidir.yaml', `apiVersion: v1
kind: Pod
metadata: {name: bidir}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: shared, emptyDir: {}}
  containers:
  - name: main
    image: ${busybox}
    securityContext: {privileged: true}
    command: ["sh", "-c", "mkdir -p /shared/inner && mount -t tmpfs from-container /shared/inner && exec sleep 3600"]
    volumeMounts:
    - {name: shared, mountPath: /shared, mountPropagation: Bidirectional}
`);
    const bidir = remember(await agent.waitForPod('bidir', 'Running', isRunning));
    const inner = join(agent.rootDir, 'pods', bidir.metadata!.uid!, 'volumes/kubernetes.io~empty-dir/shared/inner');
    await waitFor('the container\'s tmpfs on the host', async () => ((await readMountInfo()).some((m) => m.mountPoint === inner && m.source === 'from-container') ? true : undefined), 15_000);
  });

  test('a static pod mounts an image (present on the node) as an image volume: read-only, a directory of it by subPath', async () => {
    await agent.writeManifest('imgvol.yaml', `apiVersion: v1
kind: Pod
metadata: {name: imgvol}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: img, image: {reference: "${busybox}"}}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: img, mountPath: /img}
    - {name: img, mountPath: /img-bin, subPath: bin}
`);
    const p = remember(await agent.waitForPod('imgvol', 'Running', isRunning));
    // The file source's defaulting: IfNotPresent for a tag other than latest, so the image on the node is used.
    expect(p.spec?.volumes?.[0]?.image?.pullPolicy).toBe('IfNotPresent');
    expect(await exec(p, 'main', 'cmp /img/bin/busybox /bin/busybox && cmp /img-bin/busybox /bin/busybox && echo same')).toEqual({ exitCode: 0, out: 'same' });
    const write = await exec(p, 'main', 'touch /img/new');
    expect(write.exitCode).not.toBe(0);
    expect(write.out).toMatch(/Read-only file system/);
    // Nothing of it under the pod's directory: containerd mounted the image itself.
    expect(mountsUnder(await readMountInfo(), join(agent.rootDir, 'pods', p.metadata!.uid!))).toEqual([]);
  });

  test('removed pods leave no <root-dir>/pods/<uid> and no mount behind', async () => {
    const uids = [...seenUids];
    expect(uids.length).toBeGreaterThanOrEqual(4);
    for (const f of ['vols.yaml', 'info.yaml', 'bidir.yaml', 'imgvol.yaml']) await agent.removeManifest(f);
    await waitForRuntimeGone(cri, uids, 60_000);
    await waitFor('pod dirs to be removed', async () => (uids.every((uid) => !existsSync(join(agent.rootDir, 'pods', uid))) ? true : undefined), 20_000);
    expect(mountsUnder(await readMountInfo(), agent.rootDir)).toEqual([]);
  });

  test('at start, the dir of a pod neither desired nor in the runtime is unmounted and removed', async () => {
    await agent.stop();
    const orphan = join(agent.rootDir, 'pods', 'orphan-uid');
    const tmpfsDir = join(orphan, 'volumes/kubernetes.io~empty-dir/mem');
    await mkdir(tmpfsDir, { recursive: true });
    await execa('mount', ['-t', 'tmpfs', 'nodelet-it-orphan', tmpfsDir]);
    await writeFile(join(tmpfsDir, 'data'), 'x');
    await agent.start();
    await waitFor('orphaned pod dir to be removed', async () => (!existsSync(orphan) ? true : undefined), 20_000);
    expect(mountsUnder(await readMountInfo(), agent.rootDir)).toEqual([]);
    // The agent keeps running normally afterwards.
    await sleep(500);
    expect(agent.running).toBe(true);
  });
});
