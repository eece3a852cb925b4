// Cluster mode against the real control plane (test/cluster) and the real runtime: projected clusterTrustBundle sources
// (by name, by signer + labels, optional) and podCertificate sources, with this test as the signer: it reads the
// PodCertificateRequests nodelet creates with kubectl, checks their proof of possession and issues (or denies) them
// through the status subresource with a CA of its own.
import 'reflect-metadata';
import { X509Certificate, createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import * as x509 from '@peculiar/x509';
import type { PodCertificateRequest } from '../../../src/controllers/pod-certificates.js';
import { pemBlocks } from '../../../src/controllers/trust-bundles.js';
import { busybox, isRunning, testNode, waitFor } from '../helpers/agent.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const cluster: RealCluster = await startRealCluster();
const { kubectl, agent, cri, uids } = cluster;

afterAll(() => cluster.stop(), 300_000);

const ecdsa = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
/** Whole seconds: the request's notBefore/notAfter must equal the certificate's, which has no milliseconds. */
const seconds = (ms: number) => new Date(Math.floor(ms / 1000) * 1000);
const rfc3339 = (d: Date) => d.toISOString().replace('.000Z', 'Z');

interface Ca {
  cert: x509.X509Certificate;
  keys: webcrypto.CryptoKeyPair;
  pem: string;
}

async function makeCa(cn: string): Promise<Ca> {
  const keys = (await webcrypto.subtle.generateKey(ecdsa, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString('hex'),
    name: `CN=${cn}`,
    keys,
    signingAlgorithm: ecdsa,
    notBefore: seconds(Date.now() - 60_000),
    notAfter: seconds(Date.now() + 86_400_000),
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
  });
  // One block a line: Go's PEM decoder needs a line end after each END line of a bundle.
  return { cert, keys, pem: `${cert.toString('pem').trimEnd()}\n` };
}

const ctb = (name: string, trustBundle: string, signerName?: string, labels?: Record<string, string>) =>
  kubectl.fromFile('create', `ctb-${name}.json`, JSON.stringify({
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'ClusterTrustBundle',
    metadata: { name, ...(labels ? { labels } : {}) },
    spec: { trustBundle, ...(signerName ? { signerName } : {}) },
  }));

async function pod(name: string): Promise<V1Pod | undefined> {
  const p = (await agent.pods()).find((x) => x.metadata?.name === name && x.metadata?.namespace === 'default');
  if (p) uids.add(p.metadata!.uid!);
  return p;
}

function waitForPod(name: string, what: string, ok: (p: V1Pod) => boolean, timeoutMs = 60_000): Promise<V1Pod> {
  return waitFor(`${name}: ${what}`, async () => {
    const p = await pod(name);
    return p && ok(p) ? p : undefined;
  }, timeoutMs);
}

async function createPod(yaml: string, name: string): Promise<void> {
  expect(await kubectl.fromFile('create', `${name}.yaml`, yaml)).toBe(`pod/${name} created`);
  await waitFor(`${name} bound by kube-scheduler`, async () => ((await kubectl.get<V1Pod>('pod', name)).spec?.nodeName === testNode ? true : undefined), 60_000, 500);
}

const containerId = (p: V1Pod) => p.status!.containerStatuses![0]!.containerID!.replace('containerd://', '');

async function cat(p: V1Pod, path: string): Promise<string> {
  const r = await cri.execSync(containerId(p), ['cat', path], 10);
  expect(r.exitCode).toBe(0);
  return r.stdout.toString();
}

/** The subjects of the certificates in a PEM file, sorted (kubelet writes trust anchors in a random order). */
const subjects = (pem: string) => pemBlocks(pem).map((der) => new X509Certificate(Buffer.from(der, 'base64')).subject).sort();

async function waitForEvent(podName: string, reason: string, message: string): Promise<void> {
  await waitFor(`${podName}: event ${reason}: ${message}`, async () => {
    const events = await kubectl.get<{ items: CoreV1Event[] }>('events', '-n', 'default');
    return events.items.some((e) => e.involvedObject?.name === podName && e.reason === reason && e.message === message) ? true : undefined;
  }, 60_000, 500);
}

beforeAll(async () => {
  await waitFor('the default ServiceAccount', () => kubectl.get('serviceaccount', 'default').catch(() => undefined), 60_000, 500);
}, 90_000);

test('clusterTrustBundle sources: by name, by signer + labels, optional and missing; a changed bundle reaches the file', async () => {
  const [named, picked, other, added] = await Promise.all([makeCa('named-ca'), makeCa('picked-ca'), makeCa('other-ca'), makeCa('added-ca')]);
  const signer = 'example.com/trust';
  // A bundle with a signer is named after it (signerName with ':' for '/', then ':' and a suffix).
  expect(await ctb('plain-bundle', `some text before\n${named.pem}`)).toBe('clustertrustbundle.certificates.k8s.io/plain-bundle created');
  await ctb('example.com:trust:picked', picked.pem, signer, { pick: 'yes' });
  // The picked anchor again in another bundle of the signer: written once.
  await ctb('example.com:trust:other', other.pem + picked.pem, signer, { pick: 'no' });
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: trust}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: anchors
    projected:
      sources:
      - clusterTrustBundle: {name: plain-bundle, path: named.pem}
      - clusterTrustBundle: {signerName: ${signer}, labelSelector: {matchLabels: {pick: "yes"}}, path: picked.pem}
      - clusterTrustBundle: {signerName: ${signer}, labelSelector: {}, path: all.pem}
      - clusterTrustBundle: {name: not-there, optional: true, path: optional.pem}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: anchors, mountPath: /etc/anchors}
`, 'trust');
  const p = await waitForPod('trust', 'Running', isRunning, 90_000);
  // The named bundle's certificate, the text around it dropped.
  const namedFile = await cat(p, '/etc/anchors/named.pem');
  expect(namedFile).toBe(named.pem.replace(/\r\n/g, '\n'));
  expect(subjects(await cat(p, '/etc/anchors/picked.pem'))).toEqual(['CN=picked-ca']);
  expect(subjects(await cat(p, '/etc/anchors/all.pem'))).toEqual(['CN=other-ca', 'CN=picked-ca']);
  expect(await cat(p, '/etc/anchors/optional.pem')).toBe('');

  // A new anchor in the named bundle reaches the file through the watch, in the same container.
  await kubectl.run('patch', 'clustertrustbundle', 'plain-bundle', '--type', 'merge', '-p', JSON.stringify({ spec: { trustBundle: named.pem + added.pem } }));
  await waitFor('the added anchor in named.pem', async () => (subjects(await cat(p, '/etc/anchors/named.pem')).length === 2 ? true : undefined), 30_000, 500);
  expect(subjects(await cat(p, '/etc/anchors/named.pem'))).toEqual(['CN=added-ca', 'CN=named-ca']);
  expect(containerId((await pod('trust'))!)).toBe(containerId(p));

  // A required bundle that does not exist keeps the pod ContainerCreating with kubelet's message, until it exists.
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: trust-missing}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: anchors
    projected:
      sources:
      - clusterTrustBundle: {name: later-bundle, path: later.pem}
      - clusterTrustBundle: {signerName: example.com/nobody, labelSelector: {}, path: nobody.pem, optional: true}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: anchors, mountPath: /etc/anchors}
`, 'trust-missing');
  await waitForEvent('trust-missing', 'FailedMount', 'MountVolume.SetUp failed for volume "anchors" : while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "later-bundle" not found');
  expect((await pod('trust-missing'))!.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('ContainerCreating');
  await ctb('later-bundle', other.pem);
  const later = await waitForPod('trust-missing', 'Running', isRunning, 60_000);
  expect(subjects(await cat(later, '/etc/anchors/later.pem'))).toEqual(['CN=other-ca']);
  expect(await cat(later, '/etc/anchors/nobody.pem')).toBe('');
});

