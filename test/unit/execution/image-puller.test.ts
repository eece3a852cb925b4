// kubelet's pull queue: serialized pulls one at a time in order, parallel pulls up to maxParallelImagePulls, the same
// pull shared by every pod that asks for it while it is queued or running, and a cancelled wait leaving the others be.
import { ImagePuller } from '../../../src/execution/image-puller.js';

/** A pull per key that ends when the test says so. */
function pulls() {
  const started: string[] = [];
  const ends = new Map<string, { resolve: (v: string) => void; reject: (e: Error) => void; signal: AbortSignal }>();
  const run = (key: string) => (signal: AbortSignal) =>
    new Promise<string>((resolve, reject) => {
      started.push(key);
      ends.set(key, { resolve, reject, signal });
    });
  return { started, ends, run };
}
const tick = () => new Promise((r) => setImmediate(r));

test('serialized: one pull at a time, in the order asked', async () => {
  const clock = { t: 0 };
  const puller = new ImagePuller<string>({ serialize: true, maxParallel: 5, now: () => clock.t });
  const { started, ends, run } = pulls();
  const a = puller.pull('a', run('a'));
  const b = puller.pull('b', run('b'));
  await tick();
  expect(started).toEqual(['a']);
  clock.t = 1500;
  ends.get('a')!.resolve('ref-a');
  expect(await a).toEqual({ value: 'ref-a', pullDurationMs: 1500 });
  await tick();
  expect(started).toEqual(['a', 'b']);
  clock.t = 2000;
  ends.get('b')!.resolve('ref-b');
  // b's own pull took 500 ms; its wait in the queue is the caller's to add.
  expect(await b).toEqual({ value: 'ref-b', pullDurationMs: 500 });
});

test('parallel: up to maxParallelImagePulls at once; no limit when unset', async () => {
  const limited = new ImagePuller<string>({ serialize: false, maxParallel: 2, now: () => 0 });
  const one = pulls();
  for (const k of ['a', 'b', 'c']) void limited.pull(k, one.run(k));
  await tick();
  expect(one.started).toEqual(['a', 'b']);
  one.ends.get('b')!.resolve('');
  await tick();
  expect(one.started).toEqual(['a', 'b', 'c']);

  const unlimited = new ImagePuller<string>({ serialize: false, now: () => 0 });
  const two = pulls();
  for (const k of ['a', 'b', 'c', 'd']) void unlimited.pull(k, two.run(k));
  await tick();
  expect(two.started).toEqual(['a', 'b', 'c', 'd']);
});

test('callers of the same key share one pull, its result or its error', async () => {
  const puller = new ImagePuller<string>({ serialize: true, now: () => 0 });
  const { started, ends, run } = pulls();
  const first = Array.from({ length: 10 }, () => puller.pull('img', run('img')));
  await tick();
  expect(started).toEqual(['img']);
  ends.get('img')!.resolve('ref');
  expect((await Promise.all(first)).map((o) => o.value)).toEqual(Array(10).fill('ref'));
  // A pull that has ended is not joined: the next caller pulls again.
  const again = [puller.pull('img', run('img')), puller.pull('img', run('img'))];
  await tick();
  expect(started).toEqual(['img', 'img']);
  ends.get('img')!.reject(new Error('401 Unauthorized'));
  for (const p of again) await expect(p).rejects.toThrow('401 Unauthorized');
});

test("a caller's abort ends its own wait; the pull is aborted only when nobody waits, and a queued one is dropped", async () => {
  const puller = new ImagePuller<string>({ serialize: true, now: () => 0 });
  const { started, ends, run } = pulls();
  const c1 = new AbortController();
  const c2 = new AbortController();
  const p1 = puller.pull('img', run('img'), c1.signal);
  const p2 = puller.pull('img', run('img'), c2.signal);
  const c3 = new AbortController();
  const queued = puller.pull('other', run('other'), c3.signal);
  await tick();
  c1.abort(new Error('pod deleted'));
  await expect(p1).rejects.toThrow('pod deleted');
  expect(ends.get('img')!.signal.aborted).toBe(false);
  c3.abort(new Error('gone'));
  await expect(queued).rejects.toThrow('gone');
  ends.get('img')!.resolve('ref');
  expect((await p2).value).toBe('ref');
  await tick();
  // The dropped queued pull never starts.
  expect(started).toEqual(['img']);

  const c4 = new AbortController();
  const p4 = puller.pull('img', run('img'), c4.signal);
  await tick();
  c4.abort(new Error('pod deleted'));
  await expect(p4).rejects.toThrow('pod deleted');
  expect(ends.get('img')!.signal.aborted).toBe(true);
  // A new caller does not join the cancelled pull; it waits for its slot.
  const p5 = puller.pull('img', run('img'));
  ends.get('img')!.reject(new Error('cancelled'));
  await tick();
  ends.get('img')!.resolve('fresh');
  expect((await p5).value).toBe('fresh');
});
