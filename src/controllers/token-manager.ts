// kubelet's service account token manager: TokenRequest per (pod, service account, audiences, expiry), cached and refreshed before it expires.
import type { AuthenticationV1TokenRequest } from '@kubernetes/client-node';
import type { Logger } from '../core/log.js';
import type { KubeClient } from '../kubeapi/client.js';
import type { ServiceAccountToken } from '../core/api-objects.js';
import { systemClock } from '../core/clock.js';

/** The part of KubeClient the manager uses (a fake in unit tests). */
export type TokenRequestClient = Pick<KubeClient, 'request'>;

/** kubelet refreshes a token at the latest 24 h after it was issued ... */
const maxTtlMs = 24 * 3600 * 1000;
/** ... minus a random jitter of up to 10 s, so tokens issued together are not refreshed together. */
const maxJitterSeconds = 10;

export interface TokenSpec {
  namespace: string;
  serviceAccountName: string;
  audiences: string[];
  expirationSeconds: number;
  /** The pod the token is bound to: it stops being valid when the pod goes. */
  pod: { name: string; uid: string };
}

interface CachedToken {
  podUid: string;
  token: string;
  expiration: number;
  /** The validity the API server granted (spec.expirationSeconds of its answer). */
  expirationSeconds: number;
}

export interface TokenManagerOptions {
  client: TokenRequestClient;
  log: Logger;
  now?: () => number;
  /** [0, 1), for the refresh jitter. */
  random?: () => number;
}

/** kubelet's cache key: everything the request depends on, nothing secret. */
function cacheKey(s: TokenSpec): string {
  return `${s.pod.uid}/${JSON.stringify([s.serviceAccountName, s.namespace, s.audiences, s.expirationSeconds, s.pod.name])}`;
}

/**
 * Tokens for projected serviceAccountToken volumes. A cached token is used until it needs a refresh (older than
 * 80% of its validity or than 24 h, jittered, or issued in the future after a clock jump); a refresh that fails
 * keeps the old token while it is still valid. Tokens of a pod are forgotten with the pod, expired ones on the next use.
 */
export class ServiceAccountTokenManager {
  private readonly cache = new Map<string, CachedToken>();
  private readonly inFlight = new Map<string, Promise<ServiceAccountToken>>();
  /** In-flight requests of pods deleted meanwhile: their answers are not cached. */
  private readonly discarded = new Set<string>();
  private readonly now: () => number;
  private readonly random: () => number;

  constructor(private readonly opts: TokenManagerOptions) {
    this.now = opts.now ?? systemClock.now;
    this.random = opts.random ?? Math.random;
  }

  /** kubelet's requiresRefresh. */
  requiresRefresh(t: Pick<CachedToken, 'expiration' | 'expirationSeconds'>): boolean {
    const now = this.now();
    const issuedAt = t.expiration - t.expirationSeconds * 1000;
    const jitterMs = Math.floor(this.random() * maxJitterSeconds) * 1000;
    if (now > issuedAt + maxTtlMs - jitterMs) return true;
    // Within 20% of the validity (plus the jitter) of the expiry.
    if (now > t.expiration - Math.floor((t.expirationSeconds * 20) / 100) * 1000 - jitterMs) return true;
    return now < issuedAt;
  }

  /**
   * The token, from the cache or one TokenRequest shared by every caller asking meanwhile; that request carries the
   * client's deadline, not a caller's signal, so one caller's cancelled sync cannot fail the others.
   */
  getToken(spec: TokenSpec): Promise<ServiceAccountToken> {
    this.dropExpired();
    const k = cacheKey(spec);
    const cached = this.cache.get(k);
    if (cached && !this.requiresRefresh(cached)) return Promise.resolve({ token: cached.token, expirationTimestamp: new Date(cached.expiration) });
    let pending = this.inFlight.get(k);
    if (!pending) {
      pending = this.fetch(k, spec, cached).finally(() => {
        this.inFlight.delete(k);
        this.discarded.delete(k);
      });
      this.inFlight.set(k, pending);
    }
    return pending;
  }

  /** The pod is gone: its tokens are dropped (kubelet's DeleteServiceAccountToken). */
  deletePodTokens(podUid: string): void {
    for (const [k, t] of this.cache) if (t.podUid === podUid) this.cache.delete(k);
    // A request under way for the pod must not cache its answer for a pod that is gone.
    for (const k of this.inFlight.keys()) if (k.startsWith(`${podUid}/`)) this.discarded.add(k);
  }

  /** Number of cached tokens (for tests). */
  get size(): number {
    return this.cache.size;
  }

  private dropExpired(): void {
    const now = this.now();
    for (const [k, t] of this.cache) if (now > t.expiration) this.cache.delete(k);
  }

  private async fetch(k: string, spec: TokenSpec, cached: CachedToken | undefined): Promise<ServiceAccountToken> {
    const path = `/api/v1/namespaces/${encodeURIComponent(spec.namespace)}/serviceaccounts/${encodeURIComponent(spec.serviceAccountName)}/token`;
    const body: AuthenticationV1TokenRequest = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: spec.audiences,
        expirationSeconds: spec.expirationSeconds,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: spec.pod.name, uid: spec.pod.uid },
      },
    };
    let answer: AuthenticationV1TokenRequest;
    try {
      answer = await this.opts.client.request<AuthenticationV1TokenRequest>({ method: 'POST', path, body });
      if (!answer?.status?.token || !answer.status.expirationTimestamp) throw new Error(`TokenRequest for ${spec.namespace}/${spec.serviceAccountName} answered without a token`);
    } catch (err) {
      const message = (err as Error).message;
      if (!cached) throw new Error(`failed to fetch token: ${message}`, { cause: err });
      if (this.now() > cached.expiration) throw new Error(`token ${k} expired and refresh failed: ${message}`, { cause: err });
      this.opts.log.warn({ err, serviceAccount: `${spec.namespace}/${spec.serviceAccountName}`, podUid: spec.pod.uid }, "Couldn't update token; using the cached one");
      return { token: cached.token, expirationTimestamp: new Date(cached.expiration) };
    }
    const token: CachedToken = {
      podUid: spec.pod.uid,
      token: answer.status.token,
      expiration: new Date(answer.status.expirationTimestamp).getTime(),
      expirationSeconds: answer.spec?.expirationSeconds ?? spec.expirationSeconds,
    };
    if (!this.discarded.has(k)) this.cache.set(k, token);
    return { token: token.token, expirationTimestamp: new Date(token.expiration) };
  }
}
