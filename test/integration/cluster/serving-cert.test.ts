// serverTLSBootstrap against the real control plane: the kubelet API's serving certificate comes from a
// kubernetes.io/kubelet-serving CSR (the node's names and addresses as SANs) that waits for `kubectl certificate approve`,
// as kind users approve them; then the node's port serves the cluster-CA-signed certificate without a restart, stored as
// kubelet stores it, and kubectl logs works through it.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, readlink, writeFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { busybox, isRunning, waitFor } from '../helpers/agent.js';
import { freePorts, startRealCluster, stopAfterAll, type RealCluster } from '../helpers/real-cluster.js';

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
  await writeFile(config, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nserverTLSBootstrap: true\n');
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
