// Authentication of test API server requests: verified client certificates, static bearer tokens, service account JWTs.
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { serviceAccountUsername, verifyServiceAccountToken, type ServiceAccountTokenClaims, type TokenVerification } from './tokens.js';
import type { ClusterView, UserInfo } from './types.js';

export const ALL_AUTHENTICATED = 'system:authenticated';
const CLIENT_AUTH_EKU = '1.3.6.1.5.5.7.3.2';
const ANY_EKU = '2.5.29.37.0';

/** Extra keys kube-apiserver puts on service account users (k8s.io/apiserver/pkg/authentication/serviceaccount). */
export const SA_EXTRA = {
  podName: 'authentication.kubernetes.io/pod-name',
  podUid: 'authentication.kubernetes.io/pod-uid',
  nodeName: 'authentication.kubernetes.io/node-name',
  nodeUid: 'authentication.kubernetes.io/node-uid',
  credentialId: 'authentication.kubernetes.io/credential-id',
} as const;

/**
 * Bearer token authentication: static tokens (as --token-auth-file) and service account JWTs signed by the server's
 * key (as --service-account-key-file with --service-account-issuer and --api-audiences, default the issuer).
 */
export class TokenAuthenticator {
  private readonly staticTokens = new Map<string, UserInfo>();
  private readonly publicKey: KeyObject;
  private readonly issuer: string;
  private readonly apiAudiences: string[];
  private readonly view: ClusterView | undefined;
  private readonly now: () => Date;

  /** With a view, tokens bound to a pod (or secret, node) stop working when it is deleted or recreated, as in kube. */
  constructor(opts: { saPublicKeyPem: string; issuer: string; apiAudiences?: string[]; view?: ClusterView; now?: () => Date }) {
    this.publicKey = createPublicKey(opts.saPublicKeyPem);
    this.issuer = opts.issuer;
    this.apiAudiences = opts.apiAudiences ?? [opts.issuer];
    this.view = opts.view;
    this.now = opts.now ?? (() => new Date());
  }

  /** The audiences tokens must carry one of; TokenRequests without audiences get these. */
  get audiences(): string[] {
    return [...this.apiAudiences];
  }

  addStaticToken(token: string, user: UserInfo): void {
    this.staticTokens.set(token, { ...user, groups: [...user.groups] });
  }

  /** The user a bearer token stands for, without the system:authenticated group (authenticate() adds it). */
  authenticateToken(token: string): UserInfo | undefined {
    const user = this.staticTokens.get(token);
    if (user) return { ...user, groups: [...user.groups] };
    const result = this.verify(token);
    return result.ok ? serviceAccountUser(result.claims) : undefined;
  }

  /** Verification with its reason, for tests and logs. */
  verify(token: string): TokenVerification {
    return verifyServiceAccountToken(token, {
      publicKey: this.publicKey,
      issuer: this.issuer,
      apiAudiences: this.apiAudiences,
      now: this.now(),
      ...(this.view ? { view: this.view } : {}),
    });
  }
}

/**
 * Who made the request: a client certificate the TLS layer verified against the CA (CN = user, O = groups) wins,
 * else `Authorization: Bearer <token>`; undefined means 401. Authenticated users get system:authenticated, as kube adds.
 */
export function authenticate(req: IncomingMessage, tokens: TokenAuthenticator): UserInfo | undefined {
  const user = certificateUser(req.socket as TLSSocket) ?? bearerUser(req, tokens);
  if (!user) return undefined;
  return user.groups.includes(ALL_AUTHENTICATED) ? user : { ...user, groups: [...user.groups, ALL_AUTHENTICATED] };
}

function certificateUser(socket: TLSSocket): UserInfo | undefined {
  // Plain sockets (tests over HTTP) have no certificate API; unverified certificates fall through to the token.
  if (typeof socket.getPeerX509Certificate !== 'function' || !socket.authorized) return undefined;
  const cert = socket.getPeerX509Certificate();
  if (!cert) return undefined;
  // kube's x509 authenticator verifies with ExtKeyUsageClientAuth; a certificate without EKUs may be used for anything.
  const ekus = cert.keyUsage;
  if (ekus && ekus.length > 0 && !ekus.includes(CLIENT_AUTH_EKU) && !ekus.includes(ANY_EKU)) return undefined;
  const subject = socket.getPeerCertificate().subject as Record<string, string | string[] | undefined> | undefined;
  const cn = subject?.['CN'];
  const username = Array.isArray(cn) ? cn[0] : cn;
  if (!username) return undefined;
  const o = subject?.['O'];
  const groups = o === undefined ? [] : Array.isArray(o) ? [...o] : [o];
  return { username, groups };
}

function bearerUser(req: IncomingMessage, tokens: TokenAuthenticator): UserInfo | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const parts = header.trim().split(' ');
  if (parts.length < 2 || parts[0]?.toLowerCase() !== 'bearer') return undefined;
  const token = parts[1];
  if (!token) return undefined;
  return tokens.authenticateToken(token);
}

/** The user info kube derives from a service account token's claims. */
function serviceAccountUser(claims: ServiceAccountTokenClaims): UserInfo {
  const k8s = claims['kubernetes.io'];
  const extra: Record<string, string[]> = {};
  if (k8s.pod) {
    extra[SA_EXTRA.podName] = [k8s.pod.name];
    extra[SA_EXTRA.podUid] = [k8s.pod.uid];
  }
  if (k8s.node) {
    extra[SA_EXTRA.nodeName] = [k8s.node.name];
    if (k8s.node.uid) extra[SA_EXTRA.nodeUid] = [k8s.node.uid];
  }
  if (claims.jti) extra[SA_EXTRA.credentialId] = [`JTI=${claims.jti}`];
  return {
    username: serviceAccountUsername(k8s.namespace, k8s.serviceaccount.name),
    uid: k8s.serviceaccount.uid,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${k8s.namespace}`],
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
  };
}
