// The image GC manager against fake runtime and filesystem: over the high threshold it removes unused images least
// recently used first until enough is freed, never the sandbox image or one a container uses; too little to free is
// FreeDiskSpaceFailed each time and ImageGCFailed from the second failure in a row.
import type { Container, ContainerStatus, Image } from '../../../src/cri/types.js';
import { CriError } from '../../../src/cri/errors.js';
import { ImageGCManager } from '../../../src/lifecycle/image-gc.js';
import { recordingLogger } from '../prober/fake-log.js';

function setup(opts: { images: Image[]; containers: string[]; available: number; minAgeMs?: number }) {
  /** containers: each one's image; volumeImages: the image volumes each one (by index) mounts; gone: removed since listed. */
  const state = { containers: opts.containers, volumeImages: [] as string[][], gone: new Set<number>(), available: opts.available };
  let now = 1_000_000;
  let images = [...opts.images];
  const removed: string[] = [];
  const nodeEvents: { reason: string; message: string }[] = [];
  const runtime = {
    listImages: async () => images,
    listContainers: async () => state.containers.map((imageRef, i) => ({ id: `c${i}`, imageRef }) as Container),
    containerStatus: async (id: string) => {
      const i = Number(id.slice(1));
      if (state.gone.has(i)) throw new CriError('NotFound', 'ContainerStatus', `an error occurred when try to find container "${id}": not found`);
      const mounts = (state.volumeImages[i] ?? []).map((image) => ({ containerPath: '/v', hostPath: '', readonly: true, image: { image } }));
      return { id, mounts } as unknown as ContainerStatus;
    },
    imageStatus: async (ref: string) => images.find((i) => i.repoTags.includes(ref)),
    removeImage: async (id: string) => {
      removed.push(id);
      images = images.filter((i) => i.id !== id);
    },
    imageFsInfo: async () => ({ imageFilesystems: [{ timestampNs: 0, mountpoint: '/images' }], containerFilesystems: [] }),
  };
  const { log } = recordingLogger();
  let endPeriod = () => {};
  const manager = new ImageGCManager({
    runtime,
    filesystem: async () => ({ capacityBytes: 1000, availableBytes: state.available }),
    sandboxImage: async () => 'pause:1',
    events: { nodeEvent: (_type, reason, message) => nodeEvents.push({ reason, message }) },
    // A period passes only when the test says so (passPeriod) or ends the loop.
    clock: {
      now: () => now,
      sleep: (_ms: number, signal?: AbortSignal) =>
        new Promise<void>((r) => {
          endPeriod = r;
          signal?.addEventListener('abort', () => r());
        }),
    },
    log,
    policy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: opts.minAgeMs ?? 0, maxAgeMs: 0 },
  });
  const passPeriod = async () => {
    endPeriod();
    await new Promise((r) => setImmediate(r));
  };
  return { manager, removed, nodeEvents, state, advance: (ms: number) => (now += ms), passPeriod };
}
const image = (id: string, size: number, tag = id): Image => ({ id, size, repoTags: [tag], repoDigests: [], username: '' });

test('over the threshold: unused images removed least recently used first until enough is freed', async () => {
  const images = [image('pause', 500, 'pause:1'), image('a', 30), image('b', 40), image('c', 40), image('running', 100)];
  const { manager, removed, nodeEvents, state, advance } = setup({ images, containers: ['running', 'a'], available: 900 });
  // The first look: a is in use; b and c are never used. Nothing to free yet.
  await manager.garbageCollect();
  expect(removed).toEqual([]);
  state.containers = ['running'];
  state.available = 100;
  advance(1_000);
  await manager.garbageCollect();
  // 90% used: 100 bytes to free down to 80%; b and c (never used) go first, 80 bytes, then a (used at the first look).
  expect(removed).toEqual(['b', 'c', 'a']);
  expect(nodeEvents).toEqual([]);
});

test('an image mounted as an image volume is in use (kubelet reads the containers\' mounts); a container gone meanwhile is skipped', async () => {
  const images = [image('pause', 500, 'pause:1'), image('app', 30), image('data', 40), image('other', 40)];
  const { manager, removed, state, advance } = setup({ images, containers: ['app', 'app'], available: 100 });
  state.volumeImages = [['data'], ['other']];
  state.gone.add(1);
  await expect(manager.garbageCollect()).rejects.toThrow('Attempted to free 100 bytes, but only found 40 bytes eligible to free.');
  // data is mounted by the first container; the second one (mounting other) went away between the list and its status.
  expect(removed).toEqual(['other']);
  state.volumeImages = [[]];
  state.containers = ['app'];
  state.gone.clear();
  advance(1_000);
  await expect(manager.garbageCollect()).rejects.toThrow('Attempted to free 100 bytes, but only found 40 bytes eligible to free.');
  expect(removed).toEqual(['other', 'data']);
});

test('an image the runtime pins is never removed, however old and unused', async () => {
  const images = [image('pause', 500, 'pause:1'), { ...image('pinned', 60), pinned: true }, image('b', 40)];
  const { manager, removed, state, advance } = setup({ images, containers: [], available: 900 });
  await manager.garbageCollect();
  state.available = 100;
  advance(1_000);
  await expect(manager.garbageCollect()).rejects.toThrow('Attempted to free 100 bytes, but only found 40 bytes eligible to free.');
  expect(removed).toEqual(['b']);
});

test('images younger than imageMinimumGCAge stay; not enough to free is FreeDiskSpaceFailed, then ImageGCFailed too', async () => {
  const images = [image('pause', 500, 'pause:1'), image('a', 30), image('running', 100)];
  const { manager, removed, nodeEvents, advance, passPeriod } = setup({ images, containers: ['running'], available: 100, minAgeMs: 60_000 });
  await expect(manager.garbageCollect()).rejects.toThrow('Attempted to free 100 bytes, but only found 0 bytes eligible to free.');
  expect(removed).toEqual([]);
  advance(60_000);
  await expect(manager.garbageCollect()).rejects.toThrow('Attempted to free 100 bytes, but only found 30 bytes eligible to free.');
  expect(removed).toEqual(['a']);
  expect(nodeEvents.map((e) => e.reason)).toEqual(['FreeDiskSpaceFailed', 'FreeDiskSpaceFailed']);

  // The loop: its first failure in a row is only logged; kubelet's ImageGCFailed comes with the second.
  const ac = new AbortController();
  const run = manager.run(ac.signal);
  await new Promise((r) => setImmediate(r));
  expect(nodeEvents.map((e) => e.reason)).toEqual(['FreeDiskSpaceFailed', 'FreeDiskSpaceFailed', 'FreeDiskSpaceFailed']);
  await passPeriod();
  expect(nodeEvents.slice(3)).toEqual([
    { reason: 'FreeDiskSpaceFailed', message: expect.stringContaining('Attempted to free 100 bytes') },
    { reason: 'ImageGCFailed', message: expect.stringContaining('Attempted to free 100 bytes') },
  ]);
  ac.abort();
  await run;
});
