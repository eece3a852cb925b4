// kubelet's pod certificate manager (pkg/kubelet/podcertificate): per podCertificate projection, a private key made on
// the node and a PodCertificateRequest (certificates.k8s.io/v1, GA in 1.37) the signer answers; refreshed from beginRefreshAt.
import { randomInt, webcrypto, type webcrypto as WebCrypto } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import type { EventRecorder } from '../core/events.js';
import type { Logger } from '../core/log.js';
import { systemClock } from '../core/clock.js';
import type { KubeClient } from '../kubeapi/client.js';
import { Reflector } from '../kubeapi/reflector.js';
import type { PodCertificateSource, PodCredentials } from '../core/api-objects.js';
import { pemBlock, pemBlocks } from './trust-bundles.js';


interface Condition {
  type: string;
  status?: string;
  reason?: string;
  message?: string;
}

/** certificates.k8s.io/v1 PodCertificateRequest, the fields the node writes and reads. */
export interface PodCertificateRequest {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; generateName?: string; namespace?: string; uid?: string; resourceVersion?: string; creationTimestamp?: string; ownerReferences?: object[] };
  spec?: {
    signerName: string;
    podName: string;
    podUID: string;
    serviceAccountName: string;
    serviceAccountUID: string;
    nodeName: string;
    nodeUID: string;
    maxExpirationSeconds?: number;
    /** base64 of the DER PKCS#10 request. */
    stubPKCS10Request: string;
    unverifiedUserAnnotations?: Record<string, string>;
  };
  status?: { conditions?: Condition[]; certificateChain?: string; notBefore?: string; beginRefreshAt?: string; notAfter?: string };
}

const apiPath = '/apis/certificates.k8s.io/v1';

/** A PCR created but not seen within this (plus jitter) is taken as deleted (kubelet's assumeDeletedThreshold). */
const assumeDeletedMs = 10 * 60_000;
/** kubelet's refreshOverdueDuration. */
const refreshOverdueMs = 10 * 60_000;
/** kubelet's jitterDuration: up to 5 minutes, so projections do not refresh together. */
const jitterMs = () => randomInt(5 * 60_000);

type Issued = { privateKey: Buffer; certChain: Buffer; beginRefreshAt: number; notAfter: number; overdueEmitted: boolean; expiredEmitted: boolean };
type State =
  | { kind: 'initial' }
  | { kind: 'wait'; privateKey: Buffer; pcrName: string; abandonAt: number }
  | { kind: 'denied' | 'failed'; reason: string; message: string }
  | ({ kind: 'fresh' } & Issued)
  | ({ kind: 'waitRefresh'; refreshPrivateKey: Buffer; refreshPcrName: string; refreshAbandonAt: number } & Issued);

interface ProjectionKey {
  namespace: string;
  podName: string;
  podUid: string;
  volumeName: string;
  sourceIndex: number;
}

const keyString = (k: ProjectionKey) => `${k.namespace}\0${k.podName}\0${k.podUid}\0${k.volumeName}\0${k.sourceIndex}`;
/** Go's %v of kubelet's projectionKey, for its error message. */
const keyGo = (k: ProjectionKey) => `{${k.namespace} ${k.podName} ${k.podUid} ${k.volumeName} ${k.sourceIndex}}`;
/** Go's %q. */
const q = (s: string) => JSON.stringify(s);

interface Projection {
  key: ProjectionKey;
  state: State;
  /** Set while the projection is being handled: handling is serialized per projection (kubelet's workqueue). */
  busy: boolean;
  /** Asked again while busy. */
  again: boolean;
  /** Consecutive failures, for the retry back-off. */
  failures: number;
  retry?: NodeJS.Timeout;
}

