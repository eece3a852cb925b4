// Recursive read-only mounts as kubelet resolves them (resolveRecursiveReadOnly, runtimeHandlerSupportsRecursiveReadOnlyMounts).
import type { V1VolumeMount } from '@kubernetes/client-node';
import { handlerSupportsRecursiveReadOnly, recursiveReadOnlyStatus, resolveRecursiveReadOnly } from '../../../src/volume/recursive-read-only.js';

const ro = (over: Partial<V1VolumeMount>): V1VolumeMount => ({ name: 'data', mountPath: '/data', readOnly: true, ...over });

test('the default handler\'s feature, false while the runtime lists no handler', () => {
  const handlers = [{ name: '', recursiveReadOnlyMounts: true, userNamespaces: false }, { name: 'kata', recursiveReadOnlyMounts: false, userNamespaces: false }];
  expect(handlerSupportsRecursiveReadOnly(handlers)).toBe(true);
  expect(handlerSupportsRecursiveReadOnly(handlers, 'kata')).toBe(false);
  expect(handlerSupportsRecursiveReadOnly(handlers, 'unknown')).toBe(false);
  expect(handlerSupportsRecursiveReadOnly([])).toBe(false);
  expect(handlerSupportsRecursiveReadOnly(undefined)).toBe(false);
});

test.each([
  [ro({}), true, false],
  [ro({ recursiveReadOnly: 'Disabled' }), true, false],
  [ro({ recursiveReadOnly: 'IfPossible' }), true, true],
  [ro({ recursiveReadOnly: 'IfPossible' }), false, false],
  [ro({ recursiveReadOnly: 'Enabled' }), true, true],
  [ro({ recursiveReadOnly: 'Enabled', mountPropagation: 'None' }), true, true],
  [ro({ readOnly: false, recursiveReadOnly: 'Disabled' }), true, false],
])('%j with handler support %s: %s', (m, supported, rro) => {
  expect(resolveRecursiveReadOnly(m, supported)).toBe(rro);
  expect(recursiveReadOnlyStatus(m, supported)).toBe(rro ? 'Enabled' : 'Disabled');
});

test.each([
  [ro({ recursiveReadOnly: 'Enabled' }), false, 'volume "data" requested recursive read-only mode, but it is not supported by the runtime'],
  [ro({ readOnly: false, recursiveReadOnly: 'IfPossible' }), true, 'volume "data" requested recursive read-only mode, but it is not read-only'],
  [ro({ recursiveReadOnly: 'Enabled', mountPropagation: 'HostToContainer' }), true,
    'volume "data" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"'],
  [ro({ recursiveReadOnly: 'Always' }), true, 'unknown recursive read-only mode "Always"'],
])('%j with handler support %s is an error, kubelet\'s words; its status says Disabled', (m, supported, message) => {
  expect(() => resolveRecursiveReadOnly(m, supported)).toThrow(message);
  expect(recursiveReadOnlyStatus(m, supported)).toBe('Disabled');
});
