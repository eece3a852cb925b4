// Cluster mode against the real control plane (test/cluster) and the real runtime: configMap, secret and projected
// volumes, envFrom and keyRefs, missing objects, image volumes pulled from a local registry (test/integration/helpers/
// registry.ts); objects made with the built kubectl, pods bound by kube-scheduler.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { podUidLabel } from '../../../src/core/labels.js';
import { mountsUnder, readMountInfo } from '../../../src/volume/mounter.js';
import { busybox, isRunning, testNode, waitFor, waitForRuntimeGone } from '../helpers/agent.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';
import { fileLayer, startRegistry, type Registry } from '../helpers/registry.js';

const cluster: RealCluster = await startRealCluster();
const { kubectl, agent, cri, uids } = cluster;
let registry: Registry | undefined;

afterAll(async () => {
  try {
    await cluster.stop();
  } finally {
    // After the pods: it removes the images pulled from it.
    await registry?.stop();
  }
}, 300_000);

const configMap = (name: string, data: Record<string, string>) =>
  kubectl.fromFile('create', `cm-${name}.json`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data }));

beforeAll(async () => {
  await configMap('app-config', { greeting: 'hello', 'log.level': 'info' });
  await kubectl.fromFile('create', 'secret-db.json', JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, stringData: { user: 'admin', password: 's3cr3t' } }));
  // Pods are admitted once the namespace's ServiceAccount exists (the ServiceAccount admission plugin mounts its token).
  await waitFor('the default ServiceAccount', () => kubectl.get('serviceaccount', 'default').catch(() => undefined), 60_000, 500);
}, 90_000);

