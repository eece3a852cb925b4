// Service account tokens: RS256 JWTs with kube-apiserver's claims, their verification, and the TokenRequest (serviceaccounts/token) endpoint's logic.
import { createHash, createPrivateKey, createPublicKey, randomUUID, sign, verify, type KeyObject } from 'node:crypto';
import { badRequest, conflict, invalid, notFound } from './api-errors.js';
import type { Pki } from './pki.js';
import type { ClusterView, FieldError } from './types.js';

/** kube-apiserver's WarnOnlyBoundTokenExpirationSeconds: the ServiceAccount admission plugin asks for this lifetime. */
export const WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS = 3607;
/** kube-apiserver's ExpirationExtensionSeconds (one year), used with --service-account-extend-token-expiration (default true). */
export const EXPIRATION_EXTENSION_SECONDS = 365 * 24 * 60 * 60;
/** TokenRequest defaulting (authentication/v1 SetDefaults_TokenRequestSpec). */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;
/** ValidateTokenRequest: "may not specify a duration less than 10 minutes". */
export const MIN_TOKEN_EXPIRATION_SECONDS = 600;
const MAX_TOKEN_EXPIRATION_SECONDS = 2 ** 32;
/** go-jose's DefaultLeeway, which kube's service account token validation uses for exp and nbf. */
const LEEWAY_SECONDS = 60;

export interface ObjectRef {
  name: string;
  uid: string;
}

/** The private claims under "kubernetes.io" (pkg/serviceaccount/claims.go). */
export interface KubernetesClaims {
  namespace: string;
  serviceaccount: ObjectRef;
  pod?: ObjectRef;
  node?: ObjectRef;
  secret?: ObjectRef;
  /** Seconds since the epoch after which an extended token counts as stale (only for extended tokens). */
  warnafter?: number;
}

export interface ServiceAccountTokenClaims {
  iss: string;
  sub: string;
  aud: string[];
  exp: number;
  iat: number;
  nbf: number;
  jti: string;
  'kubernetes.io': KubernetesClaims;
}

export interface IssueTokenRequest {
  namespace: string;
  serviceAccountName: string;
  serviceAccountUid: string;
  audiences: string[];
  /** The requested lifetime; status.expirationTimestamp is now + this. */
  expirationSeconds: number;
  boundPod?: ObjectRef;
  boundNode?: ObjectRef;
  boundSecret?: ObjectRef;
  /** When set, the JWT lives this long and carries warnafter = now + expirationSeconds (kube's extended bound tokens). */
  extendedExpirationSeconds?: number;
  now: Date;
  issuer: string;
}

/** Signs a service account token as kube-apiserver does (header alg RS256, kid = base64url(sha256(PKIX public key))). */
export function issueServiceAccountToken(pki: Pki, req: IssueTokenRequest): { token: string; expirationTimestamp: string } {
  const now = Math.floor(req.now.getTime() / 1000);
  const lifetime = req.extendedExpirationSeconds ?? req.expirationSeconds;
  const k8s: KubernetesClaims = {
    namespace: req.namespace,
    serviceaccount: { name: req.serviceAccountName, uid: req.serviceAccountUid },
  };
  if (req.boundPod) k8s.pod = { ...req.boundPod };
  if (req.boundNode) k8s.node = { ...req.boundNode };
  if (req.boundSecret) k8s.secret = { ...req.boundSecret };
  if (req.extendedExpirationSeconds !== undefined) k8s.warnafter = now + req.expirationSeconds;
  const claims: ServiceAccountTokenClaims = {
    iss: req.issuer,
    sub: serviceAccountUsername(req.namespace, req.serviceAccountName),
    aud: [...req.audiences],
    exp: now + lifetime,
    iat: now,
    nbf: now,
    jti: randomUUID(),
    'kubernetes.io': k8s,
  };
  const header = { alg: 'RS256', kid: keyId(createPublicKey(pki.saPublicKeyPem)) };
  const signingInput = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  const signature = sign('RSA-SHA256', Buffer.from(signingInput), createPrivateKey(pki.saSigningKeyPem));
  return {
    token: `${signingInput}.${signature.toString('base64url')}`,
    expirationTimestamp: rfc3339(new Date((now + req.expirationSeconds) * 1000)),
  };
}

