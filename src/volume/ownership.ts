// fsGroup volume ownership as kubelet's SetVolumeOwnership: group fsGroup on everything, group rw (ro for read-only volumes), setgid dirs.
import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../core/log.js';

const rwMask = 0o660;
const roMask = 0o440;
const execMask = 0o110;
const setgid = 0o2000;

/** The mode kubelet gives a file of a volume owned by fsGroup (the mode bits only gain). */
export function ownedMode(mode: number, isDirectory: boolean, readOnly: boolean): number {
  let mask = readOnly ? roMask : rwMask;
  if (isDirectory) mask |= setgid | execMask;
  return (mode & 0o7777) | mask;
}

/**
 * Walks `dir` without following symlinks: lchown(-1, fsGroup) on every entry, chmod on all but symlinks
 * (a symlink's chmod would change its target). As kubelet does, a failing chown/chmod is logged, not fatal.
 */
export async function setVolumeOwnership(dir: string, fsGroup: number, readOnly: boolean, log: Logger): Promise<void> {
  const visit = async (path: string): Promise<void> => {
    const s = await lstat(path);
    await lchown(path, -1, fsGroup).catch((err: unknown) => log.warn({ err, path }, 'Lchown failed'));
    if (s.isSymbolicLink()) return;
    await chmod(path, ownedMode(s.mode, s.isDirectory(), readOnly)).catch((err: unknown) => log.warn({ err, path }, 'chmod failed'));
    if (s.isDirectory()) for (const name of await readdir(path)) await visit(join(path, name));
  };
  await visit(dir);
}
