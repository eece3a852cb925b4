// Test API server PKI: created once and reused, TLS with issued client certificates, kubeconfigs that kubectl and client-node accept.
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { authenticate, TokenAuthenticator } from '../authn.js';
import { ensurePki, issueClientCert, writeKubeconfig, type Pki } from '../pki.js';
import type { UserInfo } from '../types.js';

const execFileAsync = promisify(execFile);

let dir: string;
let pki: Pki;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-auth-pki-'));
  pki = await ensurePki(join(dir, 'pki'), { hosts: ['127.0.0.1', 'localhost'] });
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('ensurePki', () => {
  test('creates a CA, a serving certificate for the hosts and a service account key pair, keys private', async () => {
    const ca = new X509Certificate(pki.caCertPem);
    const server = new X509Certificate(pki.serverCertPem);
    expect(ca.ca).toBe(true);
    expect(server.ca).toBe(false);
    expect(server.checkIssued(ca)).toBe(true);
    expect(server.verify(ca.publicKey)).toBe(true);
    expect(server.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(server.checkHost('localhost')).toBe('localhost');
    expect(server.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(pki.saSigningKeyPem).toContain('BEGIN PRIVATE KEY');
    expect(pki.saPublicKeyPem).toContain('BEGIN PUBLIC KEY');
    for (const f of ['ca.key', 'apiserver.key', 'sa.key']) {
      expect((await stat(join(pki.dir, f))).mode & 0o777).toBe(0o600);
    }
  });

  test('reuses what a previous run created in the same dir', async () => {
    const again = await ensurePki(pki.dir, { hosts: ['127.0.0.1', 'localhost'] });
    expect(again).toEqual(pki);
  });

  test('re-issues only the serving certificate, from the same CA, when a host is new', async () => {
    const other = await ensurePki(join(dir, 'pki2'), { hosts: ['127.0.0.1'] });
    const widened = await ensurePki(other.dir, { hosts: ['127.0.0.1', '192.0.2.10', 'apiserver.test'] });
    expect(widened.caCertPem).toBe(other.caCertPem);
    expect(widened.saSigningKeyPem).toBe(other.saSigningKeyPem);
    expect(widened.serverCertPem).not.toBe(other.serverCertPem);
    const cert = new X509Certificate(widened.serverCertPem);
    expect(cert.checkIP('192.0.2.10')).toBe('192.0.2.10');
    expect(cert.checkHost('apiserver.test')).toBe('apiserver.test');
    expect(cert.checkIssued(new X509Certificate(other.caCertPem))).toBe(true);
    expect(await ensurePki(other.dir, { hosts: ['apiserver.test'] })).toEqual(widened);
  });
});

describe('client certificates over TLS', () => {
  let server: Server;
  let url: string;
  let tokens: TokenAuthenticator;
  let seen: (UserInfo | undefined)[];

  beforeAll(async () => {
    tokens = new TokenAuthenticator({ saPublicKeyPem: pki.saPublicKeyPem, issuer: 'https://kubernetes.default.svc.cluster.local' });
    tokens.addStaticToken('admin-token', { username: 'admin', groups: ['system:masters'] });
    seen = [];
    server = createServer(
      { key: pki.serverKeyPem, cert: pki.serverCertPem, ca: pki.caCertPem, requestCert: true, rejectUnauthorized: false },
      (req, res) => {
        const user = authenticate(req, tokens);
        seen.push(user);
        if (!user) {
          res.writeHead(401, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 }));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        if (req.url === '/version') {
          res.end(JSON.stringify({ major: '1', minor: '32', gitVersion: 'v1.32.0', platform: 'linux/amd64' }));
        } else {
          res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
        }
      },
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => (seen = []));

  test('client-node with a client certificate kubeconfig is authenticated as CN / O', async () => {
    const cert = await issueClientCert(pki, { name: 'system:node:n1', groups: ['system:nodes'] });
    const leaf = new X509Certificate(cert.certPem);
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(leaf.subject).toBe('O=system:nodes\nCN=system:node:n1');
    const file = join(dir, 'node.kubeconfig');
    await writeKubeconfig(file, { server: url, caPem: pki.caCertPem, user: 'system:node:n1', certPem: cert.certPem, keyPem: cert.keyPem });
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const kc = new KubeConfig();
    kc.loadFromFile(file);
    expect(kc.getCurrentCluster()?.server).toBe(url);
    expect(kc.getCurrentUser()?.name).toBe('system:node:n1');
    const list = await kc.makeApiClient(CoreV1Api).listNamespace();
    expect(list.items).toEqual([]);
    expect(seen).toEqual([{ username: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'] }]);
  });

  test('several groups become several O entries', async () => {
    const cert = await issueClientCert(pki, { name: 'alice', groups: ['dev', 'ops/oncall', 'a+b'] });
    const file = join(dir, 'alice.kubeconfig');
    await writeKubeconfig(file, { server: url, caPem: pki.caCertPem, user: 'alice', certPem: cert.certPem, keyPem: cert.keyPem, contextName: 'alice' });
    const kc = new KubeConfig();
    kc.loadFromFile(file);
    expect(kc.getCurrentContext()).toBe('alice');
    await kc.makeApiClient(CoreV1Api).listNamespace();
    expect(seen).toEqual([{ username: 'alice', groups: ['dev', 'ops/oncall', 'a+b', 'system:authenticated'] }]);
  });

  test('kubectl reads the kubeconfig and talks TLS with the client certificate', async () => {
    const cert = await issueClientCert(pki, { name: 'admin', groups: ['system:masters'] });
    const file = join(dir, 'admin.kubeconfig');
    await writeKubeconfig(file, { server: url, caPem: pki.caCertPem, user: 'admin', certPem: cert.certPem, keyPem: cert.keyPem });
    const view = JSON.parse((await execFileAsync('kubectl', ['config', 'view', '--kubeconfig', file, '--raw', '-o', 'json'], { timeout: 20_000 })).stdout) as {
      clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
      users: { name: string; user: { 'client-certificate-data': string; 'client-key-data': string } }[];
      'current-context': string;
    };
    expect(view.clusters[0]?.cluster.server).toBe(url);
    expect(Buffer.from(view.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString()).toBe(pki.caCertPem);
    expect(Buffer.from(view.users[0]?.user['client-certificate-data'] ?? '', 'base64').toString()).toBe(cert.certPem);
    expect(view['current-context']).toBe('admin@nodelet');

    const { stdout } = await execFileAsync('kubectl', ['--kubeconfig', file, 'get', '--raw', '/version'], { timeout: 20_000 });
    expect(JSON.parse(stdout)).toMatchObject({ gitVersion: 'v1.32.0' });
    expect(seen).toContainEqual({ username: 'admin', groups: ['system:masters', 'system:authenticated'] });
  });

  test('a token kubeconfig authenticates with the bearer token', async () => {
    const file = join(dir, 'token.kubeconfig');
    await writeKubeconfig(file, { server: url, caPem: pki.caCertPem, user: 'admin', token: 'admin-token' });
    const kc = new KubeConfig();
    kc.loadFromFile(file);
    await kc.makeApiClient(CoreV1Api).listNamespace();
    expect(seen).toEqual([{ username: 'admin', groups: ['system:masters', 'system:authenticated'] }]);
  });

  test('a certificate from another CA is not trusted; a wrong token is not either', async () => {
    const foreign = await ensurePki(join(dir, 'foreign'), { hosts: ['127.0.0.1'] });
    const cert = await issueClientCert(foreign, { name: 'mallory', groups: ['system:masters'] });
    const file = join(dir, 'mallory.kubeconfig');
    await writeKubeconfig(file, { server: url, caPem: pki.caCertPem, user: 'mallory', certPem: cert.certPem, keyPem: cert.keyPem, token: 'nope' });
    const kc = new KubeConfig();
    kc.loadFromFile(file);
    await expect(kc.makeApiClient(CoreV1Api).listNamespace()).rejects.toMatchObject({ code: 401 });
    expect(seen).toEqual([undefined]);
  });
});
