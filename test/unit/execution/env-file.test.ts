// Env files (fileKeyRef): kubelet's envutil.ParseEnv format, the secure join into the volume and the optional/missing cases.
import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileKeyRefValue, parseEnvFile, secureJoin } from '../../../src/execution/env-file.js';
import { SyncError } from '../../../src/core/sync-result.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'env-file-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function parse(content: string | Buffer, key: string): Promise<string> {
  await writeFile(join(dir, 'f.env'), content);
  return parseEnvFile(join(dir, 'f.env'), key);
}

test.each([
  ['leading blanks ignored', "  \tKEY1='a'\n  KEY2='b'\n", 'KEY2', 'b'],
  ['blank and comment lines skipped', "# c\n\n   \nKEY1='a'\n#KEY2='x'\nKEY2='b'\n", 'KEY2', 'b'],
  ['a missing key reads as empty', "KEY1='a'\n", 'KEY3', ''],
  ['# and = inside the quotes are literal', "KEY1='a#b=c'\n", 'KEY1', 'a#b=c'],
  ['a comment after the value', "KEY1='a'   # note\n", 'KEY1', 'a'],
  ['no expansion', "KEY1='$HOME ${X} $(Y)'\n", 'KEY1', '$HOME ${X} $(Y)'],
  ['blank after = sets empty, as a shell does', "KEY1= 'a'\n", 'KEY1', ''],
  ['a value spanning lines', "KEY1='one\ntwo\n three'\nKEY2='b'\n", 'KEY1', 'one\ntwo\n three'],
  ['CRLF line ends', "KEY1='a'\r\nKEY2='b'\r\n", 'KEY2', 'b'],
  ['double quotes are literal', `KEY1='say "hi"'\n`, 'KEY1', 'say "hi"'],
  ['no newline at the end', "KEY1='a'", 'KEY1', 'a'],
])('ParseEnv: %s', async (_name, content, key, value) => {
  expect(await parse(content, key)).toBe(value);
});

test.each([
  ["KEY1 ='a'\n", 'KEY1', "invalid environment variable format at line 1: whitespace before '=' is not allowed"],
  ["KEY1='a'\nKEY2\n", 'KEY2', "invalid environment variable format at line 2: missing '='"],
  ["='a'\n", 'KEY2', 'invalid environment variable format at line 1: empty variable name'],
  ['KEY1=a\n', 'KEY1', 'invalid environment variable format at line 1: value must be enclosed in single quotes'],
  ['KEY1="a"\n', 'KEY1', 'invalid environment variable format at line 1: value must be enclosed in single quotes'],
  ["KEY1='a''b'\n", 'KEY1', 'invalid environment variable format at line 1: unexpected content after closing quote'],
  ["KEY1='a\nb\n", 'KEY1', 'invalid environment variable format starting at line 1: unclosed single quote'],
  // A bad line before the key's line fails the read; one after it is never reached.
  ["BAD\nKEY1='a'\n", 'KEY1', "invalid environment variable format at line 1: missing '='"],
])('ParseEnv refuses %j', async (content, key, message) => {
  await expect(parse(content, key)).rejects.toThrow(message);
});

test('a line over bufio.Scanner\'s 64 KiB fails the read; one just under it is read', async () => {
  const under = `K='${'x'.repeat(64 * 1024 - 5)}'\n`;
  expect((await parse(under, 'K')).length).toBe(64 * 1024 - 5);
  await expect(parse(`K='${'x'.repeat(64 * 1024)}'\n`, 'K')).rejects.toThrow('bufio.Scanner: token too long');
});

test('secureJoin resolves symlinks inside the root, never out of it', async () => {
  await mkdir(join(dir, 'sub'));
  await symlink('/etc', join(dir, 'abs'));
  await symlink('../../../../etc', join(dir, 'sub', 'up'));
  await symlink('sub', join(dir, 'rel'));
  expect(await secureJoin(dir, 'abs/passwd')).toBe(join(dir, 'etc/passwd'));
  expect(await secureJoin(dir, 'sub/up/passwd')).toBe(join(dir, 'etc/passwd'));
  expect(await secureJoin(dir, 'rel/x.env')).toBe(join(dir, 'sub/x.env'));
  expect(await secureJoin(dir, 'missing/x.env')).toBe(join(dir, 'missing/x.env'));
  await symlink('loop', join(dir, 'loop'));
  await expect(secureJoin(dir, 'loop')).rejects.toThrow('too many levels of symbolic links');
});

describe('fileKeyRefValue (kubelet makeEnvironmentVariables)', () => {
  const ref = { volumeName: 'config', path: 'vars.env', key: 'DB' };
  const error = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as SyncError);

  test('reads the key; a missing or empty key is skipped when optional, an error when not', async () => {
    await writeFile(join(dir, 'vars.env'), "DB='db.local'\nEMPTY=''\n");
    expect(await fileKeyRefValue(ref, dir)).toBe('db.local');
    expect(await fileKeyRefValue({ ...ref, key: 'NOPE', optional: true }, dir)).toBeUndefined();
    expect(await fileKeyRefValue({ ...ref, key: 'EMPTY', optional: true }, dir)).toBeUndefined();
    const err = await error(fileKeyRefValue({ ...ref, key: 'NOPE' }, dir));
    expect(err).toBeInstanceOf(SyncError);
    expect(err?.code).toBe('CreateContainerConfigError');
    expect(err?.message).toBe(`environment variable key "NOPE" not found in file "${join(dir, 'vars.env')}"`);
  });

  test('a missing file is an error even when optional; so is a missing volume', async () => {
    const err = await error(fileKeyRefValue({ ...ref, optional: true }, dir));
    expect(err?.code).toBe('CreateContainerConfigError');
    expect(err?.message).toMatch(/^couldn't parse env file: failed to open environment variable file ".*vars\.env": ENOENT/);
    const noVolume = await error(fileKeyRefValue(ref, undefined));
    expect(noVolume?.message).toBe('cannot find the volume "config" referenced by FileKeyRef');
  });

  test('a symlink out of the volume reads inside it', async () => {
    await symlink('/etc/hostname', join(dir, 'vars.env'));
    const err = await error(fileKeyRefValue(ref, dir));
    expect(err?.message).toContain(`failed to open environment variable file "${join(dir, 'etc/hostname')}"`);
  });
});