/** The PodCertificateRequests of a pod, as the signer lists them. */
async function requestsFor(podName: string): Promise<PodCertificateRequest[]> {
  const list = await kubectl.get<{ items: PodCertificateRequest[] }>('podcertificaterequests', '-n', 'default');
  return list.items.filter((r) => r.spec?.podName === podName);
}

const signerName = 'example.com/pod-signer';

/** The signer's work: the request's stub PKCS#10 must be signed by its key; the leaf is issued to that key by the CA. */
async function issue(pcr: PodCertificateRequest, ca: Ca): Promise<x509.X509Certificate> {
  const csr = new x509.Pkcs10CertificateRequest(Buffer.from(pcr.spec!.stubPKCS10Request, 'base64'));
  expect(await csr.verify()).toBe(true);
  const notBefore = seconds(Date.now() - 1000);
  const notAfter = new Date(notBefore.getTime() + 2 * 3600_000);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: randomBytes(8).toString('hex'),
    subject: `CN=${pcr.spec!.podName}`,
    issuer: ca.cert.subject,
    notBefore,
    notAfter,
    publicKey: csr.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: ecdsa,
    extensions: [new x509.BasicConstraintsExtension(false, undefined, true), new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])],
  });
  const now = rfc3339(seconds(Date.now()));
  const status = {
    certificateChain: leaf.toString('pem'),
    notBefore: rfc3339(notBefore),
    notAfter: rfc3339(notAfter),
    beginRefreshAt: rfc3339(new Date(notAfter.getTime() - 30 * 60_000)),
    conditions: [{ type: 'Issued', status: 'True', reason: 'Reason', message: 'issued by the test signer', lastTransitionTime: now }],
  };
  await kubectl.run('patch', 'podcertificaterequest', pcr.metadata!.name!, '-n', 'default', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status }));
  return leaf;
}

