// containerd's content store files as a pull leaves them: committed blobs by digest, and ingests with their ref (kind
// and digest at its end) and the bytes written so far; a ref of another shape, or an ingest without data, is passed over.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContentStoreFiles } from '../../../src/host/content-store.js';

const hex = (c: string) => c.repeat(64);
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'content-store-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

test('blobs, small blobs and ingests under way', async () => {
  await mkdir(join(dir, 'blobs/sha256'), { recursive: true });
  await writeFile(join(dir, 'blobs/sha256', hex('a')), '{"layers":[]}');
  await writeFile(join(dir, 'blobs/sha256', hex('b')), Buffer.alloc(2048));
  for (const [name, ref, data] of [
    ['i1', `k8s.io/1/layer-sha256:${hex('c')}`, Buffer.alloc(300)],
    ['i2', 'k8s.io/2/something-else', Buffer.alloc(10)],
    ['i3', `k8s.io/3/config-sha256:${hex('d')}`, undefined],
  ] as const) {
    await mkdir(join(dir, 'ingest', name), { recursive: true });
    await writeFile(join(dir, 'ingest', name, 'ref'), ref);
    if (data) await writeFile(join(dir, 'ingest', name, 'data'), data);
  }
  const store = new ContentStoreFiles(dir);
  expect(await store.blobDigests()).toEqual(new Set([`sha256:${hex('a')}`, `sha256:${hex('b')}`]));
  expect(await store.smallBlob(`sha256:${hex('a')}`, 1024)).toBe('{"layers":[]}');
  expect(await store.smallBlob(`sha256:${hex('b')}`, 1024)).toBeUndefined();
  expect(await store.smallBlob(`sha256:${hex('e')}`, 1024)).toBeUndefined();
  expect(await store.ingests()).toEqual([{ digest: `sha256:${hex('c')}`, offset: 300 }]);
  // A store that does not exist (yet) has nothing.
  expect(await new ContentStoreFiles(join(dir, 'none')).ingests()).toEqual([]);
});
