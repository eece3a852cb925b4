// serverTLSBootstrap against the real control plane: the kubelet API's serving certificate comes from a
// kubernetes.io/kubelet-serving CSR (the node's names and addresses as SANs) that waits for `kubectl certificate approve`,
// as kind users approve them; then the node's port serves the cluster-CA-signed certificate without a restart, stored as
// kubelet stores it, and kubectl logs works through it. With tlsCertFile given, that pair is served while the CSR waits
// (client-go's file store falls back to it). With kube-controller-manager's signer issuing 3-minute certificates, the
// serving certificate is rotated within the test: a new CSR, approved, served without a restart.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { busybox, isRunning, waitFor } from '../helpers/agent.js';
import { freePorts, startRealCluster, stopAfterAll, type RealCluster } from '../helpers/real-cluster.js';
import { restartControllerManager } from '../../cluster/control-plane.js';

interface Csr {
  metadata: { name: string };
  spec: { signerName: string; usages: string[]; username: string; groups: string[]; request: string };
  status?: { conditions?: { type: string }[]; certificate?: string };
}

const work = await mkdtemp(join(tmpdir(), 'nodelet-serving-'));
let cluster: RealCluster;
let port: number;

/** What the node's port presents to a client that trusts only the cluster CA (and checks the address it dialled). */
function handshake(host: string, ca: string): Promise<{ authorized: boolean; error?: string; cert?: X509Certificate }> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, ca, rejectUnauthorized: false, timeout: 5_000 }, () => {
      const peer = socket.getPeerX509Certificate();
      resolve({ authorized: socket.authorized, ...(socket.authorizationError ? { error: String(socket.authorizationError) } : {}), ...(peer ? { cert: peer } : {}) });
      socket.destroy();
    });
    socket.once('error', (err) => resolve({ authorized: false, error: err.message }));
    socket.once('timeout', () => {
      socket.destroy();
      resolve({ authorized: false, error: 'timeout' });
    });
  });
}

beforeAll(async () => {
  port = (await freePorts(1))[0]!;
  const config = join(work, 'kubelet.yaml');
  await writeFile(config, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\nserverTLSBootstrap: true\n');
  cluster = await startRealCluster({ agentArgs: (dir) => ['--config', config, '--client-ca-file', join(dir, 'pki', 'ca.crt'), '--port', String(port)] });
}, 300_000);

stopAfterAll(() => cluster, work);

test('the serving certificate: a kubelet-serving CSR, approved by kubectl, served without a restart, kubectl logs through it', async () => {
  const { kubectl, nodeName } = cluster;
  const ca = await readFile(join(cluster.dir, 'pki', 'ca.crt'), 'utf8');
  const csr = await waitFor('the node\'s kubelet-serving CSR', async () => {
    const all = await kubectl.get<{ items: Csr[] }>('csr');
    return all.items.find((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && c.spec.username === `system:node:${nodeName}`);
  }, 60_000, 500);
  expect(csr.metadata.name).toMatch(/^csr-/);
  // client-go's DefaultKubeletServingGetUsages for an ECDSA key.
  expect(csr.spec.usages).toEqual(['digital signature', 'server auth']);
  expect(csr.spec.groups).toEqual(expect.arrayContaining(['system:nodes', 'system:authenticated']));
  // kube-controller-manager does not approve serving CSRs: it waits.
  expect(csr.status?.conditions ?? []).toEqual([]);
  const request = execFileSync('openssl', ['req', '-noout', '-text'], { input: Buffer.from(csr.spec.request, 'base64') }).toString();
  expect(request).toMatch(new RegExp(`Subject: O ?= ?system:nodes, CN ?= ?system:node:${nodeName}\n`));
  expect(request).toContain(`DNS:${nodeName}, IP Address:${cluster.nodeIP}`);
  expect(request).toContain('ecdsa-with-SHA256');
  // No certificate yet: handshakes fail, as kubelet's.
  expect((await handshake(cluster.nodeIP, ca)).cert).toBeUndefined();

  await kubectl.run('certificate', 'approve', csr.metadata.name);
  const served = await waitFor('the cluster-CA-signed certificate on the node\'s port', async () => {
    const h = await handshake(cluster.nodeIP, ca);
    return h.authorized ? h : undefined;
  }, 60_000, 500);
  const cert = served.cert!;
  expect(cert.subject).toContain(`CN=system:node:${nodeName}`);
  expect(cert.subjectAltName).toBe(`DNS:${nodeName}, IP Address:${cluster.nodeIP}`);
  expect(cert.checkIssued(new X509Certificate(ca))).toBe(true);
  // Stored as kubelet stores it: kubelet-server-current.pem -> kubelet-server-<date>.pem in --cert-dir.
  const certDir = join(cluster.agent.rootDir, 'pki');
  const target = await readlink(join(certDir, 'kubelet-server-current.pem'));
  expect(basename(target)).toMatch(/^kubelet-server-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$/);
  expect(new X509Certificate(await readFile(target)).fingerprint256).toBe(cert.fingerprint256);
  const approved = await kubectl.get<Csr>('csr', csr.metadata.name);
  expect(approved.status?.conditions?.map((c) => c.type)).toEqual(['Approved']);

  // kube-apiserver reaches the node through it.
  await kubectl.fromFile('create', 'talker.json', JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'talker', namespace: 'default' },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'c', image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', 'echo served through the bootstrapped certificate; exec sleep 3600'] }],
    },
  }));
  const pod: V1Pod = await kubectl.waitForPod('talker', 'Running', isRunning, { seen: cluster.uids });
  await cluster.track(pod);
  expect(await waitFor('kubectl logs', async () => (await kubectl.tryRun('logs', 'talker')).stdout.trim() || undefined, 30_000, 500))
    .toBe('served through the bootstrapped certificate');

  // A restart serves the stored certificate at once and asks for nothing.
  await cluster.agent.stop();
  await cluster.agent.start(['--config', join(work, 'kubelet.yaml'), '--client-ca-file', join(cluster.dir, 'pki', 'ca.crt'), '--port', String(port)]);
  const again = await waitFor('the stored certificate after a restart', async () => {
    const h = await handshake(cluster.nodeIP, ca);
    return h.authorized ? h : undefined;
  }, 30_000, 500);
  expect(again.cert!.fingerprint256).toBe(cert.fingerprint256);
  const serving = (await kubectl.get<{ items: Csr[] }>('csr')).items.filter((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving');
  expect(serving.map((c) => c.metadata.name)).toEqual([csr.metadata.name]);
});

