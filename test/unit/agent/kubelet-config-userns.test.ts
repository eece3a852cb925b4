// KubeletConfiguration's userNamespaces.idsPerPod with kubelet's defaulting and validation messages.
import { parseKubeletConfiguration } from '../../../src/agent/kubelet-config.js';

const parse = (body: string) => parseKubeletConfiguration(`apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${body}`, 'c.yaml');

test('idsPerPod: a multiple of 65536 is taken; left out or 0 is the default; no warning either way', () => {
  expect(parse('userNamespaces: {idsPerPod: 131072}\n')).toMatchObject({ userNamespacesIdsPerPod: 131072, warnings: [] });
  expect(parse('userNamespaces: {idsPerPod: 0}\n').userNamespacesIdsPerPod).toBeUndefined();
  expect(parse('userNamespaces: {}\n')).toMatchObject({ warnings: [] });
});

test.each([
  ['1000', 'c.yaml: userNamespaces.idsPerPod: invalid configuration: userNamespaces.idsPerPod must not be less than 65536'],
  ['100000', 'c.yaml: userNamespaces.idsPerPod: invalid configuration: userNamespaces.idsPerPod must be a multiple of 65536'],
  ['8589934592', 'c.yaml: userNamespaces.idsPerPod: invalid configuration: userNamespaces.idsPerPod must not be more than 4294967295'],
  ['"65536"', 'c.yaml: userNamespaces.idsPerPod: must be an integer, not "65536"'],
])('idsPerPod %s is refused with kubelet\'s message', (value, message) => {
  expect(() => parse(`userNamespaces: {idsPerPod: ${value}}\n`)).toThrow(message);
});

test('an unknown field under userNamespaces is refused naming it', () => {
  expect(() => parse('userNamespaces: {idsPerpod: 65536}\n')).toThrow('c.yaml: userNamespaces.idsPerpod: unknown field');
});
