// volumeMount subPath: kubelet's checks, and the symlink-safe open and mkdir inside a volume.
import { mkdir, mkdtemp, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathWithinBase, resolveSubPath, safeMakeDir, safeOpen, subPathBindTarget, SubPathError } from '../../../src/volume/subpath.js';

describe('resolveSubPath', () => {
  const env = new Map([['POD', 'web-1'], ['EMPTY', '']]);
  test.each([
    [{}, ''],
    [{ subPath: 'data' }, 'data'],
    [{ subPath: 'a/b/c' }, 'a/b/c'],
    [{ subPathExpr: 'logs/$(POD)' }, 'logs/web-1'],
    [{ subPathExpr: '$$(POD)' }, '$(POD)'],
  ])('%j -> %j', (mount, out) => {
    expect(resolveSubPath({ name: 'v', mountPath: '/m', ...mount }, env)).toBe(out);
  });

  test.each([
    [{ subPath: '/etc' }, 'error SubPath `/etc` must not be an absolute path'],
    [{ subPath: '../up' }, "unable to provision SubPath `../up`: must not contain '..'"],
    [{ subPath: 'a/../../b' }, "unable to provision SubPath `a/../../b`: must not contain '..'"],
    [{ subPathExpr: '$(NOPE)/$(EMPTY)/$(POD)' }, 'missing value for EMPTY, NOPE'],
    [{ subPathExpr: '/$(POD)' }, 'error SubPath `/web-1` must not be an absolute path'],
    [{ subPathExpr: '$(UP)' }, 'missing value for UP'],
  ])('%j is refused: %s', (mount, message) => {
    const run = () => resolveSubPath({ name: 'v', mountPath: '/m', ...mount }, env);
    expect(run).toThrow(SubPathError);
    expect(run).toThrow(message);
  });

  test('a subPathExpr that expands to .. is refused', () => {
    expect(() => resolveSubPath({ name: 'v', mountPath: '/m', subPathExpr: '$(UP)/x' }, new Map([['UP', '..']]))).toThrow("must not contain '..'");
  });
});

test('pathWithinBase', () => {
  expect(pathWithinBase('/a/b', '/a')).toBe(true);
  expect(pathWithinBase('/a', '/a')).toBe(true);
  expect(pathWithinBase('/ab', '/a')).toBe(false);
  expect(pathWithinBase('/', '/a')).toBe(false);
});

test('bind target layout: <pod>/volume-subpaths/<volume>/<container>/<index>', () => {
  expect(subPathBindTarget({ podDir: '/r/pods/u', volumeName: 'data', containerName: 'app', mountIndex: 2 })).toBe('/r/pods/u/volume-subpaths/data/app/2');
});

describe('safe open and mkdir inside a volume', () => {
  let base: string;
  let outside: string;
  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'nodelet-subpath-vol-'));
    outside = await mkdtemp(join(tmpdir(), 'nodelet-subpath-out-'));
    await mkdir(join(base, 'a/b'), { recursive: true });
    await writeFile(join(base, 'a/b/f'), 'x');
    await symlink(outside, join(base, 'escape'));
    await symlink('a', join(base, 'inside'));
  });
  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  });

  test('opens a path inside the volume, refers to the very file', async () => {
    const h = await safeOpen(join(base, 'a/b/f'), base);
    try {
      expect(await readlink(`/proc/self/fd/${h.fd}`)).toBe(join(base, 'a/b/f'));
    } finally {
      await h.close();
    }
    const root = await safeOpen(base, base);
    await root.close();
  });

  test('refuses a symlink anywhere on the way, and a path outside the base', async () => {
    await expect(safeOpen(join(base, 'inside/b'), base)).rejects.toThrow(`unexpected symlink found ${join(base, 'inside')}`);
    await expect(safeOpen(join(base, 'escape'), base)).rejects.toThrow('unexpected symlink found');
    await expect(safeOpen(outside, base)).rejects.toThrow('is outside of allowed base');
  });

  test('safeMakeDir creates the missing directories with the given mode (setgid kept)', async () => {
    await safeMakeDir('a/new/deeper', base, 0o2775);
    for (const d of ['a/new', 'a/new/deeper']) {
      const s = await stat(join(base, d));
      expect(s.isDirectory()).toBe(true);
      expect((s.mode & 0o7777).toString(8)).toBe('2775');
    }
    await expect(safeMakeDir('a/new/deeper', base, 0o777)).resolves.toBeUndefined();
  });

  test('safeMakeDir follows a symlink that stays inside, refuses one that leads out', async () => {
    await safeMakeDir('inside/c', base, 0o755);
    expect(existsSync(join(base, 'a/c'))).toBe(true);
    await expect(safeMakeDir('escape/evil', base, 0o755)).rejects.toThrow('is outside of allowed base');
    expect(existsSync(join(outside, 'evil'))).toBe(false);
  });

  test('safeMakeDir on an existing file fails', async () => {
    await expect(safeMakeDir('a/b/f', base, 0o755)).rejects.toThrow('not a directory');
  });
});
