// Certificates and keys of the test API server: a CA, the serving certificate, client certificates, the service account signing key, kubeconfigs.
import { execFile } from 'node:child_process';
import { generateKeyPair, X509Certificate } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';

const execFileAsync = promisify(execFile);

/** Everything the server needs to serve TLS, verify client certificates and sign service account tokens (all PEM). */
export interface Pki {
  dir: string;
  caCertPem: string;
  caKeyPem: string;
  serverCertPem: string;
  serverKeyPem: string;
  saSigningKeyPem: string;
  saPublicKeyPem: string;
}

/** openssl failed (missing binary, bad subject, ...): the fixture cannot start; not retryable. */
export class PkiError extends Error {
  override readonly name = 'PkiError';
}

const FILES = {
  caCert: 'ca.crt',
  caKey: 'ca.key',
  serverCert: 'apiserver.crt',
  serverKey: 'apiserver.key',
  saKey: 'sa.key',
  saPub: 'sa.pub',
} as const;

/** Ten years: test clusters that survive restarts with the same dir must not see their certificates expire. */
const VALIDITY_DAYS = 3650;
const OPENSSL_TIMEOUT_MS = 30_000;

/**
 * Creates the PKI in `dir` the first time and loads it afterwards, so a restarted server keeps its identity and
 * earlier kubeconfigs stay valid. The serving certificate is re-issued (same CA) when it does not cover every host.
 */
export async function ensurePki(dir: string, opts: { hosts: string[] }): Promise<Pki> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const existing = await loadPki(dir);
  if (existing) {
    if (coversHosts(existing.serverCertPem, opts.hosts)) return existing;
    const server = await issueCert(existing, { cn: 'kube-apiserver', orgs: [], usage: 'server', hosts: opts.hosts });
    await writeAtomic(join(dir, FILES.serverKey), server.keyPem, 0o600);
    await writeAtomic(join(dir, FILES.serverCert), server.certPem, 0o644);
    return { ...existing, serverCertPem: server.certPem, serverKeyPem: server.keyPem };
  }

  const ca = await createCa();
  const server = await issueCert(ca, { cn: 'kube-apiserver', orgs: [], usage: 'server', hosts: opts.hosts });
  const sa = await rsaKeyPair();
  const pki: Pki = {
    dir,
    caCertPem: ca.caCertPem,
    caKeyPem: ca.caKeyPem,
    serverCertPem: server.certPem,
    serverKeyPem: server.keyPem,
    saSigningKeyPem: sa.privateKey,
    saPublicKeyPem: sa.publicKey,
  };
  // The CA certificate goes last: loadPki treats a dir without it as empty, so a crash midway starts over cleanly.
  await writeAtomic(join(dir, FILES.caKey), pki.caKeyPem, 0o600);
  await writeAtomic(join(dir, FILES.serverKey), pki.serverKeyPem, 0o600);
  await writeAtomic(join(dir, FILES.serverCert), pki.serverCertPem, 0o644);
  await writeAtomic(join(dir, FILES.saKey), pki.saSigningKeyPem, 0o600);
  await writeAtomic(join(dir, FILES.saPub), pki.saPublicKeyPem, 0o644);
  await writeAtomic(join(dir, FILES.caCert), pki.caCertPem, 0o644);
  return pki;
}

/** A client certificate as kube-apiserver's x509 authenticator reads it: CN is the user name, each O a group. */
export async function issueClientCert(pki: Pki, user: { name: string; groups: string[] }): Promise<{ certPem: string; keyPem: string }> {
  return issueCert(pki, { cn: user.name, orgs: user.groups, usage: 'client', hosts: [] });
}

/** Writes a kubeconfig with embedded credentials (mode 0600), as kubectl and client-node's KubeConfig.loadFromFile read it. */
export async function writeKubeconfig(
  file: string,
  opts: { server: string; caPem: string; user: string; certPem?: string; keyPem?: string; token?: string; contextName?: string },
): Promise<void> {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const clusterName = 'nodelet';
  const contextName = opts.contextName ?? `${opts.user}@${clusterName}`;
  const user: Record<string, string> = {};
  if (opts.certPem !== undefined) user['client-certificate-data'] = b64(opts.certPem);
  if (opts.keyPem !== undefined) user['client-key-data'] = b64(opts.keyPem);
  if (opts.token !== undefined) user['token'] = opts.token;
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: clusterName, cluster: { server: opts.server, 'certificate-authority-data': b64(opts.caPem) } }],
    users: [{ name: opts.user, user }],
    contexts: [{ name: contextName, context: { cluster: clusterName, user: opts.user } }],
    'current-context': contextName,
    preferences: {},
  };
  await writeAtomic(file, stringify(config), 0o600);
}

