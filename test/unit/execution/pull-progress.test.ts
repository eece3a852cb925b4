// A pull's progress from containerd's content store files: nothing known until the manifest is committed, then its
// config and layers the store lacked, counted when committed or by their ingests' bytes; manifests claimed once.
import type { ContentIngest } from '../../../src/host/content-store.js';
import { describeProgress, formatBytes, PullProgressWatcher } from '../../../src/execution/pull-progress.js';

const d = (c: string) => `sha256:${c.repeat(64)}`;

class FakeStore {
  blobs = new Map<string, string>();
  ingestList: ContentIngest[] = [];
  async ingests() {
    return this.ingestList;
  }
  async blobDigests() {
    return new Set(this.blobs.keys());
  }
  async smallBlob(digest: string, max: number) {
    const text = this.blobs.get(digest);
    return text !== undefined && text.length <= max ? text : undefined;
  }
}

const manifest = (layers: [string, number][]) =>
  JSON.stringify({ schemaVersion: 2, config: { digest: d('c'), size: 100 }, layers: layers.map(([digest, size]) => ({ digest, size })) });

test('the bytes to fetch come from the manifest; present layers are not counted; ingests count as written', async () => {
  const store = new FakeStore();
  store.blobs.set(d('1'), 'x'.repeat(10)); // a layer the node has already
  const watcher = new PullProgressWatcher(store);
  const pull = await watcher.begin();
  expect(await pull.poll()).toEqual({ downloadedBytes: 0 });
  store.blobs.set(d('m'), manifest([[d('1'), 10], [d('2'), 1000], [d('3'), 2000]]));
  store.ingestList = [{ digest: d('2'), offset: 400 }, { digest: d('9'), offset: 5 }];
  expect(await pull.poll()).toEqual({ downloadedBytes: 400, totalBytes: 3100 });
  store.blobs.set(d('c'), '{}');
  store.blobs.set(d('2'), '');
  store.ingestList = [{ digest: d('3'), offset: 2500 }];
  // An ingest never counts past its blob's size.
  expect(await pull.poll()).toEqual({ downloadedBytes: 3100, totalBytes: 3100 });
});

test('a manifest is claimed by one pull, and stays its own after that pull ends', async () => {
  const store = new FakeStore();
  const watcher = new PullProgressWatcher(store);
  const first = await watcher.begin();
  const second = await watcher.begin();
  store.blobs.set(d('m'), manifest([[d('2'), 50]]));
  expect((await first.poll()).totalBytes).toBe(150); // the config's 100 bytes and the layer's 50
  expect(await second.poll()).toEqual({ downloadedBytes: 0 });
  const third = await watcher.begin();
  // The manifest was there when the third began: not its pull's.
  expect(await third.poll()).toEqual({ downloadedBytes: 0 });
  // A blob that is not a manifest (a config, an index) is looked at once and passed over.
  store.blobs.set(d('i'), JSON.stringify({ manifests: [] }));
  // The first pull's manifest is not the second's, even once the first has ended.
  expect(await second.poll()).toEqual({ downloadedBytes: 0 });
});

test('progress text', () => {
  expect(formatBytes(512)).toBe('512B');
  expect(formatBytes(1536)).toBe('1.5KiB');
  expect(formatBytes(50 * 1024 * 1024)).toBe('50.0MiB');
  expect(describeProgress({ downloadedBytes: 12 * 1024 * 1024, totalBytes: 48 * 1024 * 1024 })).toBe('12.0MiB of 48.0MiB (25%)');
  expect(describeProgress({ downloadedBytes: 2048 })).toBe('2.0KiB');
});
