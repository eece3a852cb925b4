// The container hash is kubelet's: values computed by kubelet 1.32's HashContainer (Go, k8s.io/apimachinery dump.ForHash).
import { containerHash } from '../../../src/decisions/container-hash.js';

test.each([
  ['app', 'localhost/nodelet/busybox:1.35', '7eca0e91'],
  ['init-a', 'localhost/nodelet/busybox:1.35', '8d35e90'],
  ['init-b', 'localhost/nodelet/busybox:1.35', 'a638b8c5'],
  ['web', 'registry.k8s.io/pause:3.10', '4f3b3ba7'],
  ['x', 'a<b>&c', '8d3d6ea6'],
  ['sidecar', 'nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', '3f308d54'],
])('container %s with image %s hashes to %s, as kubelet', (name, image, hash) => {
  expect(containerHash({ name, image })).toBe(hash);
});

test('only the name and the image count (the only fields of a running container that may change)', () => {
  expect(containerHash({ name: 'app', image: 'i:1', command: ['a'], env: [{ name: 'A', value: '1' }] })).toBe(containerHash({ name: 'app', image: 'i:1' }));
  expect(containerHash({ name: 'app', image: 'i:2' })).not.toBe(containerHash({ name: 'app', image: 'i:1' }));
});
