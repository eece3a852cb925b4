// hostPath volumes: kubelet's type checks (and the *OrCreate creations) on the host path, with its error messages.
import { constants } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';

export const hostPathTypes = ['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'] as const;
export type HostPathType = (typeof hostPathTypes)[number];

/** A host path that does not match its declared type: the user's fault, reported as kubelet words it. */
export class HostPathTypeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HostPathTypeError';
  }
}

type FileType = 'Directory' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

/** The file type kubelet's hostutil reports (following symlinks), or an error for FIFOs and the like. */
export async function hostFileType(path: string): Promise<FileType> {
  const s = await stat(path);
  if (s.isDirectory()) return 'Directory';
  if (s.isFile()) return 'File';
  if (s.isSocket()) return 'Socket';
  if (s.isCharacterDevice()) return 'CharDevice';
  if (s.isBlockDevice()) return 'BlockDevice';
  throw new Error('only recognise file, directory, socket, block device and character device');
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

const descriptions: Record<FileType, string> = {
  Directory: 'directory',
  File: 'file',
  Socket: 'socket file',
  CharDevice: 'character device',
  BlockDevice: 'block device',
};

async function typeMatchedOrError(path: string, expected: FileType): Promise<void> {
  const description = descriptions[expected];
  if (!(await exists(path))) throw new HostPathTypeError(`hostPath ${path} doesn't exist`);
  let actual: FileType;
  try {
    actual = await hostFileType(path);
  } catch (err) {
    throw new HostPathTypeError(`hostPath type check failed, ${path} is not a ${description}, unable to determine its type: ${(err as Error).message}`, { cause: err });
  }
  if (actual !== expected) throw new HostPathTypeError(`hostPath type check failed: ${path} is not a ${description}, it's a ${actual}`);
}

/**
 * kubelet's hostPath SetUp: no `..` in the path, then the type check. DirectoryOrCreate makes the directory
 * (and parents) 0755, FileOrCreate an empty 0644 file (its parent must exist); an unset type checks nothing.
 */
export async function checkHostPath(path: string, type: string | undefined): Promise<void> {
  if (path.split('/').includes('..')) throw new HostPathTypeError(`invalid HostPath \`${path}\`: must not contain '..'`);
  switch ((type ?? '') as HostPathType) {
    case '':
      return;
    case 'DirectoryOrCreate':
      if (!(await exists(path))) {
        await mkdir(path, { recursive: true, mode: 0o755 });
        return;
      }
      return typeMatchedOrError(path, 'Directory');
    case 'Directory':
      return typeMatchedOrError(path, 'Directory');
    case 'FileOrCreate':
      if (!(await exists(path))) {
        // O_CREAT without O_EXCL, as os.OpenFile(path, O_CREATE, 0644): a racing creator is fine.
        const handle = await open(path, constants.O_CREAT | constants.O_RDONLY, 0o644);
        await handle.close();
        return;
      }
      return typeMatchedOrError(path, 'File');
    case 'File':
      return typeMatchedOrError(path, 'File');
    case 'Socket':
      return typeMatchedOrError(path, 'Socket');
    case 'CharDevice':
      return typeMatchedOrError(path, 'CharDevice');
    case 'BlockDevice':
      return typeMatchedOrError(path, 'BlockDevice');
    default:
      throw new HostPathTypeError(`${type} is an invalid volume type`);
  }
}
