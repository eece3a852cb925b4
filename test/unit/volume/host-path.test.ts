// hostPath type checks against real files of each kind, with kubelet's messages.
import { createServer, type Server } from 'node:net';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { checkHostPath, hostFileType } from '../../../src/volume/host-path.js';

let dir: string;
let server: Server;
const p = (name: string) => join(dir, name);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-hostpath-'));
  await mkdir(p('dir'));
  await writeFile(p('file'), 'x');
  await execa('mkfifo', [p('fifo')]);
  server = createServer();
  await new Promise<void>((resolve) => server.listen(p('sock'), resolve));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

test('file types as kubelet names them', async () => {
  expect(await hostFileType(p('dir'))).toBe('Directory');
  expect(await hostFileType(p('file'))).toBe('File');
  expect(await hostFileType(p('sock'))).toBe('Socket');
  expect(await hostFileType('/dev/null')).toBe('CharDevice');
  await expect(hostFileType(p('fifo'))).rejects.toThrow('only recognise file, directory, socket, block device and character device');
});

test.each([
  ['dir', 'Directory'],
  ['dir', 'DirectoryOrCreate'],
  ['file', 'File'],
  ['file', 'FileOrCreate'],
  ['sock', 'Socket'],
  ['dir', ''],
  ['missing', ''],
  ['missing', undefined],
])('%s passes type %j', async (name, type) => {
  await expect(checkHostPath(p(name), type)).resolves.toBeUndefined();
});

test('a char device passes CharDevice', async () => {
  await expect(checkHostPath('/dev/null', 'CharDevice')).resolves.toBeUndefined();
});

test.each([
  ['file', 'Directory', 'hostPath type check failed: <p> is not a directory, it\'s a File'],
  ['file', 'DirectoryOrCreate', 'hostPath type check failed: <p> is not a directory, it\'s a File'],
  ['dir', 'File', 'hostPath type check failed: <p> is not a file, it\'s a Directory'],
  ['dir', 'FileOrCreate', 'hostPath type check failed: <p> is not a file, it\'s a Directory'],
  ['file', 'Socket', 'hostPath type check failed: <p> is not a socket file, it\'s a File'],
  ['file', 'CharDevice', 'hostPath type check failed: <p> is not a character device, it\'s a File'],
  ['dir', 'BlockDevice', 'hostPath type check failed: <p> is not a block device, it\'s a Directory'],
  ['missing', 'Directory', 'hostPath <p> doesn\'t exist'],
  ['missing', 'File', 'hostPath <p> doesn\'t exist'],
  ['fifo', 'File', 'hostPath type check failed, <p> is not a file, unable to determine its type: only recognise file, directory, socket, block device and character device'],
  ['file', 'Bogus', 'Bogus is an invalid volume type'],
])('%s with type %s fails: %s', async (name, type, message) => {
  await expect(checkHostPath(p(name), type)).rejects.toThrow(message.replace('<p>', p(name)));
});

test('DirectoryOrCreate makes the directory and its parents 0755', async () => {
  await checkHostPath(p('made/deep/dir'), 'DirectoryOrCreate');
  const s = await stat(p('made/deep/dir'));
  expect(s.isDirectory()).toBe(true);
  expect((s.mode & 0o777).toString(8)).toBe('755');
});

test('FileOrCreate makes an empty 0644 file, but not its parent', async () => {
  await checkHostPath(p('new-file'), 'FileOrCreate');
  expect(await readFile(p('new-file'), 'utf8')).toBe('');
  expect(((await stat(p('new-file'))).mode & 0o777).toString(8)).toBe('644');
  await expect(checkHostPath(p('no-parent/file'), 'FileOrCreate')).rejects.toThrow(/ENOENT/);
  expect(existsSync(p('no-parent'))).toBe(false);
});

test('a path with .. is refused before any check', async () => {
  await expect(checkHostPath(`${dir}/../x`, 'DirectoryOrCreate')).rejects.toThrow(`invalid HostPath \`${dir}/../x\`: must not contain '..'`);
});
