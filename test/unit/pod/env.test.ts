// Container environment: expansion order and the downward API's fieldRef.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerEnv, formatMap, podFieldValue } from '../../../src/pod/env.js';
import { SyncError } from '../../../src/pod/sync-result.js';

const pod: V1Pod = {
  metadata: { name: 'web-node1', namespace: 'prod', uid: 'u-1', labels: { app: 'web', tier: 'front' }, annotations: { note: 'a "quoted" value' } },
  spec: { nodeName: 'node1', serviceAccountName: 'builder', containers: [] },
};
const ctx = { podIPs: ['10.99.0.9'], hostIP: '192.0.2.2' };

test.each([
  ['metadata.name', 'web-node1'],
  ['metadata.namespace', 'prod'],
  ['metadata.uid', 'u-1'],
  ["metadata.labels['app']", 'web'],
  ["metadata.labels['missing']", ''],
  ["metadata.annotations['note']", 'a "quoted" value'],
  ['spec.nodeName', 'node1'],
  ['spec.serviceAccountName', 'builder'],
  ['status.hostIP', '192.0.2.2'],
  ['status.podIP', '10.99.0.9'],
  ['status.podIPs', '10.99.0.9'],
])('podFieldValue(%s) = %j', (path, value) => {
  expect(podFieldValue(pod, path, ctx)).toBe(value);
});

test('labels render as sorted key="value" lines', () => {
  expect(formatMap(pod.metadata!.labels)).toBe('app="web"\ntier="front"');
  expect(formatMap(pod.metadata!.annotations)).toBe('note="a \\"quoted\\" value"');
});

test('env values expand against earlier variables, fieldRef values are not expanded', () => {
  const c: V1Container = {
    name: 'app',
    env: [
      { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'URL', value: 'http://$(POD):8080/$(LATER)' },
      { name: 'LATER', value: 'x' },
      { name: 'RAW', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['note']" } } },
    ],
  };
  expect([...containerEnv(pod, c, 'spec.containers[0]', ctx)]).toEqual([
    ['POD', 'web-node1'],
    ['URL', 'http://web-node1:8080/$(LATER)'],
    ['LATER', 'x'],
    ['RAW', 'a "quoted" value'],
  ]);
});

test('an unknown fieldRef path is a CreateContainerConfigError naming pod, container and field', () => {
  const c: V1Container = { name: 'app', env: [{ name: 'A', value: '1' }, { name: 'B', valueFrom: { fieldRef: { fieldPath: 'spec.bogus' } } }] };
  expect(() => containerEnv(pod, c, 'spec.containers[2]', ctx)).toThrow(SyncError);
  try {
    containerEnv(pod, c, 'spec.containers[2]', ctx);
  } catch (err) {
    expect((err as SyncError).code).toBe('CreateContainerConfigError');
    expect((err as Error).message).toBe('pod prod/web-node1, container app: spec.containers[2].env[1].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.bogus"');
  }
});
