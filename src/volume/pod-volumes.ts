// The pod volume manager: sets up a pod's volumes under <root-dir>/pods/<uid>, gives containers their CRI mounts, tears it all down.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { V1Container, V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { Mount, MountPropagation } from '../cri/types.js';
import type { NodeAllocatable } from '../host/allocatable.js';
import type { Logger } from '../core/log.js';
import { SyncError, type StepResult } from '../core/sync-result.js';
import type { ApiObjectSource } from '../core/api-objects.js';
import { payloadDigest, usesMemoryMedium, volumePayload, type VolumePayload } from './api-volumes.js';
import type { ImageVolumePulls } from './image-volumes.js';
import { writeAtomically } from './atomic-writer.js';
import { memoryVolumeSize, setUpEmptyDir, tmpfsOptions } from './empty-dir.js';
import { checkHostPath } from './host-path.js';
import { bindMount, isShared, makeShared, mountOf, mountsUnder, readMountInfo, unmount } from './mounter.js';
import { setVolumeOwnership } from './ownership.js';
import { resolveRecursiveReadOnly } from './recursive-read-only.js';
import { pathWithinBase, prepareSubPath, resolveSubPath } from './subpath.js';
import { gitRepoDisabled } from './unsupported.js';

export const emptyDirPluginDir = 'kubernetes.io~empty-dir';
export const downwardApiPluginDir = 'kubernetes.io~downward-api';
export const configMapPluginDir = 'kubernetes.io~configmap';
export const secretPluginDir = 'kubernetes.io~secret';
export const projectedPluginDir = 'kubernetes.io~projected';

/** One volume that failed, with kubelet's FailedMount message (`MountVolume.SetUp failed for volume "x" : ...`). */
export interface VolumeFailure {
  volume: string;
  message: string;
}

/** A volume of the pod could not be set up; the message names the volume, its field and the pod. */
export class VolumeSetUpError extends Error {
  constructor(
    message: string,
    options?: { cause?: unknown },
    /** Each failed volume, for FailedMount events. */
    readonly failures: VolumeFailure[] = [],
  ) {
    super(message, options);
    this.name = 'VolumeSetUpError';
  }
}

/**
 * The results of a failed set-up, one MountVolume step per failed volume with kubelet's FailedMount message: the
 * pod's containers are not started and keep their waiting reason (ContainerCreating), as kubelet leaves them.
 */
export function volumeFailureResults(err: unknown): StepResult[] {
  const failures = err instanceof VolumeSetUpError && err.failures.length > 0 ? err.failures : [{ volume: '', message: (err as Error).message }];
  return failures.map((f) => ({ action: 'MountVolume', target: f.volume, error: { code: 'FailedMount', message: f.message } }));
}

const propagations: Record<string, MountPropagation> = {
  None: 'PROPAGATION_PRIVATE',
  HostToContainer: 'PROPAGATION_HOST_TO_CONTAINER',
  Bidirectional: 'PROPAGATION_BIDIRECTIONAL',
};

/** kubelet's translateMountPropagation, plus the API's rule that only privileged containers get Bidirectional. */
export function mountPropagation(mount: V1VolumeMount, container: V1Container): MountPropagation {
  const mode = mount.mountPropagation;
  if (mode === undefined) return 'PROPAGATION_PRIVATE';
  const propagation = propagations[mode];
  if (!propagation) throw new Error(`invalid MountPropagation mode: "${mode}"`);
  if (propagation === 'PROPAGATION_BIDIRECTIONAL' && !container.securityContext?.privileged) {
    throw new Error('Bidirectional mount propagation is available only to privileged containers');
  }
  return propagation;
}

/** kubelet makes a relative mountPath absolute (filepath.Clean("/" + path)) instead of refusing it. */
export function containerPath(mountPath: string): string {
  if (mountPath.startsWith('/')) return mountPath;
  return posix.normalize(`/${mountPath}`).replace(/(.)\/+$/, '$1');
}