/** WebCrypto parameters of each key type, and Go's signature algorithm for its stub request (x509.CreateCertificateRequest). */
const keyTypes: Record<string, { generate: WebCrypto.RsaHashedKeyGenParams | WebCrypto.EcKeyGenParams | WebCrypto.Algorithm; sign: { name: string; hash?: string } }> = {
  RSA3072: { generate: { name: 'RSASSA-PKCS1-v1_5', modulusLength: 3072, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, sign: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } },
  RSA4096: { generate: { name: 'RSASSA-PKCS1-v1_5', modulusLength: 4096, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, sign: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } },
  ECDSAP256: { generate: { name: 'ECDSA', namedCurve: 'P-256' }, sign: { name: 'ECDSA', hash: 'SHA-256' } },
  ECDSAP384: { generate: { name: 'ECDSA', namedCurve: 'P-384' }, sign: { name: 'ECDSA', hash: 'SHA-384' } },
  ECDSAP521: { generate: { name: 'ECDSA', namedCurve: 'P-521' }, sign: { name: 'ECDSA', hash: 'SHA-512' } },
  ED25519: { generate: { name: 'Ed25519' }, sign: { name: 'Ed25519' } },
};

/**
 * kubelet's generateKeyAndProof: a new key pair of the type, its PKCS#8 PEM, and an empty PKCS#10 request it signed
 * (the proof of possession the API server verifies at admission). @peculiar/x509 is loaded here only.
 */
export async function generateKeyAndProof(keyType: string): Promise<{ privateKeyPem: Buffer; pkcs10Der: Buffer }> {
  const params = keyTypes[keyType];
  if (!params) throw new Error(`while generating keypair: unknown key type ${q(keyType)}`);
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const keys = (await webcrypto.subtle.generateKey(params.generate, true, ['sign', 'verify'])) as WebCrypto.CryptoKeyPair;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ keys, signingAlgorithm: params.sign });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return { privateKeyPem: Buffer.from(pemBlock('PRIVATE KEY', pkcs8.toString('base64'))), pkcs10Der: Buffer.from(csr.rawData) };
}

export interface PodCertificateManagerOptions {
  client: Pick<KubeClient, 'request' | 'watch'>;
  log: Logger;
  nodeName: string;
  /** The registered Node's UID (the request names it); undefined until the node is registered. */
  nodeUid: () => string | undefined;
  events?: EventRecorder;
  /** A projection's credentials changed (issued or refreshed): the pod's volumes are rewritten. */
  onPodsChanged: (podUids: string[]) => void;
  now?: () => number;
}

/**
 * The credentials of the podCertificate projections of the node's pods, through kubelet's states: initial (no request),
 * wait (request pending), fresh (issued), waitRefresh (issued, a new request pending from beginRefreshAt), denied and
 * failed (for good). A request is watched through the node's PodCertificateRequests (fieldSelector spec.nodeName, all the
 * Node authorizer allows); a pass every 1-2 minutes starts refreshes and retries abandoned requests.
 */
export class PodCertificateManager {
  private readonly pods = new Map<string, V1Pod>();
  private readonly projections = new Map<string, Projection>();
  private readonly controller = new AbortController();
  private reflector?: Reflector<PodCertificateRequest>;
  private refreshTimer?: NodeJS.Timeout;
  private readonly now: () => number;

  constructor(private readonly opts: PodCertificateManagerOptions) {
    this.now = opts.now ?? systemClock.now;
  }

  /** kubelet's TrackPod: the pod's projections are handled now (a new spec for the same UID replaces the old). */
  trackPod(pod: V1Pod): void {
    const uid = pod.metadata!.uid!;
    const keys = projectionKeys(pod);
    if (keys.length === 0) {
      if (this.pods.has(uid)) this.forgetPod(uid);
      return;
    }
    this.pods.set(uid, pod);
    this.start();
    for (const key of keys) this.queue(key);
  }

  /** kubelet's ForgetPod: the pod's credentials are dropped (its requests go with the pod, their owner). */
  forgetPod(uid: string): void {
    this.pods.delete(uid);
    for (const [k, p] of this.projections) {
      if (p.key.podUid !== uid) continue;
      clearTimeout(p.retry);
      this.projections.delete(k);
    }
  }

