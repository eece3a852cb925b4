// Service account tokens: kube's JWT claims, verification (signature, issuer, audience, expiry, bound objects) and the TokenRequest endpoint.
import { createHash, createPublicKey } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from '../api-errors.js';
import { TokenAuthenticator } from '../authn.js';
import { ensurePki, type Pki } from '../pki.js';
import { createTokenRequest, issueServiceAccountToken, verifyServiceAccountToken, type ServiceAccountTokenClaims } from '../tokens.js';
import { FakeView } from './auth-fake-view.js';

const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const now = new Date('2026-11-22T10:00:00Z');
const nowS = now.getTime() / 1000;

let dir: string;
let pki: Pki;
let otherPki: Pki;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-auth-tokens-'));
  [pki, otherPki] = await Promise.all([ensurePki(join(dir, 'a'), { hosts: ['127.0.0.1'] }), ensurePki(join(dir, 'b'), { hosts: ['127.0.0.1'] })]);
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

function decode(token: string): { header: Record<string, unknown>; claims: ServiceAccountTokenClaims } {
  const [h, p] = token.split('.') as [string, string];
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString()) as Record<string, unknown>,
    claims: JSON.parse(Buffer.from(p, 'base64url').toString()) as ServiceAccountTokenClaims,
  };
}

function view(): FakeView {
  return new FakeView()
    .add('serviceaccounts', { metadata: { name: 'default', namespace: 'ns1', uid: 'sa-uid' } })
    .add('serviceaccounts', { metadata: { name: 'other', namespace: 'ns1', uid: 'sa2-uid' } })
    .add('nodes', { metadata: { name: 'n1', uid: 'node-uid' } })
    .add('pods', { metadata: { name: 'web', namespace: 'ns1', uid: 'pod-uid' }, spec: { nodeName: 'n1', serviceAccountName: 'default' } })
    .add('secrets', { metadata: { name: 's1', namespace: 'ns1', uid: 'secret-uid' } });
}

const podBound = {
  namespace: 'ns1', serviceAccountName: 'default', serviceAccountUid: 'sa-uid', audiences: [ISSUER], expirationSeconds: 3600,
  boundPod: { name: 'web', uid: 'pod-uid' }, boundNode: { name: 'n1', uid: 'node-uid' }, now, issuer: ISSUER,
};

describe('issueServiceAccountToken', () => {
  test('an RS256 JWT with kube claims and kid = sha256 of the public key', () => {
    const { token, expirationTimestamp } = issueServiceAccountToken(pki, podBound);
    const { header, claims } = decode(token);
    const kid = createHash('sha256').update(createPublicKey(pki.saPublicKeyPem).export({ type: 'spki', format: 'der' })).digest('base64url');
    expect(header).toEqual({ alg: 'RS256', kid });
    expect(claims).toEqual({
      iss: ISSUER,
      sub: 'system:serviceaccount:ns1:default',
      aud: [ISSUER],
      exp: nowS + 3600,
      iat: nowS,
      nbf: nowS,
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
      'kubernetes.io': {
        namespace: 'ns1',
        serviceaccount: { name: 'default', uid: 'sa-uid' },
        pod: { name: 'web', uid: 'pod-uid' },
        node: { name: 'n1', uid: 'node-uid' },
      },
    });
    expect(expirationTimestamp).toBe('2026-11-22T11:00:00Z');
  });

  test('an extended token lives a year and warns after the requested time; the status keeps the requested expiry', () => {
    const { token, expirationTimestamp } = issueServiceAccountToken(pki, { ...podBound, expirationSeconds: 3607, extendedExpirationSeconds: 365 * 86400 });
    const { claims } = decode(token);
    expect(claims.exp).toBe(nowS + 365 * 86400);
    expect(claims['kubernetes.io'].warnafter).toBe(nowS + 3607);
    expect(expirationTimestamp).toBe('2026-11-22T11:00:07Z');
  });
});

