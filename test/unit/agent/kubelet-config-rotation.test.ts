// rotateCertificates in the KubeletConfiguration: honoured now (client certificate rotation), true unless set false.
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

test('serverTLSBootstrap is accepted with one warning: nodelet does not request its serving certificate', () => {
  expect(parseKubeletConfiguration(doc('serverTLSBootstrap: true\n'), 'c.yaml').warnings).toEqual([
    'c.yaml: serverTLSBootstrap: true is not honoured: nodelet does not implement this kubelet setting; ignored',
  ]);
  expect(parseKubeletConfiguration(doc('serverTLSBootstrap: false\n'), 'c.yaml').warnings).toEqual([]);
});
