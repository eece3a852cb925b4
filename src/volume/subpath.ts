// volumeMount subPath / subPathExpr: kubelet's checks, and its safe bind mount of the sub path (no symlink may lead out of the volume).
//
// A container can replace a directory of a shared volume with a symlink to anywhere on the host between the
// check and the runtime's mount (CVE-2017-1002101). As kubelet does, the sub path is opened component by
// component without following symlinks, checked to lie inside the volume, and that open file is bind-mounted
// (through /proc/<pid>/fd/<n>) to <pod dir>/volume-subpaths/<volume>/<container>/<mount index>, which is what
// the runtime gets.
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { V1VolumeMount } from '@kubernetes/client-node';
import { expandVars } from '../core/env-expansion.js';
import { bindMount, readMountInfo, unmount } from './mounter.js';

/** A subPath the user got wrong; the message is kubelet's. */
export class SubPathError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SubPathError';
  }
}

/** Records the names a $(VAR) expansion asked for but could not find (or found empty). */
class RecordingEnv extends Map<string, string> {
  readonly missing = new Set<string>();
  override get(key: string): string | undefined {
    const v = super.get(key);
    if (!v) this.missing.add(key);
    return v;
  }
}

/**
 * The sub path a volumeMount asks for ('' for none): subPath, or subPathExpr expanded with the container's
 * environment. Throws SubPathError for a missing variable, an absolute path or a `..` element.
 */
export function resolveSubPath(mount: V1VolumeMount, env: Iterable<[string, string]>): string {
  let subPath = mount.subPath ?? '';
  if (mount.subPathExpr) {
    const vars = new RecordingEnv(env);
    subPath = expandVars(mount.subPathExpr, vars);
    if (vars.missing.size > 0) throw new SubPathError(`missing value for ${[...vars.missing].sort().join(', ')}`);
  }
  if (!subPath) return '';
  if (subPath.startsWith('/')) throw new SubPathError(`error SubPath \`${subPath}\` must not be an absolute path`);
  if (subPath.split('/').includes('..')) throw new SubPathError(`unable to provision SubPath \`${subPath}\`: must not contain '..'`);
  return subPath;
}

/** Linux O_PATH (not in Node's fs.constants): an fd naming a file without opening it for I/O. */
const O_PATH = 0o10000000;

export function pathWithinBase(path: string, base: string): boolean {
  return path === base || path.startsWith(base.endsWith('/') ? base : `${base}/`);
}

/** /proc/self/fd/<n>/<name> resolves <name> relative to the open directory, as openat(2) does. */
const at = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;

/**
 * Opens `path` (symlinks already resolved) walking down from `base` without following any symlink;
 * the result is an O_PATH handle of the final component (the base itself when they are equal).
 */
export async function safeOpen(path: string, base: string): Promise<FileHandle> {
  if (!pathWithinBase(path, base)) throw new Error(`path ${path} is outside of allowed base ${base}`);
  const rel = posix.relative(base, path);
  let current = await open(base, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_DIRECTORY);
  let currentPath = base;
  try {
    for (const seg of rel ? rel.split('/') : []) {
      currentPath = join(currentPath, seg);
      const child = await open(at(current, seg), O_PATH | constants.O_NOFOLLOW);
      await current.close();
      current = child;
      if ((await child.stat()).isSymbolicLink()) throw new Error(`unexpected symlink found ${currentPath}`);
    }
    return current;
  } catch (err) {
    await current.close();
    throw err;
  }
}

/**
 * Creates `subdir` under `base` with mode `perm` (kubelet's SafeMakeDir): the existing prefix must resolve
 * inside the base, and each new directory is created and entered relative to its parent's fd, never by path.
 */
