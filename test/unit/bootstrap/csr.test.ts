// The node's client CSR: its content (subject, key, signature) as the API server and the approver read it, kubelet's
// digested name, the CSR object, and the decision on an observed CSR.
import { execFileSync } from 'node:child_process';
import { createHash, createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  certificateSigningRequest,
  clientCertificateTemplate,
  createCsrPem,
  csrOutcome,
  digestedCsrName,
  generatePrivateKeyPem,
  kubeletClientSigner,
  kubeletClientUsages,
  kubeletServingSigner,
  kubeletServingUsages,
  nodeClientSubject,
  publicKeyDer,
  servingCertificateTemplate,
  templateMismatch,
} from '../../../src/bootstrap/csr.js';

const openssl = (args: string[], input: string) => execFileSync('openssl', args, { input }).toString();

test('a new key is ECDSA P-256 in SEC1 PEM', async () => {
  const pem = await generatePrivateKeyPem();
  expect(pem).toMatch(/^-----BEGIN EC PRIVATE KEY-----\n[\s\S]+\n-----END EC PRIVATE KEY-----\n$/);
  expect(createPrivateKey(pem).asymmetricKeyDetails).toEqual({ namedCurve: 'prime256v1' });
});

test('the CSR carries CN=system:node:<name>, O=system:nodes, the key\'s public half, no extensions, and a valid signature', async () => {
  const key = await generatePrivateKeyPem();
  const pem = await createCsrPem(key, nodeClientSubject('node-1'));
  expect(pem).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);
  expect(openssl(['req', '-noout', '-verify'], pem)).toBe('');
  expect(openssl(['req', '-noout', '-subject', '-nameopt', 'RFC2253'], pem).trim()).toBe('subject=CN=system:node:node-1,O=system:nodes');
  const text = openssl(['req', '-noout', '-text'], pem);
  expect(text).toContain('Signature Algorithm: ecdsa-with-SHA256');
  expect(text).toContain('NIST CURVE: P-256');
  expect(text).toMatch(/Attributes:\s+\(none\)/);
  expect(text).not.toContain('X509v3');
  const reqKey = createPublicKey(openssl(['req', '-noout', '-pubkey'], pem)).export({ type: 'spki', format: 'der' });
  expect(reqKey.equals(publicKeyDer(key))).toBe(true);
});

test('a serving CSR requests the node\'s names and addresses as subject alternative names (its one extension)', async () => {
  const key = await generatePrivateKeyPem();
  const pem = await createCsrPem(key, nodeClientSubject('node-1'), { dnsNames: ['node-1'], ipAddresses: ['192.0.2.7', '2001:db8::7'] });
  expect(openssl(['req', '-noout', '-verify'], pem)).toBe('');
  const text = openssl(['req', '-noout', '-text'], pem);
  expect(text).toContain('Requested Extensions:');
  expect(text).toMatch(/X509v3 Subject Alternative Name: ?\n\s+DNS:node-1, IP Address:192.0.2.7, IP Address:2001:DB8:0:0:0:0:0:7\n/);
  expect(kubeletServingSigner).toBe('kubernetes.io/kubelet-serving');
  expect(kubeletServingUsages).toEqual(['digital signature', 'server auth']);
});

test('names in the subject are escaped', async () => {
  const pem = await createCsrPem(await generatePrivateKeyPem(), { commonName: 'system:node:a,b', organization: ['x=y'] });
  expect(openssl(['req', '-noout', '-subject', '-nameopt', 'RFC2253'], pem).trim()).toBe('subject=CN=system:node:a\\,b,O=x=y');
});

test.each([
  ['node-1', kubeletClientUsages],
  ['node-2', kubeletClientUsages],
  ['node-1', ['digital signature', 'key encipherment', 'client auth']],
])('digested name for %s with usages %j: deterministic, and every input changes it', async (node, usages) => {
  const spki = publicKeyDer(await generatePrivateKeyPem());
  const name = digestedCsrName(spki, nodeClientSubject(node), usages);
  expect(name).toMatch(/^node-csr-[A-Za-z0-9_-]{43}$/);
  expect(digestedCsrName(spki, nodeClientSubject(node), usages)).toBe(name);
  expect(digestedCsrName(Buffer.concat([spki, Buffer.from([0])]), nodeClientSubject(node), usages)).not.toBe(name);
  expect(digestedCsrName(spki, nodeClientSubject(`${node}x`), usages)).not.toBe(name);
  expect(digestedCsrName(spki, nodeClientSubject(node), usages.slice(1))).not.toBe(name);
});