/** A GET to the API server with a bearer token (verifying the server against the cluster CA). */
async function getWithToken(path: string, token: string): Promise<{ status: number; body: { message?: string } }> {
  const ca = await readFile(cluster.plane.caCert, 'utf8');
  return new Promise((resolve, reject) => {
    const req = request(`${cluster.plane.server}${path}`, { ca, headers: { authorization: `Bearer ${token}`, accept: 'application/json' }, agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as { message?: string } }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

async function pod(name: string): Promise<V1Pod | undefined> {
  const p = (await agent.pods()).find((x) => x.metadata?.name === name && x.metadata?.namespace === 'default');
  if (p) uids.add(p.metadata!.uid!);
  return p;
}

function waitForPod(name: string, what: string, ok: (p: V1Pod) => boolean, timeoutMs = 60_000): Promise<V1Pod> {
  return waitFor(`${name}: ${what}`, async () => {
    const p = await pod(name);
    return p && ok(p) ? p : undefined;
  }, timeoutMs);
}

/** `kubectl create -f`, then kube-scheduler binds the pod to this node (the only one). */
async function createPod(yaml: string, name: string): Promise<void> {
  expect(await kubectl.fromFile('create', `${name}.yaml`, yaml)).toBe(`pod/${name} created`);
  await waitFor(`${name} bound by kube-scheduler`, async () => ((await kubectl.get<V1Pod>('pod', name)).spec?.nodeName === testNode ? true : undefined), 60_000, 500);
}

const containerId = (p: V1Pod, name: string) => p.status!.containerStatuses!.find((c) => c.name === name)!.containerID!.replace('containerd://', '');

async function exec(p: V1Pod, container: string, script: string): Promise<{ exitCode: number; out: string }> {
  const r = await cri.execSync(containerId(p, container), ['sh', '-c', script], 10);
  return { exitCode: r.exitCode, out: (r.stdout.toString() + r.stderr.toString()).trim() };
}

const waiting = (p: V1Pod) => p.status?.containerStatuses?.[0]?.state?.waiting;

test('configMap, secret and projected volumes and env from the API server reach the container; a configMap update reaches its files', async () => {
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: vols}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: cfg, configMap: {name: app-config}}
  - {name: sec, secret: {secretName: db, defaultMode: 256, items: [{key: password, path: db/password}]}}  # 0400
  - name: tok
    projected:
      sources:
      - serviceAccountToken: {path: vault-token, audience: vault, expirationSeconds: 600}
      - configMap: {name: app-config, items: [{key: greeting, path: greeting.txt}]}
      - downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    envFrom:
    - {prefix: CFG_, configMapRef: {name: app-config}}
    - {secretRef: {name: db}}
    - {configMapRef: {name: not-there, optional: true}}
    env:
    - {name: GREETING, valueFrom: {configMapKeyRef: {name: app-config, key: greeting}}}
    - {name: PASS, valueFrom: {secretKeyRef: {name: db, key: password}}}
    - {name: MAYBE, valueFrom: {secretKeyRef: {name: db, key: nope, optional: true}}}
    volumeMounts:
    - {name: cfg, mountPath: /etc/cfg}
    - {name: sec, mountPath: /etc/sec}
    - {name: tok, mountPath: /var/run/tok}
`, 'vols');
  let p = await waitForPod('vols', 'Running', isRunning, 90_000);

  // env: envFrom (prefixed, and not) and keyRefs; an optional missing key sets nothing.
  const environ = (await exec(p, 'main', "tr '\\0' '\\n' < /proc/1/environ")).out.split('\n');
  expect(environ).toEqual(expect.arrayContaining(['CFG_greeting=hello', 'CFG_log.level=info', 'user=admin', 'password=s3cr3t', 'GREETING=hello', 'PASS=s3cr3t']));
  expect(environ.some((l) => l.startsWith('MAYBE='))).toBe(false);

  // configMap: every key, read-only, on the node's disk.
  expect((await exec(p, 'main', 'cat /etc/cfg/greeting; echo; cat /etc/cfg/log.level')).out).toBe('hello\ninfo');
  expect((await exec(p, 'main', 'touch /etc/cfg/x')).exitCode).not.toBe(0);

  // secret: on tmpfs, read-only, the item's path at defaultMode.
  expect((await exec(p, 'main', 'grep " /etc/sec " /proc/mounts')).out).toMatch(/^tmpfs \/etc\/sec tmpfs ro/);
  expect((await exec(p, 'main', 'stat -L -c %a /etc/sec/db/password; cat /etc/sec/db/password')).out).toBe('400\ns3cr3t');

  // projected: a token kube-apiserver issued for this pod, the configMap item and the downward API file.
  expect((await exec(p, 'main', 'cat /var/run/tok/greeting.txt; echo; cat /var/run/tok/name')).out).toBe('hello\nvols');
  const token = (await exec(p, 'main', 'cat /var/run/tok/vault-token')).out;
  const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as {
    iss: string; aud: string[]; exp: number; iat: number; 'kubernetes.io': { pod: { name: string; uid: string }; serviceaccount: { name: string } };
  };
  expect(claims.iss).toBe(`https://kubernetes.default.svc.${cluster.plane.settings.dnsDomain}`);
  expect(claims.aud).toEqual(['vault']);
  expect(claims.exp - claims.iat).toBe(600);
  expect(claims['kubernetes.io'].pod).toEqual({ name: 'vols', uid: p.metadata!.uid });
  expect(claims['kubernetes.io'].serviceaccount.name).toBe('default');

  // The ServiceAccount admission plugin's kube-api-access volume: a token the API server accepts, its CA and namespace.
  const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
  expect((await exec(p, 'main', `cat ${sa}/namespace`)).out).toBe('default');
  expect((await exec(p, 'main', `cat ${sa}/ca.crt`)).out).toBe((await readFile(cluster.plane.caCert, 'utf8')).trim());
  const saToken = (await exec(p, 'main', `cat ${sa}/token`)).out;
  // Authenticated as the pod's service account (which has no RBAC grant: 403 naming it, where a bad token is 401).
  const asSa = await getWithToken('/api/v1/namespaces/default/pods/vols', saToken);
  expect(asSa.status).toBe(403);
  expect(asSa.body.message).toContain('User "system:serviceaccount:default:default"');

  // An update reaches the files (same container), through the watch, well before the 1-minute resync.
  const before = containerId(p, 'main');
  await kubectl.run('patch', 'configmap', 'app-config', '--type', 'merge', '-p', JSON.stringify({ data: { greeting: 'bonjour' } }));
  await waitFor('updated configMap files in the container', async () =>
    (await exec(p, 'main', 'cat /etc/cfg/greeting; echo; cat /var/run/tok/greeting.txt')).out === 'bonjour\nbonjour' ? true : undefined, 20_000, 250);
  p = (await pod('vols'))!;
  expect(containerId(p, 'main')).toBe(before);
});

test('a missing configMap: env gives CreateContainerConfigError naming it, a volume keeps the pod ContainerCreating; both start once it exists', async () => {
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: noenv}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    env:
    - {name: X, valueFrom: {configMapKeyRef: {name: later, key: x}}}
`, 'noenv');
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: novol}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: later, configMap: {name: later}}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: later, mountPath: /etc/later}
`, 'novol');
  const noenv = await waitForPod('noenv', 'CreateContainerConfigError', (p) => waiting(p)?.reason === 'CreateContainerConfigError');
  expect(waiting(noenv)!.message).toBe('configmap "later" not found');
  // kubelet's FailedMount event, attributed to the pod.
  const failedMount = 'MountVolume.SetUp failed for volume "later" : configmap "later" not found';
  await waitFor('the FailedMount event', async () => {
    const events = await kubectl.get<{ items: CoreV1Event[] }>('events', '-n', 'default');
    return events.items.some((e) => e.involvedObject?.name === 'novol' && e.reason === 'FailedMount' && e.message === failedMount) ? true : undefined;
  }, 30_000, 500);
  const novol = (await pod('novol'))!;
  expect(novol.status?.phase).toBe('Pending');
  expect(waiting(novol)?.reason).toBe('ContainerCreating');

  await configMap('later', { x: '42' });
  const started = await waitForPod('noenv', 'Running', isRunning, 60_000);
  expect((await exec(started, 'main', "tr '\\0' '\\n' < /proc/1/environ | grep ^X=")).out).toBe('X=42');
  const mounted = await waitForPod('novol', 'Running', isRunning, 60_000);
  expect((await exec(mounted, 'main', 'cat /etc/later/x')).out).toBe('42');
});

