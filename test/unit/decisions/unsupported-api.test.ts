// Fields that read API objects are accepted (static pods with them never get here: the file source refuses them);
// fields nodelet cannot honour yet are refused, named.
import type { V1Pod } from '@kubernetes/client-node';
import { unsupportedPodFields } from '../../../src/decisions/unsupported.js';

const pod: V1Pod = {
  metadata: { name: 'p', namespace: 'default', uid: 'u' },
  spec: {
    volumes: [{ name: 'cfg', configMap: { name: 'c' } }, { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 't' } }] } }],
    containers: [
      {
        name: 'app',
        envFrom: [{ secretRef: { name: 's' } }],
        env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'c', key: 'a' } } }],
      },
    ],
  },
};

test('a pod reading configMaps, secrets and tokens is accepted', () => {
  expect(unsupportedPodFields(pod)).toBeUndefined();
});

test('unsupported fields are named', () => {
  const nfs: V1Pod = { ...pod, spec: { ...pod.spec!, volumes: [...(pod.spec!.volumes ?? []), { name: 'share', nfs: { server: '192.0.2.1', path: '/' } }] } };
  expect(unsupportedPodFields(nfs)?.message).toBe('Pod default/p uses fields nodelet does not support yet: spec.volumes[2].nfs');
});

test('pod-level resources are refused until built; an empty spec.resources is not', () => {
  const plr: V1Pod = { ...pod, spec: { ...pod.spec!, resources: { limits: { memory: '1Gi' } } } };
  expect(unsupportedPodFields(plr)?.message).toBe('Pod default/p uses fields nodelet does not support yet: spec.resources');
  expect(unsupportedPodFields({ ...pod, spec: { ...pod.spec!, resources: {} } })).toBeUndefined();
});
