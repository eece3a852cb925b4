// The file operations the pod lifecycle does on the host itself (log directories, termination messages read back), behind
// a narrow interface: the executor and the runtime observer take it injected, so they can be unit-tested in memory.
// Volumes (volume/) mount and write with their own operations; this is not for them.
import { mkdir, open, rm } from 'node:fs/promises';

export interface PodFilesystem {
  /** Creates the directory and its missing parents with this mode; one that exists is fine. */
  makeDirs(path: string, mode: number): Promise<void>;
  /** Removes a file or a whole directory tree; nothing there is fine. */
  removeAll(path: string): Promise<void>;
  /** Up to `maxBytes` from the start of a file, as UTF-8; rejects when it cannot be read. */
  readHead(path: string, maxBytes: number): Promise<string>;
  /** The last `maxBytes` (or fewer) of a file, as UTF-8; rejects when it cannot be read. */
  readTail(path: string, maxBytes: number): Promise<string>;
}

/** The host's own filesystem. */
export const hostFilesystem: PodFilesystem = {
  async makeDirs(path, mode) {
    await mkdir(path, { recursive: true, mode });
  },
  async removeAll(path) {
    await rm(path, { recursive: true, force: true });
  },
  async readHead(path, maxBytes) {
    const file = await open(path, 'r');
    try {
      const buf = Buffer.alloc(maxBytes);
      const { bytesRead } = await file.read(buf, 0, maxBytes, 0);
      return buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await file.close();
    }
  },
  async readTail(path, maxBytes) {
    const file = await open(path, 'r');
    try {
      const { size } = await file.stat();
      const length = Math.min(size, maxBytes);
      const buf = Buffer.alloc(length);
      await file.read(buf, 0, length, size - length);
      return buf.toString('utf8');
    } finally {
      await file.close();
    }
  },
};
