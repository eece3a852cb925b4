// The node's client certificate on disk, as client-go's certificate file store keeps it: each issued certificate and its
// key in one dated file `<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem`, and `<prefix>-current.pem` a symlink to the one in use.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { lstat, mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseCertificates } from './ca-pin.js';

/** A certificate (leaf first, then intermediates) with its private key. */
export interface CertificatePair {
  certPem: string;
  keyPem: string;
  leaf: X509Certificate;
  /** Validity of the leaf, in ms since the epoch. */
  notBefore: number;
  notAfter: number;
}

/** A certificate file nodelet cannot use. */
export class CertificateFileError extends Error {}

const keyBlockPattern = /-----BEGIN (EC |RSA )?PRIVATE KEY-----[\s\S]+?-----END (EC |RSA )?PRIVATE KEY-----\n?/;

/** Reads a PEM holding certificates and a private key (either may be given apart); the key must match the leaf. */
export function parsePair(certPem: string, keyPem: string, what: string): CertificatePair {
  const certs = parseCertificates(certPem);
  if (certs.length === 0) throw new CertificateFileError(`${what}: no certificate`);
  const key = keyBlockPattern.exec(keyPem)?.[0];
  if (!key) throw new CertificateFileError(`${what}: no private key`);
  const leaf = certs[0]!;
  let matches: boolean;
  try {
    matches = leaf.checkPrivateKey(createPrivateKey(key));
  } catch (err) {
    throw new CertificateFileError(`${what}: unreadable private key: ${(err as Error).message}`, { cause: err });
  }
  if (!matches) throw new CertificateFileError(`${what}: the private key does not belong to the certificate`);
  return {
    certPem: certs.map((c) => c.toString()).join(''),
    keyPem: key.endsWith('\n') ? key : `${key}\n`,
    leaf,
    notBefore: Date.parse(leaf.validFrom),
    notAfter: Date.parse(leaf.validTo),
  };
}

/** A file's text; undefined when it does not exist, an error naming it when it cannot be read. */
async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CertificateFileError(`${path}: ${(err as Error).message}`, { cause: err });
  }
}

/** Go's "2006-01-02-15-04-05" in local time, the store's file stamp. */
export function fileStamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-${p(d.getHours())}-${p(d.getMinutes())}-${p(d.getSeconds())}`;
}

export class CertificateStore {
  constructor(
    readonly dir: string,
    /** `kubelet-client` for the client certificate (kubelet-server would be the serving one). */
    readonly prefix = 'kubelet-client',
    /**
     * client-go's certFile and keyFile (kubelet gives tlsCertFile and tlsPrivateKeyFile for the serving store): with
     * `<dir>/<prefix>.crt` and `.key`, the pairs used, in that order, while there is no current one.
     */
    readonly given?: { certFile: string; keyFile: string },
  ) {}

  /** `<dir>/<prefix>-current.pem`: what a kubeconfig written from the bootstrap names as client certificate and key. */
  get currentPath(): string {
    return join(resolve(this.dir), `${this.prefix}-current.pem`);
  }

  /**
   * The pair in use, as client-go's file store finds it: the current one, else the given certFile and keyFile, else
   * `<dir>/<prefix>.crt` and `.key`; undefined when none exists. One that exists but cannot be read or used is an error
   * naming its files.
   */
  async current(): Promise<CertificatePair | undefined> {
    const candidates: [string, string][] = [[this.currentPath, this.currentPath]];
    if (this.given?.certFile && this.given.keyFile) candidates.push([this.given.certFile, this.given.keyFile]);
    candidates.push([join(resolve(this.dir), `${this.prefix}.crt`), join(resolve(this.dir), `${this.prefix}.key`)]);
    for (const [certFile, keyFile] of candidates) {
      // The current file holds both: read once.
      const cert = await readIfExists(certFile);
      if (cert === undefined) continue;
      const key = certFile === keyFile ? cert : await readIfExists(keyFile);
      if (key === undefined) continue;
      return parsePair(cert, key, certFile === keyFile ? certFile : `${certFile} and ${keyFile}`);
    }
    return undefined;
  }

  /**
   * Writes the issued certificate and its key to a new dated file (0600) and points the current symlink at it (through
   * `<prefix>-updated.pem` and a rename, so readers see the old or the new pair, never none). Returns the new pair.
   */
  async update(certPem: string, keyPem: string, nowMs: number): Promise<CertificatePair> {
    const pair = parsePair(certPem, keyPem, 'the issued certificate');
    await mkdir(this.dir, { recursive: true, mode: 0o755 });
    const file = join(resolve(this.dir), `${this.prefix}-${fileStamp(nowMs)}.pem`);
    await writeFile(file, pair.certPem + pair.keyPem, { mode: 0o600 });
    const current = this.currentPath;
    const currentStat = await lstat(current).catch(() => undefined);
    if (currentStat && !currentStat.isSymbolicLink()) throw new CertificateFileError(`expected ${current} to be a symlink but it is a file`);
    const updated = join(resolve(this.dir), `${this.prefix}-updated.pem`);
    await rm(updated, { force: true });
    await symlink(file, updated);
    await rename(updated, current);
    return pair;
  }
}
