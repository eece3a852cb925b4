// Image pulls from a real registry (Debian's docker-registry on 127.0.0.1 with the test's own TLS CA, test/integration/
// helpers/registry.ts) through nodelet, the real containerd and the real control plane: a private image with the pod's
// imagePullSecrets (dockerconfigjson, dockercfg with a host glob, pulled by digest, a ServiceAccount's), IfNotPresent
// asking the registry nothing, wrong and missing credentials and a missing tag as ErrImagePull then ImagePullBackOff,
// Always picking up a new digest pushed under the same tag, and the node's own config.json.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { busybox, testNode, waitFor } from '../helpers/agent.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';
import { randomImageLayers, startRegistry, type Registry } from '../helpers/registry.js';

const pauseImage = 'localhost/nodelet/pause:1.0';
const login = { username: 'nodelet', password: 'pull-secret-1' };

const registries: Registry[] = [];
const cluster: RealCluster = await startRealCluster();
const { kubectl, uids } = cluster;

afterAll(async () => {
  try {
    await cluster.stop();
  } finally {
    for (const r of registries) await r.stop();
  }
}, 300_000);

let secure: Registry;
let open: Registry;
let privateDigest: string;

beforeAll(async () => {
  secure = await startRegistry({ auth: login });
  registries.push(secure);
  open = await startRegistry();
  registries.push(open);
  privateDigest = await secure.push(busybox, 'nodelet/private:1');
  await waitFor('the default ServiceAccount', () => kubectl.get('serviceaccount', 'default').catch(() => undefined), 60_000, 500);
}, 120_000);

const base64 = (s: string) => Buffer.from(s).toString('base64');

async function createSecret(name: string, type: string, key: string, config: unknown): Promise<void> {
  await kubectl.fromFile('create', `${name}.yaml`, JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, type, data: { [key]: base64(JSON.stringify(config)) } }));
}

const dockerConfigEntry = (username: string, password: string) => ({ auth: base64(`${username}:${password}`) });

function podYaml(name: string, image: string, opts: { policy: string; secret?: string; command?: boolean }): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 1,
      ...(opts.secret ? { imagePullSecrets: [{ name: opts.secret }] } : {}),
      containers: [{ name: 'main', image, imagePullPolicy: opts.policy, ...(opts.command === false ? {} : { command: ['sleep', '3600'] }) }],
    },
  });
}

async function createPod(name: string, yaml: string): Promise<void> {
  expect(await kubectl.fromFile('create', `${name}.yaml`, yaml)).toBe(`pod/${name} created`);
  await waitFor(`${name} bound`, async () => ((await kubectl.get<V1Pod>('pod', name)).spec?.nodeName === testNode ? true : undefined), 60_000, 500);
}

function waitForPod(name: string, what: string, ok: (p: V1Pod) => boolean, timeoutMs = 90_000): Promise<V1Pod> {
  return waitFor(`${name}: ${what}`, async () => {
    const p = await kubectl.get<V1Pod>('pod', name).catch(() => undefined);
    if (p?.metadata?.uid) uids.add(p.metadata.uid);
    return p && ok(p) ? p : undefined;
  }, timeoutMs, 300);
}

const running = (p: V1Pod) => p.status?.containerStatuses?.[0]?.state?.running !== undefined;

async function podEvents(name: string): Promise<CoreV1Event[]> {
  return (await kubectl.get<{ items: CoreV1Event[] }>('events', '-n', 'default')).items.filter((e) => e.involvedObject.name === name);
}

async function deletePod(name: string): Promise<void> {
  await kubectl.run('delete', 'pod', name, '--wait=true', '--timeout=60s');
}

const pulledMessage = (image: string) =>
  new RegExp(`^Successfully pulled image "${image.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}" in [0-9.]+m?s \\([0-9.]+m?s including waiting\\)\\. Image size: [1-9][0-9]* bytes\\.$`);