  /** kubelet's GetPodCertificateCredentialBundle, with its errors while the credentials are not (or never) there. */
  credentials(pod: V1Pod, volumeName: string, sourceIndex: number): PodCredentials {
    const key = { namespace: pod.metadata?.namespace ?? 'default', podName: pod.metadata?.name ?? '', podUid: pod.metadata?.uid ?? '', volumeName, sourceIndex };
    const state = this.projections.get(keyString(key))?.state;
    if (!state) throw new Error(`no credentials yet for key=${keyGo(key)}`);
    switch (state.kind) {
      case 'initial':
      case 'wait':
        throw new Error('credential bundle is not issued yet');
      case 'denied':
        throw new Error(`PodCertificateRequest was permanently denied: reason=${q(state.reason)} message=${q(state.message)}`);
      case 'failed':
        throw new Error(`PodCertificateRequest was permanently failed: reason=${q(state.reason)} message=${q(state.message)}`);
      default:
        return { privateKey: state.privateKey, certificateChain: state.certChain };
    }
  }

  /** Stops the watch and the timers (the agent is stopping). */
  stop(): void {
    this.controller.abort();
    clearTimeout(this.refreshTimer);
    for (const p of this.projections.values()) clearTimeout(p.retry);
  }

  /** The watch of the node's requests and the refresh pass start with the first pod that projects a certificate. */
  private start(): void {
    if (this.reflector) return;
    this.reflector = new Reflector<PodCertificateRequest>({
      client: this.opts.client,
      path: `${apiPath}/podcertificaterequests`,
      fieldSelector: `spec.nodeName=${this.opts.nodeName}`,
      what: `podcertificaterequests of node ${this.opts.nodeName}`,
      log: this.opts.log,
      // The first list, or a request appeared, changed or went: every projection looks again (a step is a no-op but
      // for the projections it concerns; kubelet queues those of the request's pod).
      onChange: () => this.queueAll(),
    });
    void this.reflector.run(this.controller.signal);
    this.scheduleRefreshPass();
  }

  /** kubelet's runRefreshPass, every minute with a jitter factor of 1 (1-2 minutes). */
  private scheduleRefreshPass(): void {
    this.refreshTimer = setTimeout(() => {
      this.queueAll();
      this.scheduleRefreshPass();
    }, 60_000 + randomInt(60_000));
    this.refreshTimer.unref();
  }

  private queueAll(): void {
    for (const pod of this.pods.values()) for (const key of projectionKeys(pod)) this.queue(key);
  }

  private queue(key: ProjectionKey): void {
    const k = keyString(key);
    let p = this.projections.get(k);
    if (!p) {
      p = { key, state: { kind: 'initial' }, busy: false, again: false, failures: 0 };
      this.projections.set(k, p);
    }
    if (p.busy) {
      p.again = true;
      return;
    }
    void this.process(p);
  }

  /** Handles a projection; a failure is retried with exponential back-off (the workqueue's AddRateLimited), up to 1000 s. */
  private async process(p: Projection): Promise<void> {
    clearTimeout(p.retry);
    p.busy = true;
    const log = this.opts.log.child({ pod: `${p.key.namespace}/${p.key.podName}`, podUid: p.key.podUid, volume: p.key.volumeName, sourceIndex: p.key.sourceIndex });
    try {
      do {
        p.again = false;
        try {
          await this.handle(p, log);
          p.failures = 0;
        } catch (err) {
          if (this.controller.signal.aborted || this.projections.get(keyString(p.key)) !== p) return;
          const delay = Math.min(1_000_000, 5 * 2 ** p.failures++);
          log.warn({ err, retryInMs: delay }, 'while handling podCertificate projected volume source');
          p.retry = setTimeout(() => this.queue(p.key), delay);
          p.retry.unref();
          return;
        }
      } while (p.again);
    } finally {
      p.busy = false;
    }
  }