describe('verifyServiceAccountToken', () => {
  const opts = (extra: Partial<Parameters<typeof verifyServiceAccountToken>[1]> = {}) => ({
    publicKey: pki.saPublicKeyPem, issuer: ISSUER, apiAudiences: [ISSUER], now, ...extra,
  });

  test('accepts its own tokens and rejects another key, issuer or audience', () => {
    const { token } = issueServiceAccountToken(pki, podBound);
    expect(verifyServiceAccountToken(token, opts())).toMatchObject({ ok: true });
    expect(verifyServiceAccountToken(token, opts({ publicKey: otherPki.saPublicKeyPem }))).toEqual({ ok: false, reason: 'invalid signature' });
    expect(verifyServiceAccountToken(token, opts({ issuer: 'https://elsewhere' }))).toEqual({ ok: false, reason: 'issuer mismatch' });
    expect(verifyServiceAccountToken(token, opts({ apiAudiences: ['vault'] }))).toMatchObject({ ok: false });
    const vault = issueServiceAccountToken(pki, { ...podBound, audiences: ['vault'] }).token;
    expect(verifyServiceAccountToken(vault, opts())).toEqual({ ok: false, reason: 'token audiences is invalid for the target audiences' });
  });

  test('a tampered payload fails the signature', () => {
    const { token } = issueServiceAccountToken(pki, podBound);
    const [h, p, s] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as ServiceAccountTokenClaims;
    claims.sub = 'system:serviceaccount:kube-system:admin';
    const forged = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
    expect(verifyServiceAccountToken(forged, opts())).toEqual({ ok: false, reason: 'invalid signature' });
    expect(verifyServiceAccountToken('abc', opts())).toEqual({ ok: false, reason: 'not a JWT' });
  });

  test('expiry and not-before with a minute of leeway', () => {
    const { token } = issueServiceAccountToken(pki, { ...podBound, expirationSeconds: 600 });
    const at = (s: number) => verifyServiceAccountToken(token, opts({ now: new Date((nowS + s) * 1000) }));
    expect(at(600 + 60)).toMatchObject({ ok: true });
    expect(at(600 + 61)).toEqual({ ok: false, reason: 'service account token has expired' });
    expect(at(-60)).toMatchObject({ ok: true });
    expect(at(-61)).toEqual({ ok: false, reason: 'service account token is not valid yet' });
  });

  test('with a view, a deleted or recreated pod or service account invalidates the token', () => {
    const { token } = issueServiceAccountToken(pki, podBound);
    expect(verifyServiceAccountToken(token, opts({ view: view() }))).toMatchObject({ ok: true });
    const podGone = view();
    podGone.add('pods', { metadata: { name: 'web', namespace: 'ns1', uid: 'new-uid' }, spec: {} });
    expect(verifyServiceAccountToken(token, opts({ view: podGone }))).toEqual({ ok: false, reason: 'pod UID (new-uid) does not match claim (pod-uid)' });
    const saGone = new FakeView().add('pods', { metadata: { name: 'web', namespace: 'ns1', uid: 'pod-uid' } });
    expect(verifyServiceAccountToken(token, opts({ view: saGone }))).toEqual({ ok: false, reason: 'service account token has been invalidated' });
    const deleting = (ago: number) => view().add('pods', {
      metadata: { name: 'web', namespace: 'ns1', uid: 'pod-uid', deletionTimestamp: new Date(now.getTime() - ago * 1000).toISOString() },
    });
    expect(verifyServiceAccountToken(token, opts({ view: deleting(30) }))).toMatchObject({ ok: true });
    expect(verifyServiceAccountToken(token, opts({ view: deleting(61) }))).toEqual({ ok: false, reason: 'service account token has been invalidated' });
  });
});

describe('TokenAuthenticator', () => {
  test('static tokens and service account tokens give kube user info', () => {
    const tokens = new TokenAuthenticator({ saPublicKeyPem: pki.saPublicKeyPem, issuer: ISSUER, view: view(), now: () => now });
    tokens.addStaticToken('t0', { username: 'admin', uid: 'admin-uid', groups: ['system:masters'] });
    expect(tokens.authenticateToken('t0')).toEqual({ username: 'admin', uid: 'admin-uid', groups: ['system:masters'] });
    expect(tokens.authenticateToken('t1')).toBeUndefined();
    const { token } = issueServiceAccountToken(pki, podBound);
    const jti = decode(token).claims.jti;
    expect(tokens.authenticateToken(token)).toEqual({
      username: 'system:serviceaccount:ns1:default',
      uid: 'sa-uid',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:ns1'],
      extra: {
        'authentication.kubernetes.io/pod-name': ['web'],
        'authentication.kubernetes.io/pod-uid': ['pod-uid'],
        'authentication.kubernetes.io/node-name': ['n1'],
        'authentication.kubernetes.io/node-uid': ['node-uid'],
        'authentication.kubernetes.io/credential-id': [`JTI=${jti}`],
      },
    });
    expect(tokens.audiences).toEqual([ISSUER]);
  });
});

