// emptyDir volumes as kubelet sets them up: a 0777 directory on the node's disk, or a tmpfs sized by the pod's memory.
import { chmod, lstat, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { release } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../core/log.js';
import { mountTmpfs, readMountInfo } from './mounter.js';
import { setVolumeOwnership } from './ownership.js';
import { Quantity, parseQuantity } from '../core/quantity.js';

const defaultPerm = 0o777;

/** kubelet's pod memory limit (ResourceConfigForPod): only when every container declares one; init containers run alone. */
export function podMemoryLimit(pod: V1Pod): Quantity | undefined {
  const limitOf = (c: { resources?: { limits?: Record<string, string> } }) => {
    const v = c.resources?.limits?.memory;
    return v === undefined ? undefined : parseQuantity(v);
  };
  let sum = Quantity.zero('BinarySI');
  for (const c of pod.spec?.containers ?? []) {
    const l = limitOf(c);
    if (!l || l.sign() <= 0) return undefined;
    sum = sum.add(l);
  }
  for (const c of pod.spec?.initContainers ?? []) {
    const l = limitOf(c);
    if (!l || l.sign() <= 0) return undefined;
    if (l.cmp(sum) > 0) sum = l;
  }
  return sum;
}

/**
 * The tmpfs size of a memory-backed emptyDir (calculateEmptyDirMemorySize): the node's allocatable memory,
 * lowered to the pod's memory limit and then to the volume's sizeLimit when those are positive and smaller.
 */
export function memoryVolumeSize(pod: V1Pod, sizeLimit: string | undefined, allocatableMemory: Quantity): bigint {
  let size = allocatableMemory;
  const podLimit = podMemoryLimit(pod);
  if (podLimit && podLimit.sign() > 0 && podLimit.cmp(size) <= 0) size = podLimit;
  if (sizeLimit !== undefined) {
    const limit = parseQuantity(sizeLimit);
    if (limit.sign() > 0 && limit.cmp(size) <= 0) size = limit;
  }
  return size.value();
}

/** tmpfs's noswap option exists from Linux 6.4; kubelet adds it where the kernel has it. */
export function kernelSupportsTmpfsNoswap(kernelRelease = release()): boolean {
  const [major = 0, minor = 0] = kernelRelease.split(/[.-]/).map(Number);
  return major > 6 || (major === 6 && minor >= 4);
}

export function tmpfsOptions(sizeBytes: bigint, noswap = kernelSupportsTmpfsNoswap()): string[] {
  return [...(sizeBytes > 0n ? [`size=${sizeBytes}`] : []), ...(noswap ? ['noswap'] : [])];
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function setupDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: defaultPerm });
  // mkdir's mode went through the umask; the volume must be world-writable whatever user the container runs as.
  if (((await lstat(dir)).mode & 0o7777) !== defaultPerm) await chmod(dir, defaultPerm);
}

async function isTmpfsMountPoint(dir: string): Promise<boolean> {
  return (await readMountInfo()).some((m) => m.mountPoint === dir && m.fsType === 'tmpfs');
}

export interface EmptyDirSetUp {
  dir: string;
  /** kubelet's readiness marker directory (<pod>/plugins/kubernetes.io~empty-dir/<name>). */
  metaDir: string;
  medium: string;
  /** tmpfs mount options for medium Memory. */
  tmpfs: string[];
  fsGroup?: number;
  log: Logger;
  signal?: AbortSignal;
}

/**
 * kubelet's emptyDir SetUpAt: done when the ready marker exists and the directory (or its tmpfs) is there;
 * else the directory is made 0777 (a tmpfs mounted on it for Memory), given to fsGroup, and marked ready.
 * Ownership is applied once, at first set-up, so later restarts never rewrite the modes of the pod's files.
 */
export async function setUpEmptyDir(s: EmptyDirSetUp): Promise<void> {
  const readyFile = join(s.metaDir, 'ready');
  if (await exists(readyFile)) {
    if (s.medium === 'Memory' && (await isTmpfsMountPoint(s.dir))) return;
    if (s.medium === '' && (await exists(s.dir))) return;
    await rm(s.metaDir, { recursive: true, force: true });
  }
  if (s.medium === '') {
    await setupDir(s.dir);
  } else if (s.medium === 'Memory') {
    await setupDir(s.dir);
    if (!(await isTmpfsMountPoint(s.dir))) {
      await mountTmpfs(s.dir, s.tmpfs, s.signal);
      s.log.info({ dir: s.dir, options: s.tmpfs.join(',') }, 'Mounted tmpfs for volume');
    }
  } else {
    throw new Error(`unknown storage medium "${s.medium}"`);
  }
  if (s.fsGroup !== undefined) await setVolumeOwnership(s.dir, s.fsGroup, false, s.log);
  await mkdir(s.metaDir, { recursive: true, mode: 0o750 });
  await writeFile(readyFile, '', { mode: 0o600 });
}
