// Pods beyond nodelet's limits: too many containers, or literal env expansions past Linux's or CRI's limits.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { MAX_POD_CONTAINERS, podLimitRejection, podLimitViolation } from '../../../src/decisions/pod-limits.js';

const pod = (containers: V1Container[], initContainers: V1Container[] = []): V1Pod => ({
  metadata: { name: 'p', namespace: 'ns' },
  spec: { containers, initContainers },
});
const c = (name: string, extra: Partial<V1Container> = {}): V1Container => ({ name, image: 'busybox', ...extra });
const many = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => c(`${prefix}${i}`));

test('containers and init containers together are counted against the limit', () => {
  expect(podLimitViolation(pod(many(MAX_POD_CONTAINERS - 10, 'c'), many(10, 'i')))).toBeUndefined();
  expect(podLimitViolation(pod(many(MAX_POD_CONTAINERS - 10, 'c'), many(11, 'i')))).toEqual({
    field: 'spec.containers',
    message: 'Too many: 251: must have at most 250 items (init containers included)',
  });
});

test('an env chain whose variables repeat the one before is refused at the first value past the limit', () => {
  const env = [
    { name: 'A', value: 'x'.repeat(100) },
    { name: 'B', value: '$(A)'.repeat(100) },
    { name: 'C', value: '$(B)'.repeat(100) },
    { name: 'D', value: '$(C)'.repeat(100) },
  ];
  expect(podLimitViolation(pod([c('ok'), c('bomb', { env })]))).toEqual({
    field: 'spec.containers[1].env[2].value',
    message: "expands to more than 131072 characters, Linux's limit for one argument or environment variable",
  });
  expect(podLimitRejection(pod([c('bomb', { env })]))).toEqual({
    reason: 'PodExceedsLimits',
    message: "Pod ns/p: spec.containers[0].env[2].value: expands to more than 131072 characters, Linux's limit for one argument or environment variable",
  });
});

test('command and args expand with the literal env; values from elsewhere are left to the container start', () => {
  const env = [{ name: 'A', value: 'y'.repeat(10_000) }, { name: 'F', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }];
  expect(podLimitViolation(pod([c('a', { env, command: ['sh'], args: ['$(F)'.repeat(30_000)] })]))).toBeUndefined();
  expect(podLimitViolation(pod([], [c('i', { env, args: ['ok', '$(A)'.repeat(14)] })]))).toEqual({
    field: 'spec.initContainers[0].args[1]',
    message: expect.stringMatching(/^expands to more than 131072 characters/),
  });
});

test('an environment past the CRI message limit in all is refused', () => {
  const env = [{ name: 'A', value: 'z'.repeat(130_000) }, ...Array.from({ length: 130 }, (_, i) => ({ name: `V${i}`, value: '$(A)' }))];
  expect(podLimitViolation(pod([c('big', { env })]))).toEqual({ field: 'spec.containers[0].env', message: 'more than 16777216 characters in all, over the CRI message limit' });
});
