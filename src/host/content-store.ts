// containerd's local content store as its files show it (content/local in containerd): committed blobs under
// blobs/sha256/<hex>, and each write under way in ingest/<hash of its ref>/ with `ref` (ending in the kind and digest,
// "k8s.io/1/layer-sha256:..."), `total` (the expected size, when known) and `data` (what is written so far). Read-only:
// CRI PullImage reports no progress, so a pull's progress is read from here.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** A write under way: the digest it will commit and the bytes written so far. */
export interface ContentIngest {
  digest: string;
  offset: number;
}

const digestOfRef = /-(sha256:[0-9a-f]{64})$/;

export class ContentStoreFiles {
  constructor(private readonly dir: string) {}

  private blobPath(digest: string): string {
    return join(this.dir, 'blobs', digest.replace(':', '/'));
  }

  /** The writes under way (a write that ends while it is read is left out). */
  async ingests(): Promise<ContentIngest[]> {
    const root = join(this.dir, 'ingest');
    const names = await readdir(root).catch(() => [] as string[]);
    const found = await Promise.all(
      names.map(async (name) => {
        try {
          const digest = digestOfRef.exec((await readFile(join(root, name, 'ref'), 'utf8')).trim())?.[1];
          if (!digest) return undefined;
          return { digest, offset: (await stat(join(root, name, 'data'))).size };
        } catch {
          return undefined;
        }
      }),
    );
    return found.filter((i): i is ContentIngest => i !== undefined);
  }

  /** The digests of the committed sha256 blobs. */
  async blobDigests(): Promise<Set<string>> {
    const names = await readdir(join(this.dir, 'blobs', 'sha256')).catch(() => [] as string[]);
    return new Set(names.map((n) => `sha256:${n}`));
  }

  /** A committed blob's bytes as text when it is at most `maxBytes` (a manifest), else undefined. */
  async smallBlob(digest: string, maxBytes: number): Promise<string | undefined> {
    try {
      const path = this.blobPath(digest);
      if ((await stat(path)).size > maxBytes) return undefined;
      return await readFile(path, 'utf8');
    } catch {
      return undefined;
    }
  }
}
