// The node's client certificate request: its key, its PKCS#10 request and the CertificateSigningRequest object, as
// kubelet's TLS bootstrap (pkg/kubelet/certificate/bootstrap) and client-go's certificate manager make them.
import { createHash, createPrivateKey, createPublicKey, webcrypto, type X509Certificate } from 'node:crypto';
import { canonicalIP } from '../core/ip.js';

/** The signer of kubelets' client certificates; kube-controller-manager's csrapproving controller auto-approves them. */
export const kubeletClientSigner = 'kubernetes.io/kube-apiserver-client-kubelet';
/** The usages of a node's client certificate with an ECDSA key (an RSA key would add "key encipherment"). */
export const kubeletClientUsages = ['digital signature', 'client auth'] as const;

/** The signer of kubelets' serving certificates (serverTLSBootstrap); kube-controller-manager never auto-approves them. */
export const kubeletServingSigner = 'kubernetes.io/kubelet-serving';
/** client-go's DefaultKubeletServingGetUsages for an ECDSA key (an RSA key would add "key encipherment"). */
export const kubeletServingUsages = ['digital signature', 'server auth'] as const;

/** The subject alternative names of a serving certificate: the node's host names and addresses. */
export interface SubjectAltNames {
  dnsNames: string[];
  ipAddresses: string[];
}

/** The subject a node's client certificate must carry for the node authorizer: `CN=system:node:<name>`, `O=system:nodes`. */
export interface CertificateSubject {
  commonName: string;
  organization: string[];
}

export const nodeClientSubject = (nodeName: string): CertificateSubject => ({ commonName: `system:node:${nodeName}`, organization: ['system:nodes'] });

/** What the manager asks for (client-go's Config: template, signer, usages). */
export interface CertificateTemplate {
  /** "Client" or "Serving", for the log. */
  what: string;
  subject: CertificateSubject;
  sans?: SubjectAltNames;
  signerName: string;
  usages: readonly string[];
}

/** The node's client certificate (kubelet's NewKubeletClientCertificateManager). */
export const clientCertificateTemplate = (nodeName: string): CertificateTemplate => ({
  what: 'Client',
  subject: nodeClientSubject(nodeName),
  signerName: kubeletClientSigner,
  usages: kubeletClientUsages,
});

/** The kubelet API's serving certificate (kubelet's NewKubeletServerCertificateManager): the node's names and addresses. */
export const servingCertificateTemplate = (nodeName: string, sans: SubjectAltNames): CertificateTemplate => ({
  what: 'Serving',
  subject: nodeClientSubject(nodeName),
  sans,
  signerName: kubeletServingSigner,
  usages: kubeletServingUsages,
});

/** An IP address in one spelling (X.509 text gives IPv6 uncompressed). */
const canonicalIp = (ip: string): string => canonicalIP(ip) ?? ip;

/**
 * Why a certificate does not satisfy the template (client-go's certSatisfiesTemplate: a different CN, or a DNS name,
 * IP address or organization of the template missing), or undefined when it does. Such a certificate is still used, but
 * replaced at once rather than at its rotation deadline.
 */
export function templateMismatch(leaf: X509Certificate, template: CertificateTemplate): string | undefined {
  const subject = leaf.subject.split('\n');
  const cn = subject.find((l) => l.startsWith('CN='))?.slice(3) ?? '';
  if (cn !== template.subject.commonName) return `its CN (${cn}) does not match the requested CN (${template.subject.commonName})`;
  const sans = (leaf.subjectAltName ?? '').split(', ').map((s) => s.replace(/^(DNS|IP Address):"?(.*?)"?$/, '$1:$2'));
  const missingDns = (template.sans?.dnsNames ?? []).filter((d) => !sans.includes(`DNS:${d}`));
  if (missingDns.length > 0) return `it is missing the requested DNS names ${missingDns.join(', ')}`;
  const ips = new Set(sans.filter((s) => s.startsWith('IP Address:')).map((s) => canonicalIp(s.slice('IP Address:'.length))));
  const missingIps = (template.sans?.ipAddresses ?? []).filter((ip) => !ips.has(canonicalIp(ip)));
  if (missingIps.length > 0) return `it is missing the requested IP addresses ${missingIps.join(', ')}`;
  const orgs = subject.filter((l) => l.startsWith('O=')).map((l) => l.slice(2));
  const missingOrgs = template.subject.organization.filter((o) => !orgs.includes(o));
  if (missingOrgs.length > 0) return `it is missing the requested organizations ${missingOrgs.join(', ')}`;
  return undefined;
}