/** Why a token was refused (the server answers 401 either way; the reason is for logs and tests). */
export type TokenVerification =
  | { ok: true; claims: ServiceAccountTokenClaims }
  | { ok: false; reason: string };

/**
 * Verifies a service account JWT: RS256 signature by the signing key, issuer, an audience in common with the API
 * audiences, exp/nbf with a minute of leeway; with a view, also that the service account and bound objects still
 * exist with the same UIDs (kube's "service account token has been invalidated").
 */
export function verifyServiceAccountToken(
  token: string,
  opts: { publicKey: KeyObject | string; issuer: string; apiAudiences: string[]; now: Date; view?: ClusterView },
): TokenVerification {
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'not a JWT' };
  const [h, p, s] = parts as [string, string, string];
  let header: { alg?: unknown };
  let claims: ServiceAccountTokenClaims;
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as { alg?: unknown };
    claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as ServiceAccountTokenClaims;
  } catch {
    return { ok: false, reason: 'malformed JWT' };
  }
  if (header.alg !== 'RS256') return { ok: false, reason: `unsupported alg ${String(header.alg)}` };
  const key = typeof opts.publicKey === 'string' ? createPublicKey(opts.publicKey) : opts.publicKey;
  if (!verify('RSA-SHA256', Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url'))) {
    return { ok: false, reason: 'invalid signature' };
  }
  if (claims.iss !== opts.issuer) return { ok: false, reason: 'issuer mismatch' };
  const aud = Array.isArray(claims.aud) ? claims.aud : typeof claims.aud === 'string' ? [claims.aud] : [];
  if (!aud.some((a) => opts.apiAudiences.includes(a))) return { ok: false, reason: 'token audiences is invalid for the target audiences' };
  const now = Math.floor(opts.now.getTime() / 1000);
  if (typeof claims.exp !== 'number' || now > claims.exp + LEEWAY_SECONDS) return { ok: false, reason: 'service account token has expired' };
  if (typeof claims.nbf === 'number' && now < claims.nbf - LEEWAY_SECONDS) return { ok: false, reason: 'service account token is not valid yet' };
  const k8s = claims['kubernetes.io'];
  if (!k8s || typeof k8s.namespace !== 'string' || !k8s.serviceaccount) return { ok: false, reason: 'missing kubernetes.io claims' };
  if (claims.sub !== serviceAccountUsername(k8s.namespace, k8s.serviceaccount.name)) return { ok: false, reason: 'sub does not match claims' };
  if (opts.view) {
    const stale = invalidatedBy(k8s, opts.view, opts.now);
    if (stale) return { ok: false, reason: stale };
  }
  return { ok: true, claims };
}

