// The kubelet-client certificate store: dated files behind the current symlink, as client-go's file store keeps them.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CertificateFileError, CertificateStore, fileStamp, parsePair } from '../../../src/bootstrap/cert-store.js';

function selfSigned(cn: string): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-store-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', `/CN=${cn}`, '-days', '1',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  const read = (f: string) => execFileSync('cat', [join(dir, f)]).toString();
  const pair = { cert: read('cert.pem'), key: read('key.pem') };
  execFileSync('rm', ['-rf', dir]);
  return pair;
}

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'nodelet-store-'))));
afterEach(() => rm(dir, { recursive: true, force: true }));

test('Go\'s 2006-01-02-15-04-05 stamp in local time', () => {
  const d = new Date(2026, 10, 5, 3, 4, 9);
  expect(fileStamp(d.getTime())).toBe('2026-11-05-03-04-09');
});

test('update writes a dated 0600 file with certificate and key and points the current symlink at it; current reads it', async () => {
  const store = new CertificateStore(join(dir, 'pki'));
  expect(await store.current()).toBeUndefined();
  const a = selfSigned('system:node:a');
  const t0 = new Date(2026, 0, 2, 3, 4, 5).getTime();
  const pair = await store.update(a.cert, a.key, t0);
  const file = join(dir, 'pki', 'kubelet-client-2026-01-02-03-04-05.pem');
  expect(await readlink(store.currentPath)).toBe(file);
  expect(((await lstat(file)).mode & 0o777).toString(8)).toBe('600');
  expect(await readFile(file, 'utf8')).toBe(pair.certPem + pair.keyPem);
  expect((await store.current())!.leaf.subject).toBe('CN=system:node:a');

  const b = selfSigned('system:node:a');
  await store.update(b.cert, b.key, t0 + 60_000);
  expect(await readlink(store.currentPath)).toBe(join(dir, 'pki', 'kubelet-client-2026-01-02-03-05-05.pem'));
  expect((await store.current())!.certPem).not.toBe(pair.certPem);
  // The old pair stays (kubelet keeps them), no updated symlink is left behind.
  expect((await readdir(join(dir, 'pki'))).sort()).toEqual([
    'kubelet-client-2026-01-02-03-04-05.pem', 'kubelet-client-2026-01-02-03-05-05.pem', 'kubelet-client-current.pem',
  ]);
});

test('a current file that is not a symlink is not replaced', async () => {
  const store = new CertificateStore(dir);
  const a = selfSigned('x');
  await writeFile(store.currentPath, a.cert + a.key);
  await expect(store.update(a.cert, a.key, Date.now())).rejects.toThrow(`expected ${store.currentPath} to be a symlink but it is a file`);
});

test.each([
  ['no certificate', (a: { cert: string; key: string }) => ['', a.key], /no certificate/],
  ['no key', (a: { cert: string; key: string }) => [a.cert, ''], /no private key/],
  ['another key', (a: { cert: string; key: string }) => [a.cert, selfSigned('y').key], /the private key does not belong to the certificate/],
])('a pair with %s is refused', (_name, make, message) => {
  const [cert, key] = make(selfSigned('x'));
  expect(() => parsePair(cert!, key!, 'f.pem')).toThrow(CertificateFileError);
  expect(() => parsePair(cert!, key!, 'f.pem')).toThrow(message);
});

test('an unreadable current pair is an error naming the file', async () => {
  const store = new CertificateStore(dir);
  await mkdir(join(dir, 'elsewhere'));
  await writeFile(join(dir, 'elsewhere', 'p.pem'), 'garbage');
  await execFileSync('ln', ['-s', join(dir, 'elsewhere', 'p.pem'), store.currentPath]);
  await expect(store.current()).rejects.toThrow(`${store.currentPath}: no certificate`);
});

test("without a current pair, client-go's order: the given certFile and keyFile, then <dir>/<prefix>.crt and .key", async () => {
  const given = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
  const store = new CertificateStore(dir, 'kubelet-server', given);
  expect(await store.current()).toBeUndefined();
  const inDir = selfSigned('in-dir');
  await writeFile(join(dir, 'kubelet-server.crt'), inDir.cert);
  await writeFile(join(dir, 'kubelet-server.key'), inDir.key);
  expect((await store.current())!.leaf.subject).toBe('CN=in-dir');
  const flags = selfSigned('flags');
  await writeFile(given.certFile, flags.cert);
  // A pair missing its key is passed over, as a missing file.
  expect((await store.current())!.leaf.subject).toBe('CN=in-dir');
  await writeFile(given.keyFile, flags.key);
  expect((await store.current())!.leaf.subject).toBe('CN=flags');
  const current = selfSigned('current');
  await store.update(current.cert, current.key, Date.now());
  expect((await store.current())!.leaf.subject).toBe('CN=current');
});

test('a given pair that exists but cannot be read is an error naming it, not passed over', async () => {
  const store = new CertificateStore(dir, 'kubelet-server', { certFile: dir, keyFile: join(dir, 'tls.key') });
  await writeFile(join(dir, 'tls.key'), selfSigned('x').key);
  await expect(store.current()).rejects.toThrow(`${dir}: EISDIR`);
});
