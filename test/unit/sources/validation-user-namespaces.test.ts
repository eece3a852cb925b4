// Manifest validation of hostUsers as the apiserver's (validateHostUsers, ValidateSecurityContext's procMount): with the
// pod's own user namespace no host network, PID or IPC namespace and no volumeDevices; procMount Unmasked only with it.
import { parsePodManifests, type ManifestError } from '../../../src/sources/manifest.js';

function errorsOf(specLines: string, containerLines = ''): Array<Pick<ManifestError, 'field' | 'message'>> {
  const text = `apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n${specLines}  containers:\n  - name: app\n    image: busybox\n${containerLines}`;
  return parsePodManifests('/etc/nodelet/manifests/web.yaml', text, 'node-1', new Date('2024-05-01T10:00:00Z')).errors.map(({ field, message }) => ({ field, message }));
}

const unmasked = '    securityContext: {procMount: Unmasked}\n';

test('hostUsers false with procMount Unmasked is accepted; Unmasked without it is not', () => {
  expect(errorsOf('  hostUsers: false\n', unmasked)).toEqual([]);
  const refused = [{ field: 'spec.containers[0].securityContext.procMount', message: 'Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`' }];
  expect(errorsOf('  hostUsers: true\n', unmasked)).toEqual(refused);
  expect(errorsOf('', unmasked)).toEqual(refused);
});

test('hostUsers false refuses the host network, PID and IPC namespaces and volumeDevices, with the apiserver\'s paths', () => {
  expect(errorsOf('  hostUsers: false\n  hostNetwork: true\n  hostPID: true\n  hostIPC: true\n', '    volumeDevices: [{name: disk, devicePath: /dev/xvda}]\n')).toEqual(
    expect.arrayContaining([
      { field: 'spec.hostNetwork', message: 'Forbidden: when `hostUsers` is false' },
      { field: 'spec.HostPID', message: 'Forbidden: when `hostUsers` is false' },
      { field: 'spec.HostIPC', message: 'Forbidden: when `hostUsers` is false' },
      { field: 'spec.containers[0].volumeDevices', message: 'Forbidden: when `hostUsers` is false' },
    ]),
  );
  // With the host's user namespace they are the host's business, not this check's.
  expect(errorsOf('  hostUsers: true\n  hostNetwork: true\n  hostPID: true\n  hostIPC: true\n').filter((e) => e.message.includes('hostUsers'))).toEqual([]);
});

test('hostUsers must be a boolean', () => {
  expect(errorsOf('  hostUsers: "no"\n')).toEqual([{ field: 'spec.hostUsers', message: expect.stringContaining('a boolean') as unknown as string }]);
});