function invalidatedBy(k8s: KubernetesClaims, view: ClusterView, now: Date): string | undefined {
  const invalidated = 'service account token has been invalidated';
  const sa = view.get('serviceaccounts', k8s.namespace, k8s.serviceaccount.name);
  if (!sa) return invalidated;
  if (uidOf(sa) !== k8s.serviceaccount.uid) return `service account UID (${uidOf(sa)}) does not match claim (${k8s.serviceaccount.uid})`;
  if (k8s.pod) {
    const pod = view.get('pods', k8s.namespace, k8s.pod.name);
    if (!pod) return invalidated;
    // A pod being deleted keeps its tokens for a minute of leeway, as kube's validator allows.
    const deletion = stringAt(pod, 'metadata', 'deletionTimestamp');
    if (deletion && Date.parse(deletion) < now.getTime() - LEEWAY_SECONDS * 1000) return invalidated;
    if (uidOf(pod) !== k8s.pod.uid) return `pod UID (${uidOf(pod)}) does not match claim (${k8s.pod.uid})`;
  }
  if (k8s.secret) {
    const secret = view.get('secrets', k8s.namespace, k8s.secret.name);
    if (!secret) return invalidated;
    if (uidOf(secret) !== k8s.secret.uid) return `secret UID (${uidOf(secret)}) does not match claim (${k8s.secret.uid})`;
  }
  // A node binding is checked when the token is bound to the node alone; pod-bound tokens carry node info for audit.
  if (k8s.node && !k8s.pod) {
    const node = view.get('nodes', '', k8s.node.name);
    if (!node) return invalidated;
    if (uidOf(node) !== k8s.node.uid) return `node UID (${uidOf(node)}) does not match claim (${k8s.node.uid})`;
  }
  return undefined;
}

export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

// ---- TokenRequest (POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token) ----

/**
 * kube-apiserver's TokenREST.Create: checks body name/namespace, the service account, defaults and validates the spec,
 * resolves the bound object (Pod, Node or Secret; a Pod's node is added as kube does), extends 3607 s pod-bound tokens
 * for the API audiences, and returns the TokenRequest with status.token and status.expirationTimestamp (the server
 * answers it with 201). Failures throw ApiError with kube's code and message.
 */
