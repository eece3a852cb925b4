// kubelet's token manager: TokenRequest body, cache key, refresh at 80% of the TTL or 24 h (with jitter), failures, pod removal.
import { pino } from 'pino';
import type { ApiRequest } from '../../../src/kubeapi/client.js';
import { ApiUnavailableError } from '../../../src/kubeapi/client.js';
import { ServiceAccountTokenManager, type TokenSpec } from '../../../src/controllers/token-manager.js';

const log = pino({ level: 'silent' });
const t0 = Date.parse('2025-01-01T00:00:00Z');
let now = t0;
let jitter = 0;
let requests: ApiRequest[];
let fail = false;
let manager: ServiceAccountTokenManager;

beforeEach(() => {
  now = t0;
  jitter = 0;
  requests = [];
  fail = false;
  manager = new ServiceAccountTokenManager({
    log,
    now: () => now,
    random: () => jitter,
    client: {
      request: async <T>(req: ApiRequest): Promise<T> => {
        requests.push(req);
        if (fail) throw new ApiUnavailableError('POST token: connect ECONNREFUSED');
        const spec = (req.body as { spec: { expirationSeconds: number } }).spec;
        return { spec, status: { token: `token-${requests.length}`, expirationTimestamp: new Date(now + spec.expirationSeconds * 1000).toISOString() } } as T;
      },
    },
  });
});

const spec = (over: Partial<TokenSpec> = {}): TokenSpec => ({
  namespace: 'ns',
  serviceAccountName: 'default',
  audiences: [],
  expirationSeconds: 3600,
  pod: { name: 'p', uid: 'uid-1' },
  ...over,
});

test('TokenRequest: path and body bound to the pod', async () => {
  const t = await manager.getToken(spec({ audiences: ['vault'], expirationSeconds: 3607 }));
  expect(t.token).toBe('token-1');
  expect(t.expirationTimestamp.getTime()).toBe(t0 + 3607_000);
  expect(requests[0]).toMatchObject({
    method: 'POST',
    path: '/api/v1/namespaces/ns/serviceaccounts/default/token',
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { audiences: ['vault'], expirationSeconds: 3607, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'uid-1' } },
    },
  });
});

test('cached until 80% of its TTL has passed (minus the jitter); keyed by audience, expiry and pod', async () => {
  await manager.getToken(spec());
  now = t0 + 2880_000; // exactly 80%: not yet
  expect((await manager.getToken(spec())).token).toBe('token-1');
  now += 1;
  expect((await manager.getToken(spec())).token).toBe('token-2');
  // A different audience, expiry or pod is another token.
  await manager.getToken(spec({ audiences: ['x'] }));
  await manager.getToken(spec({ expirationSeconds: 7200 }));
  await manager.getToken(spec({ pod: { name: 'p', uid: 'uid-2' } }));
  expect(requests).toHaveLength(5);
  expect(manager.size).toBe(4);

  // A 9 s jitter refreshes 9 s earlier.
  jitter = 0.95;
  const issued = now;
  now = issued + 2871_000 + 1;
  expect((await manager.getToken(spec())).token).toBe('token-6');
});

test('a token valid for more than 30 h is refreshed after 24 h; a token issued in the future (clock jump back) at once', async () => {
  await manager.getToken(spec({ expirationSeconds: 48 * 3600 }));
  now = t0 + 24 * 3600_000;
  expect((await manager.getToken(spec({ expirationSeconds: 48 * 3600 }))).token).toBe('token-1');
  now += 1;
  expect((await manager.getToken(spec({ expirationSeconds: 48 * 3600 }))).token).toBe('token-2');
  now -= 60_000;
  expect((await manager.getToken(spec({ expirationSeconds: 48 * 3600 }))).token).toBe('token-3');
});

test('a failed refresh keeps the old token while it is valid; then fails as kubelet; no token at all fails at once', async () => {
  await manager.getToken(spec());
  fail = true;
  now = t0 + 3000_000;
  expect((await manager.getToken(spec())).token).toBe('token-1');
  now = t0 + 3601_000;
  await expect(manager.getToken(spec({ pod: { name: 'q', uid: 'uid-9' } }))).rejects.toThrow(
    'failed to fetch token: POST token: connect ECONNREFUSED',
  );
  // The expired token was dropped: the pod's next attempt is a plain fetch failure.
  await expect(manager.getToken(spec())).rejects.toThrow('failed to fetch token: POST token: connect ECONNREFUSED');
});

test('an expired cached token whose refresh fails names it', async () => {
  const m = manager as unknown as { requiresRefresh: unknown; dropExpired: () => void };
  await manager.getToken(spec());
  fail = true;
  now = t0 + 3601_000;
  m.dropExpired = () => undefined; // the token outlives the sweep, as between kubelet's 1-minute cleanups
  await expect(manager.getToken(spec())).rejects.toThrow(/^token .* expired and refresh failed: POST token: connect ECONNREFUSED$/);
});

test('the tokens of a removed pod are forgotten', async () => {
  await manager.getToken(spec());
  await manager.getToken(spec({ pod: { name: 'q', uid: 'uid-2' } }));
  manager.deletePodTokens('uid-1');
  expect(manager.size).toBe(1);
  await manager.getToken(spec());
  expect(requests).toHaveLength(3);
});

test('callers asking at once share one TokenRequest; its answer is not cached when the pod was removed meanwhile', async () => {
  const [a, b] = await Promise.all([manager.getToken(spec()), manager.getToken(spec())]);
  expect(requests).toHaveLength(1);
  expect(a.token).toBe(b.token);

  const other = spec({ pod: { name: 'q', uid: 'uid-2' } });
  const pending = manager.getToken(other);
  manager.deletePodTokens('uid-2');
  expect((await pending).token).toBe('token-2');
  expect(manager.size).toBe(1);
  await manager.getToken(other);
  expect(requests).toHaveLength(3);
});
