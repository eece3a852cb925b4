// Container environment: expansion order and the downward API's fieldRef.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerEnv, podFieldValue } from '../../../src/execution/env.js';
import { parseQuantity } from '../../../src/core/quantity.js';
import { SyncError } from '../../../src/core/sync-result.js';
import { buildContainerConfig } from '../../../src/execution/runtime-config.js';

const pod: V1Pod = {
  metadata: { name: 'web-node1', namespace: 'prod', uid: 'u-1', labels: { app: 'web', tier: 'front' }, annotations: { note: 'a "quoted" value' } },
  spec: { nodeName: 'node1', serviceAccountName: 'builder', containers: [] },
};
const allocatable = { cpu: parseQuantity('2'), memory: parseQuantity('8Gi'), 'ephemeral-storage': parseQuantity('100Gi') };
const ctx = { podIPs: ['10.99.0.9'], hostIP: '192.0.2.2', allocatable: async () => allocatable, volumePath: () => undefined };

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

test('whole label or annotation maps are for volumes only', () => {
  expect(podFieldValue(pod, 'metadata.labels', ctx)).toBeUndefined();
  expect(podFieldValue(pod, 'spec.bogus', ctx)).toBeUndefined();
});

test('resourceFieldRef reads the container\'s own limits and requests with the divisor, unset limits from the node', async () => {
  const c: V1Container = {
    name: 'app',
    resources: { limits: { memory: '64Mi' }, requests: { cpu: '250m' } },
    env: [
      { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
      { name: 'CPU_REQ', valueFrom: { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } } },
      { name: 'CPU_LIMIT', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
    ],
  };
  const p: V1Pod = { ...pod, spec: { containers: [c] } };
  expect([...(await containerEnv(p, c, 'spec.containers[0]', ctx))]).toEqual([['MEM', '64'], ['CPU_REQ', '250'], ['CPU_LIMIT', '2']]);
});

test('env values expand against earlier variables, fieldRef values are not expanded', async () => {
  const c: V1Container = {
    name: 'app',
    env: [
      { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'URL', value: 'http://$(POD):8080/$(LATER)' },
      { name: 'LATER', value: 'x' },
      { name: 'RAW', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['note']" } } },
    ],
  };
  expect([...(await containerEnv(pod, c, 'spec.containers[0]', ctx))]).toEqual([
    ['POD', 'web-node1'],
    ['URL', 'http://web-node1:8080/$(LATER)'],
    ['LATER', 'x'],
    ['RAW', 'a "quoted" value'],
  ]);
});

test('an unknown fieldRef path is a CreateContainerConfigError naming pod, container and field', async () => {
  const c: V1Container = { name: 'app', env: [{ name: 'A', value: '1' }, { name: 'B', valueFrom: { fieldRef: { fieldPath: 'spec.bogus' } } }] };
  const err = await containerEnv(pod, c, 'spec.containers[2]', ctx).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SyncError);
  expect((err as SyncError).code).toBe('CreateContainerConfigError');
  expect((err as Error).message).toBe('pod prod/web-node1, container app: spec.containers[2].env[1].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.bogus"');
});

test('an expansion past the limit, with values read at the start, is a CreateContainerConfigError naming the field', async () => {
  // The pod's own annotation is 100 KB: the literal check at admission could not see it.
  const big: V1Pod = { ...pod, metadata: { ...pod.metadata, annotations: { blob: 'b'.repeat(100_000) } } };
  const c: V1Container = {
    name: 'app',
    env: [{ name: 'BLOB', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['blob']" } } }, { name: 'TWICE', value: '$(BLOB)$(BLOB)' }],
  };
  const err = await containerEnv(big, c, 'spec.containers[0]', ctx).catch((e: unknown) => e);
  expect((err as SyncError).code).toBe('CreateContainerConfigError');
  expect((err as Error).message).toBe(
    "pod prod/web-node1, container app: spec.containers[0].env[1].value: expands to more than 131072 characters, Linux's limit for one argument or environment variable",
  );
});

test('command and args past the limit are the container config error too', () => {
  const env = new Map([['A', 'a'.repeat(70_000)]]);
  const c: V1Container = { name: 'app', image: 'busybox', args: ['ok', '$(A)$(A)'] };
  let err: unknown;
  try {
    buildContainerConfig({ ...pod, spec: { ...pod.spec!, containers: [c] } }, c, 0, env);
  } catch (e) {
    err = e;
  }
  expect((err as SyncError).code).toBe('CreateContainerConfigError');
  expect((err as Error).message).toMatch(/^pod prod\/web-node1, container app: args\[1\]: expands to more than 131072 characters/);
});

describe('buildContainerConfig: an ephemeral container\'s target', () => {
  const c: V1Container = { name: 'debugger', image: 'busybox:1' };
  const podWith = (extra: Partial<V1Pod['spec']> = {}): V1Pod => ({ metadata: { name: 'p', namespace: 'd', uid: 'u' }, spec: { containers: [{ name: 'app' }], ...extra } });
  test('joins the target container\'s process namespace (TARGET with its ID)', () => {
    const ns = buildContainerConfig(podWith(), c, 0, new Map(), { targetContainerId: 'abc' }).linux!.securityContext!.namespaceOptions!;
    expect(ns).toMatchObject({ pid: 'TARGET', targetId: 'abc', network: 'POD', ipc: 'POD' });
  });
  test('a pod that shares one process namespace (or the host\'s) keeps it, as kubelet does', () => {
    expect(buildContainerConfig(podWith({ shareProcessNamespace: true }), c, 0, new Map(), { targetContainerId: 'abc' }).linux!.securityContext!.namespaceOptions).toEqual({ network: 'POD', pid: 'POD', ipc: 'POD' });
    expect(buildContainerConfig(podWith({ hostPID: true }), c, 0, new Map(), { targetContainerId: 'abc' }).linux!.securityContext!.namespaceOptions!.pid).toBe('NODE');
    expect(buildContainerConfig(podWith(), c, 0, new Map()).linux!.securityContext!.namespaceOptions!.pid).toBe('CONTAINER');
  });
});
