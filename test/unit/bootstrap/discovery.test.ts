// Token discovery against a local HTTPS server playing the API server's cluster-info: the signature, the pin, the
// second fetch over verified TLS, and the wait for a signature on a clock that jumps instead of waiting.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { BootstrapInputError, detachedSignature } from '../../../src/bootstrap/bootstrap-token.js';
import { caCertHash, parseCertificates } from '../../../src/bootstrap/ca-pin.js';
import { discoverCluster, DiscoveryError, type DiscoveryOptions } from '../../../src/bootstrap/discovery.js';
import type { Clock } from '../../../src/core/clock.js';

const token = { id: 'abcdef', secret: '0123456789abcdef' };
let certPem: string;
let keyPem: string;
let server: Server;
let endpoint: string;
/** What the server answers, per request (the last entry repeats). */
let answers: Array<Record<string, string> | undefined>;
let requests = 0;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-discovery-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=kubernetes', '-days', '1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  certPem = readFileSync(join(dir, 'cert.pem'), 'utf8');
  keyPem = readFileSync(join(dir, 'key.pem'), 'utf8');
  rmSync(dir, { recursive: true });
  server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
    const data = answers[Math.min(requests++, answers.length - 1)];
    if (req.url !== '/api/v1/namespaces/kube-public/configmaps/cluster-info' || !data) {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'configmaps "cluster-info" not found' }));
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ kind: 'ConfigMap', data }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));
beforeEach(() => {
  requests = 0;
});

const kubeconfig = (server: string) =>
  `apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: ${Buffer.from(certPem).toString('base64')}\n    server: ${server}\n  name: ""\nkind: Config\n`;
const signed = (content: string) => ({ kubeconfig: content, [`jws-kubeconfig-${token.id}`]: detachedSignature(content, token) });

/** A clock whose sleeps pass at once (and move its time). */
function jumpingClock(): Clock & { slept: number[] } {
  let now = 0;
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    setTimeout: () => undefined,
    clearTimeout: () => undefined,
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
  };
}

function options(extra: Partial<DiscoveryOptions> = {}): DiscoveryOptions {
  return {
    endpoint,
    token,
    caCertHashes: [caCertHash(parseCertificates(certPem)[0]!).slice('sha256:'.length)],
    unsafeSkipCAVerification: false,
    timeoutMs: 20_000,
    clock: jumpingClock(),
    log: pino({ level: 'silent' }),
    signal: new AbortController().signal,
    ...extra,
  };
}

test('a signed cluster-info with the pinned CA: its server and CA, fetched a second time over verified TLS', async () => {
  answers = [signed(kubeconfig('https://127.0.0.1:6443'))];
  const found = await discoverCluster(options());
  expect(found).toEqual({ server: 'https://127.0.0.1:6443', caPem: certPem, kubeconfig: kubeconfig('https://127.0.0.1:6443') });
  expect(requests).toBe(2);
});

test('without a pin, only with the unsafe skip', async () => {
  answers = [signed(kubeconfig('https://h:1'))];
  await expect(discoverCluster(options({ caCertHashes: [] }))).rejects.toThrow(BootstrapInputError);
  expect(requests).toBe(0);
  expect((await discoverCluster(options({ caCertHashes: [], unsafeSkipCAVerification: true }))).server).toBe('https://h:1');
  expect(requests).toBe(1);
});

test('a CA that is not pinned', async () => {
  answers = [signed(kubeconfig('https://h:1'))];
  await expect(discoverCluster(options({ caCertHashes: ['00'.repeat(32)] }))).rejects.toThrow(
    `the cluster CA in the cluster-info ConfigMap is not trusted: none of its public keys (${caCertHash(parseCertificates(certPem)[0]!)}) is pinned`);
});

test('a second fetch that differs from the first', async () => {
  answers = [signed(kubeconfig('https://h:1')), signed(kubeconfig('https://h:2'))];
  await expect(discoverCluster(options())).rejects.toThrow('fetched over TLS verified with the pinned CA differs from the first one');
});

test('a signature made with another secret', async () => {
  const content = kubeconfig('https://h:1');
  answers = [{ kubeconfig: content, [`jws-kubeconfig-${token.id}`]: detachedSignature(content, { ...token, secret: 'ffffffffffffffff' }) }];
  await expect(discoverCluster(options())).rejects.toThrow(DiscoveryError);
  await expect(discoverCluster(options())).rejects.toThrow('the signature does not match the token secret');
});

test('cluster-info not signed for the token yet: retried every 5 s until it is', async () => {
  const content = kubeconfig('https://h:1');
  answers = [{ kubeconfig: content }, undefined, { kubeconfig: content }, signed(content)];
  const clock = jumpingClock();
  expect((await discoverCluster(options({ clock }))).server).toBe('https://h:1');
  expect(clock.slept).toEqual([5_000, 5_000, 5_000]);
});

test('never signed for the token: the token is invalid or expired, after the timeout', async () => {
  answers = [{ kubeconfig: kubeconfig('https://h:1') }];
  const clock = jumpingClock();
  await expect(discoverCluster(options({ clock, timeoutMs: 12_000 }))).rejects.toThrow(
    'token id "abcdef" is invalid for this cluster or it has expired (cluster-info carries no jws-kubeconfig-abcdef)');
  expect(clock.slept).toEqual([5_000, 5_000, 2_000]);
});

test('an API server without cluster-info\'s kubeconfig, and an endpoint that is not host:port', async () => {
  answers = [{ other: 'x' }];
  await expect(discoverCluster(options())).rejects.toThrow('has no kubeconfig: this API server is not set up for token bootstrapping');
  await expect(discoverCluster(options({ endpoint: 'https://h:1/x' }))).rejects.toThrow('the API server endpoint "https://h:1/x" is not host:port');
  await expect(discoverCluster(options({ endpoint: 'h' }))).rejects.toThrow('is not host:port');
});
