// kubelet's AtomicWriter layout: timestamped data dir, ..data symlink, user-visible symlinks, atomic updates.
import { lstat, mkdtemp, readFile, readdir, readlink, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { payloadPathError, timestampDirPrefix, writeAtomically, type FileProjection } from '../../../src/volume/atomic-writer.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-atomic-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const file = (text: string, mode = 0o644): FileProjection => ({ data: Buffer.from(text), mode });
const payload = (entries: Record<string, FileProjection>) => new Map(Object.entries(entries));
const tsDirs = async () => (await readdir(dir)).filter((n) => n.startsWith('..') && n !== '..data');

test('timestamp prefix is Go\'s ..2006_01_02_15_04_05. in UTC', () => {
  expect(timestampDirPrefix(new Date('2024-03-05T07:08:09.123Z'))).toBe('..2024_03_05_07_08_09.');
});

test('first write: files in a timestamped dir, ..data points at it, top-level entries are symlinks through ..data', async () => {
  const now = new Date('2024-05-01T10:00:00Z');
  const wrote = await writeAtomically(dir, payload({ labels: file('a="1"'), 'podinfo/name': file('web', 0o400) }), { now });
  expect(wrote).toBe(true);
  const [ts] = await tsDirs();
  expect(ts).toMatch(/^\.\.2024_05_01_10_00_00\.\w+$/);
  expect(((await stat(join(dir, ts!))).mode & 0o777).toString(8)).toBe('755');
  expect(await readlink(join(dir, '..data'))).toBe(ts);
  expect(await readlink(join(dir, 'labels'))).toBe('..data/labels');
  expect(await readlink(join(dir, 'podinfo'))).toBe('..data/podinfo');
  expect(await readFile(join(dir, 'labels'), 'utf8')).toBe('a="1"');
  expect(await readFile(join(dir, 'podinfo/name'), 'utf8')).toBe('web');
  expect(((await stat(join(dir, ts!, 'podinfo/name'))).mode & 0o777).toString(8)).toBe('400');
  expect((await readdir(dir)).sort()).toEqual(['..data', ts, 'labels', 'podinfo'].sort());
});

test('same content again: nothing is written, the version stays', async () => {
  await writeAtomically(dir, payload({ labels: file('x') }));
  const before = await readlink(join(dir, '..data'));
  expect(await writeAtomically(dir, payload({ labels: file('x') }))).toBe(false);
  expect(await readlink(join(dir, '..data'))).toBe(before);
  expect(await tsDirs()).toEqual([before]);
});

test('changed content: a new version replaces the old one, which is removed', async () => {
  await writeAtomically(dir, payload({ labels: file('old') }), { now: new Date('2024-05-01T10:00:00Z') });
  const old = await readlink(join(dir, '..data'));
  expect(await writeAtomically(dir, payload({ labels: file('new') }), { now: new Date('2024-05-01T10:00:01Z') })).toBe(true);
  const current = await readlink(join(dir, '..data'));
  expect(current).not.toBe(old);
  expect(await tsDirs()).toEqual([current]);
  expect(await readFile(join(dir, 'labels'), 'utf8')).toBe('new');
});

test('paths gone from the payload lose their user-visible symlink', async () => {
  await writeAtomically(dir, payload({ a: file('1'), 'sub/b': file('2'), c: file('3') }));
  await writeAtomically(dir, payload({ c: file('3') }));
  expect((await readdir(dir)).filter((n) => !n.startsWith('..'))).toEqual(['c']);
});

test('setPerms sees the new timestamped dir before it is published', async () => {
  const seen: string[] = [];
  await writeAtomically(dir, payload({ a: file('1') }), {
    setPerms: async (name) => {
      seen.push(name);
      await expect(lstat(join(dir, '..data'))).rejects.toThrow();
    },
  });
  expect(seen).toEqual([await readlink(join(dir, '..data'))]);
});

test('a ..data_tmp left by an interrupted write does not block updates', async () => {
  await symlink('nowhere', join(dir, '..data_tmp'));
  await writeAtomically(dir, payload({ a: file('1') }));
  expect(await readFile(join(dir, 'a'), 'utf8')).toBe('1');
});

test.each([
  ['', 'invalid path: must not be empty: ""'],
  ['/abs', 'invalid path: must be relative path: /abs'],
  ['a/../b', "invalid path: must not contain '..': a/../b"],
  ['..hidden', "invalid path: must not start with '..': ..hidden"],
  ['x'.repeat(256), 'invalid path: filenames must be less than or equal to 255 characters'],
])('invalid payload path %j', async (path, message) => {
  expect(payloadPathError(path)).toBe(message);
  await expect(writeAtomically(dir, payload({ [path]: file('x') }))).rejects.toThrow(message);
});
