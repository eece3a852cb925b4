// Client certificate rotation (client-go's certificate manager as kubelet runs it with rotateCertificates): at a jittered
// 70-90 % of the certificate's lifetime, a new key and CSR sent with the current certificate; the issued pair goes to
// the store and the API clients present it on their next connection. No restart.
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { ClientCertificateSource, KubeClient } from '../kubeapi/client.js';
import { CertificateStore, parsePair, type CertificatePair } from './cert-store.js';
import { requestCertificate, waitForCertificate } from './csr-client.js';
import { certificateSigningRequest, createCsrPem, generatePrivateKeyPem, kubeletClientSigner, kubeletClientUsages, nodeClientSubject } from './csr.js';
import { rotationDeadline, rotationRetryDelay } from './rotation-deadline.js';

export interface ClientCertificateRotationOptions {
  store: CertificateStore;
  /** The pair the kubeconfig names (the store's current one when the kubeconfig points at it). */
  initial: { cert: Buffer; key: Buffer };
  nodeName: string;
  clock: Clock;
  log: Logger;
  /** [0, 1); the deadline's jitter. */
  random?: () => number;
  /** How long one CSR may wait for its certificate before the rotation is retried. */
  requestTimeoutMs?: number;
}

export class ClientCertificateRotation implements ClientCertificateSource {
  private pair: CertificatePair;
  private buffers: { cert: Buffer; key: Buffer };
  /** Rotations done since start (for logs and tests). */
  rotations = 0;

  constructor(private readonly opts: ClientCertificateRotationOptions) {
    this.pair = parsePair(opts.initial.cert.toString(), opts.initial.key.toString(), 'the kubeconfig\'s client certificate');
    this.buffers = opts.initial;
  }

  /** The pair to present now. */
  current(): { cert: Buffer; key: Buffer } {
    return this.buffers;
  }

  /** The certificate in use. */
  get certificate(): CertificatePair {
    return this.pair;
  }

  /**
   * Rotates before each deadline until the signal aborts. `client` makes the requests; it should present this source's
   * pair (the node's identity asks for its next certificate, which kube-controller-manager approves as selfnodeclient).
   */
  async run(client: KubeClient, signal: AbortSignal): Promise<void> {
    const { clock, log } = this.opts;
    const random = this.opts.random ?? Math.random;
    let failures = 0;
    let deadline = rotationDeadline(this.pair.notBefore, this.pair.notAfter, random());
    log.info({ notAfter: this.pair.leaf.validTo, rotationDeadline: new Date(deadline).toISOString() }, 'Client certificate rotation scheduled');
    while (!signal.aborted) {
      const wait = deadline - clock.now();
      if (wait > 0) {
        // In steps of at most a day: timers cannot hold a year-long certificate's wait (2^31 ms at most).
        await clock.sleep(Math.min(wait, 24 * 3_600_000), signal);
        continue;
      }
      try {
        await this.rotate(client, signal);
        failures = 0;
        deadline = rotationDeadline(this.pair.notBefore, this.pair.notAfter, random());
        log.info({ notAfter: this.pair.leaf.validTo, rotationDeadline: new Date(deadline).toISOString() }, 'Client certificate rotated; next rotation scheduled');
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        const delay = rotationRetryDelay(failures, clock.now(), this.pair.notAfter);
        log.warn({ err, retryInMs: delay, notAfter: this.pair.leaf.validTo }, 'Client certificate rotation failed');
        deadline = clock.now() + delay;
      }
    }
  }

  /** One rotation: new key, CSR (generated name `csr-...`, as client-go's manager), wait, store, switch. */
  private async rotate(client: KubeClient, signal: AbortSignal): Promise<void> {
    const { clock, log, nodeName, store } = this.opts;
    const keyPem = await generatePrivateKeyPem();
    const csr = certificateSigningRequest(await createCsrPem(keyPem, nodeClientSubject(nodeName)), undefined, kubeletClientSigner, kubeletClientUsages);
    const made = await requestCertificate(client, csr, signal);
    log.info({ csr: made.name }, 'Client certificate rotation: certificate signing request created');
    const certPem = await waitForCertificate(client, made, { timeoutMs: this.opts.requestTimeoutMs ?? 15 * 60_000, clock, log, signal });
    const pair = await store.update(certPem, keyPem, clock.now());
    this.pair = pair;
    this.buffers = { cert: Buffer.from(pair.certPem), key: Buffer.from(pair.keyPem) };
    this.rotations++;
    log.info({ csr: made.name, file: store.currentPath, notAfter: pair.leaf.validTo }, 'Client certificate rotation: new certificate in use');
  }
}
