// The pod volume manager without mounts: disk emptyDirs, hostPath checks, CRI mounts of containers, tear-down.
import type { V1Pod } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseQuantity } from '../../../src/core/quantity.js';
import { SyncError } from '../../../src/core/sync-result.js';
import { containerPath, mountPropagation, PodVolumeManager, VolumeSetUpError } from '../../../src/volume/pod-volumes.js';
import type { Mount } from '../../../src/cri/types.js';

const log = pino({ level: 'silent' });
let root: string;
let host: string;
let volumes: PodVolumeManager;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'nodelet-podvol-root-'));
  host = await mkdtemp(join(tmpdir(), 'nodelet-podvol-host-'));
  await writeFile(join(host, 'file'), 'x');
  volumes = new PodVolumeManager(root, async () => ({ cpu: parseQuantity('2'), memory: parseQuantity('1Gi'), 'ephemeral-storage': parseQuantity('10Gi') }));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(host, { recursive: true, force: true });
});

function pod(uid: string, extra: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod {
  return {
    metadata: { name: 'web-node', namespace: 'default', uid },
    spec: {
      volumes: [
        { name: 'cache', emptyDir: {} },
        { name: 'host', hostPath: { path: host, type: 'Directory' } },
        { name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
      ],
      containers: [
        {
          name: 'app',
          image: 'busybox',
          volumeMounts: [
            { name: 'cache', mountPath: '/cache' },
            { name: 'host', mountPath: 'srv', readOnly: true, mountPropagation: 'HostToContainer' },
            { name: 'info', mountPath: '/etc/podinfo' },
          ],
        },
      ],
      ...extra,
    },
  };
}

test('mountPropagation: kubelet\'s translation, Bidirectional only when privileged', () => {
  const c = { name: 'c' };
  expect(mountPropagation({ name: 'v', mountPath: '/m' }, c)).toBe('PROPAGATION_PRIVATE');
  expect(mountPropagation({ name: 'v', mountPath: '/m', mountPropagation: 'None' }, c)).toBe('PROPAGATION_PRIVATE');
  expect(mountPropagation({ name: 'v', mountPath: '/m', mountPropagation: 'HostToContainer' }, c)).toBe('PROPAGATION_HOST_TO_CONTAINER');
  expect(mountPropagation({ name: 'v', mountPath: '/m', mountPropagation: 'Bidirectional' }, { name: 'c', securityContext: { privileged: true } })).toBe(
    'PROPAGATION_BIDIRECTIONAL',
  );
  expect(() => mountPropagation({ name: 'v', mountPath: '/m', mountPropagation: 'Bidirectional' }, c)).toThrow(
    'Bidirectional mount propagation is available only to privileged containers',
  );
  expect(() => mountPropagation({ name: 'v', mountPath: '/m', mountPropagation: 'Sideways' }, c)).toThrow('invalid MountPropagation mode: "Sideways"');
  expect(containerPath('srv/x')).toBe('/srv/x');
  expect(containerPath('srv/./y/')).toBe('/srv/y');
  expect(containerPath('/data/')).toBe('/data/');
});

test('containerMounts: host paths, readOnly (always for downwardAPI), propagation', async () => {
  const p = pod('u1');
  const mounts = await volumes.containerMounts(p, p.spec!.containers[0]!, new Map(), new Map());
  expect(mounts).toEqual([
    { containerPath: '/cache', hostPath: join(root, 'pods/u1/volumes/kubernetes.io~empty-dir/cache'), readonly: false, propagation: 'PROPAGATION_PRIVATE' },
    { containerPath: '/srv', hostPath: host, readonly: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' },
    { containerPath: '/etc/podinfo', hostPath: join(root, 'pods/u1/volumes/kubernetes.io~downward-api/info'), readonly: true, propagation: 'PROPAGATION_PRIVATE' },
  ]);
});

test('containerMounts: recursiveReadOnly as the runtime handler allows', async () => {
  const p = pod('u1');
  const c = p.spec!.containers[0]!;
  c.volumeMounts = [
    { name: 'cache', mountPath: '/a', readOnly: true, recursiveReadOnly: 'Enabled' },
    { name: 'cache', mountPath: '/b', readOnly: true, recursiveReadOnly: 'IfPossible' },
    { name: 'cache', mountPath: '/c', readOnly: true, recursiveReadOnly: 'Disabled' },
  ];
  const rro = (mounts: Mount[]) => mounts.map((m) => [m.containerPath, m.readonly, m.recursiveReadOnly]);
  expect(rro(await volumes.containerMounts(p, c, new Map(), new Map(), undefined, true))).toEqual([['/a', true, true], ['/b', true, true], ['/c', true, undefined]]);
  c.volumeMounts = c.volumeMounts.slice(1);
  expect(rro(await volumes.containerMounts(p, c, new Map(), new Map(), undefined, false))).toEqual([['/b', true, undefined], ['/c', true, undefined]]);
});

test('containerMounts: an image volume names the pulled image, read-only whatever the mount says, its subPath as image_sub_path; set-up makes nothing', async () => {
  const image = { image: `sha256:${'a'.repeat(64)}`, annotations: {} };
  const p = pod('u3', {
    volumes: [{ name: 'img', image: { reference: 'registry.example/data:1', pullPolicy: 'IfNotPresent' } }],
    containers: [
      {
        name: 'app',
        image: 'busybox',
        env: [{ name: 'DIR', value: 'dir' }],
        volumeMounts: [
          { name: 'img', mountPath: '/img', readOnly: false },
          { name: 'img', mountPath: 'sub', subPathExpr: '$(DIR)', mountPropagation: 'HostToContainer' },
        ],
      },
    ],
  });
  await volumes.setUp(p, log);
  expect(existsSync(join(root, 'pods/u3/volumes/kubernetes.io~empty-dir/img'))).toBe(false);
  const mounts = await volumes.containerMounts(p, p.spec!.containers[0]!, new Map([['DIR', 'dir']]), new Map([['img', { image }]]));
  expect(mounts).toEqual([
    { containerPath: '/img', hostPath: '', image, readonly: true, propagation: 'PROPAGATION_PRIVATE' },
    { containerPath: '/sub', hostPath: '', image, imageSubPath: 'dir', readonly: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' },
  ]);
  // kubelet's subPath checks hold for image volumes too.
  p.spec!.containers[0]!.volumeMounts = [{ name: 'img', mountPath: '/x', subPath: 'a/../../b' }];
  const err = await volumes.containerMounts(p, p.spec!.containers[0]!, new Map(), new Map([['img', { image }]])).catch((e: unknown) => e);
  expect(err).toMatchObject({ code: 'CreateContainerConfigError', message: "unable to provision SubPath `a/../../b`: must not contain '..' (pod default/web-node, container \"app\", field spec.containers[0].volumeMounts[0].subPath)" });
});

test.each([
  [{ name: 'cache', mountPath: '/x', readOnly: true, recursiveReadOnly: 'Enabled' }, 'failed to resolve recursive read-only mode: volume "cache" requested recursive read-only mode, but it is not supported by the runtime (pod default/web-node, container "app", field spec.containers[0].volumeMounts[0].recursiveReadOnly)'],
  [{ name: 'cache', mountPath: '/x', recursiveReadOnly: 'IfPossible' }, 'failed to resolve recursive read-only mode: volume "cache" requested recursive read-only mode, but it is not read-only (pod default/web-node, container "app", field spec.containers[0].volumeMounts[0].recursiveReadOnly)'],
  [{ name: 'nope', mountPath: '/x' }, 'cannot find volume "nope" to mount into container "app" (pod default/web-node, container "app", field spec.containers[0].volumeMounts[0].name)'],
  [{ name: 'cache', mountPath: '/x', subPath: '/abs' }, 'error SubPath `/abs` must not be an absolute path (pod default/web-node, container "app", field spec.containers[0].volumeMounts[0].subPath)'],
  [{ name: 'cache', mountPath: '/x', subPathExpr: '$(MISSING)' }, 'missing value for MISSING (pod default/web-node, container "app", field spec.containers[0].volumeMounts[0].subPathExpr)'],
  [{ name: 'cache', mountPath: '/x', mountPropagation: 'Bidirectional' }, 'Bidirectional mount propagation is available only to privileged containers (pod default/web-node, container "app", field spec.containers[0].volumeMounts[0].mountPropagation)'],
])('containerMounts refuses %j with CreateContainerConfigError', async (mount, message) => {
  const p = pod('u1');
  p.spec!.containers[0]!.volumeMounts = [mount];
  const err = await volumes.containerMounts(p, p.spec!.containers[0]!, new Map(), new Map()).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SyncError);
  expect((err as SyncError).code).toBe('CreateContainerConfigError');
  expect((err as SyncError).message).toBe(message);
});

test('setUp makes the disk emptyDir; a hostPath of the wrong type names volume, field and pod; tearDown removes the pod dir', async () => {
  const ok = pod('u2', { volumes: [{ name: 'cache', emptyDir: {} }, { name: 'host', hostPath: { path: host, type: 'Directory' } }] });
  await volumes.setUp(ok, log);
  expect(existsSync(join(root, 'pods/u2/volumes/kubernetes.io~empty-dir/cache'))).toBe(true);
  expect(existsSync(join(root, 'pods/u2/plugins/kubernetes.io~empty-dir/cache/ready'))).toBe(true);

  const bad = pod('u3', { volumes: [{ name: 'cache', emptyDir: {} }, { name: 'host', hostPath: { path: join(host, 'file'), type: 'Directory' } }] });
  const err = await volumes.setUp(bad, log).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(VolumeSetUpError);
  expect((err as Error).message).toBe(
    `pod default/web-node: MountVolume.SetUp failed for volume "host" (spec.volumes[1].hostPath): hostPath type check failed: ${join(host, 'file')} is not a directory, it's a File`,
  );

  await volumes.tearDown('u2', log);
  expect(existsSync(join(root, 'pods/u2'))).toBe(false);
  await volumes.tearDown('u2', log);
});

test('removeOrphanedPodDirs removes only the directories of unknown pods', async () => {
  for (const uid of ['keep', 'orphan']) await mkdir(join(root, 'pods', uid, 'volumes'), { recursive: true });
  expect(await volumes.removeOrphanedPodDirs((uid) => uid === 'keep', log)).toEqual(['orphan']);
  expect(existsSync(join(root, 'pods/keep'))).toBe(true);
  expect(existsSync(join(root, 'pods/orphan'))).toBe(false);
});