export async function safeMakeDir(subdir: string, base: string, perm: number): Promise<void> {
  const realBase = await realpath(base);
  const full = join(realBase, subdir);
  if (!pathWithinBase(full, realBase)) throw new Error(`path ${full} is outside of allowed base ${realBase}`);
  try {
    const s = await stat(full);
    if (s.isDirectory()) return;
    throw Object.assign(new Error(`mkdir ${full}: not a directory`), { code: 'ENOTDIR' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  // The longest existing prefix (symlinks followed), then what is left to create.
  const segments = posix.relative(realBase, full).split('/');
  let existing = realBase;
  let i = 0;
  for (; i < segments.length; i++) {
    try {
      await stat(join(existing, segments[i]!));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') break;
      throw err;
    }
    existing = join(existing, segments[i]!);
  }
  const realExisting = await realpath(existing);
  if (!pathWithinBase(realExisting, realBase)) throw new Error(`path ${realExisting} is outside of allowed base ${realBase}`);
  let parent = await safeOpen(realExisting, realBase);
  try {
    for (const dir of segments.slice(i)) {
      await mkdir(at(parent, dir), { mode: perm & 0o777 });
      const child = await open(at(parent, dir), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_DIRECTORY);
      await parent.close();
      parent = child;
      // mkdir's mode went through the umask and drops setgid; the sub path gets the volume's exact mode.
      await child.chmod(perm & 0o7777);
    }
  } finally {
    await parent.close();
  }
}

export interface SubPathMount {
  /** The volume's directory (or file) on the host. */
  volumePath: string;
  subPath: string;
  podDir: string;
  volumeName: string;
  containerName: string;
  /** Index of the volumeMount in the container's list. */
  mountIndex: number;
}

export const subPathsDirName = 'volume-subpaths';

export function subPathBindTarget(m: Pick<SubPathMount, 'podDir' | 'volumeName' | 'containerName' | 'mountIndex'>): string {
  return join(m.podDir, subPathsDirName, m.volumeName, m.containerName, String(m.mountIndex));
}

/**
 * Makes a sub path ready for a container, as kubelet's makeMounts and PrepareSafeSubpath: creates it as a
 * directory with the volume's mode when missing, then bind-mounts it safely; returns the host path to mount.
 * A bind mount that already shows the same file is reused (a restarted container).
 */
export async function prepareSubPath(m: SubPathMount, signal?: AbortSignal): Promise<string> {
  const hostPath = join(m.volumePath, m.subPath);
  const failure = (what: string, cause: unknown) =>
    new SubPathError(`failed to ${what} subPath${what === 'create' ? ' directory' : ''} for volumeMount "${m.volumeName}" of container "${m.containerName}"`, { cause });
  try {
    await stat(hostPath);
  } catch {
    try {
      await safeMakeDir(m.subPath, m.volumePath, (await stat(m.volumePath)).mode);
    } catch (err) {
      throw failure('create', err);
    }
  }
  const target = subPathBindTarget(m);
  let handle: FileHandle | undefined;
  try {
    const realVolume = await realpath(m.volumePath);
    const realPath = await realpath(hostPath);
    if (!pathWithinBase(realPath, realVolume)) throw new Error(`subpath "${realPath}" not within volume path "${realVolume}"`);
    handle = await safeOpen(realPath, realVolume);
    const source = await handle.stat();
    if ((await readMountInfo()).some((x) => x.mountPoint === target)) {
      const current = await lstat(target);
      if (current.dev === source.dev && current.ino === source.ino) return target;
      await unmount(target, signal);
    }
    await mkdir(join(target, '..'), { recursive: true, mode: 0o750 });
    if (source.isDirectory()) await mkdir(target, { mode: 0o750 }).catch((err: NodeJS.ErrnoException) => (err.code === 'EEXIST' ? undefined : Promise.reject(err)));
    else await writeFile(target, '', { mode: 0o640 });
    await bindMount(`/proc/${process.pid}/fd/${handle.fd}`, target, signal);
    return target;
  } catch (err) {
    throw failure('prepare', err);
  } finally {
    await handle?.close();
  }
}