const kubectl = () => cluster.kubectl;

/** The node's kubelet-serving CSRs. */
async function servingCsrs(): Promise<Csr[]> {
  const all = (await cluster.kubectl.get<{ items: Csr[] }>('csr')).items;
  return all.filter((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && c.spec.username === `system:node:${cluster.nodeName}`);
}

/** The certificate the node's port presents, once `ok` holds for it. */
async function served(what: string, ca: string, ok: (cert: X509Certificate) => boolean, timeoutMs = 60_000): Promise<X509Certificate> {
  return waitFor(what, async () => {
    const h = await handshake(cluster.nodeIP, ca);
    return h.cert && ok(h.cert) ? h.cert : undefined;
  }, timeoutMs, 500);
}

describe('tlsCertFile with serverTLSBootstrap, and rotation of a short-lived serving certificate', () => {
  let ca: string;
  let fileCert: X509Certificate;
  let issued: X509Certificate;
  const certDir = () => join(cluster.agent.rootDir, 'pki');

  test('tlsCertFile is served while the serving CSR waits (it lacks the node\'s names: a CSR goes out at once); then the issued one', async () => {
    ca = await readFile(join(cluster.dir, 'pki', 'ca.crt'), 'utf8');
    // Certificates of 3 minutes from now on (the signer backdates them 5 minutes): rotation falls 0.6-2.2 minutes after issue.
    await restartControllerManager(cluster.dir, { signingDuration: '3m' }, cluster.binDir);
    await cluster.agent.stop();
    // No stored serving certificate: the manager starts from the given files.
    for (const f of await readdir(certDir())) if (f.startsWith('kubelet-server')) await rm(join(certDir(), f));
    const certFile = join(work, 'given.crt');
    const keyFile = join(work, 'given.key');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=given-by-the-admin', '-days', '1',
      '-keyout', keyFile, '-out', certFile], { stdio: 'ignore' });
    fileCert = new X509Certificate(await readFile(certFile));
    const config = join(work, 'kubelet-files.yaml');
    await writeFile(config, ['apiVersion: kubelet.config.k8s.io/v1beta1', 'kind: KubeletConfiguration', 'failCgroupV1: false', 'serverTLSBootstrap: true',
      `tlsCertFile: ${certFile}`, `tlsPrivateKeyFile: ${keyFile}`, ''].join('\n'));
    const before = new Set((await servingCsrs()).map((c) => c.metadata.name));
    await cluster.agent.start(['--config', config, '--client-ca-file', join(cluster.dir, 'pki', 'ca.crt'), '--port', String(port)]);
    const csr = await waitFor('a new kubelet-serving CSR', async () => (await servingCsrs()).find((c) => !before.has(c.metadata.name)), 60_000, 500);
    // Pending, the given pair is what the port presents.
    expect((await kubectl().get<Csr>('csr', csr.metadata.name)).status?.conditions ?? []).toEqual([]);
    expect((await served('the tlsCertFile pair', ca, () => true)).fingerprint256).toBe(fileCert.fingerprint256);

    await kubectl().run('certificate', 'approve', csr.metadata.name);
    issued = await served('the issued certificate', ca, (c) => c.checkIssued(new X509Certificate(ca)));
    expect(issued.subject).toContain(`CN=system:node:${cluster.nodeName}`);
    expect(Date.parse(issued.validTo) - Date.now()).toBeLessThan(4 * 60_000);
    expect(new X509Certificate(await readFile(join(certDir(), 'kubelet-server-current.pem'))).fingerprint256).toBe(issued.fingerprint256);
  }, 240_000);

  test('the short-lived serving certificate is renewed by a new CSR and served without a restart', async () => {
    const pid = cluster.agent.pid;
    const first = (await servingCsrs()).map((c) => c.metadata.name);
    const renewal = await waitFor('the rotation CSR', async () => (await servingCsrs()).find((c) => !first.includes(c.metadata.name)), 200_000, 1_000);
    expect(renewal.spec.usages).toEqual(['digital signature', 'server auth']);
    await kubectl().run('certificate', 'approve', renewal.metadata.name);
    const renewed = await served('the renewed certificate', ca, (c) => c.checkIssued(new X509Certificate(ca)) && c.fingerprint256 !== issued.fingerprint256);
    expect(renewed.subjectAltName).toBe(issued.subjectAltName);
    expect(cluster.agent.pid).toBe(pid);
    expect(new X509Certificate(await readFile(join(certDir(), 'kubelet-server-current.pem'))).fingerprint256).toBe(renewed.fingerprint256);
    expect(cluster.agent.logLines().filter((l) => String(l.msg).startsWith('Serving certificate rotation: new certificate in use')).length).toBeGreaterThanOrEqual(2);
  }, 300_000);
});
