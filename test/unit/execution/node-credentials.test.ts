// The node's docker config file as kubelet's default keyring reads it: the search path in order (config.json before the
// legacy .dockercfg), a broken file passed over, the 5-minute cache, and its logins after the pod's pull secrets.
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import type { ApiObjectSource } from '../../../src/core/api-objects.js';
import type { AuthConfig, Image, ImageService, PodSandboxConfig } from '../../../src/cri/types.js';
import { Backoff } from '../../../src/decisions/backoff.js';
import { lookupCredentials } from '../../../src/decisions/pull-credentials.js';
import { ImageManager } from '../../../src/execution/images.js';
import { NodeCredentials, dockerConfigSearchPaths } from '../../../src/execution/node-credentials.js';
import { recordingLogger } from '../prober/fake-log.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const configJson = (user: string) => JSON.stringify({ auths: { 'reg.example.com': { auth: b64(`${user}:pw`) } } });
const dockercfg = (user: string) => JSON.stringify({ 'reg.example.com': { username: user, password: 'pw' } });

function nodeCredentials(files: Record<string, string>, clock = { t: 0 }) {
  const reads: string[] = [];
  const read = async (path: string) => {
    reads.push(path);
    if (!(path in files)) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return files[path]!;
  };
  const { log, records } = recordingLogger();
  const creds = new NodeCredentials({ rootDir: '/var/lib/nodelet', workingDir: '/work', homeDir: '/root', now: () => clock.t, log, read });
  const users = async () => lookupCredentials(await creds.keyring(), 'reg.example.com/app:1').map((c) => c.username);
  return { creds, reads, records, users };
}

test("kubelet's search path: config.json in --root-dir, the working dir, $HOME/.docker, /.docker, then .dockercfg in --root-dir, the working dir, $HOME, /", () => {
  expect(dockerConfigSearchPaths('/var/lib/nodelet', '/work', '/root').map((p) => p.path)).toEqual([
    '/var/lib/nodelet/config.json',
    '/work/config.json',
    '/root/.docker/config.json',
    '/.docker/config.json',
    '/var/lib/nodelet/.dockercfg',
    '/work/.dockercfg',
    '/root/.dockercfg',
    '/.dockercfg',
  ]);
  // An empty $HOME is the working directory, as Go's filepath.Abs reads "".
  expect(dockerConfigSearchPaths('rel', '/work', '').map((p) => p.path).slice(0, 3)).toEqual(['/work/rel/config.json', '/work/config.json', '/work/.docker/config.json']);
});

test('the first config.json found wins over a .dockercfg earlier in the order of directories', async () => {
  const { users } = nodeCredentials({ '/var/lib/nodelet/.dockercfg': dockercfg('legacy'), '/root/.docker/config.json': configJson('home') });
  expect(await users()).toEqual(['home']);
});

test('without any config.json the legacy .dockercfg is read', async () => {
  const { users } = nodeCredentials({ '/.dockercfg': dockercfg('legacy'), '/root/.dockercfg': dockercfg('home') });
  expect(await users()).toEqual(['home']);
});

test('a file that is not a docker config is passed over with a warning; a config.json without auths ends the search', async () => {
  const broken = nodeCredentials({ '/var/lib/nodelet/config.json': '{', '/work/config.json': configJson('work') });
  expect(await broken.users()).toEqual(['work']);
  expect(JSON.stringify(broken.records)).toContain('/var/lib/nodelet/config.json');
  const empty = nodeCredentials({ '/var/lib/nodelet/config.json': '{"credsStore":"x"}', '/work/config.json': configJson('work') });
  expect(await empty.users()).toEqual([]);
});

test('the files are read again only after 5 minutes', async () => {
  const files: Record<string, string> = { '/root/.docker/config.json': configJson('first') };
  const clock = { t: 0 };
  const { users } = nodeCredentials(files, clock);
  expect(await users()).toEqual(['first']);
  files['/root/.docker/config.json'] = configJson('second');
  clock.t = 299_999;
  expect(await users()).toEqual(['first']);
  clock.t = 300_000;
  expect(await users()).toEqual(['second']);
});

test("the node's logins are tried after the pod's pull secrets, and alone when the pod has none", async () => {
  const secret: V1Secret = {
    metadata: { name: 'pod-secret', namespace: 'ns' },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': b64(configJson('pod')) },
  };
  const objects = { getSecret: async () => secret } as unknown as ApiObjectSource;
  const calls: (AuthConfig | undefined)[] = [];
  const image: Image = { id: 'sha256:abc', repoTags: [], repoDigests: [], size: 1, username: '' };
  const images = {
    imageStatus: async () => image,
    pullImage: async (_ref: string, _c?: PodSandboxConfig, _o?: unknown, auth?: AuthConfig) => {
      calls.push(auth);
      if (auth?.username !== 'node') throw new Error('401 Unauthorized');
      return 'sha256:abc';
    },
  } as unknown as ImageService;
  const { creds } = nodeCredentials({ '/root/.docker/config.json': configJson('node') });
  const manager = new ImageManager({ images, pullBackoff: new Backoff(), now: () => 0, events: { event: () => {}, nodeEvent: () => {} }, objects, nodeCredentials: creds });
  const { log } = recordingLogger();
  const container = { name: 'app', image: 'reg.example.com/app:1', imagePullPolicy: 'Always' };
  const pod = (secrets: string[]): V1Pod => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: { containers: [container], imagePullSecrets: secrets.map((name) => ({ name })) } });
  await manager.ensureImage(pod(['pod-secret']), container, {} as PodSandboxConfig, log);
  expect(calls.map((c) => c?.username)).toEqual(['pod', 'node']);
  calls.length = 0;
  await manager.ensureImage(pod([]), container, {} as PodSandboxConfig, log);
  expect(calls.map((c) => c?.username)).toEqual(['node']);
});

test('a file larger than 10 MiB is passed over without being read whole (here /dev/zero); the next one is used', async () => {
  const root = await mkdtemp(join(tmpdir(), 'nodelet-creds-'));
  try {
    await symlink('/dev/zero', join(root, 'config.json'));
    await writeFile(join(root, '.dockercfg'), dockercfg('legacy'));
    const { log, records } = recordingLogger();
    const creds = new NodeCredentials({ rootDir: root, workingDir: root, homeDir: root, now: () => 0, log });
    expect(lookupCredentials(await creds.keyring(), 'reg.example.com/app:1').map((c) => c.username)).toEqual(['legacy']);
    expect(JSON.stringify(records)).toContain(`larger than ${10 << 20} bytes`);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