test('podCertificate: nodelet makes the key and the request; the pod waits, then gets the issued chain; a denial is kubelet\'s error', async () => {
  const ca = await makeCa('pod-signer-ca');
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: certs}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: certs
    projected:
      sources:
      - podCertificate:
          signerName: ${signerName}
          keyType: ECDSAP384
          maxExpirationSeconds: 7200
          credentialBundlePath: bundle.pem
          keyPath: key.pem
          certificateChainPath: chain.pem
          userAnnotations: {example.com/purpose: test}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: certs, mountPath: /var/run/certs}
`, 'certs');
  const apiPod = await kubectl.get<V1Pod>('pod', 'certs');
  const node = await kubectl.get<{ metadata: { uid: string } }>('node', testNode);
  const sa = await kubectl.get<{ metadata: { uid: string } }>('serviceaccount', 'default');
  const [pcr] = await waitFor('the PodCertificateRequest', async () => ((await requestsFor('certs')).length > 0 ? requestsFor('certs') : undefined), 60_000, 500);
  // What the NodeRestriction admission plugin cross-checked: this node, its pod, the pod's service account.
  expect(pcr!.spec).toMatchObject({
    signerName,
    podName: 'certs',
    podUID: apiPod.metadata!.uid,
    serviceAccountName: 'default',
    serviceAccountUID: sa.metadata.uid,
    nodeName: testNode,
    nodeUID: node.metadata.uid,
    maxExpirationSeconds: 7200,
    unverifiedUserAnnotations: { 'example.com/purpose': 'test' },
  });
  expect(pcr!.metadata?.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Pod', name: 'certs', uid: apiPod.metadata!.uid }]);

  // Until the signer answers, the volume cannot be set up: kubelet's message, the pod ContainerCreating.
  await waitForEvent('certs', 'FailedMount', 'MountVolume.SetUp failed for volume "certs" : credential bundle is not issued yet');
  expect((await pod('certs'))!.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('ContainerCreating');

  const leaf = await issue(pcr!, ca);
  const p = await waitForPod('certs', 'Running', isRunning, 60_000);
  const bundle = await cat(p, '/var/run/certs/bundle.pem');
  const key = await cat(p, '/var/run/certs/key.pem');
  const chain = await cat(p, '/var/run/certs/chain.pem');
  // The bundle: the PKCS#8 key, then the chain.
  expect(bundle).toBe(key + chain);
  expect(key).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
  const privateKey = createPrivateKey(key);
  expect(privateKey.asymmetricKeyDetails?.namedCurve).toBe('secp384r1');
  const issued = new X509Certificate(chain);
  expect(issued.raw.equals(Buffer.from(leaf.rawData))).toBe(true);
  expect(issued.verify(new X509Certificate(ca.pem).publicKey)).toBe(true);
  expect(issued.checkPrivateKey(privateKey)).toBe(true);
  // Private to the pod: on tmpfs, read-only.
  const mounts = await cri.execSync(containerId(p), ['grep', ' /var/run/certs ', '/proc/mounts'], 10);
  expect(mounts.stdout.toString()).toMatch(/^tmpfs \/var\/run\/certs tmpfs ro/);

  // A denied request: the volume fails for good with kubelet's message, and a Warning event names the request.
  await createPod(`apiVersion: v1
kind: Pod
metadata: {name: certs-denied}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: certs
    projected:
      sources:
      - podCertificate: {signerName: ${signerName}, keyType: ED25519, credentialBundlePath: bundle.pem}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: certs, mountPath: /var/run/certs}
`, 'certs-denied');
  const [denied] = await waitFor('the second PodCertificateRequest', async () => ((await requestsFor('certs-denied')).length > 0 ? requestsFor('certs-denied') : undefined), 60_000, 500);
  const condition = { type: 'Denied', status: 'True', reason: 'UnsupportedKeyType', message: 'use ECDSAP384', lastTransitionTime: rfc3339(seconds(Date.now())) };
  await kubectl.run('patch', 'podcertificaterequest', denied!.metadata!.name!, '-n', 'default', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { conditions: [condition] } }));
  await waitForEvent('certs-denied', 'Denied', `PodCertificateRequest default/${denied!.metadata!.name} was denied, reason="UnsupportedKeyType", message="use ECDSAP384"`);
  await waitForEvent('certs-denied', 'FailedMount', 'MountVolume.SetUp failed for volume "certs" : PodCertificateRequest was permanently denied: reason="UnsupportedKeyType" message="use ECDSAP384"');
  expect((await pod('certs-denied'))!.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('ContainerCreating');
  // No second request for a denied projection.
  expect(await requestsFor('certs-denied')).toHaveLength(1);
});
