// Certificate rotation (client-go's certificate manager as kubelet runs it): at a jittered 70-90 % of the certificate's
// lifetime, or at once when there is none, a new key and CSR; the issued pair goes to the store and is used from then on
// (the API clients' next connections, the kubelet API's next handshakes). No restart. kubelet runs two: the client
// certificate (rotateCertificates) and the serving certificate (serverTLSBootstrap).
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { ClientCertificateSource, KubeClient } from '../kubeapi/client.js';
import { CertificateStore, parsePair, type CertificatePair } from './cert-store.js';
import { requestCertificate, waitForCertificate } from './csr-client.js';
import { certificateSigningRequest, clientCertificateTemplate, createCsrPem, generatePrivateKeyPem, templateMismatch, type CertificateTemplate } from './csr.js';
import { rotationDeadline, rotationRetryDelay } from './rotation-deadline.js';

export interface CertificateManagerOptions {
  store: CertificateStore;
  /** The pair in use at start; without one a certificate is requested at once. */
  initial?: { cert: Buffer; key: Buffer };
  template: CertificateTemplate;
  clock: Clock;
  log: Logger;
  /** [0, 1); the deadline's jitter. */
  random?: () => number;
  /** How long one CSR may wait for its certificate before the request is retried. */
  requestTimeoutMs?: number;
}

export class CertificateManager {
  #pair: CertificatePair | undefined;
  #buffers: { cert: Buffer; key: Buffer } | undefined;
  /** Certificates obtained since start (for logs and tests). */
  rotations = 0;
  /** Told each new pair, after the store has it (the kubelet API serves it from its next handshake). */
  onRotated: ((pair: { cert: Buffer; key: Buffer }) => void) | undefined;

  constructor(private readonly opts: CertificateManagerOptions) {
    if (opts.initial) {
      this.#pair = parsePair(opts.initial.cert.toString(), opts.initial.key.toString(), `the ${opts.template.what.toLowerCase()} certificate in use`);
      this.#buffers = opts.initial;
    }
  }

  /** The pair to present now; undefined until the first certificate is issued. */
  currentPair(): { cert: Buffer; key: Buffer } | undefined {
    return this.#buffers;
  }

  /**
   * Requests a certificate at once when there is none, then before each deadline, until the signal aborts. `client`
   * makes the requests as the node (kube-controller-manager approves a node's own client certificates; serving ones
   * wait for someone to approve them).
   */
  async run(client: KubeClient, signal: AbortSignal): Promise<void> {
    const { clock, log, template } = this.opts;
    const random = this.opts.random ?? Math.random;
    let failures = 0;
    const scheduled = (): number => {
      const pair = this.#pair;
      if (!pair) return clock.now();
      // A pair that is not what the template asks for (e.g. a tlsCertFile for other names) is replaced at once.
      const mismatch = templateMismatch(pair.leaf, template);
      if (mismatch) {
        log.info({ notAfter: pair.leaf.validTo, mismatch }, `${template.what} certificate does not satisfy the template: requesting a new one now`);
        return clock.now();
      }
      const deadline = rotationDeadline(pair.notBefore, pair.notAfter, random());
      log.info({ notAfter: pair.leaf.validTo, rotationDeadline: new Date(deadline).toISOString() }, `${template.what} certificate rotation scheduled`);
      return deadline;
    };
    let deadline = scheduled();
    while (!signal.aborted) {
      const wait = deadline - clock.now();
      if (wait > 0) {
        // In steps of at most a day: timers cannot hold a year-long certificate's wait (2^31 ms at most).
        await clock.sleep(Math.min(wait, 24 * 3_600_000), signal);
        continue;
      }
      try {
        await this.#rotate(client, signal);
        failures = 0;
        deadline = scheduled();
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        const delay = rotationRetryDelay(failures, clock.now(), this.#pair?.notAfter ?? clock.now());
        log.warn({ err, retryInMs: delay, notAfter: this.#pair?.leaf.validTo }, `${template.what} certificate rotation failed`);
        deadline = clock.now() + delay;
      }
    }
  }

  /** One request: new key, CSR (generated name `csr-...`, as client-go's manager), wait, store, switch. */
  async #rotate(client: KubeClient, signal: AbortSignal): Promise<void> {
    const { clock, log, store, template } = this.opts;
    const keyPem = await generatePrivateKeyPem();
    const csr = certificateSigningRequest(await createCsrPem(keyPem, template.subject, template.sans), undefined, template.signerName, template.usages);
    const made = await requestCertificate(client, csr, signal);
    log.info({ csr: made.name, signer: template.signerName }, `${template.what} certificate rotation: certificate signing request created`);
    const certPem = await waitForCertificate(client, made, { timeoutMs: this.opts.requestTimeoutMs ?? 15 * 60_000, clock, log, signal });
    const pair = await store.update(certPem, keyPem, clock.now());
    this.#pair = pair;
    this.#buffers = { cert: Buffer.from(pair.certPem), key: Buffer.from(pair.keyPem) };
    this.rotations++;
    this.onRotated?.(this.#buffers);
    log.info({ csr: made.name, file: store.currentPath, notAfter: pair.leaf.validTo }, `${template.what} certificate rotation: new certificate in use`);
  }
}

/** The client certificate's manager, which always has a pair: the API clients present it. */
export class ClientCertificateRotation extends CertificateManager implements ClientCertificateSource {
  readonly #initial: { cert: Buffer; key: Buffer };

  constructor(opts: Omit<CertificateManagerOptions, 'template' | 'initial'> & { initial: { cert: Buffer; key: Buffer }; nodeName: string }) {
    super({ ...opts, template: clientCertificateTemplate(opts.nodeName) });
    this.#initial = opts.initial;
  }

  current(): { cert: Buffer; key: Buffer } {
    return this.currentPair() ?? this.#initial;
  }
}
