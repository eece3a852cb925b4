// kubelet's TLS bootstrap (pkg/kubelet/certificate/bootstrap LoadClientCert): with the bootstrap kubeconfig's token, ask
// for the node's client certificate, store it as kubelet-client-current.pem and write the kubeconfig that uses it.
// A kubeconfig whose certificate is still valid is kept: a restart never asks again.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { KubeClient } from '../kubeapi/client.js';
import { loadKubeconfig } from '../kubeapi/kubeconfig.js';
import { CertificateStore, parsePair } from './cert-store.js';
import { requestCertificate, waitForCertificate } from './csr-client.js';
import {
  certificateSigningRequest,
  createCsrPem,
  digestedCsrName,
  generatePrivateKeyPem,
  kubeletClientSigner,
  kubeletClientUsages,
  nodeClientSubject,
  publicKeyDer,
} from './csr.js';
import { kubeconfigYaml, writeFileAtomic } from './files.js';

export interface TlsBootstrapOptions {
  /** --kubeconfig: written when the bootstrap gets a certificate; kept as it is while its certificate is valid. */
  kubeconfig: string;
  /** --bootstrap-kubeconfig: the API server, its CA and the bootstrap token. */
  bootstrapKubeconfig: string;
  /** --cert-dir: kubelet-client-*.pem. */
  certDir: string;
  nodeName: string;
  clock: Clock;
  log: Logger;
  signal: AbortSignal;
  /** How long to wait for the certificate (kubelet: an hour). */
  timeoutMs?: number;
}

/** The key of a request not yet issued, kept so a restarted bootstrap asks again with it (and finds its CSR by name). */
const pendingKeyFile = 'kubelet-client.key.tmp';

/** Why the kubeconfig cannot be used as it is (undefined: its client certificate is valid now). kubelet's isClientConfigStillValid. */
export async function kubeconfigProblem(file: string, nowMs: number): Promise<string | undefined> {
  let conn;
  try {
    conn = await loadKubeconfig(file);
  } catch (err) {
    return (err as Error).message;
  }
  if (!conn.cert || !conn.key) return `${file} holds no client certificate`;
  let pair;
  try {
    pair = parsePair(conn.cert.toString(), conn.key.toString(), file);
  } catch (err) {
    return (err as Error).message;
  }
  if (nowMs < pair.notBefore) return `${file}: its client certificate is not valid before ${pair.leaf.validFrom}`;
  if (nowMs >= pair.notAfter) return `${file}: its client certificate expired at ${pair.leaf.validTo}`;
  return undefined;
}

/**
 * Ensures `kubeconfig` holds a valid client certificate for the node: returns 'valid' when it already does, otherwise
 * bootstraps one ('issued'). Errors name the CSR (denied, failed, not issued in time) or the file.
 */
export async function loadClientCertificate(opts: TlsBootstrapOptions): Promise<'valid' | 'issued'> {
  const { log, clock, signal } = opts;
  const problem = await kubeconfigProblem(opts.kubeconfig, clock.now());
  if (!problem) {
    log.info({ kubeconfig: opts.kubeconfig }, 'Kubeconfig exists and its client certificate is valid, skipping the TLS bootstrap');
    return 'valid';
  }
  log.info({ kubeconfig: opts.kubeconfig, reason: problem, bootstrapKubeconfig: opts.bootstrapKubeconfig }, 'TLS bootstrap: requesting a client certificate');
  const bootstrap = await loadKubeconfig(opts.bootstrapKubeconfig);
  const store = new CertificateStore(opts.certDir);
  const keyFile = join(opts.certDir, pendingKeyFile);
  // The pending key of an earlier attempt, or a new one. (kubelet would also reuse the stored pair's key; its digested
  // CSR name would then find the CSR that issued the expired certificate, and take that certificate again.)
  let keyPem = await readFile(keyFile, 'utf8').catch(() => undefined);
  if (!keyPem) {
    keyPem = await generatePrivateKeyPem();
    await writeFileAtomic(keyFile, keyPem);
  }
  const subject = nodeClientSubject(opts.nodeName);
  const name = digestedCsrName(publicKeyDer(keyPem), subject, kubeletClientUsages);
  const csr = certificateSigningRequest(await createCsrPem(keyPem, subject), name, kubeletClientSigner, kubeletClientUsages);
  const client = new KubeClient(bootstrap, { userAgent: `nodelet/${opts.nodeName} (bootstrap)` });
  let certPem: string;
  try {
    const made = await requestCertificate(client, csr, signal);
    log.info({ csr: made.name, signer: kubeletClientSigner }, 'TLS bootstrap: certificate signing request created, waiting for approval');
    certPem = await waitForCertificate(client, made, { timeoutMs: opts.timeoutMs ?? 3_600_000, clock, log, signal });
  } finally {
    client.close();
  }
  const pair = await store.update(certPem, keyPem, clock.now());
  await rm(keyFile, { force: true });
  await writeFileAtomic(
    opts.kubeconfig,
    kubeconfigYaml({ server: bootstrap.server.href.replace(/\/$/, ''), caPem: bootstrap.ca ?? '', user: { certificateFile: store.currentPath } }),
  );
  log.info({ csr: name, subject: pair.leaf.subject.replace(/\n/g, ', '), notAfter: pair.leaf.validTo, file: store.currentPath, kubeconfig: opts.kubeconfig }, 'TLS bootstrap: client certificate issued');
  return 'issued';
}