  /** kubelet's handleProjection: one step of the state machine. */
  private async handle(p: Projection, log: Logger): Promise<void> {
    const pod = this.pods.get(p.key.podUid);
    if (!pod || this.projections.get(keyString(p.key)) !== p) return;
    const source = podCertificateSource(pod, p.key.volumeName, p.key.sourceIndex);
    if (!source) return;
    // Requests are read from the watch's copy: until its first list, wait for it (its first change queues us again).
    if (!this.reflector?.hasSynced) return;
    const state = p.state;
    const now = this.now();
    switch (state.kind) {
      case 'initial': {
        const { privateKey, pcr } = await this.createRequest(pod, source, 'initial');
        p.state = { kind: 'wait', privateKey, pcrName: pcr.metadata!.name!, abandonAt: Date.parse(pcr.metadata!.creationTimestamp!) + assumeDeletedMs + jitterMs() };
        log.info({ pcr: `${p.key.namespace}/${pcr.metadata!.name}`, signerName: source.signerName }, 'PodCertificateRequest created, moving to credStateWait');
        return;
      }
      case 'wait': {
        const pcr = this.request(p.key.namespace, state.pcrName);
        if (!pcr) {
          if (now <= state.abandonAt) return;
          p.state = { kind: 'initial' };
          throw new Error(`PodCertificateRequest ${q(`${p.key.namespace}/${state.pcrName}`)} appears to have been deleted`);
        }
        this.outcome(p, pod, pcr, state.privateKey, log);
        return;
      }
      case 'denied':
      case 'failed':
        return;
      case 'fresh': {
        if (now < state.beginRefreshAt) return;
        this.overdueEvents(state, pod, now);
        const { privateKey, pcr } = await this.createRequest(pod, source, 'refresh');
        p.state = {
          ...state,
          kind: 'waitRefresh',
          refreshPrivateKey: privateKey,
          refreshPcrName: pcr.metadata!.name!,
          refreshAbandonAt: Date.parse(pcr.metadata!.creationTimestamp!) + assumeDeletedMs + jitterMs(),
        };
        log.info({ pcr: `${p.key.namespace}/${pcr.metadata!.name}` }, 'PodCertificateRequest created, moving to credStateWaitRefresh');
        return;
      }
      case 'waitRefresh': {
        const pcr = this.request(p.key.namespace, state.refreshPcrName);
        if (!pcr) {
          if (now <= state.refreshAbandonAt) return;
          const { kind: _kind, refreshPrivateKey: _key, refreshPcrName: _name, refreshAbandonAt: _at, ...issued } = state;
          p.state = { kind: 'fresh', ...issued };
          throw new Error('PodCertificateRequest appears to have been deleted');
        }
        if (!this.outcome(p, pod, pcr, state.refreshPrivateKey, log)) this.overdueEvents(state, pod, now);
      }
    }
  }

  /** Moves a waiting projection to its request's terminal state; false while the request is pending. */
  private outcome(p: Projection, pod: V1Pod, pcr: PodCertificateRequest, privateKey: Buffer, log: Logger): boolean {
    const name = `${pcr.metadata?.namespace}/${pcr.metadata?.name}`;
    for (const cond of pcr.status?.conditions ?? []) {
      if (cond.type === 'Denied' || cond.type === 'Failed') {
        const kind = cond.type === 'Denied' ? 'denied' : 'failed';
        p.state = { kind, reason: cond.reason ?? '', message: cond.message ?? '' };
        log.warn({ pcr: name, reason: cond.reason, message: cond.message }, `PodCertificateRequest ${kind}`);
        this.opts.events?.event({ pod }, 'Warning', cond.type, `PodCertificateRequest ${name} ${kind === 'denied' ? 'was denied' : 'failed'}, reason=${q(cond.reason ?? '')}, message=${q(cond.message ?? '')}`);
        return true;
      }
      if (cond.type === 'Issued') {
        const status = pcr.status!;
        p.state = {
          kind: 'fresh',
          privateKey,
          certChain: Buffer.from(pemBlocks(status.certificateChain ?? '').map((b) => pemBlock('CERTIFICATE', b)).join('')),
          beginRefreshAt: Date.parse(status.beginRefreshAt ?? '') + jitterMs(),
          notAfter: Date.parse(status.notAfter ?? ''),
          overdueEmitted: false,
          expiredEmitted: false,
        };
        log.info({ pcr: name, notAfter: status.notAfter, beginRefreshAt: status.beginRefreshAt }, 'PodCertificateRequest issued, moving to credStateFresh');
        this.opts.onPodsChanged([p.key.podUid]);
        return true;
      }
    }
    return false;
  }