test('a private image runs with a dockerconfigjson pull secret: Pulling, Pulled with kubelet message, imageID the registry digest', async () => {
  const image = `${secure.host}/nodelet/private:1`;
  await createSecret('regcred', 'kubernetes.io/dockerconfigjson', '.dockerconfigjson', { auths: { [secure.host]: dockerConfigEntry(login.username, login.password) } });
  await createPod('private', podYaml('private', image, { policy: 'IfNotPresent', secret: 'regcred' }));
  const pod = await waitForPod('private', 'Running', running);
  expect(pod.status!.containerStatuses![0]!.imageID).toMatch(new RegExp(`@${privateDigest}$`));
  const events = await waitFor('the Pulled event', async () => {
    const list = await podEvents('private');
    return list.some((e) => e.reason === 'Pulled') ? list : undefined;
  }, 30_000);
  expect(events.find((e) => e.reason === 'Pulling')?.message).toBe(`Pulling image "${image}"`);
  expect(events.find((e) => e.reason === 'Pulled')?.message).toMatch(pulledMessage(image));
  // The registry saw the pull as the secret's user.
  expect(await secure.log()).toMatch(new RegExp(`auth\\.user\\.name="?${login.username}"?`));

  // IfNotPresent with the image present: no request reaches the registry (its own access log says so).
  const before = (await secure.log()).length;
  await createPod('present', podYaml('present', image, { policy: 'IfNotPresent', secret: 'regcred' }));
  await waitForPod('present', 'Running', running);
  const pulled = await waitFor('the Pulled event of present', async () => (await podEvents('present')).find((e) => e.reason === 'Pulled'), 30_000);
  expect(pulled.message).toBe(`Container image "${image}" already present on machine`);
  expect((await secure.log()).slice(before)).not.toMatch(/\/v2\//);
  await deletePod('private');
  await deletePod('present');
}, 180_000);

test('a tag the registry does not have: ErrImagePull, not found', async () => {
  const image = `${open.host}/nodelet/private:absent`;
  await createPod('absent', podYaml('absent', image, { policy: 'IfNotPresent' }));
  const failed = await waitFor('the Failed event', async () => (await podEvents('absent')).find((e) => e.reason === 'Failed' && e.message?.startsWith('Failed to pull image')), 90_000);
  expect(failed.message).toContain(`Failed to pull image "${image}"`);
  expect(failed.message).toMatch(/not found/);
  await deletePod('absent');
}, 180_000);

test("a ServiceAccount's imagePullSecrets reach the pod through the API server's admission and are used", async () => {
  await kubectl.fromFile('create', 'puller.yaml', JSON.stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'puller' }, imagePullSecrets: [{ name: 'regcred' }] }));
  const image = `${secure.host}/nodelet/private:1`;
  const yaml = JSON.parse(podYaml('by-sa', image, { policy: 'Always' })) as V1Pod;
  yaml.spec!.serviceAccountName = 'puller';
  await createPod('by-sa', JSON.stringify(yaml));
  const pod = await waitForPod('by-sa', 'Running', running);
  expect(pod.spec?.imagePullSecrets).toEqual([{ name: 'regcred' }]);
  expect((await podEvents('by-sa')).find((e) => e.reason === 'Pulled')?.message).toMatch(pulledMessage(image));
  await deletePod('by-sa');
}, 180_000);

test('a dockercfg pull secret whose key is a host glob with the port pulls the image by digest', async () => {
  const [, port] = secure.host.split(':');
  await createSecret('regcfg', 'kubernetes.io/dockercfg', '.dockercfg', { [`https://*.0.0.1:${port}`]: dockerConfigEntry(login.username, login.password) });
  const image = `${secure.host}/nodelet/private@${privateDigest}`;
  await createPod('bydigest', podYaml('bydigest', image, { policy: 'Always', secret: 'regcfg' }));
  const pod = await waitForPod('bydigest', 'Running', running);
  expect(pod.status!.containerStatuses![0]!.imageID).toMatch(new RegExp(`@${privateDigest}$`));
  expect((await podEvents('bydigest')).find((e) => e.reason === 'Pulled')?.message).toMatch(pulledMessage(image));
  await deletePod('bydigest');
}, 180_000);

