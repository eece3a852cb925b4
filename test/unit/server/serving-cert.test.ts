// The self-signed serving certificate: generated once into the cert dir with the node's names and addresses as SANs.
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadServingCertificate, ServingCertificateError, subjectAltNames } from '../../../src/server/serving-cert.js';

/** The test's directories, removed after it. */
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-pki-'));
  dirs.push(dir);
  return dir;
}

test('subjectAltNames', () => {
  expect(subjectAltNames(['node-1', 'node-1', '10.0.0.5'], ['10.0.0.5', '127.0.0.1', 'not-an-ip'])).toBe('DNS:node-1,IP:10.0.0.5,IP:127.0.0.1');
});

test('generated once, with the SANs, a server certificate and a private key file only the owner reads', async () => {
  const certDir = join(await tempDir(), 'pki');
  const opts = { certFile: '', keyFile: '', certDir, hostNames: ['myhost', 'node-1'], addresses: ['192.0.2.2', '127.0.0.1'], now: 1700000000 };
  const first = await loadServingCertificate(opts);
  expect(first.generated).toBe(true);
  expect(first.certFile).toBe(join(certDir, 'kubelet.crt'));
  const x509 = new X509Certificate(first.cert);
  expect(x509.subject).toContain('CN=myhost@1700000000');
  expect(x509.subjectAltName).toBe('DNS:myhost, DNS:node-1, IP Address:192.0.2.2, IP Address:127.0.0.1');
  expect(x509.checkPrivateKey((await import('node:crypto')).createPrivateKey(first.key))).toBe(true);
  expect((await stat(first.keyFile)).mode & 0o077).toBe(0);
  const second = await loadServingCertificate({ ...opts, now: 1800000000 });
  expect(second.generated).toBe(false);
  expect(second.cert).toBe(first.cert);
});

test('the configured files are used; one without the other is refused', async () => {
  const certDir = await tempDir();
  const made = await loadServingCertificate({ certFile: '', keyFile: '', certDir, hostNames: ['h'], addresses: [], now: 1 });
  const given = await loadServingCertificate({ certFile: made.certFile, keyFile: made.keyFile, certDir: '/nonexistent', hostNames: [], addresses: [], now: 1 });
  expect(given).toMatchObject({ cert: made.cert, generated: false });
  await expect(loadServingCertificate({ certFile: made.certFile, keyFile: '', certDir, hostNames: [], addresses: [], now: 1 })).rejects.toThrow(ServingCertificateError);
});
