// The control plane's PKI in kubeadm's layout (certificatesDir): the cluster CA, the etcd CA, the front-proxy CA, the
// service account key pair and every leaf certificate kubeadm's `certs` phase issues, made with the openssl CLI.
// Keys are ECDSA P-256, what kubeadm issues with `encryptionAlgorithm: ECDSA-P256`.
import { execFile } from 'node:child_process';
import { createHash, generateKeyPair, X509Certificate } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';

const execFileAsync = promisify(execFile);

/** Ten years, as kubeadm's CAs: a cluster dir reused across many `up`s must not see its certificates expire. */
const VALIDITY_DAYS = 3650;
const OPENSSL_TIMEOUT_MS = 30_000;

/** openssl failed (missing binary, bad subject, ...). */
export class PkiError extends Error {
  override readonly name = 'PkiError';
}

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

interface LeafSpec {
  /** Path under certificatesDir without extension, e.g. `apiserver` or `etcd/server` (kubeadm's file names). */
  file: string;
  ca: 'ca' | 'etcd/ca' | 'front-proxy-ca';
  cn: string;
  orgs?: string[];
  usages: ('serverAuth' | 'clientAuth')[];
  hosts?: string[];
}

/** What the certificates must name: the control plane's node name, the API server's IPs and DNS names. */
export interface PkiSubjects {
  nodeName: string;
  /** IPs and DNS names the API server's serving certificate covers (kubeadm: advertise address, first service IP, kubernetes.default...). */
  apiServerHosts: string[];
}

/** kubeadm's certificate list (cmd/kubeadm/app/phases/certs/certlist.go), CAs first. */
function leafSpecs(s: PkiSubjects): LeafSpec[] {
  const etcdHosts = ['localhost', s.nodeName, '127.0.0.1', '::1'];
  return [
    { file: 'apiserver', ca: 'ca', cn: 'kube-apiserver', usages: ['serverAuth'], hosts: s.apiServerHosts },
    // kubeadm >= 1.29: the kubelet client is in kubeadm:cluster-admins, bound to cluster-admin by a ClusterRoleBinding.
    { file: 'apiserver-kubelet-client', ca: 'ca', cn: 'kube-apiserver-kubelet-client', orgs: ['kubeadm:cluster-admins'], usages: ['clientAuth'] },
    { file: 'front-proxy-client', ca: 'front-proxy-ca', cn: 'front-proxy-client', usages: ['clientAuth'] },
    { file: 'etcd/server', ca: 'etcd/ca', cn: s.nodeName, usages: ['serverAuth', 'clientAuth'], hosts: etcdHosts },
    { file: 'etcd/peer', ca: 'etcd/ca', cn: s.nodeName, usages: ['serverAuth', 'clientAuth'], hosts: etcdHosts },
    { file: 'etcd/healthcheck-client', ca: 'etcd/ca', cn: 'kube-etcd-healthcheck-client', usages: ['clientAuth'] },
    { file: 'apiserver-etcd-client', ca: 'etcd/ca', cn: 'kube-apiserver-etcd-client', usages: ['clientAuth'] },
  ];
}

const CAS = [
  { file: 'ca', cn: 'kubernetes' },
  { file: 'etcd/ca', cn: 'etcd-ca' },
  { file: 'front-proxy-ca', cn: 'front-proxy-ca' },
] as const;

/**
 * Creates in `pkiDir` whatever is missing of kubeadm's PKI and returns the cluster CA. Existing files are kept, so the
 * cluster keeps its identity across `down`/`up`; a serving certificate that no longer covers every host is re-issued.
 */
export async function ensurePki(pkiDir: string, subjects: PkiSubjects): Promise<KeyPairPem> {
  await mkdir(join(pkiDir, 'etcd'), { recursive: true, mode: 0o700 });
  const cas = new Map<string, KeyPairPem>();
  for (const ca of CAS) {
    let pair = await loadPair(pkiDir, ca.file);
    if (!pair) {
      pair = await createCa(ca.cn);
      await savePair(pkiDir, ca.file, pair);
    }
    cas.set(ca.file, pair);
  }
  for (const spec of leafSpecs(subjects)) {
    const existing = await loadPair(pkiDir, spec.file);
    if (existing && coversHosts(existing.certPem, spec.hosts ?? [])) continue;
    const ca = cas.get(spec.ca)!;
    await savePair(pkiDir, spec.file, await issueCert(ca, { cn: spec.cn, orgs: spec.orgs ?? [], usages: spec.usages, hosts: spec.hosts ?? [] }));
  }
  // The service account key pair (sa.key signs tokens, sa.pub verifies them), made once.
  if ((await readOptional(join(pkiDir, 'sa.key'))) === undefined) {
    const sa = await ecKeyPair();
    await writeAtomic(join(pkiDir, 'sa.pub'), sa.publicKey, 0o644);
    await writeAtomic(join(pkiDir, 'sa.key'), sa.privateKey, 0o600);
  }
  return cas.get('ca')!;
}

