// Static pods may not reference API objects (kubelet 1.37's HasAPIObjectReference): the first reference, kubelet's words.
import { parsePodManifests } from '../../../src/sources/manifest.js';

function refused(spec: string): { field: string; message: string }[] {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n${spec}`;
  const { pods, errors } = parsePodManifests('/m/web.yaml', text, 'node', new Date(0));
  if (errors.length === 0) expect(pods).toHaveLength(1);
  return errors.map(({ field, message }) => ({ field, message }));
}

const container = (extra = '') => `  containers:\n  - name: app\n    image: busybox\n${extra}`;

test.each([
  ['serviceAccountName', `  serviceAccountName: builder\n${container()}`, 'spec.serviceAccountName', 'serviceaccounts'],
  ['an image pull secret', `  imagePullSecrets: [{name: reg}]\n${container()}`, 'spec.imagePullSecrets[0]', 'secrets'],
  ['envFrom a secret', container('    envFrom: [{secretRef: {name: s}}]\n'), 'spec.containers[0].envFrom[0].secretRef', 'secrets'],
  ['a secretKeyRef', container('    env: [{name: X, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n'), 'spec.containers[0].env[0].valueFrom.secretKeyRef', 'secrets'],
  ['a secret volume', `  volumes: [{name: v, secret: {secretName: s}}]\n${container()}`, 'spec.volumes[0].secret', 'secrets'],
  ['a secret volume without a name', `  volumes: [{name: v, secret: {}}]\n${container()}`, 'spec.volumes[0].secret', 'secrets (via secret volumes)'],
  ['a projected secret', `  volumes: [{name: v, projected: {sources: [{downwardAPI: {}}, {secret: {name: s}}]}}]\n${container()}`, 'spec.volumes[0].projected.sources[1].secret', 'secrets'],
  ['a configMapKeyRef', container('    env: [{name: X, valueFrom: {configMapKeyRef: {name: c, key: k}}}]\n'), 'spec.containers[0].env[0].valueFrom.configMapKeyRef', 'configmaps'],
  ['envFrom a configMap', container('    envFrom: [{configMapRef: {name: c}}]\n'), 'spec.containers[0].envFrom[0].configMapRef', 'configmaps'],
  ['a configMap volume', `  volumes: [{name: v, configMap: {name: c}}]\n${container()}`, 'spec.volumes[0].configMap', 'configmaps'],
  ['a projected token', `  volumes: [{name: v, projected: {sources: [{serviceAccountToken: {path: t}}]}}]\n${container()}`, 'spec.volumes[0].projected.sources[0].serviceAccountToken', 'serviceaccounts (via projected volumes)'],
  ['a cluster trust bundle', `  volumes: [{name: v, projected: {sources: [{clusterTrustBundle: {name: b, path: ca.pem}}]}}]\n${container()}`, 'spec.volumes[0].projected.sources[0].clusterTrustBundle', 'clustertrustbundles'],
  ['a PVC', `  volumes: [{name: v, persistentVolumeClaim: {claimName: c}}]\n${container()}`, 'spec.volumes[0].persistentVolumeClaim', 'persistentvolumeclaims'],
])('%s is refused', (_name, spec, field, resource) => {
  expect(refused(spec)).toEqual([{ field, message: `static pods may not reference ${resource}` }]);
});

test("kubelet's order: the service account before secrets, secrets before configMaps, whatever their place", () => {
  const env = '    env: [{name: A, valueFrom: {configMapKeyRef: {name: c, key: k}}}, {name: B, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n';
  expect(refused(container(env))[0]!.message).toBe('static pods may not reference secrets');
  expect(refused(`  serviceAccountName: x\n${container(env)}`)[0]!.message).toBe('static pods may not reference serviceaccounts');
});

test('emptyDir, hostPath, downwardAPI (also projected) and fieldRef env need no API object', () => {
  expect(
    refused(
      `  volumes:\n  - {name: a, emptyDir: {}}\n  - {name: b, hostPath: {path: /srv}}\n  - {name: c, downwardAPI: {items: [{path: pod-name, fieldRef: {fieldPath: metadata.name}}]}}\n` +
        `  - {name: d, projected: {sources: [{downwardAPI: {items: [{path: pod-name, fieldRef: {fieldPath: metadata.name}}]}}]}}\n` +
        container('    env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n'),
    ),
  ).toEqual([]);
});
