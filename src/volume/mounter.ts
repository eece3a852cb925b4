// The host's mount table and the mount/umount commands nodelet runs for pod volumes (tmpfs, subPath binds, shared mounts).
import { readFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

export interface MountInfo {
  id: number;
  parentId: number;
  /** Path of the mount point, with mountinfo's octal escapes decoded. */
  mountPoint: string;
  /** Optional fields such as `shared:12` or `master:3`. */
  optional: string[];
  fsType: string;
  source: string;
  superOptions: string;
}

const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));

/** Parses /proc/<pid>/mountinfo (proc(5)): fields, optional fields up to `-`, then fstype, source, super options. */
export function parseMountInfo(text: string): MountInfo[] {
  const mounts: MountInfo[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const fields = line.split(' ');
    const sep = fields.indexOf('-', 6);
    if (sep < 0 || fields.length < sep + 3) continue;
    mounts.push({
      id: Number(fields[0]),
      parentId: Number(fields[1]),
      mountPoint: unescape(fields[4]!),
      optional: fields.slice(6, sep),
      fsType: fields[sep + 1]!,
      source: unescape(fields[sep + 2]!),
      superOptions: fields[sep + 3] ?? '',
    });
  }
  return mounts;
}

export async function readMountInfo(): Promise<MountInfo[]> {
  return parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8'));
}

/** Mounts at `dir` or below it, deepest (most recently stacked) first: the order they must be unmounted in. */
export function mountsUnder(mounts: MountInfo[], dir: string): MountInfo[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return mounts
    .map((m, index) => ({ m, index }))
    .filter(({ m }) => m.mountPoint === dir || m.mountPoint.startsWith(prefix))
    .sort((a, b) => b.m.mountPoint.split('/').length - a.m.mountPoint.split('/').length || b.index - a.index)
    .map(({ m }) => m);
}

/** The mount a path lives on: the last-listed mount whose mount point is the longest prefix of it. */
export function mountOf(mounts: MountInfo[], path: string): MountInfo | undefined {
  let best: MountInfo | undefined;
  for (const m of mounts) {
    const inside = m.mountPoint === '/' || path === m.mountPoint || path.startsWith(`${m.mountPoint}/`);
    if (inside && (!best || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  return best;
}

export const isShared = (m: MountInfo) => m.optional.some((o) => o.startsWith('shared:'));

/** A mount or umount command that failed; carries the command's stderr. */
export class MountError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MountError';
  }
}

const mountTimeoutMs = 30_000;

async function run(args: string[], what: string, signal?: AbortSignal): Promise<void> {
  const [cmd, ...rest] = args as [string, ...string[]];
  try {
    await promisify(execFile)(cmd, rest, { timeout: mountTimeoutMs, ...(signal ? { signal } : {}) });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new MountError(`${what} failed: ${stderr || (err as Error).message}`, { cause: err });
  }
}

export function mountTmpfs(dir: string, options: string[], signal?: AbortSignal): Promise<void> {
  const args = ['mount', '-t', 'tmpfs', ...(options.length ? ['-o', options.join(',')] : []), 'tmpfs', dir];
  return run(args, `mount tmpfs on ${dir}`, signal);
}

/** Bind-mounts source onto target as given (a /proc/<pid>/fd/<n> source must not be resolved to a path first). */
export function bindMount(source: string, target: string, signal?: AbortSignal): Promise<void> {
  return run(['mount', '--no-canonicalize', '--bind', source, target], `bind mount ${source} on ${target}`, signal);
}

export function makeShared(target: string, signal?: AbortSignal): Promise<void> {
  return run(['mount', '--make-shared', target], `make ${target} a shared mount`, signal);
}

export function unmount(target: string, signal?: AbortSignal): Promise<void> {
  return run(['umount', target], `unmount ${target}`, signal);
}