test('deleting a pod unmounts its secret and projected tmpfs and removes its directory', async () => {
  const p = (await pod('vols'))!;
  const podDir = `${agent.rootDir}/pods/${p.metadata!.uid}`;
  const mounted = mountsUnder(await readMountInfo(), podDir).filter((m) => m.fsType === 'tmpfs').map((m) => m.mountPoint.slice(podDir.length));
  expect(mounted).toEqual(expect.arrayContaining(['/volumes/kubernetes.io~secret/sec', '/volumes/kubernetes.io~projected/tok']));
  expect(await kubectl.run('delete', 'pod', 'vols', '--wait=false')).toBe('pod "vols" deleted from default namespace');
  await waitForRuntimeGone(cri, [p.metadata!.uid!], 60_000);
  await waitFor('pod directory removed', async () => (mountsUnder(await readMountInfo(), podDir).length === 0 && !(await pod('vols')) ? true : undefined), 30_000);
  await waitFor('pod dir gone', async () => (!existsSync(podDir) ? true : undefined), 30_000);
});

test('image volumes: the image mounted read-only, a directory of it by subPath; a missing sub path is CreateContainerError, an image that cannot be pulled ErrImagePull then ImagePullBackOff', async () => {
  registry = await startRegistry();
  await registry.upload('nodelet/data:1', [await fileLayer({ 'dir/hello.txt': 'hello from an image volume\n', 'top.txt': 'top\n' })]);
  const data = `${registry.host}/nodelet/data:1`;
  const missing = `${registry.host}/nodelet/missing:1`;
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: imgvol}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, image: {reference: "${data}"}}
  - {name: missing, image: {reference: "${missing}", pullPolicy: Always}}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: data, mountPath: /sub, subPath: dir}
  - name: nosub
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /data, subPath: nope}
  - name: broken
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: missing, mountPath: /m}
`, 'imgvol');
  // The API server defaults the pull policy as a container's (IfNotPresent for a tag other than latest).
  expect((await kubectl.get<V1Pod>('pod', 'imgvol')).spec?.volumes?.map((v) => v.image?.pullPolicy)).toEqual(['IfNotPresent', 'Always']);
  const status = (p: V1Pod, name: string) => p.status?.containerStatuses?.find((c) => c.name === name);
  let p = await waitForPod('imgvol', 'main running, nosub and broken waiting', (x) =>
    status(x, 'main')?.state?.running !== undefined && status(x, 'nosub')?.state?.waiting?.reason === 'CreateContainerError' && status(x, 'broken')?.state?.waiting?.reason !== undefined && status(x, 'broken')?.state?.waiting?.reason !== 'ContainerCreating', 120_000);

  const read = await exec(p, 'main', 'cat /data/dir/hello.txt /data/top.txt /sub/hello.txt; touch /data/new 2>&1; ls /sub');
  expect(read.out.split('\n')).toEqual(['hello from an image volume', 'top', 'hello from an image volume', 'touch: /data/new: Read-only file system', 'hello.txt']);
  // containerd mounted the image under its state directory for this sandbox (removed with it, below).
  const [sandbox] = await cri.listPodSandbox({ labelSelector: { [podUidLabel]: p.metadata!.uid! } });
  const imageMounts = async () => (await readMountInfo()).filter((m) => m.mountPoint.includes(`/image-volumes/${sandbox!.id}/`));
  expect((await imageMounts()).length).toBeGreaterThan(0);

  // containerd's refusal of a sub path the image lacks, as the container's waiting message.
  expect(status(p, 'nosub')!.state!.waiting!.message).toContain('ImageVolumeMountFailed: failed to ensure image subpath "nope"');
  const broken = status(p, 'broken')!.state!.waiting!;
  expect(['ErrImagePull', 'ImagePullBackOff']).toContain(broken.reason);
  expect(broken.message).toContain(`${missing}: not found`);
  // kubelet's events: the pull's about the pod (no container), the container's "Error: ErrImagePull".
  const events = async () => (await kubectl.get<{ items: CoreV1Event[] }>('events', '-n', 'default')).items.filter((e) => e.involvedObject?.name === 'imgvol');
  await waitFor('the image volume pull events', async () => {
    const es = await events();
    const pulled = es.some((e) => e.reason === 'Failed' && e.involvedObject.fieldPath === undefined && e.message?.startsWith(`Failed to pull image "${missing}": `));
    const failed = es.some((e) => e.reason === 'Failed' && e.involvedObject.fieldPath === 'spec.containers{broken}' && e.message === 'Error: ErrImagePull');
    return pulled && failed ? true : undefined;
  }, 30_000, 500);
  p = await waitForPod('imgvol', 'broken in ImagePullBackOff', (x) => status(x, 'broken')?.state?.waiting?.reason === 'ImagePullBackOff', 120_000);
  const backOff = `Back-off pulling image "${missing}": ErrImagePull: `;
  expect(status(p, 'broken')!.state!.waiting!.message?.slice(0, backOff.length)).toBe(backOff);
  expect(status(p, 'main')!.state!.running).toBeDefined();

  expect(await kubectl.run('delete', 'pod', 'imgvol', '--wait=false')).toBe('pod "imgvol" deleted from default namespace');
  await waitForRuntimeGone(cri, [p.metadata!.uid!], 60_000);
  await waitFor('the image volume unmounted', async () => ((await imageMounts()).length === 0 ? true : undefined), 30_000, 500);
}, 360_000);

test("a Secret's non-UTF-8 bytes go to containerd as they are (CRI KeyValue.value is bytes), which writes them into the OCI spec", async () => {
  // An invalid lead byte, ASCII, a valid 2-byte character, a truncated 3-byte sequence.
  const bytes = Buffer.from([0xff, 0x41, 0xc3, 0xa9, 0xe2, 0x82]);
  await kubectl.fromFile('create', 'secret-bin.json', JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bin' }, data: { val: bytes.toString('base64') } }));
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: binenv}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    envFrom:
    - {prefix: FROM_, secretRef: {name: bin}}
    env:
    - {name: BIN, valueFrom: {secretKeyRef: {name: bin, key: val}}}
    - {name: MIXED, value: "<$(BIN)>"}
`, 'binenv');
  const p = await waitForPod('binenv', 'Running', isRunning, 90_000);
  const hex = async (name: string) => (await exec(p, 'main', `printf %s "$${name}" | od -An -tx1`)).out.split(/\s+/).join(' ');
  // containerd puts the environment into the OCI spec as JSON, and Go's encoding/json turns every byte that is not part
  // of valid UTF-8 into U+FFFD (ef bf bd), one per byte: the truncated e2 82 gives two. Had nodelet sent text decoded
  // in JS (the WHATWG decoder), e2 82 would have arrived as one U+FFFD: two here shows containerd got the raw bytes, as
  // from kubelet.
  const fffd = 'ef bf bd';
  const expected = `${fffd} 41 c3 a9 ${fffd} ${fffd}`;
  expect(await hex('BIN')).toBe(expected);
  expect(await hex('FROM_val')).toBe(expected);
  expect(await hex('MIXED')).toBe(`3c ${expected} 3e`);
  expect(await kubectl.run('delete', 'pod', 'binenv', '--wait=false')).toBe('pod "binenv" deleted from default namespace');
  await waitForRuntimeGone(cri, [p.metadata!.uid!], 60_000);
});
