// clusterTrustBundle and podCertificate sources: kubelet's anchor normalization, label selectors, the node's key and stub
// PKCS#10 request per key type, and the files a projected volume gets.
import 'reflect-metadata';
import { X509Certificate, createPrivateKey, createPublicKey, generateKeyPairSync, webcrypto } from 'node:crypto';
import type { V1Volume } from '@kubernetes/client-node';
import * as x509 from '@peculiar/x509';
import { generateKeyAndProof } from '../../../src/controllers/pod-certificates.js';
import { labelSelectorMatches, normalizeTrustAnchors, pemBlocks } from '../../../src/controllers/trust-bundles.js';
import { parseQuantity } from '../../../src/core/quantity.js';
import { volumePayload } from '../../../src/volume/api-volumes.js';
import { unsupportedVolumeFields } from '../../../src/volume/unsupported.js';
import { FakeApiObjects } from './fake-api-objects.js';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

async function selfSigned(cn: string): Promise<string> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({ name: `CN=${cn}`, keys, signingAlgorithm: alg, notBefore: new Date(), notAfter: new Date(Date.now() + 3600_000) });
  return cert.toString('pem');
}

test('normalizeTrustAnchors: every block of every bundle once, as CERTIFICATE blocks without headers or text between them', async () => {
  const [a, b] = [await selfSigned('a'), await selfSigned('b')];
  const withHeader = b.replace('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----\nComment: hi\n\n');
  const out = normalizeTrustAnchors([`junk\n${a}between\n${withHeader}`, a], () => 0).toString();
  expect(out).not.toContain('junk');
  expect(out).not.toContain('Comment');
  const certs = pemBlocks(out).map((der) => new X509Certificate(Buffer.from(der, 'base64')).subject).sort();
  expect(certs).toEqual(['CN=a', 'CN=b']);
  expect(out.match(/-----BEGIN CERTIFICATE-----\n/g)).toHaveLength(2);
  expect(normalizeTrustAnchors([]).length).toBe(0);
});

test('labelSelectorMatches: undefined matches nothing, {} everything; matchLabels and expressions all hold', () => {
  const labels = { team: 'a', env: 'prod' };
  expect(labelSelectorMatches(undefined, labels)).toBe(false);
  expect(labelSelectorMatches({}, labels)).toBe(true);
  expect(labelSelectorMatches({ matchLabels: { team: 'a' } }, labels)).toBe(true);
  expect(labelSelectorMatches({ matchLabels: { team: 'b' } }, labels)).toBe(false);
  expect(labelSelectorMatches({ matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'dev'] }, { key: 'x', operator: 'DoesNotExist' }] }, labels)).toBe(true);
  expect(labelSelectorMatches({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, labels)).toBe(false);
  expect(labelSelectorMatches({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['prod'] }, { key: 'team', operator: 'Exists' }] }, labels)).toBe(true);
  expect(() => labelSelectorMatches({ matchExpressions: [{ key: 'x', operator: 'Gt', values: ['1'] }] }, labels)).toThrow('"Gt" is not a valid label selector operator');
});

test.each([
  ['RSA3072', 'rsa', 3072],
  ['ECDSAP256', 'ec', 'prime256v1'],
  ['ECDSAP384', 'ec', 'secp384r1'],
  ['ECDSAP521', 'ec', 'secp521r1'],
  ['ED25519', 'ed25519', undefined],
])('generateKeyAndProof %s: a PKCS#8 key and an empty PKCS#10 request it signed', async (keyType, type, detail) => {
  const { privateKeyPem, pkcs10Der } = await generateKeyAndProof(keyType);
  expect(privateKeyPem.toString()).toMatch(/^-----BEGIN PRIVATE KEY-----\n[\s\S]+\n-----END PRIVATE KEY-----\n$/);
  const key = createPrivateKey(privateKeyPem);
  expect(key.asymmetricKeyType).toBe(type);
  if (type === 'rsa') expect(key.asymmetricKeyDetails?.modulusLength).toBe(detail);
  if (type === 'ec') expect(key.asymmetricKeyDetails?.namedCurve).toBe(detail);
  const csr = new x509.Pkcs10CertificateRequest(pkcs10Der);
  expect(csr.subject).toBe('');
  expect(await csr.verify()).toBe(true);
  const csrKey = createPublicKey({ key: Buffer.from(csr.publicKey.rawData), format: 'der', type: 'spki' });
  expect(csrKey.export({ format: 'der', type: 'spki' })).toEqual(createPublicKey(key).export({ format: 'der', type: 'spki' }));
});

test('generateKeyAndProof refuses an unknown key type with kubelet\'s message', async () => {
  await expect(generateKeyAndProof('DSA')).rejects.toThrow('while generating keypair: unknown key type "DSA"');
});

test('projected clusterTrustBundle and podCertificate sources: their files, private to fsUser/fsGroup, kubelet\'s errors', async () => {
  const objects = new FakeApiObjects();
  const ctx = { objects, allocatable: async () => ({ cpu: parseQuantity('1'), memory: parseQuantity('1Gi'), 'ephemeral-storage': parseQuantity('1Gi') }) };
  objects.anchors.set('ca', 'ANCHORS');
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256', privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  objects.podCredentials.set('uid-1/certs/1', { privateKey: Buffer.from(privateKey), certificateChain: Buffer.from('CHAIN') });
  const volume: V1Volume = {
    name: 'certs',
    projected: {
      sources: [
        { clusterTrustBundle: { name: 'ca', path: 'ca.pem' } },
        { podCertificate: { signerName: 'example.com/s', keyType: 'ECDSAP256', credentialBundlePath: 'bundle.pem', keyPath: 'k.pem', certificateChainPath: 'chain.pem' } },
        { clusterTrustBundle: { signerName: 'example.com/none', labelSelector: {}, path: 'none.pem', optional: true } },
      ],
    },
  };
  const pod = (fsGroup?: number) => ({ metadata: { name: 'p', namespace: 'ns', uid: 'uid-1' }, spec: { containers: [{ name: 'c' }], volumes: [volume], ...(fsGroup ? { securityContext: { fsGroup } } : {}) } });
  const files = (await volumePayload(pod(), volume, ctx))!;
  expect(Object.fromEntries([...files].map(([k, f]) => [k, [f.mode.toString(8), f.data.toString()]]))).toEqual({
    'ca.pem': ['644', 'ANCHORS'],
    'bundle.pem': ['644', `${privateKey}CHAIN`],
    'k.pem': ['644', privateKey],
    'chain.pem': ['644', 'CHAIN'],
    'none.pem': ['644', ''],
  });
  expect([...(await volumePayload(pod(2000), volume, ctx))!.values()].map((f) => f.mode.toString(8))).toEqual(['600', '600', '600', '600', '600']);
  objects.podCredentials.set('uid-1/certs/1', 'credential bundle is not issued yet');
  objects.anchors.delete('ca');
  await expect(volumePayload(pod(), volume, ctx)).rejects.toThrow('[combination of signerName and labelSelector matched zero ClusterTrustBundles, credential bundle is not issued yet]');
  await expect(volumePayload(pod(), volume, { ...ctx, objects: undefined })).rejects.toThrow('clusterTrustBundle source needs an API server');
  expect(unsupportedVolumeFields(pod() as never)).toEqual([]);
});
