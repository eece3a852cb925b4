// env[].valueFrom.fileKeyRef (EnvFiles, beta and on since 1.35): a key read from an env file in one of the pod's volumes,
// usually an emptyDir an init container wrote, as kubelet's makeEnvironmentVariables and envutil.ParseEnv do.
import { lstat, open, readlink } from 'node:fs/promises';
import { posix } from 'node:path';
import type { V1FileKeySelector } from '@kubernetes/client-node';
import { SyncError } from '../core/sync-result.js';
import { envString } from './env-bytes.js';

/** filepath-securejoin's limit on the symlinks followed while joining. */
const MAX_SYMLINKS = 255;

/**
 * `unsafePath` joined to `root` with every symlink in it resolved as if `root` were the file system's root
 * (filepath-securejoin's SecureJoin, which kubelet uses): a link the pod's containers made cannot lead out of the volume.
 * Missing components are taken as they are.
 */
export async function secureJoin(root: string, unsafePath: string): Promise<string> {
  let current = '';
  let remaining = unsafePath;
  let links = 0;
  while (remaining !== '') {
    const slash = remaining.indexOf('/');
    const part = slash === -1 ? remaining : remaining.slice(0, slash);
    remaining = slash === -1 ? '' : remaining.slice(slash + 1);
    // Lexically scoped: a `..` cannot climb above the root.
    const clean = posix.normalize(`/${current}/${part}`).replace(/\/$/, '');
    if (clean === '') {
      current = '';
      continue;
    }
    const full = posix.join(root, clean);
    let isLink = false;
    try {
      isLink = (await lstat(full)).isSymbolicLink();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
    }
    if (!isLink) {
      current = clean;
      continue;
    }
    if (++links > MAX_SYMLINKS) throw new Error(`SecureJoin ${root}/${unsafePath}: too many levels of symbolic links`);
    const dest = await readlink(full);
    remaining = remaining === '' ? dest : `${dest}/${remaining}`;
    // An absolute link starts again at the root.
    if (dest.startsWith('/')) current = '';
  }
  return posix.join(root, posix.join('/', current));
}

/** bufio.Scanner's default buffer: a longer line fails the read, as it does for kubelet. */
const MAX_LINE_BYTES = 64 * 1024;

/** The file's lines as bufio.ScanLines yields them (a trailing \r dropped); a line over 64 KiB throws. */
async function* fileLines(path: string): AsyncGenerator<string> {
  let file;
  try {
    file = await open(path, 'r');
  } catch (err) {
    throw new Error(`failed to open environment variable file ${JSON.stringify(path)}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const chunk = Buffer.alloc(MAX_LINE_BYTES);
    let pending = Buffer.alloc(0);
    for (;;) {
      const { bytesRead } = await file.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      pending = Buffer.concat([pending, chunk.subarray(0, bytesRead)]);
      let nl;
      while ((nl = pending.indexOf(0x0a)) !== -1) {
        yield envString(dropCR(pending.subarray(0, nl)));
        pending = pending.subarray(nl + 1);
      }
      if (pending.length >= MAX_LINE_BYTES) {
        throw new Error(`error reading environment variable file ${JSON.stringify(path)}: bufio.Scanner: token too long`);
      }
    }
    if (pending.length > 0) yield envString(dropCR(pending));
  } finally {
    await file.close();
  }
}

const dropCR = (line: Buffer) => (line.length > 0 && line[line.length - 1] === 0x0d ? line.subarray(0, -1) : line);

const formatError = (line: number, detail: string) => new Error(`invalid environment variable format at line ${line}: ${detail}`);

/**
 * The value of `key` in an env file, '' when the file does not set it (kubelet's envutil.ParseEnv). The format is a
 * strict subset of POSIX shell: `NAME='value'`, the value single-quoted and taken literally (it may span lines),
 * optionally followed by a `# comment`; blank lines and lines starting with `#` are skipped, leading blanks ignored.
 * `NAME = '...'` is an error; `NAME= '...'` sets NAME to '' as a shell would. Any malformed line before the key's
 * line is an error too.
 */
export async function parseEnvFile(path: string, key: string): Promise<string> {
  const lines = fileLines(path);
  let lineNum = 0;
  for (let next = await lines.next(); !next.done; next = await lines.next()) {
    lineNum++;
    const line = next.value.replace(/^[ \t]+/, '');
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq === -1) throw formatError(lineNum, "missing '='");
    const namePart = line.slice(0, eq);
    const name = namePart.replace(/[ \t]+$/, '');
    if (name === '') throw formatError(lineNum, 'empty variable name');
    if (name !== namePart) throw formatError(lineNum, "whitespace before '=' is not allowed");
    const valuePart = line.slice(eq + 1);
    const trimmed = valuePart.replace(/^[ \t]+/, '');
    if (trimmed !== valuePart) {
      if (name === key) return '';
      continue;
    }
    if (!trimmed.startsWith("'")) throw formatError(lineNum, 'value must be enclosed in single quotes');
    let value = '';
    let rest = trimmed.slice(1);
    const startLine = lineNum;
    for (;;) {
      const close = rest.indexOf("'");
      if (close !== -1) {
        value += rest.slice(0, close);
        const after = rest.slice(close + 1).replace(/^[ \t]+/, '');
        if (after !== '' && !after.startsWith('#')) throw formatError(lineNum, 'unexpected content after closing quote');
        if (name === key) {
          await lines.return(undefined);
          return value;
        }
        break;
      }
      value += `${rest}\n`;
      const more = await lines.next();
      if (more.done) throw new Error(`invalid environment variable format starting at line ${startLine}: unclosed single quote`);
      lineNum++;
      rest = more.value;
    }
  }
  return '';
}

/**
 * The value a fileKeyRef gives, or undefined when the key is missing (or empty, as kubelet reads it) and the reference
 * is optional. `volumePath` is where the named pod volume lives on the host (undefined: no such volume). Throws
 * CreateContainerConfigError with kubelet's messages; a file that cannot be read or parsed is an error even when
 * optional, as in kubelet.
 */
export async function fileKeyRefValue(ref: V1FileKeySelector, volumePath: string | undefined): Promise<string | undefined> {
  if (volumePath === undefined) throw new SyncError('CreateContainerConfigError', `cannot find the volume ${JSON.stringify(ref.volumeName)} referenced by FileKeyRef`);
  const file = await secureJoin(volumePath, ref.path);
  let value: string;
  try {
    value = await parseEnvFile(file, ref.key);
  } catch (err) {
    // kubelet says only "couldn't parse env file" (and logs the cause); the cause is what the user needs.
    throw new SyncError('CreateContainerConfigError', `couldn't parse env file: ${(err as Error).message}`, { cause: err });
  }
  if (value !== '') return value;
  if (ref.optional) return undefined;
  throw new SyncError('CreateContainerConfigError', `environment variable key ${JSON.stringify(ref.key)} not found in file ${JSON.stringify(file)}`);
}
