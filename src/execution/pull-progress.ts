// A pull's progress, read from containerd's content store while CRI PullImage runs (it reports none): the image
// manifest that appears in the store during the pull gives the bytes to fetch (its config and layers the store did not
// have), and each of them counts as fetched once committed, or by its ingest's bytes written while under way. Pulls
// running at once each claim the manifests that appear first; pulls started in the same poll interval may swap theirs.
import type { ContentStoreFiles } from '../host/content-store.js';

/** Bytes fetched so far, and of how many (undefined until the manifest is in the store). */
export interface PullProgress {
  downloadedBytes: number;
  totalBytes?: number;
}

/** A manifest is small; a larger blob is a layer and is not read. */
const maxManifestBytes = 4 << 20;

interface Descriptor {
  digest: string;
  size: number;
}

/** The config and layers of an image manifest (OCI or Docker schema 2), or undefined for any other blob. */
function manifestBlobs(text: string): Descriptor[] | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  const m = doc as { config?: Partial<Descriptor>; layers?: Partial<Descriptor>[] } | null;
  if (!m || typeof m !== 'object' || !Array.isArray(m.layers) || !m.config) return undefined;
  const all = [m.config, ...m.layers];
  return all.every((d) => typeof d?.digest === 'string' && typeof d.size === 'number') ? (all as Descriptor[]) : undefined;
}

export type ContentStoreReader = Pick<ContentStoreFiles, 'ingests' | 'blobDigests' | 'smallBlob'>;

export class PullProgressWatcher {
  /** Manifests a running pull has taken as its own. */
  private readonly claimed = new Set<string>();

  constructor(private readonly store: ContentStoreReader) {}

  /**
   * Starts following one pull: the blobs present now are not its to fetch. A manifest stays claimed after its pull ends
   * (a pull still looking for its own must not take it); claims of manifests gone from the store are dropped here.
   */
  async begin(): Promise<TrackedPull> {
    const blobs = await this.store.blobDigests();
    for (const digest of this.claimed) if (!blobs.has(digest)) this.claimed.delete(digest);
    return new TrackedPull(this.store, this.claimed, blobs);
  }
}

export class TrackedPull {
  private needed?: Descriptor[];
  /** Blobs already looked at that are not a manifest. */
  private readonly inspected = new Set<string>();

  constructor(
    private readonly store: ContentStoreReader,
    /** Manifests pulls have taken as theirs (shared by the watcher's pulls). */
    private readonly claimed: Set<string>,
    private readonly before: Set<string>,
  ) {}

  async poll(): Promise<PullProgress> {
    const blobs = await this.store.blobDigests();
    if (!this.needed) {
      for (const digest of blobs) {
        if (this.before.has(digest) || this.inspected.has(digest) || this.claimed.has(digest)) continue;
        this.inspected.add(digest);
        const text = await this.store.smallBlob(digest, maxManifestBytes);
        const descriptors = text === undefined ? undefined : manifestBlobs(text);
        if (!descriptors) continue;
        this.claimed.add(digest);
        this.needed = descriptors.filter((d) => !this.before.has(d.digest));
        break;
      }
      if (!this.needed) return { downloadedBytes: 0 };
    }
    const written = new Map((await this.store.ingests()).map((i) => [i.digest, i.offset]));
    let downloadedBytes = 0;
    for (const d of this.needed) downloadedBytes += blobs.has(d.digest) ? d.size : Math.min(d.size, written.get(d.digest) ?? 0);
    return { downloadedBytes, totalBytes: this.needed.reduce((sum, d) => sum + d.size, 0) };
  }
}

/** Bytes as a short binary-unit figure: 512B, 1.5KiB, 23.4MiB, 1.2GiB. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value}B` : `${value.toFixed(1)}${units[unit]}`;
}

/** One line of a pull's progress: "23.4MiB of 50.0MiB (46%)", or the bytes alone before the total is known. */
export function describeProgress(p: PullProgress): string {
  if (p.totalBytes === undefined) return `${formatBytes(p.downloadedBytes)}`;
  const percent = p.totalBytes === 0 ? 100 : Math.floor((p.downloadedBytes * 100) / p.totalBytes);
  return `${formatBytes(p.downloadedBytes)} of ${formatBytes(p.totalBytes)} (${percent}%)`;
}
