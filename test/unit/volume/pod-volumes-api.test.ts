// The pod volume manager with configMap volumes (on disk, no mount needed): files, updates, missing objects, read-only mounts.
import type { V1Pod } from '@kubernetes/client-node';
import { lstat, mkdtemp, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseQuantity } from '../../../src/core/quantity.js';
import { PodVolumeManager, VolumeSetUpError, volumeFailureResults } from '../../../src/volume/pod-volumes.js';
import { FakeApiObjects } from '../controllers/fake-api-objects.js';

const log = pino({ level: 'silent' });
let root: string;
let objects: FakeApiObjects;
let volumes: PodVolumeManager;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'nodelet-apivol-'));
  objects = new FakeApiObjects();
  volumes = new PodVolumeManager(root, async () => ({ cpu: parseQuantity('2'), memory: parseQuantity('1Gi'), 'ephemeral-storage': parseQuantity('10Gi') }), objects);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'ns', uid: 'u1' },
  spec: {
    volumes: [{ name: 'cfg', configMap: { name: 'app', items: [{ key: 'conf', path: 'etc/app.conf', mode: 0o600 }] } }],
    containers: [{ name: 'c', volumeMounts: [{ name: 'cfg', mountPath: '/etc/app' }] }],
  },
};
const dir = () => join(root, 'pods/u1/volumes/kubernetes.io~configmap/cfg');

test('a configMap volume is written atomically (..data), rewritten when the object changes, and mounted read-only', async () => {
  objects.configMap('ns', 'app', { conf: 'v=1' });
  await volumes.setUp(pod, log);
  expect(await readFile(join(dir(), 'etc/app.conf'), 'utf8')).toBe('v=1');
  expect(await readlink(join(dir(), 'etc'))).toBe('..data/etc');
  expect((await lstat(join(dir(), '..data/etc/app.conf'))).mode & 0o777).toBe(0o600);
  const first = await readlink(join(dir(), '..data'));

  // Same content: nothing rewritten.
  await volumes.setUp(pod, log);
  expect(await readlink(join(dir(), '..data'))).toBe(first);

  objects.configMap('ns', 'app', { conf: 'v=2' });
  await volumes.setUp(pod, log);
  expect(await readFile(join(dir(), 'etc/app.conf'), 'utf8')).toBe('v=2');
  expect(await readlink(join(dir(), '..data'))).not.toBe(first);

  const mounts = await volumes.containerMounts(pod, pod.spec!.containers[0]!, new Map(), new Map());
  expect(mounts).toEqual([{ containerPath: '/etc/app', hostPath: dir(), readonly: true, propagation: 'PROPAGATION_PRIVATE' }]);
});

test('a missing configMap fails the set-up with kubelet\'s FailedMount message; once deleted, the last files stay', async () => {
  const err = await volumes.setUp(pod, log).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(VolumeSetUpError);
  expect((err as VolumeSetUpError).failures).toEqual([{ volume: 'cfg', message: 'MountVolume.SetUp failed for volume "cfg" : configmap "app" not found' }]);
  expect(volumeFailureResults(err)).toEqual([
    { action: 'MountVolume', target: 'cfg', error: { code: 'FailedMount', message: 'MountVolume.SetUp failed for volume "cfg" : configmap "app" not found' } },
  ]);

  objects.configMap('ns', 'app', { conf: 'v=1' });
  await volumes.setUp(pod, log);
  objects.configMaps.delete('ns/app');
  await expect(volumes.setUp(pod, log)).rejects.toThrow('configmap "app" not found');
  expect(await readFile(join(dir(), 'etc/app.conf'), 'utf8')).toBe('v=1');
  await volumes.tearDown('u1', log);
});
