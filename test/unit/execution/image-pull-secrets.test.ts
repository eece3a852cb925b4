// The image manager's pulls with the pod's imagePullSecrets: the matching login goes in the CRI AuthConfig, logins are
// tried in turn until one works, a missing secret is skipped, no match pulls anonymously, all failing is ErrImagePull.
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { ObjectNotFoundError, type ApiObjectSource } from '../../../src/core/api-objects.js';
import type { EventRecorder } from '../../../src/core/events.js';
import type { AuthConfig, Image, ImageService, PodSandboxConfig } from '../../../src/cri/types.js';
import { Backoff } from '../../../src/decisions/backoff.js';
import { ImageManager } from '../../../src/execution/images.js';
import { recordingLogger } from '../prober/fake-log.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (name: string, auths: Record<string, { username: string; password: string }>): V1Secret => ({
  metadata: { name, namespace: 'ns1' },
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) },
});

const secrets = new Map<string, V1Secret>([
  ['good', secret('good', { '127.0.0.1:5000': { username: 'u', password: 'right' } })],
  ['stale', secret('stale', { '127.0.0.1:5000': { username: 'u', password: 'old' } })],
  ['elsewhere', secret('elsewhere', { 'reg.example.com': { username: 'x', password: 'y' } })],
]);
const objects = {
  getSecret: async (namespace: string, name: string) => {
    const s = secrets.get(name);
    if (!s) throw new ObjectNotFoundError('secret', namespace, name);
    return s;
  },
} as unknown as ApiObjectSource;

const image: Image = { id: 'sha256:abc', repoTags: [], repoDigests: [], size: 10, username: '' };
const noEvents: EventRecorder = { event: () => {}, nodeEvent: () => {} };

function setup(pullSecrets: string[], accept?: string) {
  const calls: (AuthConfig | undefined)[] = [];
  const images = {
    imageStatus: async () => image,
    pullImage: async (ref: string, _c?: PodSandboxConfig, _o?: unknown, auth?: AuthConfig) => {
      calls.push(auth);
      if (accept !== undefined && auth?.password !== accept) throw new Error(`failed to pull and unpack image "${ref}": 401 Unauthorized (${auth?.password ?? 'anonymous'})`);
      return 'sha256:abc';
    },
  } as unknown as ImageService;
  const manager = new ImageManager({ images, pullBackoff: new Backoff(), now: () => 0, events: noEvents, objects });
  const pod: V1Pod = { metadata: { name: 'web', namespace: 'ns1', uid: 'u1' }, spec: { containers: [], imagePullSecrets: pullSecrets.map((name) => ({ name })) } };
  const { log, records } = recordingLogger();
  const ensure = () => manager.ensureImage(pod, { name: 'app', image: '127.0.0.1:5000/app:1', imagePullPolicy: 'Always' }, {} as PodSandboxConfig, log);
  const ensureVolume = () => manager.ensureVolumeImage(pod, { name: 'data', image: { reference: '127.0.0.1:5000/data:1', pullPolicy: 'Always' } }, {} as PodSandboxConfig, log);
  return { calls, ensure, ensureVolume, records };
}

test("an image volume's pull uses the pod's pull secrets too, as kubelet's getImageVolumes", async () => {
  const { calls, ensureVolume } = setup(['stale', 'good'], 'right');
  expect(await ensureVolume()).toBe('sha256:abc');
  expect(calls.map((c) => c?.password)).toEqual(['old', 'right']);
});

test('the matching login of a pull secret goes to the runtime', async () => {
  const { calls, ensure } = setup(['elsewhere', 'good'], 'right');
  await ensure();
  expect(calls).toEqual([{ username: 'u', password: 'right' }]);
});

test('logins are tried in turn until one works; a missing secret is skipped with a warning', async () => {
  const { calls, ensure, records } = setup(['missing', 'stale', 'good'], 'right');
  await ensure();
  expect(calls.map((c) => c?.password)).toEqual(['old', 'right']);
  expect(JSON.stringify(records)).toContain('Unable to retrieve pull secret, the image pull may not succeed.');
});

test('without a matching secret the pull is anonymous', async () => {
  const { calls, ensure } = setup(['elsewhere']);
  await ensure();
  expect(calls).toEqual([undefined]);
});

test('every login refused: ErrImagePull with the runtime errors aggregated as Go does', async () => {
  const { ensure } = setup(['stale', 'good'], 'none');
  await expect(ensure()).rejects.toMatchObject({
    code: 'ErrImagePull',
    message:
      '[failed to pull and unpack image "127.0.0.1:5000/app:1": 401 Unauthorized (old), failed to pull and unpack image "127.0.0.1:5000/app:1": 401 Unauthorized (right)]',
  });
});