test('the digest separates fields: CN foo + O bar differs from CN foob + O ar', () => {
  const spki = Buffer.from([1, 2, 3]);
  expect(digestedCsrName(spki, { commonName: 'foo', organization: ['bar'] }, [])).not.toBe(digestedCsrName(spki, { commonName: 'foob', organization: ['ar'] }, []));
  // What Go's digestedName computes for these inputs: SHA-512/256 over base64url(field) + '|' each, in base64url.
  const expected = `node-csr-${createHash('sha512-256').update('AQID|Zm9v|YmFy|').digest('base64url')}`;
  expect(digestedCsrName(spki, { commonName: 'foo', organization: ['bar'] }, [])).toBe(expected);
});
test('the CSR object: a fixed name for the bootstrap, generateName csr- for rotation', () => {
  expect(certificateSigningRequest('PEM', 'node-csr-x', kubeletClientSigner, kubeletClientUsages)).toEqual({
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name: 'node-csr-x' },
    spec: { request: Buffer.from('PEM').toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['digital signature', 'client auth'] },
  });
  expect(certificateSigningRequest('PEM', undefined, kubeletClientSigner, kubeletClientUsages).metadata).toEqual({ generateName: 'csr-' });
});

const cert = Buffer.from('-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n').toString('base64');
test.each([
  ['no status', undefined, { state: 'pending', approved: false }],
  ['approved, not signed yet', { conditions: [{ type: 'Approved', reason: 'AutoApproved' }] }, { state: 'pending', approved: true }],
  ['approved and signed', { conditions: [{ type: 'Approved' }], certificate: cert }, { state: 'issued', certificatePem: Buffer.from(cert, 'base64').toString() }],
  ['a certificate without approval', { certificate: cert }, { state: 'pending', approved: false }],
  ['denied', { conditions: [{ type: 'Denied', reason: 'Nope', message: 'not this node' }] }, { state: 'denied', reason: 'Nope', message: 'not this node' }],
  ['approved, then failed', { conditions: [{ type: 'Approved' }, { type: 'Failed', reason: 'SignerError', message: 'bad' }] }, { state: 'failed', reason: 'SignerError', message: 'bad' }],
  ['denied wins over a certificate', { conditions: [{ type: 'Denied' }], certificate: cert }, { state: 'denied', reason: '', message: '' }],
])('outcome: %s', (_name, status, expected) => {
  expect(csrOutcome({ metadata: { name: 'c' }, spec: { request: '', signerName: '', usages: [] }, ...(status ? { status } : {}) })).toEqual(expected);
});

describe('templateMismatch (client-go certSatisfiesTemplate)', () => {
  const certificate = (subj: string, san?: string): X509Certificate => {
    const dir = mkdtempSync(join(tmpdir(), 'nodelet-tpl-'));
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', subj, '-days', '1',
        ...(san ? ['-addext', `subjectAltName=${san}`] : []), '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
      return new X509Certificate(readFileSync(join(dir, 'cert.pem')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const serving = servingCertificateTemplate('n1', { dnsNames: ['n1'], ipAddresses: ['192.0.2.10', '2001:db8::7'] });

  test('the node\'s CN, organization, names and addresses (more are fine; IPv6 in any spelling) satisfy it', () => {
    const cert = certificate('/O=system:nodes/O=extra/CN=system:node:n1', 'DNS:n1,DNS:other,IP:192.0.2.10,IP:2001:db8:0:0:0:0:0:7,IP:127.0.0.1');
    expect(templateMismatch(cert, serving)).toBeUndefined();
    expect(templateMismatch(certificate('/O=system:nodes/CN=system:node:n1'), clientCertificateTemplate('n1'))).toBeUndefined();
  });

  test('another CN, or a missing name, address or organization, does not', () => {
    expect(templateMismatch(certificate('/CN=given-by-the-admin'), serving)).toBe('its CN (given-by-the-admin) does not match the requested CN (system:node:n1)');
    expect(templateMismatch(certificate('/O=system:nodes/CN=system:node:n1', 'IP:192.0.2.10'), serving)).toBe('it is missing the requested DNS names n1');
    expect(templateMismatch(certificate('/O=system:nodes/CN=system:node:n1', 'DNS:n1,IP:192.0.2.10'), serving)).toBe('it is missing the requested IP addresses 2001:db8::7');
    expect(templateMismatch(certificate('/CN=system:node:n1'), clientCertificateTemplate('n1'))).toBe('it is missing the requested organizations system:nodes');
  });
});
