// rotateCertificates and serverTLSBootstrap in the KubeletConfiguration: both honoured (client and serving certificate managers).
import { parseKubeletConfiguration, resolveKubeletConfiguration } from '../../../src/agent/kubelet-config.js';

const doc = (extra: string) => `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${extra}`;

test.each([
  ['unset', '', true],
  ['true (kubeadm and kind write it)', 'rotateCertificates: true\n', true],
  ['false', 'rotateCertificates: false\n', false],
])('rotateCertificates %s', (_name, extra, expected) => {
  expect(resolveKubeletConfiguration(parseKubeletConfiguration(doc(extra), 'c.yaml')).rotateCertificates).toBe(expected);
});

test('rotateCertificates must be a boolean', () => {
  expect(() => parseKubeletConfiguration(doc('rotateCertificates: "yes"\n'), 'c.yaml')).toThrow('c.yaml: rotateCertificates: must be true or false, not "yes"');
});

test('serverTLSBootstrap is honoured without a warning: false unless set, a boolean', () => {
  const on = parseKubeletConfiguration(doc('serverTLSBootstrap: true\n'), 'c.yaml');
  expect(on.warnings).toEqual([]);
  expect(resolveKubeletConfiguration(on).serverTLSBootstrap).toBe(true);
  expect(resolveKubeletConfiguration(parseKubeletConfiguration(doc(''), 'c.yaml')).serverTLSBootstrap).toBe(false);
  expect(() => parseKubeletConfiguration(doc('serverTLSBootstrap: 1\n'), 'c.yaml')).toThrow('c.yaml: serverTLSBootstrap: must be true or false');
});
