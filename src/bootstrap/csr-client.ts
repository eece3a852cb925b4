// Asking the API server for a certificate: create the CertificateSigningRequest (or find the one made earlier with the
// same key) and watch it until it is issued, denied or failed (client-go's csr.RequestCertificate and WaitForCertificate).
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { isAlreadyExists, type KubeClient } from '../kubeapi/client.js';
import { Reflector } from '../kubeapi/reflector.js';
import { csrOutcome, type CertificateSigningRequest } from './csr.js';

/** A CSR that did not yield a certificate: denied, failed, deleted, replaced, or not signed in time. Names the CSR. */
export class CertificateRequestError extends Error {
  constructor(
    readonly csrName: string,
    message: string,
  ) {
    super(message);
  }
}

const csrPath = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

/**
 * Creates the CSR; when one of that name exists (a restarted bootstrap with the same key), it is reused if it asks for
 * the same thing. Returns its name and UID.
 */
export async function requestCertificate(client: KubeClient, csr: CertificateSigningRequest, signal: AbortSignal): Promise<{ name: string; uid: string }> {
  try {
    const made = await client.request<CertificateSigningRequest>({ method: 'POST', path: csrPath, body: csr, signal });
    return { name: made.metadata.name!, uid: made.metadata.uid! };
  } catch (err) {
    const name = csr.metadata.name;
    if (!name || !isAlreadyExists(err)) throw err;
    const existing = await client.request<CertificateSigningRequest>({ method: 'GET', path: `${csrPath}/${name}`, signal });
    if (existing.spec.request !== csr.spec.request || existing.spec.signerName !== csr.spec.signerName) {
      throw new CertificateRequestError(name, `certificate signing request ${name} exists and asks for another certificate`);
    }
    return { name, uid: existing.metadata.uid! };
  }
}

/**
 * Watches the CSR until it is issued (resolves with the certificate PEM) or denied, failed, deleted or replaced, or the
 * timeout passes (rejects with CertificateRequestError naming it). kubelet waits up to an hour.
 */
export async function waitForCertificate(
  client: KubeClient,
  csr: { name: string; uid: string },
  opts: { timeoutMs: number; clock: Clock; log: Logger; signal: AbortSignal },
): Promise<string> {
  const stop = new AbortController();
  const signal = AbortSignal.any([opts.signal, stop.signal]);
  let settle!: { resolve: (pem: string) => void; reject: (err: Error) => void };
  const outcome = new Promise<string>((resolve, reject) => (settle = { resolve, reject }));
  let approvedLogged = false;
  const reflector = new Reflector<CertificateSigningRequest>({
    client,
    path: csrPath,
    fieldSelector: `metadata.name=${csr.name}`,
    what: `certificate signing request ${csr.name}`,
    log: opts.log,
    clock: opts.clock,
    onChange: (items) => {
      const current = items.find((i) => i.metadata.name === csr.name);
      if (!current) return settle.reject(new CertificateRequestError(csr.name, `certificate signing request ${csr.name} was deleted before it was issued`));
      if (current.metadata.uid !== csr.uid) return settle.reject(new CertificateRequestError(csr.name, `certificate signing request ${csr.name} was replaced (its UID changed)`));
      const o = csrOutcome(current);
      if (o.state === 'issued') return settle.resolve(o.certificatePem);
      if (o.state !== 'pending') {
        return settle.reject(new CertificateRequestError(csr.name, `certificate signing request ${csr.name} is ${o.state}, reason: ${o.reason || '(none)'}, message: ${o.message || '(none)'}`));
      }
      if (o.approved && !approvedLogged) {
        approvedLogged = true;
        opts.log.info({ csr: csr.name }, 'Certificate signing request approved, waiting for the certificate');
      }
    },
  });
  const timer = opts.clock.setTimeout(
    () => settle.reject(new CertificateRequestError(csr.name, `certificate signing request ${csr.name} was not issued within ${Math.round(opts.timeoutMs / 1000)} s`)),
    opts.timeoutMs,
  );
  const onAbort = () => settle.reject(new CertificateRequestError(csr.name, `stopped waiting for certificate signing request ${csr.name}`));
  opts.signal.addEventListener('abort', onAbort, { once: true });
  const watching = reflector.run(signal);
  try {
    return await outcome;
  } finally {
    opts.clock.clearTimeout(timer);
    opts.signal.removeEventListener('abort', onAbort);
    stop.abort();
    await watching.catch(() => undefined);
  }
}