async function loadPki(dir: string): Promise<Pki | undefined> {
  const read = (name: string) => readFile(join(dir, name), 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  const [caCertPem, caKeyPem, serverCertPem, serverKeyPem, saSigningKeyPem, saPublicKeyPem] = await Promise.all([
    read(FILES.caCert), read(FILES.caKey), read(FILES.serverCert), read(FILES.serverKey), read(FILES.saKey), read(FILES.saPub),
  ]);
  if (caCertPem === undefined || caKeyPem === undefined || serverCertPem === undefined || serverKeyPem === undefined ||
    saSigningKeyPem === undefined || saPublicKeyPem === undefined) {
    return undefined;
  }
  return { dir, caCertPem, caKeyPem, serverCertPem, serverKeyPem, saSigningKeyPem, saPublicKeyPem };
}

function coversHosts(certPem: string, hosts: string[]): boolean {
  const cert = new X509Certificate(certPem);
  return hosts.every((h) => (isIP(h) ? cert.checkIP(h) !== undefined : cert.checkHost(h) !== undefined));
}

async function createCa(): Promise<{ caCertPem: string; caKeyPem: string }> {
  const key = await ecKeyPair();
  const certPem = await withTempDir(async (tmp) => {
    const keyFile = join(tmp, 'ca.key');
    const confFile = join(tmp, 'openssl.cnf');
    await writeFile(keyFile, key.privateKey, { mode: 0o600 });
    await writeFile(confFile, opensslConfig([
      'basicConstraints = critical,CA:TRUE',
      'keyUsage = critical,digitalSignature,keyCertSign,cRLSign',
      'subjectKeyIdentifier = hash',
    ]));
    return openssl(['req', '-x509', '-new', '-config', confFile, '-extensions', 'ext', '-key', keyFile,
      '-subj', subject('nodelet-test-ca', []), '-days', String(VALIDITY_DAYS), '-sha256', '-utf8']);
  });
  return { caCertPem: certPem, caKeyPem: key.privateKey };
}

async function issueCert(
  ca: { caCertPem: string; caKeyPem: string },
  req: { cn: string; orgs: string[]; usage: 'server' | 'client'; hosts: string[] },
): Promise<{ certPem: string; keyPem: string }> {
  const key = await ecKeyPair();
  const extensions = [
    'basicConstraints = critical,CA:FALSE',
    'keyUsage = critical,digitalSignature',
    `extendedKeyUsage = ${req.usage === 'server' ? 'serverAuth' : 'clientAuth'}`,
    'subjectKeyIdentifier = hash',
    'authorityKeyIdentifier = keyid',
  ];
  if (req.hosts.length > 0) {
    extensions.push(`subjectAltName = ${req.hosts.map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`)).join(',')}`);
  }
  const certPem = await withTempDir(async (tmp) => {
    const keyFile = join(tmp, 'leaf.key');
    const caKeyFile = join(tmp, 'ca.key');
    const caCertFile = join(tmp, 'ca.crt');
    const confFile = join(tmp, 'openssl.cnf');
    await writeFile(keyFile, key.privateKey, { mode: 0o600 });
    await writeFile(caKeyFile, ca.caKeyPem, { mode: 0o600 });
    await writeFile(caCertFile, ca.caCertPem);
    await writeFile(confFile, opensslConfig(extensions));
    // `req -x509 -CA` (OpenSSL 3) signs with the CA in one step; the config's section replaces openssl.cnf's v3_ca defaults.
    return openssl(['req', '-x509', '-new', '-config', confFile, '-extensions', 'ext', '-key', keyFile,
      '-CA', caCertFile, '-CAkey', caKeyFile, '-subj', subject(req.cn, req.orgs), '-days', String(VALIDITY_DAYS), '-sha256', '-utf8']);
  });
  return { certPem, keyPem: key.privateKey };
}

function opensslConfig(extensions: string[]): string {
  return ['[req]', 'distinguished_name = dn', 'prompt = no', '[dn]', '[ext]', ...extensions, ''].join('\n');
}

/** An openssl -subj string: one O per group (as x509 groups), then CN. */
function subject(cn: string, orgs: string[]): string {
  const esc = (v: string) => v.replace(/[\\/+]/g, (c) => `\\${c}`);
  return orgs.map((o) => `/O=${esc(o)}`).join('') + `/CN=${esc(cn)}`;
}

async function openssl(args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync('openssl', args, { timeout: OPENSSL_TIMEOUT_MS, encoding: 'utf8' });
    return stdout;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? '';
    throw new PkiError(`openssl ${args[0]} failed: ${stderr.trim() || (err as Error).message}`, { cause: err });
  }
}

async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-pki-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** P-256 keys: instant to generate, and accepted by Go's crypto/tls (kubectl) and Node's TLS alike. */
async function ecKeyPair(): Promise<{ privateKey: string; publicKey: string }> {
  return promisify(generateKeyPair)('ec', {
    namedCurve: 'prime256v1',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
}

/** RSA because service account tokens are RS256 JWTs, as kube-apiserver issues them with an RSA --service-account-signing-key-file. */
async function rsaKeyPair(): Promise<{ privateKey: string; publicKey: string }> {
  return promisify(generateKeyPair)('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
}

async function writeAtomic(file: string, content: string, mode: number): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, content, { mode });
  // writeFile's mode only applies to new files; a leftover temp file must not keep a wider mode.
  await chmod(tmp, mode);
  await rename(tmp, file);
}