/** A CertificateSigningRequest (certificates.k8s.io/v1) as nodelet reads and writes it. */
export interface CertificateSigningRequest {
  apiVersion?: string;
  kind?: string;
  metadata: { name?: string; generateName?: string; uid?: string; resourceVersion?: string };
  spec: { request: string; signerName: string; usages: string[]; username?: string; groups?: string[] };
  status?: { conditions?: { type: string; status?: string; reason?: string; message?: string }[]; certificate?: string };
}

/** A new ECDSA P-256 private key as SEC1 PEM (`EC PRIVATE KEY`), the form kubelet's keyutil writes. */
export async function generatePrivateKeyPem(): Promise<string> {
  const pair = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', pair.privateKey));
  return createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({ type: 'sec1', format: 'pem' }).toString();
}

/** The DER SubjectPublicKeyInfo of a private key's public half. */
export function publicKeyDer(privateKeyPem: string): Buffer {
  return createPublicKey(privateKeyPem).export({ type: 'spki', format: 'der' });
}

/**
 * kubelet's bootstrap CSR name (digestedName): `node-csr-` + base64url(SHA-512/256 over the base64url of the public key,
 * the CN, each O and each usage, each followed by '|'). The same key asks again under the same name, so a restarted
 * bootstrap finds its earlier request instead of making another.
 */
export function digestedCsrName(spkiDer: Buffer, subject: CertificateSubject, usages: readonly string[]): string {
  const hash = createHash('sha512-256');
  const write = (data: Buffer | string) => hash.update(Buffer.from(data).toString('base64url')).update('|');
  write(spkiDer);
  write(subject.commonName);
  for (const o of subject.organization) write(o);
  for (const u of usages) write(u);
  return `node-csr-${hash.digest('base64url')}`;
}

/** Escapes a value for the x509 library's `O=..., CN=...` name string (RFC 4514). */
const rdnValue = (v: string) => v.replace(/([,+"\\<>;=])/g, '\\$1').replace(/^([ #])/, '\\$1').replace(/ $/, '\\ ');

/**
 * A PKCS#10 request (PEM) for the subject, signed with the key (ECDSA with SHA-256): what Go's certutil.MakeCSR makes,
 * without extensions for a client certificate, with the subject alternative names as its one requested extension for a
 * serving certificate. Encoded by @peculiar/x509, which is loaded here only.
 */
export async function createCsrPem(privateKeyPem: string, subject: CertificateSubject, sans?: SubjectAltNames): Promise<string> {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const pkcs8 = createPrivateKey(privateKeyPem).export({ type: 'pkcs8', format: 'der' });
  const privateKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, alg, false, ['sign']);
  const publicKey = await webcrypto.subtle.importKey('spki', publicKeyDer(privateKeyPem), alg, true, ['verify']);
  // Go writes the organization before the common name (pkix.Name's RDN order).
  const name = [...subject.organization.map((o) => `O=${rdnValue(o)}`), `CN=${rdnValue(subject.commonName)}`].join(', ');
  const altNames = sans ? [...sans.dnsNames.map((value) => ({ type: 'dns' as const, value })), ...sans.ipAddresses.map((value) => ({ type: 'ip' as const, value }))] : [];
  const extensions = altNames.length > 0 ? [new x509.SubjectAlternativeNameExtension(altNames)] : [];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name, keys: { privateKey, publicKey }, signingAlgorithm: alg, extensions });
  return csr.toString('pem');
}

/** The CertificateSigningRequest for a request: a fixed name (bootstrap) or `csr-` + a generated suffix (rotation). */
export function certificateSigningRequest(csrPem: string, name: string | undefined, signerName: string, usages: readonly string[]): CertificateSigningRequest {
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: name ? { name } : { generateName: 'csr-' },
    spec: { request: Buffer.from(csrPem).toString('base64'), signerName, usages: [...usages] },
  };
}

/** Where a CSR stands: issued (with the PEM chain), denied or failed (with reason and message), or still pending. */
export type CsrOutcome =
  | { state: 'issued'; certificatePem: string }
  | { state: 'denied' | 'failed'; reason: string; message: string }
  | { state: 'pending'; approved: boolean };

/** client-go's WaitForCertificate decision for one observed CSR: Denied and Failed end it, Approved with a certificate issues it. */
export function csrOutcome(csr: CertificateSigningRequest): CsrOutcome {
  let approved = false;
  for (const c of csr.status?.conditions ?? []) {
    if (c.type === 'Denied') return { state: 'denied', reason: c.reason ?? '', message: c.message ?? '' };
    if (c.type === 'Failed') return { state: 'failed', reason: c.reason ?? '', message: c.message ?? '' };
    if (c.type === 'Approved') approved = true;
  }
  if (approved && csr.status?.certificate) return { state: 'issued', certificatePem: Buffer.from(csr.status.certificate, 'base64').toString('utf8') };
  return { state: 'pending', approved };
}
