// An in-memory PodFilesystem for unit tests: directories and files in maps, every operation recorded.
import { posix } from 'node:path';
import type { PodFilesystem } from '../../../src/host/filesystem.js';

/** One operation the filesystem received, with its path. */
export interface FsOperation {
  op: 'makeDirs' | 'removeAll' | 'readHead' | 'readTail';
  path: string;
}

/** A read of a path that holds no file rejects as Node's fs would (code ENOENT). */
function enoent(op: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOENT: no such file or directory, ${op} '${path}'`), { code: 'ENOENT', path });
}

export class InMemoryFilesystem implements PodFilesystem {
  /** Directories by normalized path, with the mode they were made with. */
  readonly dirs = new Map<string, number>();
  readonly files = new Map<string, string>();
  readonly operations: FsOperation[] = [];

  async makeDirs(path: string, mode: number): Promise<void> {
    this.operations.push({ op: 'makeDirs', path });
    // Every missing parent too, each with the mode (as mkdir -p with a mode).
    for (let dir = posix.normalize(path); dir !== '/' && dir !== '.'; dir = posix.dirname(dir)) {
      if (!this.dirs.has(dir)) this.dirs.set(dir, mode);
    }
  }

  async removeAll(path: string): Promise<void> {
    this.operations.push({ op: 'removeAll', path });
    const root = posix.normalize(path);
    const under = (p: string) => p === root || p.startsWith(`${root}/`);
    for (const p of [...this.dirs.keys()]) if (under(p)) this.dirs.delete(p);
    for (const p of [...this.files.keys()]) if (under(p)) this.files.delete(p);
  }

  async readHead(path: string, maxBytes: number): Promise<string> {
    this.operations.push({ op: 'readHead', path });
    return Buffer.from(this.read('open', path)).subarray(0, maxBytes).toString('utf8');
  }

  async readTail(path: string, maxBytes: number): Promise<string> {
    this.operations.push({ op: 'readTail', path });
    const bytes = Buffer.from(this.read('open', path));
    return bytes.subarray(Math.max(0, bytes.length - maxBytes)).toString('utf8');
  }

  // ---- test controls (not recorded) ----

  /** Writes a file (its parent directories appear with mode 0o755). */
  writeFile(path: string, content: string): void {
    const p = posix.normalize(path);
    for (let dir = posix.dirname(p); dir !== '/' && dir !== '.'; dir = posix.dirname(dir)) if (!this.dirs.has(dir)) this.dirs.set(dir, 0o755);
    this.files.set(p, content);
  }

  /** Whether a directory or file exists at the path. */
  exists(path: string): boolean {
    const p = posix.normalize(path);
    return this.dirs.has(p) || this.files.has(p);
  }

  /** The paths of one kind of operation, in order. */
  pathsOf(op: FsOperation['op']): string[] {
    return this.operations.filter((o) => o.op === op).map((o) => o.path);
  }

  private read(op: string, path: string): string {
    const content = this.files.get(posix.normalize(path));
    if (content === undefined) throw enoent(op, path);
    return content;
  }
}