export function createTokenRequest(
  pki: Pki,
  view: ClusterView,
  req: { namespace: string; serviceAccountName: string; body: Record<string, unknown>; now: Date; issuer: string; apiAudiences: string[] },
): Record<string, unknown> {
  const name = req.serviceAccountName;
  const meta = asRecord(req.body['metadata']);
  const bodyName = typeof meta['name'] === 'string' ? meta['name'] : '';
  const bodyNamespace = typeof meta['namespace'] === 'string' ? meta['namespace'] : '';
  if (bodyName !== '' && bodyName !== name) {
    throw invalid(AUTHN_GROUP, 'TokenRequest', name, [{ type: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: "${bodyName}": must match the service account name if specified` }]);
  }
  if (bodyNamespace !== '' && bodyNamespace !== req.namespace) {
    throw invalid(AUTHN_GROUP, 'TokenRequest', name, [{ type: 'FieldValueInvalid', field: 'metadata.namespace', message: `Invalid value: "${bodyNamespace}": must match the service account namespace if specified` }]);
  }
  const sa = view.get('serviceaccounts', req.namespace, name);
  if (!sa) throw notFound({ group: '', resource: 'serviceaccounts' }, name);

  const specIn = asRecord(req.body['spec']);
  const audiences = Array.isArray(specIn['audiences']) && specIn['audiences'].length > 0
    ? specIn['audiences'].filter((a): a is string => typeof a === 'string')
    : [...req.apiAudiences];
  const expirationSeconds = typeof specIn['expirationSeconds'] === 'number' ? specIn['expirationSeconds'] : DEFAULT_TOKEN_EXPIRATION_SECONDS;
  const errs: FieldError[] = [];
  if (expirationSeconds < MIN_TOKEN_EXPIRATION_SECONDS) {
    errs.push({ type: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes` });
  }
  if (expirationSeconds > MAX_TOKEN_EXPIRATION_SECONDS) {
    errs.push({ type: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${expirationSeconds}: may not specify a duration larger than 2^32 seconds` });
  }
  // kube validates the TokenRequest after naming it only in the Invalid error's details: the message says "".
  if (errs.length > 0) throw invalid(AUTHN_GROUP, 'TokenRequest', '', errs);

  let boundPod: ObjectRef | undefined;
  let boundNode: ObjectRef | undefined;
  let boundSecret: ObjectRef | undefined;
  const ref = specIn['boundObjectRef'] === undefined || specIn['boundObjectRef'] === null ? undefined : asRecord(specIn['boundObjectRef']);
  if (ref) {
    const apiVersion = typeof ref['apiVersion'] === 'string' ? ref['apiVersion'] : '';
    const kind = typeof ref['kind'] === 'string' ? ref['kind'] : '';
    const refName = typeof ref['name'] === 'string' ? ref['name'] : '';
    const refUid = typeof ref['uid'] === 'string' ? ref['uid'] : '';
    const slash = apiVersion.indexOf('/');
    const group = slash >= 0 ? apiVersion.slice(0, slash) : '';
    const version = slash >= 0 ? apiVersion.slice(slash + 1) : apiVersion;
    let uid: string;
    if (group === '' && kind === 'Pod') {
      const pod = view.get('pods', req.namespace, refName);
      if (!pod) throw notFound({ group: '', resource: 'pods' }, refName);
      if (stringAt(pod, 'spec', 'serviceAccountName') !== name) {
        throw badRequest(`cannot bind token for serviceaccount "${name}" to pod running with different serviceaccount name.`);
      }
      uid = uidOf(pod);
      boundPod = { name: refName, uid };
      const nodeName = stringAt(pod, 'spec', 'nodeName');
      if (nodeName) {
        // A missing Node still yields its name in the claims, as kube does.
        const node = view.get('nodes', '', nodeName);
        boundNode = { name: nodeName, uid: node ? uidOf(node) : '' };
      }
    } else if (group === '' && kind === 'Node') {
      const node = view.get('nodes', '', refName);
      if (!node) throw notFound({ group: '', resource: 'nodes' }, refName);
      uid = uidOf(node);
      boundNode = { name: refName, uid };
    } else if (group === '' && kind === 'Secret') {
      const secret = view.get('secrets', req.namespace, refName);
      if (!secret) throw notFound({ group: '', resource: 'secrets' }, refName);
      uid = uidOf(secret);
      boundSecret = { name: refName, uid };
    } else {
      throw badRequest(`cannot bind token to object of type ${group}/${version}, Kind=${kind}`);
    }
    if (refUid !== '' && refUid !== uid) {
      throw conflict({ group, resource: kind }, refName,
        `the UID in the bound object reference (${refUid}) does not match the UID in record. The object might have been deleted and then recreated`);
    }
  }

  const extend = boundPod !== undefined && expirationSeconds === WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS &&
    audiences.every((a) => req.apiAudiences.includes(a));
  const issued = issueServiceAccountToken(pki, {
    namespace: req.namespace,
    serviceAccountName: name,
    serviceAccountUid: uidOf(sa),
    audiences,
    expirationSeconds,
    ...(boundPod ? { boundPod } : {}),
    ...(boundNode ? { boundNode } : {}),
    ...(boundSecret ? { boundSecret } : {}),
    ...(extend ? { extendedExpirationSeconds: EXPIRATION_EXTENSION_SECONDS } : {}),
    now: req.now,
    issuer: req.issuer,
  });
  const spec: Record<string, unknown> = { audiences, expirationSeconds };
  if (ref) spec['boundObjectRef'] = ref;
  return {
    kind: 'TokenRequest',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { name, namespace: req.namespace, creationTimestamp: rfc3339(req.now) },
    spec,
    status: { token: issued.token, expirationTimestamp: issued.expirationTimestamp },
  };
}

const AUTHN_GROUP = 'authentication.k8s.io';

function keyId(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('base64url');
}

function b64url(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64url');
}

/** metav1.Time's JSON form: RFC 3339 with seconds precision. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function asRecord(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function stringAt(obj: Record<string, unknown>, ...path: string[]): string {
  let cur: unknown = obj;
  for (const key of path) cur = asRecord(cur)[key];
  return typeof cur === 'string' ? cur : '';
}

function uidOf(obj: Record<string, unknown>): string {
  return stringAt(obj, 'metadata', 'uid');
}