test('wrong credentials: ErrImagePull naming the image and the registry answer, then ImagePullBackOff', async () => {
  const image = `${secure.host}/nodelet/private:1`;
  // The pulls above left the image in containerd: Always goes to the registry anyway.
  await createSecret('badcred', 'kubernetes.io/dockerconfigjson', '.dockerconfigjson', { auths: { [secure.host]: dockerConfigEntry(login.username, 'wrong') } });
  await createPod('badcred', podYaml('badcred', image, { policy: 'Always', secret: 'badcred' }));
  const reasons = new Set<string>();
  let errImagePullMessage = '';
  await waitForPod('badcred', 'ImagePullBackOff after ErrImagePull', (p) => {
    const waiting = p.status?.containerStatuses?.[0]?.state?.waiting;
    if (waiting?.reason) reasons.add(waiting.reason);
    if (waiting?.reason === 'ErrImagePull') errImagePullMessage = waiting.message ?? '';
    return reasons.has('ImagePullBackOff');
  });
  const failed = await waitFor('the Failed event', async () => (await podEvents('badcred')).find((e) => e.reason === 'Failed' && e.message?.startsWith('Failed to pull image')), 30_000);
  expect(failed.type).toBe('Warning');
  expect(failed.message).toContain(`Failed to pull image "${image}"`);
  expect(failed.message).toMatch(/401 Unauthorized/);
  if (reasons.has('ErrImagePull')) expect(errImagePullMessage).toMatch(/401 Unauthorized/);
  expect((await podEvents('badcred')).some((e) => e.reason === 'BackOff' && e.message === `Back-off pulling image "${image}"`)).toBe(true);
  expect((await kubectl.get<V1Pod>('pod', 'badcred')).status?.containerStatuses?.[0]?.state?.running).toBeUndefined();
  await deletePod('badcred');
}, 180_000);

