// loadKubeconfig: the current context's server, TLS material (inline or from files) and token; errors name file and field.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeconfigError, loadKubeconfig } from '../../../src/kubeapi/kubeconfig.js';

let dir: string;
beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), 'nodelet-kubeconfig-'))));
afterEach(async () => rm(dir, { recursive: true, force: true }));

const b64 = (s: string) => Buffer.from(s).toString('base64');

async function write(text: string): Promise<string> {
  const file = join(dir, 'config');
  await writeFile(file, text);
  return file;
}

test('reads inline certificate data of the current context', async () => {
  const file = await write(`
apiVersion: v1
kind: Config
current-context: node
contexts:
- name: other
  context: {cluster: c2, user: u2}
- name: node
  context: {cluster: c1, user: u1}
clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: ${b64('CA')}, tls-server-name: kubernetes}
users:
- name: u1
  user: {client-certificate-data: ${b64('CERT')}, client-key-data: ${b64('KEY')}}
`);
  const conn = await loadKubeconfig(file);
  expect(conn.server.href).toBe('https://127.0.0.1:6443/');
  expect(conn.ca?.toString()).toBe('CA');
  expect(conn.cert?.toString()).toBe('CERT');
  expect(conn.key?.toString()).toBe('KEY');
  expect(conn.tlsServerName).toBe('kubernetes');
  expect(conn.token).toBeUndefined();
});

test('reads files relative to the kubeconfig, and a token file', async () => {
  await writeFile(join(dir, 'ca.crt'), 'CAFILE');
  await writeFile(join(dir, 'token'), 'secret-token\n');
  const file = await write(`
current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443", certificate-authority: ca.crt, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {tokenFile: token}}]
`);
  const conn = await loadKubeconfig(file);
  expect(conn.ca?.toString()).toBe('CAFILE');
  expect(conn.token).toBe('secret-token');
  expect(conn.insecureSkipTLSVerify).toBe(true);
});

test.each([
  ['clusters: []\ncontexts: []', 'current-context is not set'],
  ['current-context: x\ncontexts: []', 'context "x" (named by the current context) is not defined in contexts'],
  ['current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: "ftp://h"}}]', 'server must be an https:// URL'],
  [
    'current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: "https://h"}}]\nusers: [{name: u, user: {exec: {command: aws}}}]',
    'user "u": exec credentials are not supported',
  ],
  [
    'current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: "https://h"}}]\nusers: [{name: u, user: {client-certificate-data: Zm9v}}]',
    'client-certificate and client-key must be given together',
  ],
  [
    'current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: "https://h", certificate-authority: missing.crt}}]',
    'certificate-authority "missing.crt": ENOENT',
  ],
])('rejects %j', async (text, message) => {
  const file = await write(text);
  const err = await loadKubeconfig(file).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(KubeconfigError);
  expect((err as Error).message).toContain(file);
  expect((err as Error).message).toContain(message);
});
