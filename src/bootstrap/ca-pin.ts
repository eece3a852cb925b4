// Public key pins of the cluster CA (`--discovery-token-ca-cert-hash sha256:<hex>`), as kubeadm's pubkeypin package.
import { createHash, X509Certificate } from 'node:crypto';
import { BootstrapInputError } from './bootstrap-token.js';

/** Parses `sha256:<64 hex digits>` into the lower-case hex digest; anything else is refused, naming the hash. */
export function parseCaCertHash(text: string): string {
  const parts = text.split(':');
  if (parts.length !== 2) throw new BootstrapInputError(`invalid CA certificate hash "${text}": expected "sha256:<hex>"`);
  const [format, value] = parts as [string, string];
  if (format.toLowerCase() !== 'sha256') throw new BootstrapInputError(`invalid CA certificate hash "${text}": unknown format "${format}", known: sha256`);
  if (!/^[0-9a-fA-F]{64}$/.test(value)) throw new BootstrapInputError(`invalid CA certificate hash "${text}": expected 64 hex digits (a SHA-256 digest)`);
  return value.toLowerCase();
}

/** `sha256:<hex>` of a certificate's DER SubjectPublicKeyInfo: what `kubeadm token create --print-join-command` prints. */
export function caCertHash(cert: X509Certificate): string {
  const spki = cert.publicKey.export({ type: 'spki', format: 'der' });
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`;
}

/** Every certificate of a PEM bundle, in order. */
export function parseCertificates(pem: string | Buffer): X509Certificate[] {
  const blocks = String(pem).match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new X509Certificate(b));
}

/**
 * Why none of the bundle's certificates is pinned, or undefined when one is. As kubeadm's Set.CheckAny: any pinned key
 * among them makes the bundle trusted.
 */
export function pinProblem(bundle: X509Certificate[], pins: string[]): string | undefined {
  if (bundle.length === 0) return 'it holds no certificate';
  const hashes = bundle.map(caCertHash);
  if (hashes.some((h) => pins.includes(h.slice('sha256:'.length)))) return undefined;
  return `none of its public keys (${hashes.join(', ')}) is pinned by --discovery-token-ca-cert-hash`;
}
