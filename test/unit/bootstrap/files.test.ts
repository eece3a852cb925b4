// What join writes: the kubeconfigs kubelet's bootstrap writes and the node's KubeletConfiguration from the cluster's.
import { parse } from 'yaml';
import { kubeconfigYaml } from '../../../src/bootstrap/files.js';
import { nodeKubeletConfig } from '../../../src/bootstrap/kubelet-config-map.js';

test('the bootstrap kubeconfig: server, CA data and the token', () => {
  const doc = parse(kubeconfigYaml({ server: 'https://127.0.0.1:6443', caPem: 'CA', user: { token: 'abcdef.0123456789abcdef' }, userName: 'tls-bootstrap-token-user' }));
  expect(doc).toEqual({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'default-cluster', cluster: { server: 'https://127.0.0.1:6443', 'certificate-authority-data': Buffer.from('CA').toString('base64') } }],
    contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', namespace: 'default', user: 'tls-bootstrap-token-user' } }],
    'current-context': 'default-context',
    preferences: {},
    users: [{ name: 'tls-bootstrap-token-user', user: { token: 'abcdef.0123456789abcdef' } }],
  });
});

test('the kubeconfig after the bootstrap names the current pem as certificate and key (rotation needs no new kubeconfig)', () => {
  const doc = parse(kubeconfigYaml({ server: 'https://h:1', caPem: 'CA', user: { certificateFile: '/var/lib/nodelet/pki/kubelet-client-current.pem' } }));
  expect(doc.users).toEqual([{ name: 'default-auth', user: {
    'client-certificate': '/var/lib/nodelet/pki/kubelet-client-current.pem', 'client-key': '/var/lib/nodelet/pki/kubelet-client-current.pem' } }]);
});

// As the real control plane's kube-system/kubelet-config holds it (kubeadm v1.37.2), shortened.
const clusterConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
cgroupDriver: cgroupfs
clusterDNS:
- 10.96.0.10
containerRuntimeEndpoint: ""
kind: KubeletConfiguration
rotateCertificates: true
staticPodPath: /etc/kubernetes/manifests
`;

test.each([
  ['the CRI socket and the node\'s CA file', { containerRuntimeEndpoint: 'unix:///run/c.sock', clientCAFile: '/var/lib/nodelet/pki/ca.crt' },
    { containerRuntimeEndpoint: 'unix:///run/c.sock', authentication: { anonymous: { enabled: false }, x509: { clientCAFile: '/var/lib/nodelet/pki/ca.crt' } } }],
  ['nothing given: the cluster\'s as it is', {}, {}],
])('the node\'s settings on the cluster\'s configuration: %s', (_name, node, changed) => {
  const out = nodeKubeletConfig(clusterConfig, node);
  expect(parse(out)).toEqual({ ...parse(clusterConfig), ...changed });
  const endpoint = (node as { containerRuntimeEndpoint?: string }).containerRuntimeEndpoint;
  if (endpoint) expect(out).toContain(`containerRuntimeEndpoint: ${endpoint}\n`);
});

test('a cluster configuration without authentication gets no CA file', () => {
  expect(parse(nodeKubeletConfig('kind: KubeletConfiguration\n', { clientCAFile: '/x' }))).toEqual({ kind: 'KubeletConfiguration' });
});