/** A client certificate as kube-apiserver's x509 authenticator reads it: CN is the user name, each O a group. */
export async function issueClientCert(ca: KeyPairPem, user: { name: string; groups: string[] }): Promise<KeyPairPem> {
  return issueCert(ca, { cn: user.name, orgs: user.groups, usages: ['clientAuth'], hosts: [] });
}

/** kubeadm's discovery hash of a CA: `sha256:` + hex SHA-256 of the certificate's DER SubjectPublicKeyInfo. */
export function caCertHash(caCertPem: string): string {
  const spki = new X509Certificate(caCertPem).publicKey.export({ type: 'spki', format: 'der' });
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`;
}

/** Writes a kubeconfig with embedded credentials (mode 0600), as kubeadm writes admin.conf and the components' confs. */
export async function writeKubeconfig(
  file: string,
  opts: { server: string; caPem: string; user: string; certPem: string; keyPem: string; clusterName: string },
): Promise<void> {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const contextName = `${opts.user}@${opts.clusterName}`;
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: opts.clusterName, cluster: { server: opts.server, 'certificate-authority-data': b64(opts.caPem) } }],
    users: [{ name: opts.user, user: { 'client-certificate-data': b64(opts.certPem), 'client-key-data': b64(opts.keyPem) } }],
    contexts: [{ name: contextName, context: { cluster: opts.clusterName, user: opts.user } }],
    'current-context': contextName,
    preferences: {},
  };
  await writeAtomic(file, stringify(config), 0o600);
}

export async function loadPair(pkiDir: string, file: string): Promise<KeyPairPem | undefined> {
  const [certPem, keyPem] = await Promise.all([readOptional(join(pkiDir, `${file}.crt`)), readOptional(join(pkiDir, `${file}.key`))]);
  return certPem !== undefined && keyPem !== undefined ? { certPem, keyPem } : undefined;
}

async function savePair(pkiDir: string, file: string, pair: KeyPairPem): Promise<void> {
  await mkdir(dirname(join(pkiDir, file)), { recursive: true, mode: 0o700 });
  // The key first: loadPair needs both, so a crash in between leaves a pair that is made again.
  await writeAtomic(join(pkiDir, `${file}.key`), pair.keyPem, 0o600);
  await writeAtomic(join(pkiDir, `${file}.crt`), pair.certPem, 0o644);
}

async function readOptional(file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
}

function coversHosts(certPem: string, hosts: string[]): boolean {
  const cert = new X509Certificate(certPem);
  return hosts.every((h) => (isIP(h) ? cert.checkIP(h) !== undefined : cert.checkHost(h) !== undefined));
}

async function createCa(cn: string): Promise<KeyPairPem> {
  const key = await ecKeyPair();
  const certPem = await withTempDir(async (tmp) => {
    const keyFile = join(tmp, 'ca.key');
    const confFile = join(tmp, 'openssl.cnf');
    await writeFile(keyFile, key.privateKey, { mode: 0o600 });
    await writeFile(confFile, opensslConfig([
      'basicConstraints = critical,CA:TRUE',
      'keyUsage = critical,digitalSignature,keyEncipherment,keyCertSign',
      'subjectKeyIdentifier = hash',
    ]));
    return openssl(['req', '-x509', '-new', '-config', confFile, '-extensions', 'ext', '-key', keyFile,
      '-subj', subject(cn, []), '-days', String(VALIDITY_DAYS), '-sha256', '-utf8']);
  });
  return { certPem, keyPem: key.privateKey };
}

async function issueCert(ca: KeyPairPem, req: { cn: string; orgs: string[]; usages: string[]; hosts: string[] }): Promise<KeyPairPem> {
  const key = await ecKeyPair();
  const extensions = [
    'basicConstraints = critical,CA:FALSE',
    'keyUsage = critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage = ${req.usages.join(',')}`,
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
    await writeFile(caKeyFile, ca.keyPem, { mode: 0o600 });
    await writeFile(caCertFile, ca.certPem);
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

/** An openssl -subj string: one O per group, then CN. */
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

async function ecKeyPair(): Promise<{ privateKey: string; publicKey: string }> {
  return promisify(generateKeyPair)('ec', {
    namedCurve: 'prime256v1',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
}

export async function writeAtomic(file: string, content: string, mode: number): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, content, { mode });
  // writeFile's mode only applies to new files; a leftover temp file must not keep a wider mode.
  await chmod(tmp, mode);
  await rename(tmp, file);
}
