// Volume features nodelet refuses, by field path.
import { unsupportedVolumeFields } from '../../../src/volume/unsupported.js';

test('supported sources and recursiveReadOnly mounts pass; others and hugepages are named', () => {
  expect(
    unsupportedVolumeFields({
      spec: {
        volumes: [
          { name: 'a', emptyDir: {} },
          { name: 'b', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
          { name: 'c', hostPath: { path: '/x' } },
          { name: 'd', downwardAPI: { items: [{ path: 'l', fieldRef: { fieldPath: 'metadata.labels' } }] } },
          { name: 'e', image: { reference: 'registry.example/data:1', pullPolicy: 'IfNotPresent' } },
          // Admitted as kubelet admits it; its set-up fails (FailedMount).
          { name: 'g', gitRepo: { repository: 'https://example.invalid/r.git' } },
        ],
        containers: [{ name: 'm', volumeMounts: [{ name: 'a', mountPath: '/a', readOnly: true, recursiveReadOnly: 'Disabled' }, { name: 'c', mountPath: '/c', readOnly: true, recursiveReadOnly: 'Enabled' }] }],
      },
    }),
  ).toEqual([]);
  expect(
    unsupportedVolumeFields({
      spec: {
        volumes: [
          { name: 'a', configMap: { name: 'cm' } },
          // clusterTrustBundle and podCertificate are written; a source nodelet does not know is named.
          { name: 'b', projected: { sources: [{ serviceAccountToken: { path: 't' } }, { clusterTrustBundle: { path: 'b' } }, { futureSource: {} } as never, { podCertificate: { signerName: 's/x', keyType: 'ED25519' } }] } },
          { name: 'c', emptyDir: { medium: 'HugePages' } },
          { name: 'd', persistentVolumeClaim: { claimName: 'pvc' } },
          { name: 'e', downwardAPI: { items: [{ path: 'h', resourceFieldRef: { containerName: 'm', resource: 'limits.hugepages-2Mi' } }] } },
        ],
        containers: [{ name: 'm', volumeDevices: [{ name: 'd', devicePath: '/dev/x' }] }],
      },
    }),
  ).toEqual([
    'spec.volumes[1].projected.sources[2].futureSource',
    'spec.volumes[2].emptyDir.medium',
    'spec.volumes[3].persistentVolumeClaim',
    'spec.volumes[4].downwardAPI.items[0].resourceFieldRef',
    'spec.containers[0].volumeDevices',
  ]);
});
