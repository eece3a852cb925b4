// The CA public key pin of `--discovery-token-ca-cert-hash`, against the hash kubeadm printed for a real cluster CA.
import { BootstrapInputError } from '../../../src/bootstrap/bootstrap-token.js';
import { caCertHash, parseCaCertHash, parseCertificates, pinProblem } from '../../../src/bootstrap/ca-pin.js';
import { clusterCaHash, clusterInfoKubeconfig } from './cluster-info-fixture.js';

const caPem = Buffer.from(/certificate-authority-data: (\S+)/.exec(clusterInfoKubeconfig)![1]!, 'base64').toString();
const hex = clusterCaHash.slice('sha256:'.length);

test('the hash of the CA is what `kubeadm token create --print-join-command` printed', () => {
  expect(caCertHash(parseCertificates(caPem)[0]!)).toBe(clusterCaHash);
});

test.each([
  ['sha256:' + hex, hex],
  ['SHA256:' + hex.toUpperCase(), hex],
  ['sha256', /expected "sha256:<hex>"/],
  ['md5:' + hex, /unknown format "md5"/],
  ['sha256:' + hex.slice(2), /64 hex digits/],
  ['sha256:' + hex.slice(2) + 'zz', /64 hex digits/],
  ['sha256:' + hex + ':x', /expected "sha256:<hex>"/],
])('parse %s', (text, expected) => {
  if (typeof expected === 'string') expect(parseCaCertHash(text)).toBe(expected);
  else expect(() => parseCaCertHash(text)).toThrow(BootstrapInputError), expect(() => parseCaCertHash(text)).toThrow(expected);
});

test('a bundle is trusted when any of its keys is pinned', () => {
  const ca = parseCertificates(caPem);
  expect(pinProblem(ca, [hex])).toBeUndefined();
  expect(pinProblem(ca, ['0'.repeat(64), hex])).toBeUndefined();
  expect(pinProblem(ca, ['0'.repeat(64)])).toBe(`none of its public keys (${clusterCaHash}) is pinned by --discovery-token-ca-cert-hash`);
  expect(pinProblem([], [hex])).toBe('it holds no certificate');
});
