// kubelet's AtomicWriter: projects a set of files into a volume so a reader never sees a half-updated set.
//
// Layout of the target directory:
//   ..2024_05_01_10_00_00.Ab12Cd/   the real files of one version (a timestamped directory)
//   ..data -> ..2024_05_01_10_00_00.Ab12Cd   swapped atomically (rename of ..data_tmp) on each update
//   labels -> ..data/labels        one user-visible symlink per top-level path of the payload
import { chmod, chown, lstat, mkdir, mkdtemp, readFile, readdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';

export interface FileProjection {
  data: Buffer;
  mode: number;
  /** The file's owner (a projected token of a pod whose containers all run as this user). */
  fsUser?: number;
}

const dataDirName = '..data';
const newDataDirName = '..data_tmp';
const maxFileNameLength = 255;
const maxPathLength = 4096;

/** kubelet's rules for payload paths (relative, no `..` element, not starting with `..`, bounded lengths). */
export function payloadPathError(path: string): string | undefined {
  if (path === '') return `invalid path: must not be empty: ""`;
  if (path.startsWith('/')) return `invalid path: must be relative path: ${path}`;
  if (path.length > maxPathLength) return `invalid path: must be less than or equal to ${maxPathLength} characters`;
  const items = path.split('/');
  for (const item of items) {
    if (item === '..') return `invalid path: must not contain '..': ${path}`;
    if (Buffer.byteLength(item) > maxFileNameLength) return `invalid path: filenames must be less than or equal to ${maxFileNameLength} characters`;
  }
  if (items[0]!.startsWith('..') && items[0]!.length > 2) return `invalid path: must not start with '..': ${path}`;
  return undefined;
}

/** Go's time.Format("..2006_01_02_15_04_05.") in UTC: the prefix of a timestamped directory. */
export function timestampDirPrefix(now: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.`;
}

const isNotFound = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

async function walk(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(dir, rel), { withFileTypes: true })) {
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    out.push(path);
    if (entry.isDirectory()) out.push(...(await walk(dir, path)));
  }
  return out;
}

async function differs(path: string, content: Buffer): Promise<boolean> {
  try {
    return !content.equals(await readFile(path));
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
}

export interface AtomicWriteOptions {
  /** Applied to the new timestamped directory (its name relative to the target) before it is published. */
  setPerms?: (timestampDirName: string) => Promise<void>;
  now?: Date;
}

/**
 * Writes `payload` (cleaned relative path -> content) into `targetDir` the way kubelet's AtomicWriter.Write does.
 * Nothing is written when the current version already has the same content and no extra paths.
 * Returns whether a new version was published.
 */
export async function writeAtomically(targetDir: string, payload: Map<string, FileProjection>, options: AtomicWriteOptions = {}): Promise<boolean> {
  for (const path of payload.keys()) {
    const problem = payloadPathError(path);
    if (problem) throw new Error(problem);
  }
  const dataDirPath = join(targetDir, dataDirName);
  let oldTsDir = '';
  try {
    oldTsDir = await readlink(dataDirPath);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }

  let pathsToRemove: string[] = [];
  let shouldWrite = true;
  if (oldTsDir) {
    const oldTsPath = join(targetDir, oldTsDir);
    const wanted = new Set<string>();
    for (const path of payload.keys()) {
      // Every parent of a payload path stays, so no non-empty directory is ever removed.
      for (let p = path; p; p = posix.dirname(p) === '.' ? '' : posix.dirname(p)) wanted.add(p);
    }
    pathsToRemove = (await walk(oldTsPath).catch((err: unknown) => (isNotFound(err) ? [] : Promise.reject(err)))).filter((p) => !wanted.has(p));
    let changed = false;
    for (const [path, file] of payload) {
      if (await differs(join(oldTsPath, path), file.data)) {
        changed = true;
        break;
      }
    }
    if (!changed && pathsToRemove.length === 0) {
      shouldWrite = false;
      oldTsDir = '';
    }
  }

  if (shouldWrite) {
    const tsDir = await mkdtemp(join(targetDir, timestampDirPrefix(options.now ?? new Date())));
    const tsDirName = posix.basename(tsDir);
    try {
      await chmod(tsDir, 0o755);
      for (const [path, file] of payload) {
        const full = join(tsDir, path);
        await mkdir(posix.dirname(full), { recursive: true, mode: 0o777 });
        await writeFile(full, file.data, { mode: file.mode });
        // writeFile's mode is reduced by the umask; the volume wants exactly the requested mode.
        await chmod(full, file.mode);
        if (file.fsUser !== undefined) await chown(full, file.fsUser, -1);
      }
      await options.setPerms?.(tsDirName);
      const newDataDirPath = join(targetDir, newDataDirName);
      // A ..data_tmp left by an interrupted write would make every later update fail.
      await rm(newDataDirPath, { force: true });
      await symlink(tsDirName, newDataDirPath);
      await rename(newDataDirPath, dataDirPath);
    } catch (err) {
      await rm(tsDir, { recursive: true, force: true });
      throw err;
    }
  }

  for (const path of payload.keys()) {
    const top = path.split('/')[0]!;
    const visible = join(targetDir, top);
    try {
      await lstat(visible);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await symlink(posix.join(dataDirName, top), visible);
    }
  }
  for (const path of pathsToRemove) {
    // Only top-level entries are user-visible symlinks; deeper ones went away with the old version.
    if (!path.includes('/')) await rm(join(targetDir, path), { force: true });
  }
  if (oldTsDir) await rm(join(targetDir, oldTsDir), { recursive: true, force: true });
  return shouldWrite;
}
