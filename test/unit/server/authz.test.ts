// kubelet's request attributes (a table, as upstream's), the 403 text, SubjectAccessReview and its caches on the clock.
import { Authenticator, certificateUser, type UserInfo } from '../../../src/server/authn.js';
import { forbiddenMessage, isSubpath, requestAttributes, subjectAccessReviewSpec, WebhookAuthorizer } from '../../../src/server/authz.js';
import { FakeClock } from '../core/fake-clock.js';
import type { IncomingMessage } from 'node:http';

const user: UserInfo = { name: 'alice', groups: ['devs', 'system:authenticated'] };

describe('requestAttributes', () => {
  test.each([
    ['GET', '/stats/summary', 'get', ['stats']],
    ['GET', '/stats', 'get', ['stats']],
    ['GET', '/metrics', 'get', ['metrics']],
    ['GET', '/metrics/cadvisor', 'get', ['metrics']],
    ['GET', '/logs/', 'get', ['log']],
    ['GET', '/logs/syslog', 'get', ['log']],
    ['POST', '/checkpoint/ns/pod/c', 'create', ['checkpoint']],
    ['GET', '/statusz', 'get', ['statusz']],
    ['GET', '/flagz', 'get', ['configz']],
    ['GET', '/spec/', 'get', ['proxy']],
    ['GET', '/pods', 'get', ['pods', 'proxy']],
    ['GET', '/pods/', 'get', ['pods', 'proxy']],
    ['GET', '/allocatedPods', 'get', ['pods', 'proxy']],
    ['GET', '/runningpods/', 'get', ['pods', 'proxy']],
    ['GET', '/healthz', 'get', ['healthz', 'proxy']],
    ['GET', '/healthz/ping', 'get', ['healthz', 'proxy']],
    ['GET', '/configz', 'get', ['configz', 'proxy']],
    ['GET', '/podsx', 'get', ['proxy']],
    ['GET', '/containerLogs/ns/pod/c', 'get', ['proxy']],
    ['POST', '/exec/ns/pod/c', 'create', ['proxy']],
    ['GET', '/exec/ns/pod/c', 'get', ['proxy']],
    ['PUT', '/x', 'update', ['proxy']],
    ['PATCH', '/x', 'patch', ['proxy']],
    ['DELETE', '/x', 'delete', ['proxy']],
    ['HEAD', '/x', '', ['proxy']],
    ['GET', '/statsfoo', 'get', ['proxy']],
    ['GET', '/metricsx', 'get', ['proxy']],
  ])('%s %s -> verb %s, subresources %j', (method, path, verb, subresources) => {
    expect(requestAttributes(user, method, path, 'node-1')).toEqual(
      subresources.map((subresource) => ({ user, verb, apiVersion: 'v1', resource: 'nodes', subresource, name: 'node-1', path })),
    );
  });

  test('isSubpath', () => {
    expect(isSubpath('/stats', '/stats/')).toBe(true);
    expect(isSubpath('/stats/x', '/stats')).toBe(true);
    expect(isSubpath('/statsx', '/stats')).toBe(false);
  });

  test("kubelet's 403 text and the SubjectAccessReview spec", () => {
    const attrs = requestAttributes(user, 'GET', '/pods', 'node-1');
    expect(forbiddenMessage(attrs)).toBe('Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])\n');
    expect(subjectAccessReviewSpec(attrs[1]!)).toEqual({
      user: 'alice', groups: ['devs', 'system:authenticated'],
      resourceAttributes: { namespace: '', verb: 'get', group: '', version: 'v1', resource: 'nodes', subresource: 'proxy', name: 'node-1' },
    });
  });
});