test('no pull secret: the private image fails with ErrImagePull', async () => {
  const image = `${secure.host}/nodelet/private:1`;
  await createPod('nocred', podYaml('nocred', image, { policy: 'Always' }));
  const failed = await waitFor('the Failed event', async () => (await podEvents('nocred')).find((e) => e.reason === 'Failed' && e.message?.startsWith('Failed to pull image')), 90_000);
  expect(failed.message).toContain(`Failed to pull image "${image}"`);
  // containerd's reading of the registry's 401 with a Basic challenge it has no credentials for.
  expect(failed.message).toMatch(/401 Unauthorized|no basic auth credentials/);
  await waitForPod('nocred', 'ImagePullBackOff', (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ImagePullBackOff');
  await deletePod('nocred');
}, 180_000);

test('Always re-resolves the tag: a new digest pushed under the same tag runs in the next pod', async () => {
  const image = `${open.host}/nodelet/moving:v1`;
  const first = await open.push(busybox, 'nodelet/moving:v1');
  await createPod('moving-1', podYaml('moving-1', image, { policy: 'Always' }));
  const one = await waitForPod('moving-1', 'Running', running);
  expect(one.status!.containerStatuses![0]!.imageID).toMatch(new RegExp(`@${first}$`));

  const second = await open.push(pauseImage, 'nodelet/moving:v1');
  expect(second).not.toBe(first);
  // The pause image runs its own entrypoint.
  await createPod('moving-2', podYaml('moving-2', image, { policy: 'Always', command: false }));
  const two = await waitForPod('moving-2', 'Running', running);
  expect(two.status!.containerStatuses![0]!.imageID).toMatch(new RegExp(`@${second}$`));
  await deletePod('moving-1');
  await deletePod('moving-2');
}, 240_000);

test("the node's own config.json in --root-dir logs in for pods without a secret, and after a pod's secret that fails", async () => {
  const image = `${secure.host}/nodelet/private:1`;
  // kubelet reads the node's docker config at most every 5 minutes: the agent restarts to read it now.
  await writeFile(join(cluster.agent.rootDir, 'config.json'), JSON.stringify({ auths: { [`https://${secure.host}/v1/`]: dockerConfigEntry(login.username, login.password) } }));
  await cluster.agent.stop();
  await cluster.agent.start();
  const before = (await secure.log()).length;
  await createPod('node-login', podYaml('node-login', image, { policy: 'Always' }));
  await waitForPod('node-login', 'Running', running);
  // The registry let the pull in (the same pull without a login is refused: 'no pull secret' above).
  expect((await secure.log()).slice(before)).toMatch(/msg="authorized request"/);
  // The pod's secret is tried first (the registry refuses it), then the node's login.
  const beforeBoth = (await secure.log()).length;
  await createPod('both-logins', podYaml('both-logins', image, { policy: 'Always', secret: 'badcred' }));
  const pod = await waitForPod('both-logins', 'Running', running);
  const lines = (await secure.log()).slice(beforeBoth).split('\n');
  const refused = lines.findIndex((l) => /error authenticating user/.test(l));
  expect(refused).toBeGreaterThanOrEqual(0);
  expect(lines.findIndex((l) => /msg="authorized request"/.test(l))).toBeGreaterThan(refused);
  expect(pod.status!.containerStatuses![0]!.imageID).toMatch(new RegExp(`@${privateDigest}$`));
  expect((await podEvents('both-logins')).some((e) => e.reason === 'Failed')).toBe(false);
  await deletePod('node-login');
  await deletePod('both-logins');
}, 240_000);

test('10 pods of one new image created at once pull it once: each pod gets Pulling and Pulled, the registry serves each blob once', async () => {
  const { digest, layers } = await open.upload('nodelet/shared:1', await randomImageLayers(2, 2 << 20));
  const image = `${open.host}/nodelet/shared:1`;
  const before = (await open.log()).length;
  const names = Array.from({ length: 10 }, (_, i) => `shared-${i}`);
  const list = { apiVersion: 'v1', kind: 'List', items: names.map((name) => ({ ...JSON.parse(podYaml(name, image, { policy: 'IfNotPresent' })), metadata: { name, labels: { test: 'shared' } } })) };
  await kubectl.fromFile('create', 'shared.yaml', JSON.stringify(list));
  for (const name of names) {
    const pod = await waitForPod(name, 'Running', running, 120_000);
    expect(pod.status!.containerStatuses![0]!.imageID).toBe(`${open.host}/nodelet/shared@${digest}`);
  }
  const served = (await open.log()).slice(before);
  for (const layer of layers) expect(served.split(`GET /v2/nodelet/shared/blobs/${layer} `).length - 1).toBe(1);
  // One pull resolved the tag once (kubelet's serialized puller would ask the runtime 10 times, each resolving it).
  expect(served.match(/(GET|HEAD) \/v2\/nodelet\/shared\/manifests\/1 /g)?.length).toBe(1);
  // A pod that shared the pull gets Pulling and kubelet's Pulled; one whose sync came after the pull ended finds the image
  // present (IfNotPresent), as kubelet would: "already present on machine", no Pulling.
  let pulling = 0;
  for (const name of names) {
    const events = await waitFor(`${name}: Pulled`, async () => {
      const list = await podEvents(name);
      return list.some((e) => e.reason === 'Pulled') ? list : undefined;
    }, 30_000);
    const pulled = events.find((e) => e.reason === 'Pulled')?.message;
    if (events.some((e) => e.reason === 'Pulling')) {
      pulling++;
      expect(events.find((e) => e.reason === 'Pulling')?.message).toBe(`Pulling image "${image}"`);
      expect(pulled).toMatch(pulledMessage(image));
    } else {
      expect(pulled).toBe(`Container image "${image}" already present on machine`);
    }
  }
  expect(pulling).toBeGreaterThanOrEqual(1);
  await kubectl.run('delete', 'pod', '-l', 'test=shared', '--wait=true', '--timeout=90s');
}, 300_000);
