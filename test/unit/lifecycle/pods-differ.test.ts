// podsDifferSemantically: what in an updated pod wakes its worker (spec, labels, annotations, deletion), what does not.
import type { V1Pod } from '@kubernetes/client-node';
import { podsDifferSemantically } from '../../../src/lifecycle/pod-worker.js';

const base: V1Pod = {
  metadata: { name: 'p', namespace: 'default', uid: 'u1', resourceVersion: '5', labels: { app: 'a' }, annotations: { x: '1' } },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
  status: { phase: 'Pending' },
};
const clone = (): V1Pod => structuredClone(base);

test.each<[string, (p: V1Pod) => void, boolean]>([
  ['a new status and resourceVersion (our own status write, echoed by the watch)', (p) => {
    p.status = { phase: 'Running', podIP: '10.99.0.2' };
    p.metadata!.resourceVersion = '6';
  }, false],
  ['the same labels in another key order', (p) => (p.metadata!.labels = { app: 'a' }), false],
  ['a changed image', (p) => (p.spec!.containers[0]!.image = 'busybox:1.36'), true],
  ['a new label', (p) => (p.metadata!.labels!.tier = 'web'), true],
  ['a changed annotation', (p) => (p.metadata!.annotations!.x = '2'), true],
  ['a deletion mark', (p) => {
    p.metadata!.deletionTimestamp = new Date('2026-01-01T00:00:00Z');
    p.metadata!.deletionGracePeriodSeconds = 30;
  }, true],
])('%s: differs = %s', (_what, change, differs) => {
  const next = clone();
  change(next);
  expect(podsDifferSemantically(base, next)).toBe(differs);
});