describe('createTokenRequest', () => {
  const call = (name: string, body: Record<string, unknown>, v = view()) =>
    createTokenRequest(pki, v, { namespace: 'ns1', serviceAccountName: name, body, now, issuer: ISSUER, apiAudiences: [ISSUER] });
  const failure = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      return (err as ApiError).status;
    }
    throw new Error('expected an ApiError');
  };

  test('defaults: API audiences, 3600 s, unbound token; TokenRequest shape', () => {
    const out = call('default', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
    expect(out).toMatchObject({
      kind: 'TokenRequest',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { name: 'default', namespace: 'ns1', creationTimestamp: '2026-11-22T10:00:00Z' },
      spec: { audiences: [ISSUER], expirationSeconds: 3600 },
      status: { expirationTimestamp: '2026-11-22T11:00:00Z' },
    });
    const { claims } = decode((out['status'] as { token: string }).token);
    expect(claims['kubernetes.io']).toEqual({ namespace: 'ns1', serviceaccount: { name: 'default', uid: 'sa-uid' } });
  });

  test('a pod-bound request as kubelet makes it: node info added, 3607 s extended to a year', () => {
    const out = call('default', { spec: { audiences: [ISSUER], expirationSeconds: 3607, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'pod-uid' } } });
    const status = out['status'] as { token: string; expirationTimestamp: string };
    expect(status.expirationTimestamp).toBe('2026-11-22T11:00:07Z');
    const { claims } = decode(status.token);
    expect(claims.exp).toBe(nowS + 365 * 86400);
    expect(claims['kubernetes.io']).toMatchObject({ pod: { name: 'web', uid: 'pod-uid' }, node: { name: 'n1', uid: 'node-uid' }, warnafter: nowS + 3607 });
    // Another audience is not extended.
    const vault = call('default', { spec: { audiences: ['vault'], expirationSeconds: 3607, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web' } } });
    expect(decode((vault['status'] as { token: string }).token).claims.exp).toBe(nowS + 3607);
  });

  test('less than 10 minutes is invalid, as kubectl create token --duration=1m shows', () => {
    expect(failure(() => call('default', { spec: { expirationSeconds: 60 } }))).toMatchObject({
      code: 422,
      reason: 'Invalid',
      message: 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes',
      details: { group: 'authentication.k8s.io', kind: 'TokenRequest', causes: [{ reason: 'FieldValueInvalid', field: 'spec.expirationSeconds' }] },
    });
    expect(call('default', { spec: { expirationSeconds: 600 } })).toMatchObject({ spec: { expirationSeconds: 600 } });
  });

  test('kube errors for missing objects, mismatches and unsupported bindings', () => {
    expect(failure(() => call('ghost', {}))).toMatchObject({ code: 404, message: 'serviceaccounts "ghost" not found' });
    expect(failure(() => call('default', { metadata: { name: 'x' } }))).toMatchObject({
      code: 422, message: 'TokenRequest.authentication.k8s.io "default" is invalid: metadata.name: Invalid value: "x": must match the service account name if specified',
    });
    expect(failure(() => call('default', { spec: { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'gone' } } }))).toMatchObject({
      code: 404, message: 'pods "gone" not found',
    });
    expect(failure(() => call('other', { spec: { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web' } } }))).toMatchObject({
      code: 400, reason: 'BadRequest', message: 'cannot bind token for serviceaccount "other" to pod running with different serviceaccount name.',
    });
    expect(failure(() => call('default', { spec: { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'stale' } } }))).toMatchObject({
      code: 409,
      reason: 'Conflict',
      message: 'Operation cannot be fulfilled on Pod "web": the UID in the bound object reference (stale) does not match the UID in record. The object might have been deleted and then recreated',
    });
    expect(failure(() => call('default', { spec: { boundObjectRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c' } } }))).toMatchObject({
      code: 400, message: 'cannot bind token to object of type /v1, Kind=ConfigMap',
    });
    const secretBound = call('default', { spec: { boundObjectRef: { apiVersion: 'v1', kind: 'Secret', name: 's1' } } });
    expect(decode((secretBound['status'] as { token: string }).token).claims['kubernetes.io'].secret).toEqual({ name: 's1', uid: 'secret-uid' });
  });
});