  /** kubelet's CertificateOverdueForRefresh and CertificateExpired events, once per issued certificate. */
  private overdueEvents(state: Issued, pod: V1Pod, now: number): void {
    if (now > state.beginRefreshAt + refreshOverdueMs && !state.overdueEmitted) {
      this.opts.events?.event({ pod }, 'Warning', 'CertificateOverdueForRefresh', 'PodCertificate refresh overdue');
      state.overdueEmitted = true;
    }
    if (now > state.notAfter && !state.expiredEmitted) {
      this.opts.events?.event({ pod }, 'Warning', 'CertificateExpired', 'PodCertificate expired');
      state.expiredEmitted = true;
    }
  }

  private request(namespace: string, name: string): PodCertificateRequest | undefined {
    return this.reflector!.list().find((r) => r.metadata?.namespace === namespace && r.metadata?.name === name);
  }

  /** kubelet's createPodCertificateRequest, after reading the service account's UID (the request names it). */
  private async createRequest(pod: V1Pod, source: PodCertificateSource, which: 'initial' | 'refresh'): Promise<{ privateKey: Buffer; pcr: PodCertificateRequest }> {
    const namespace = pod.metadata?.namespace ?? 'default';
    const serviceAccountName = pod.spec?.serviceAccountName ?? '';
    let serviceAccountUid: string;
    try {
      const sa = await this.opts.client.request<{ metadata?: { uid?: string } }>({
        method: 'GET',
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(serviceAccountName)}`,
        signal: this.controller.signal,
      });
      serviceAccountUid = sa.metadata?.uid ?? '';
    } catch (err) {
      throw new Error(`while fetching service account: ${(err as Error).message}`, { cause: err });
    }
    const nodeUid = this.opts.nodeUid();
    if (!nodeUid) throw new Error(`while getting node object from local cache: node ${q(this.opts.nodeName)} not found`);
    const { privateKeyPem, pkcs10Der } = await generateKeyAndProof(source.keyType);
    const body: PodCertificateRequest = {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'PodCertificateRequest',
      metadata: { namespace, generateName: 'req-', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid }] },
      spec: {
        signerName: source.signerName,
        podName: pod.metadata?.name ?? '',
        podUID: pod.metadata?.uid ?? '',
        serviceAccountName,
        serviceAccountUID: serviceAccountUid,
        nodeName: this.opts.nodeName,
        nodeUID: nodeUid,
        ...(source.maxExpirationSeconds !== undefined ? { maxExpirationSeconds: source.maxExpirationSeconds } : {}),
        stubPKCS10Request: pkcs10Der.toString('base64'),
        ...(source.userAnnotations ? { unverifiedUserAnnotations: source.userAnnotations } : {}),
      },
    };
    try {
      const pcr = await this.opts.client.request<PodCertificateRequest>({ method: 'POST', path: `${apiPath}/namespaces/${encodeURIComponent(namespace)}/podcertificaterequests`, body, signal: this.controller.signal });
      return { privateKey: privateKeyPem, pcr };
    } catch (err) {
      throw new Error(`while creating ${which} PodCertificateRequest: while creating on API: ${(err as Error).message}`, { cause: err });
    }
  }
}

/** The pod's podCertificate projections (kubelet's queueAllProjectionsForPod). */
function projectionKeys(pod: V1Pod): ProjectionKey[] {
  const keys: ProjectionKey[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    (v.projected?.sources ?? []).forEach((s, sourceIndex) => {
      if (s.podCertificate) {
        keys.push({ namespace: pod.metadata?.namespace ?? 'default', podName: pod.metadata?.name ?? '', podUid: pod.metadata?.uid ?? '', volumeName: v.name, sourceIndex });
      }
    });
  }
  return keys;
}

function podCertificateSource(pod: V1Pod, volumeName: string, sourceIndex: number): PodCertificateSource | undefined {
  return pod.spec?.volumes?.find((v) => v.name === volumeName)?.projected?.sources?.[sourceIndex]?.podCertificate;
}
