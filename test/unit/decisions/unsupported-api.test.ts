// Fields that read API objects: accepted with an API server, refused standalone with a message that says to use --kubeconfig.
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

test('with an API server the pod is accepted', () => {
  expect(unsupportedPodFields(pod, { apiServer: true })).toBeUndefined();
});

test('standalone, the pod is refused naming every such field', () => {
  expect(unsupportedPodFields(pod)).toEqual({
    reason: 'UnsupportedPodSpec',
    message:
      'Pod default/p uses fields that need an API server (nodelet runs standalone; start it with --kubeconfig): ' +
      'spec.volumes[0].configMap, spec.volumes[1].projected, spec.containers[0].envFrom, spec.containers[0].env[0].valueFrom.configMapKeyRef',
  });
});

test('both kinds of refusal are named', () => {
  const nfs: V1Pod = { ...pod, spec: { ...pod.spec!, volumes: [...(pod.spec!.volumes ?? []), { name: 'share', nfs: { server: '192.0.2.1', path: '/' } }] } };
  expect(unsupportedPodFields(nfs)?.message).toBe(
    'Pod default/p uses fields nodelet does not support yet: spec.volumes[2].nfs; and uses fields that need an API server ' +
      '(nodelet runs standalone; start it with --kubeconfig): spec.volumes[0].configMap, spec.volumes[1].projected, spec.containers[0].envFrom, ' +
      'spec.containers[0].env[0].valueFrom.configMapKeyRef',
  );
  expect(unsupportedPodFields(nfs, { apiServer: true })?.message).toBe('Pod default/p uses fields nodelet does not support yet: spec.volumes[2].nfs');
});

test('pod-level resources are refused until built; an empty spec.resources is not', () => {
  const plr: V1Pod = { ...pod, spec: { ...pod.spec!, resources: { limits: { memory: '1Gi' } } } };
  expect(unsupportedPodFields(plr, { apiServer: true })?.message).toBe('Pod default/p uses fields nodelet does not support yet: spec.resources');
  expect(unsupportedPodFields({ ...pod, spec: { ...pod.spec!, resources: {} } }, { apiServer: true })).toBeUndefined();
});
