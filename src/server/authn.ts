// Who a kubelet API request comes from: x509 client certificates against the client CA, bearer tokens through the API
// server's TokenReview (answers cached), anonymous only when enabled; kubelet's union of authenticators.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Clock } from '../core/clock.js';
import { TtlCache } from './ttl-cache.js';

/** kube's user.Info. */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export const anonymousUser: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };

/** What the authenticator makes of a request: a user, or no one (401) with the reason for the log. */
export type AuthnResult = { user: UserInfo } | { user?: undefined; reason: string };

/** The API server's TokenReview (authentication.k8s.io/v1): the request's user, or undefined for a token it refuses. */
export type TokenReviewer = (token: string) => Promise<UserInfo | undefined>;

export interface AuthenticatorOptions {
  /** Verify client certificates (the TLS server asks for them against the client CA). */
  x509: boolean;
  /** Bearer tokens through TokenReview; undefined: tokens are not accepted. */
  tokenReview?: TokenReviewer;
  /** authentication.webhook.cacheTTL. */
  tokenCacheTtlMs: number;
  /** authentication.anonymous.enabled. */
  anonymous: boolean;
  clock: Pick<Clock, 'now'>;
}

/** The user of a verified client certificate: CN the name, each O a group (kube's x509 CommonNameUserConversion). */
export function certificateUser(subject: { CN?: string | string[]; O?: string | string[] } | undefined): UserInfo | undefined {
  const cn = Array.isArray(subject?.CN) ? subject.CN[0] : subject?.CN;
  if (!cn) return undefined;
  const o = subject?.O === undefined ? [] : Array.isArray(subject.O) ? subject.O : [subject.O];
  return { name: cn, groups: [...o] };
}

/** kube's AuthenticatedGroupAdder: every authenticated user is in system:authenticated. */
function withAuthenticatedGroup(user: UserInfo): UserInfo {
  return user.groups.includes('system:authenticated') ? user : { ...user, groups: [...user.groups, 'system:authenticated'] };
}

export class Authenticator {
  private readonly tokens: TtlCache<UserInfo | null>;

  constructor(private readonly opts: AuthenticatorOptions) {
    this.tokens = new TtlCache(opts.clock);
  }

  /**
   * kubelet's order: a client certificate, then a bearer token; a presented credential that fails is a 401 even with
   * anonymous requests enabled (kube's FailOnError union); a request without credentials is anonymous when enabled.
   */
  async authenticate(req: IncomingMessage): Promise<AuthnResult> {
    const reasons: string[] = [];
    if (this.opts.x509) {
      const socket = req.socket as TLSSocket;
      const peer = typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate() : undefined;
      if (peer && Object.keys(peer).length > 0) {
        if (!socket.authorized) {
          reasons.push(`client certificate not verified: ${String(socket.authorizationError)}`);
        } else {
          const user = certificateUser(peer.subject as { CN?: string; O?: string | string[] });
          if (user) return { user: withAuthenticatedGroup(user) };
          reasons.push('client certificate has no common name');
        }
      }
    }
    const header = req.headers.authorization;
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (match && this.opts.tokenReview) {
      try {
        const user = await this.reviewToken(match[1]!);
        if (user) return { user: withAuthenticatedGroup(user) };
        reasons.push('token rejected by TokenReview');
      } catch (err) {
        reasons.push(`TokenReview failed: ${(err as Error).message}`);
      }
    } else if (match) {
      reasons.push('bearer tokens are not accepted (no token webhook)');
    }
    if (reasons.length > 0) return { reason: reasons.join('; ') };
    if (this.opts.anonymous) return { user: anonymousUser };
    return { reason: 'no credentials' };
  }

  /** Both answers are cached for cacheTTL, as kubelet's token cache does; failures to ask are not. */
  private async reviewToken(token: string): Promise<UserInfo | undefined> {
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.tokens.get(key);
    if (cached !== undefined) return cached ?? undefined;
    const user = await this.opts.tokenReview!(token);
    this.tokens.set(key, user ?? null, this.opts.tokenCacheTtlMs);
    return user;
  }
}

/** The minimal API client the webhooks need (kubeapi's KubeClient). */
export interface ApiRequester {
  request<T>(req: { method: 'POST'; path: string; body: unknown; timeoutMs?: number }): Promise<T>;
}

interface TokenReviewStatus {
  status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }; error?: string };
}

/** TokenReview (authentication.k8s.io/v1) on the API server. */
export function tokenReviewWebhook(client: ApiRequester): TokenReviewer {
  return async (token) => {
    const review = await client.request<TokenReviewStatus>({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      timeoutMs: 10_000,
    });
    const status = review.status;
    if (!status?.authenticated || !status.user?.username) return undefined;
    const user: UserInfo = { name: status.user.username, groups: status.user.groups ?? [] };
    if (status.user.uid) user.uid = status.user.uid;
    if (status.user.extra) user.extra = status.user.extra;
    return user;
  };
}