describe('WebhookAuthorizer', () => {
  test('allowed answers cached 5m, denied 30s, errors not at all', async () => {
    const clock = new FakeClock();
    let allowed = false;
    let fail = false;
    const calls: unknown[] = [];
    const client = {
      request: async <T>(req: { body: unknown }): Promise<T> => {
        calls.push(req.body);
        if (fail) throw new Error('API server unreachable');
        return { status: { allowed } } as T;
      },
    };
    const authz = new WebhookAuthorizer({ client, clock, authorizedTtlMs: 300_000, unauthorizedTtlMs: 30_000 });
    const [a] = requestAttributes(user, 'GET', '/pods', 'n');
    expect((await authz.authorize(a!)).allowed).toBe(false);
    allowed = true;
    await clock.advance(29_000);
    expect((await authz.authorize(a!)).allowed).toBe(false); // still the cached denial
    expect(calls).toHaveLength(1);
    await clock.advance(1_000);
    expect((await authz.authorize(a!)).allowed).toBe(true);
    expect(calls).toHaveLength(2);
    allowed = false;
    await clock.advance(299_000);
    expect((await authz.authorize(a!)).allowed).toBe(true); // the cached allowance
    // Another subresource is another question.
    fail = true;
    const [stats] = requestAttributes(user, 'GET', '/stats/summary', 'n');
    await expect(authz.authorize(stats!)).rejects.toThrow('unreachable');
    await expect(authz.authorize(stats!)).rejects.toThrow('unreachable');
    expect(calls).toHaveLength(4);
    expect(calls[0]).toMatchObject({ kind: 'SubjectAccessReview', apiVersion: 'authorization.k8s.io/v1' });
  });
});

describe('Authenticator', () => {
  const request = (headers: Record<string, string>, peer?: { authorized: boolean; subject: object }) =>
    ({
      headers,
      socket: peer
        ? { authorized: peer.authorized, authorizationError: peer.authorized ? null : 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', getPeerCertificate: () => ({ subject: peer.subject }) }
        : { getPeerCertificate: () => ({}) },
    }) as unknown as IncomingMessage;

  test('certificate user: CN and O', () => {
    expect(certificateUser({ CN: 'kube-apiserver-kubelet-client', O: ['kubeadm:cluster-admins', 'x'] })).toEqual({ name: 'kube-apiserver-kubelet-client', groups: ['kubeadm:cluster-admins', 'x'] });
    expect(certificateUser({ CN: 'solo', O: 'g' })).toEqual({ name: 'solo', groups: ['g'] });
    expect(certificateUser({})).toBeUndefined();
  });

  test('x509, tokens (both answers cached for cacheTTL), anonymous only when enabled and without a failed credential', async () => {
    const clock = new FakeClock();
    const reviewed: string[] = [];
    const tokenReview = async (token: string) => {
      reviewed.push(token);
      return token === 'good' ? { name: 'system:serviceaccount:default:sa', groups: ['system:serviceaccounts'] } : undefined;
    };
    const authn = new Authenticator({ x509: true, tokenReview, tokenCacheTtlMs: 120_000, anonymous: false, clock });
    expect(await authn.authenticate(request({}, { authorized: true, subject: { CN: 'admin', O: 'system:masters' } }))).toEqual({ user: { name: 'admin', groups: ['system:masters', 'system:authenticated'] } });
    expect((await authn.authenticate(request({}, { authorized: false, subject: { CN: 'evil' } }))).user).toBeUndefined();
    expect((await authn.authenticate(request({ authorization: 'Bearer good' }))).user?.name).toBe('system:serviceaccount:default:sa');
    expect((await authn.authenticate(request({ authorization: 'Bearer good' }))).user?.groups).toContain('system:authenticated');
    expect((await authn.authenticate(request({ authorization: 'Bearer bad' }))).user).toBeUndefined();
    expect((await authn.authenticate(request({ authorization: 'Bearer bad' }))).user).toBeUndefined();
    expect(reviewed).toEqual(['good', 'bad']);
    await clock.advance(120_000);
    await authn.authenticate(request({ authorization: 'Bearer good' }));
    expect(reviewed).toEqual(['good', 'bad', 'good']);
    expect((await authn.authenticate(request({}))).user).toBeUndefined();

    const open = new Authenticator({ x509: true, tokenCacheTtlMs: 0, anonymous: true, clock });
    expect((await open.authenticate(request({}))).user).toEqual({ name: 'system:anonymous', groups: ['system:unauthenticated'] });
    // A presented credential that fails is not turned into an anonymous request.
    expect((await open.authenticate(request({}, { authorized: false, subject: { CN: 'x' } }))).user).toBeUndefined();
    expect((await open.authenticate(request({ authorization: 'Bearer t' }))).user).toBeUndefined();
  });
});