/** The field path of a container (`spec.containers[0]`, `spec.initContainers[1]`), for messages. */
function containerField(pod: V1Pod, container: V1Container): string {
  const i = (pod.spec?.containers ?? []).indexOf(container);
  if (i >= 0) return `spec.containers[${i}]`;
  const j = (pod.spec?.initContainers ?? []).indexOf(container);
  return j >= 0 ? `spec.initContainers[${j}]` : `container ${container.name}`;
}

function volumeSourceField(volume: V1Volume): string {
  const sources = ['emptyDir', 'hostPath', 'downwardAPI', 'configMap', 'secret', 'projected', 'image', 'gitRepo'] as const;
  return sources.find((s) => volume[s] !== undefined) ?? 'source';
}

const podName = (pod: V1Pod) => `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;

export class PodVolumeManager {
  /** One operation at a time per pod UID (a sync's set-up, a termination's tear-down, housekeeping's orphan removal). */
  private readonly locks = new Map<string, Promise<unknown>>();
  /** What the last successful set-up of a pod produced; an equal fingerprint means nothing to do. */
  private readonly setUpFingerprints = new Map<string, string>();
  private allocatableCache?: Promise<NodeAllocatable>;

  constructor(
    readonly rootDir: string,
    private readonly allocatable: () => Promise<NodeAllocatable>,
    /** configMaps, secrets and tokens from the API server; undefined in standalone mode. */
    private readonly objects?: ApiObjectSource,
  ) {}

  /**
   * A fresh, empty, world-writable file for one container instance to write its termination message into
   * (kubelet's `<pod dir>/containers/<name>/<random>`); removed with the pod directory.
   */
  async terminationMessageFile(uid: string, containerName: string): Promise<string> {
    const dir = join(this.podDir(uid), 'containers', containerName);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const file = join(dir, randomBytes(4).toString('hex'));
    await writeFile(file, '', { mode: 0o666 });
    await chmod(file, 0o666);
    return file;
  }

  /**
   * The pod's managed hosts file (kubelet's `<pod dir>/etc-hosts`), written with `content`. Written in place, as kubelet
   * does, so running containers that bind-mount it see the new content.
   */
  async etcHostsFile(uid: string, content: string): Promise<string> {
    const dir = this.podDir(uid);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const file = join(dir, 'etc-hosts');
    await writeFile(file, content, { mode: 0o644 });
    await chmod(file, 0o644);
    return file;
  }

  podDir(uid: string): string {
    return join(this.rootDir, 'pods', uid);
  }

  /** Where a volume lives on the host: its directory under the pod dir, or the hostPath itself. */
  volumePath(uid: string, volume: V1Volume): string {
    if (volume.hostPath) return volume.hostPath.path;
    const plugin = volume.downwardAPI
      ? downwardApiPluginDir
      : volume.configMap
        ? configMapPluginDir
        : volume.secret
          ? secretPluginDir
          : volume.projected
            ? projectedPluginDir
            : emptyDirPluginDir;
    return join(this.podDir(uid), 'volumes', plugin, volume.name);
  }

  private metaDir(uid: string, volume: V1Volume): string {
    return join(this.podDir(uid), 'plugins', emptyDirPluginDir, volume.name);
  }

  /** The node's allocatable resources (what an unset limit reads as in the downward API), cached. */
  nodeAllocatable(): Promise<NodeAllocatable> {
    this.allocatableCache ??= this.allocatable().catch((err: unknown) => {
      this.allocatableCache = undefined;
      throw err;
    });
    return this.allocatableCache;
  }

  private withLock<T>(uid: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(uid) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.locks.set(uid, settled);
    void settled.then(() => this.locks.get(uid) === settled && this.locks.delete(uid));
    return next;
  }

  /**
   * Makes every volume of the pod ready before its sandbox and containers start (kubelet's WaitForAttachAndMount):
   * emptyDirs created or tmpfs-mounted, hostPaths type-checked, downwardAPI, configMap, secret and projected files
   * (re)written when their content changed. Cheap when nothing changed (same volumes, fsGroup and content as the last success);
   * every volume is tried, and a VolumeSetUpError names each one that failed with its field and the pod.
   */
  setUp(pod: V1Pod, log: Logger, signal?: AbortSignal): Promise<void> {
    const uid = pod.metadata!.uid!;
    return this.withLock(uid, async () => {
      const volumes = pod.spec?.volumes ?? [];
      const fsGroup = pod.spec?.securityContext?.fsGroup;
      const needsAllocatable = volumes.some((v) => usesMemoryMedium(v) || v.emptyDir?.medium === 'Memory');
      const allocatable = needsAllocatable ? await this.nodeAllocatable() : undefined;
      // Written content (downward API, configMaps, secrets, tokens) is part of the fingerprint: a change makes it differ.
      const payloads = new Map<string, VolumePayload | Error>();
      for (const v of volumes) {
        try {
          const payload = await volumePayload(pod, v, { objects: this.objects, allocatable: () => this.nodeAllocatable(), ...(signal ? { signal } : {}) });
          if (payload) payloads.set(v.name, payload);
        } catch (err) {
          payloads.set(v.name, err as Error);
        }
      }
      const fingerprint = JSON.stringify([volumes, fsGroup, [...payloads].map(([n, p]) => [n, p instanceof Error ? p.message : payloadDigest(p)])]);
      if (this.setUpFingerprints.get(uid) === fingerprint) return;

      const podDir = this.podDir(uid);
      // Both create the pod's directory too.
      await Promise.all(['volumes', 'plugins'].map((sub) => mkdir(join(podDir, sub), { recursive: true, mode: 0o750 })));
      const failures: string[] = [];
      const failed: VolumeFailure[] = [];
      for (const [i, volume] of volumes.entries()) {
        try {
          await this.setUpVolume(pod, volume, payloads.get(volume.name), allocatable, log, signal);
        } catch (err) {
          log.warn({ err, volume: volume.name }, 'MountVolume.SetUp failed');
          failures.push(`MountVolume.SetUp failed for volume "${volume.name}" (spec.volumes[${i}].${volumeSourceField(volume)}): ${(err as Error).message}`);
          failed.push({ volume: volume.name, message: `MountVolume.SetUp failed for volume "${volume.name}" : ${(err as Error).message}` });
        }
      }
      if (failures.length > 0) throw new VolumeSetUpError(`pod ${podName(pod)}: ${failures.join('; ')}`, undefined, failed);
      this.setUpFingerprints.set(uid, fingerprint);
    });
  }

  private async setUpVolume(
    pod: V1Pod,
    volume: V1Volume,
    payload: VolumePayload | Error | undefined,
    allocatable: NodeAllocatable | undefined,
    log: Logger,
    signal?: AbortSignal,
  ): Promise<void> {
    const uid = pod.metadata!.uid!;
    const fsGroup = pod.spec?.securityContext?.fsGroup;
    const dir = this.volumePath(uid, volume);
    const vlog = log.child({ volume: volume.name });
    if (volume.hostPath) return checkHostPath(volume.hostPath.path, volume.hostPath.type);
    // The runtime mounts an image volume when it creates a container (kubelet's image plugin sets up nothing).
    if (volume.image) return;
    if (volume.emptyDir) {
      const medium = volume.emptyDir.medium ?? '';
      const size = medium === 'Memory' ? memoryVolumeSize(pod, volume.emptyDir.sizeLimit, allocatable!.memory) : 0n;
      return setUpEmptyDir({ dir, metaDir: this.metaDir(uid, volume), medium, tmpfs: tmpfsOptions(size), fsGroup, log: vlog, signal });
    }
    if (payload !== undefined) {
      // downwardAPI, configMap, secret, projected: collected before anything is mounted, so a missing object or a
      // bad item leaves nothing behind (and an update that fails leaves the last good files in place).
      if (payload instanceof Error) throw payload;
      // As kubelet wraps an emptyDir: on tmpfs, except configMap's on the node's disk.
      const medium = usesMemoryMedium(volume) ? 'Memory' : '';
      const tmpfs = medium ? tmpfsOptions(memoryVolumeSize(pod, undefined, allocatable!.memory)) : [];
      await setUpEmptyDir({ dir, metaDir: this.metaDir(uid, volume), medium, tmpfs, fsGroup, log: vlog, signal });
      const setPerms = fsGroup === undefined ? undefined : () => setVolumeOwnership(dir, fsGroup, true, vlog);
      if (await writeAtomically(dir, payload, setPerms ? { setPerms } : {})) vlog.info({ source: volumeSourceField(volume) }, 'Wrote volume content');
      return;
    }
    if (volume.gitRepo) throw new Error(gitRepoDisabled);
    throw new Error('volume type is not supported by nodelet');
  }

  /**
   * The CRI mounts of one container (kubelet's makeMounts): each volumeMount's host path, with subPath bind-mounted
   * safely, readOnly (always for the volumes nodelet writes), recursively read-only as its recursiveReadOnly resolves
   * with `handlerSupportsRRO` (the pod's runtime handler's feature), and its propagation; an image volume's mount names
   * the pulled image (`imageVolumes`) and its subPath instead, always read-only. `env` is the container's environment,
   * used by subPathExpr. A mistake of the pod's author throws SyncError CreateContainerConfigError naming pod, container
   * and field.
   */
  async containerMounts(
    pod: V1Pod,
    container: V1Container,
    env: Iterable<[string, string]>,
    imageVolumes: ImageVolumePulls,
    signal?: AbortSignal,
    handlerSupportsRRO = false,
  ): Promise<Mount[]> {
    const uid = pod.metadata!.uid!;
    const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
    const field = containerField(pod, container);
    const envList = [...env];
    const mounts: Mount[] = [];
    for (const [i, vm] of (container.volumeMounts ?? []).entries()) {
      const where = `${field}.volumeMounts[${i}]`;
      const fail = (err: unknown, sub: string) =>
        new SyncError('CreateContainerConfigError', `${(err as Error).message} (pod ${podName(pod)}, container "${container.name}", field ${where}${sub})`, { cause: err });
      const volume = volumes.get(vm.name);
      if (!volume) throw fail(new Error(`cannot find volume "${vm.name}" to mount into container "${container.name}"`), '.name');
      let propagation: MountPropagation;
      try {
        propagation = mountPropagation(vm, container);
      } catch (err) {
        throw fail(err, '.mountPropagation');
      }
      let recursiveReadOnly: boolean;
      try {
        recursiveReadOnly = resolveRecursiveReadOnly(vm, handlerSupportsRRO);
      } catch (err) {
        throw fail(new Error(`failed to resolve recursive read-only mode: ${(err as Error).message}`, { cause: err }), '.recursiveReadOnly');
      }
      let hostPath = this.volumePath(uid, volume);
      let subPath: string;
      try {
        subPath = resolveSubPath(vm, envList);
      } catch (err) {
        throw fail(err, vm.subPathExpr ? '.subPathExpr' : '.subPath');
      }
      if (volume.image) {
        const pull = imageVolumes.get(vm.name);
        // The caller starts no container whose image volume's pull failed.
        if (!pull || !('image' in pull)) throw fail(new Error(`image volume "${vm.name}" has not been pulled`), '.name');
        // containerd checks the sub path inside the image (it must be a directory) and fails the create otherwise.
        mounts.push({ containerPath: containerPath(vm.mountPath), hostPath: '', image: pull.image, ...(subPath ? { imageSubPath: subPath } : {}), readonly: true, propagation });
        continue;
      }
      if (subPath) {
        try {
          hostPath = await this.withLock(uid, () =>
            prepareSubPath({ volumePath: hostPath, subPath, podDir: this.podDir(uid), volumeName: vm.name, containerName: container.name, mountIndex: i }, signal),
          );
        } catch (err) {
          throw fail(err, vm.subPathExpr ? '.subPathExpr' : '.subPath');
        }
      }
      if (propagation !== 'PROPAGATION_PRIVATE' && pathWithinBase(hostPath, this.podDir(uid))) {
        await this.withLock(uid, () => ensureSharedMount(hostPath, signal));
      }
      mounts.push({
        containerPath: containerPath(vm.mountPath),
        hostPath,
        // kubelet mounts the volumes it writes read-only whatever the mount says (mustMountRO).
        readonly: vm.readOnly === true || volume.downwardAPI !== undefined || volume.configMap !== undefined || volume.secret !== undefined || volume.projected !== undefined,
        propagation,
        ...(recursiveReadOnly ? { recursiveReadOnly } : {}),
      });
    }
    return mounts;
  }

  /**
   * Removes everything the pod had on the node: every mount under <root-dir>/pods/<uid> (tmpfs, subPath binds,
   * mounts propagated back from containers) is unmounted first, then the directory is deleted. Idempotent.
   */
  tearDown(uid: string, log: Logger, signal?: AbortSignal): Promise<void> {
    return this.withLock(uid, () => this.tearDownLocked(uid, log, signal));
  }

  private async tearDownLocked(uid: string, log: Logger, signal?: AbortSignal): Promise<void> {
    const podDir = this.podDir(uid);
    this.setUpFingerprints.delete(uid);
    if (!(await stat(podDir).then(() => true, () => false))) return;
    // Stacked mounts show up again after the top one goes: repeat until none is left (bounded).
    for (let round = 0; round < 10; round++) {
      const mounts = mountsUnder(await readMountInfo(), podDir);
      if (mounts.length === 0) break;
      for (const m of mounts) {
        await unmount(m.mountPoint, signal);
        log.info({ mountPoint: m.mountPoint, fsType: m.fsType }, 'Unmounted pod volume');
      }
    }
    const left = mountsUnder(await readMountInfo(), podDir);
    // Deleting through a mount would delete what it shows (a hostPath under a subPath bind): refuse.
    if (left.length > 0) throw new Error(`cannot remove ${podDir}: still mounted: ${left.map((m) => m.mountPoint).join(', ')}`);
    await rm(podDir, { recursive: true, force: true });
    log.info({ podDir }, 'Removed pod directory');
  }

  /**
   * kubelet's cleanupOrphanedPodDirs: tears down <root-dir>/pods/<uid> of every UID `isKnown` does not claim
   * (neither desired nor in the runtime). `isKnown` is asked again under the pod's lock, just before removal.
   */
  async removeOrphanedPodDirs(isKnown: (uid: string) => boolean, log: Logger, signal?: AbortSignal): Promise<string[]> {
    const entries = await readdir(join(this.rootDir, 'pods')).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? [] : Promise.reject(err)));
    const removed: string[] = [];
    for (const uid of entries) {
      if (isKnown(uid)) continue;
      await this.withLock(uid, async () => {
        if (isKnown(uid)) return;
        await this.tearDownLocked(uid, log.child({ podUid: uid }), signal);
        removed.push(uid);
      });
    }
    return removed;
  }
}

/**
 * Bidirectional and HostToContainer mounts need a shared source mount (the runtime checks). A volume inside the
 * pod dir becomes a shared mount point of its own: bind-mounted onto itself if it is not a mount point yet.
 * (kubelet instead makes its whole root dir rshared at start.)
 */
async function ensureSharedMount(path: string, signal?: AbortSignal): Promise<void> {
  const current = mountOf(await readMountInfo(), path);
  if (current && isShared(current)) return;
  if (current?.mountPoint !== path) await bindMount(path, path, signal);
  await makeShared(path, signal);
}
