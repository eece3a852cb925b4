// Validation of spec.volumes and volumeMounts in static pod manifests, with the apiserver's fields and messages.
import { parsePodManifests } from '../../../src/sources/manifest.js';
import { qualifiedNameErrors } from '../../../src/sources/volume-validation.js';

function errors(volumes: string, mounts: string, containerExtra = ''): { field: string; message: string }[] {
  const text = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  volumes:
${volumes}
  containers:
  - name: app
    image: busybox
${containerExtra}    volumeMounts:
${mounts}
`;
  return parsePodManifests('/m/web.yaml', text, 'node', new Date(0)).errors.map(({ field, message }) => ({ field, message }));
}

const mount = '    - {name: data, mountPath: /data}';

test('a valid pod with every supported volume type has no errors', () => {
  expect(
    errors(
      `  - {name: data, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 64Mi}}
  - {name: host, hostPath: {path: /srv, type: DirectoryOrCreate}}
  - name: info
    downwardAPI:
      defaultMode: 0644
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: tier, fieldRef: {fieldPath: "metadata.labels['tier']"}}
      - {path: cpu, resourceFieldRef: {containerName: app, resource: limits.cpu, divisor: 1m}}
  - {name: img, image: {reference: "registry.example/data:1", pullPolicy: IfNotPresent}}
  - {name: img2, image: {reference: "UPPER case is no image name, checked at the pull", pullPolicy: ""}}`,
      `${mount}
    - {name: img, mountPath: /img, subPath: dir}
    - {name: img2, mountPath: /img2}
    - {name: mem, mountPath: /mem, subPath: a/b}
    - {name: host, mountPath: /srv, readOnly: true, mountPropagation: HostToContainer}
    - {name: info, mountPath: /info, subPathExpr: "$(POD)"}`,
    ),
  ).toEqual([]);
});

test.each([
  ['volume without name', '  - {emptyDir: {}}', mount, [{ field: 'spec.volumes[0].name', message: 'Required value' }, { field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "data"' }]],
  ['volume name not a DNS label', '  - {name: Data_1, emptyDir: {}}', '    - {name: Data_1, mountPath: /d}', [
    { field: 'spec.volumes[0].name', message: expect.stringContaining('Invalid value: "Data_1": a lowercase RFC 1123 label') },
    { field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "Data_1"' },
  ]],
  ['duplicate volume name', '  - {name: data, emptyDir: {}}\n  - {name: data, hostPath: {path: /x}}', mount, [{ field: 'spec.volumes[1].name', message: 'Duplicate value: "data"' }]],
  ['volume without source', '  - {name: data}', mount, [
    { field: 'spec.volumes[0]', message: 'Required value: must specify a volume type' },
    { field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "data"' },
  ]],
  ['two sources', '  - {name: data, emptyDir: {}, hostPath: {path: /x}}', mount, [
    { field: 'spec.volumes[0].hostPath', message: 'Forbidden: may not specify more than 1 volume type' },
    { field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "data"' },
  ]],
  ['hostPath without path', '  - {name: data, hostPath: {type: Directory}}', mount, [
    { field: 'spec.volumes[0].hostPath.path', message: 'Required value' },
    { field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "data"' },
  ]],
  ['hostPath with .. and a bad type', '  - {name: data, hostPath: {path: /a/../b, type: Folder}}', mount, [
    { field: 'spec.volumes[0].hostPath.path', message: `Invalid value: "/a/../b": must not contain '..'` },
    { field: 'spec.volumes[0].hostPath.type', message: 'Unsupported value: "Folder": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"' },
    { field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "data"' },
  ]],
  ['image volume without reference', '  - {name: data, image: {pullPolicy: Always}}', mount, [
    { field: 'spec.volumes[0].image.reference', message: 'Required value' },
    { field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "data"' },
  ]],
  ['image volume with an empty reference and a bad pullPolicy', '  - {name: data, image: {reference: "", pullPolicy: Sometimes}}', mount, [
    { field: 'spec.volumes[0].image.reference', message: 'Required value' },
    { field: 'spec.volumes[0].image.pullPolicy', message: 'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"' },
    { field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "data"' },
  ]],
  ['image volume with another source', '  - {name: data, emptyDir: {}, image: {reference: "busybox:1"}}', mount, [
    { field: 'spec.volumes[0].image', message: 'Forbidden: may not specify more than 1 volume type' },
    { field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "data"' },
  ]],
  ['negative sizeLimit', '  - {name: data, emptyDir: {sizeLimit: -1Mi}}', mount, [
    { field: 'spec.volumes[0].emptyDir.sizeLimit', message: 'Forbidden: SizeLimit field must be a valid resource quantity' },
    { field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "data"' },
  ]],
])('%s', (_, volumes, mounts, expected) => {
  expect(errors(volumes, mounts)).toEqual(expected);
});

test('downwardAPI items: errors carry the source path, as upstream', () => {
  const vol = (item: string) => `  - name: data\n    downwardAPI:\n      items:\n      - ${item}`;
  expect(errors(vol('{path: /abs, fieldRef: {fieldPath: metadata.name}}'), mount)).toContainEqual({ field: 'spec.volumes[0].downwardAPI.path', message: 'Invalid value: "/abs": must be a relative path' });
  expect(errors(vol('{path: ..x, fieldRef: {fieldPath: metadata.name}}'), mount)).toContainEqual({ field: 'spec.volumes[0].downwardAPI.path', message: `Invalid value: "..x": must not start with '..'` });
  expect(errors(vol('{path: a}'), mount)).toContainEqual({ field: 'spec.volumes[0].downwardAPI', message: 'Required value: one of fieldRef and resourceFieldRef is required' });
  expect(errors(vol('{path: a, fieldRef: {fieldPath: spec.nodeName}}'), mount)).toContainEqual({
    field: 'spec.volumes[0].downwardAPI.fieldRef.fieldPath',
    message: 'Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"',
  });
  expect(errors(vol('{path: a, fieldRef: {fieldPath: metadata.bogus}}'), mount)).toContainEqual({
    field: 'spec.volumes[0].downwardAPI.fieldRef.fieldPath',
    message: 'Invalid value: "metadata.bogus": error converting fieldPath: field label not supported: metadata.bogus',
  });
  expect(errors(vol('{path: a, mode: 01000, fieldRef: {fieldPath: metadata.name}}'), mount)).toContainEqual({
    field: 'spec.volumes[0].downwardAPI.mode',
    message: 'Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive',
  });
  expect(errors(vol('{path: a, resourceFieldRef: {resource: limits.cpu}}'), mount)).toContainEqual({ field: 'spec.volumes[0].downwardAPI.resourceFieldRef.containerName', message: 'Required value' });
  expect(errors(vol('{path: a, resourceFieldRef: {containerName: app, resource: limits.gpu}}'), mount)).toContainEqual({
    field: 'spec.volumes[0].downwardAPI.resourceFieldRef.resource',
    message: 'Unsupported value: "limits.gpu": supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"',
  });
  expect(errors(vol('{path: a, resourceFieldRef: {containerName: app, resource: limits.cpu, divisor: 1k}}'), mount)).toContainEqual({
    field: 'spec.volumes[0].downwardAPI.resourceFieldRef.divisor',
    message: `Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`,
  });
  expect(errors(vol('{path: a, resourceFieldRef: {containerName: app, resource: limits.cpu, divisor: 1000m}}'), mount)).toEqual([]);
  expect(errors(vol('{path: a, resourceFieldRef: {containerName: app, resource: requests.memory, divisor: 1m}}'), mount)).toContainEqual({
    field: 'spec.volumes[0].downwardAPI.resourceFieldRef.divisor',
    message: `Invalid value: "requests.memory": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource`,
  });
  expect(errors(vol(`{path: a, fieldRef: {fieldPath: "metadata.labels['bad key']"}}`), mount)).toContainEqual({
    field: 'spec.volumes[0].downwardAPI.fieldRef',
    message: expect.stringContaining('Invalid value: "bad key": name part must consist of alphanumeric characters'),
  });
});

test('volumeMounts: required fields, unique mountPath, subPath rules, propagation', () => {
  const vol = '  - {name: data, emptyDir: {}}';
  expect(errors(vol, '    - {name: data}')).toEqual([{ field: 'spec.containers[0].volumeMounts[0].mountPath', message: 'Required value' }]);
  expect(errors(vol, `${mount}\n    - {name: data, mountPath: /data}`)).toEqual([{ field: 'spec.containers[0].volumeMounts[1].mountPath', message: 'Invalid value: "/data": must be unique' }]);
  expect(errors(vol, '    - {name: data, mountPath: /d, subPath: /etc}')).toEqual([{ field: 'spec.containers[0].volumeMounts.subPath', message: 'Invalid value: "/etc": must be a relative path' }]);
  expect(errors(vol, '    - {name: data, mountPath: /d, subPath: ../x}')).toEqual([{ field: 'spec.containers[0].volumeMounts.subPath', message: `Invalid value: "../x": must not contain '..'` }]);
  expect(errors(vol, '    - {name: data, mountPath: /d, subPath: a, subPathExpr: b}')).toEqual([
    { field: 'spec.containers[0].volumeMounts[0].subPathExpr', message: 'Invalid value: "b": subPathExpr and subPath are mutually exclusive' },
  ]);
  expect(errors(vol, '    - {name: data, mountPath: /d, mountPropagation: Sideways}')).toEqual([
    { field: 'spec.containers[0].volumeMounts.mountPropagation', message: 'Unsupported value: "Sideways": supported values: "Bidirectional", "HostToContainer", "None"' },
  ]);
  expect(errors(vol, '    - {name: data, mountPath: /d, mountPropagation: Bidirectional}')).toEqual([
    { field: 'spec.containers[0].volumeMounts.mountPropagation', message: 'Forbidden: Bidirectional mount propagation is available only to privileged containers' },
  ]);
  expect(errors(vol, '    - {name: data, mountPath: /d, mountPropagation: Bidirectional}', '    securityContext: {privileged: true}\n')).toEqual([]);
  expect(errors(vol, '    - {name: data, mountPath: /d, recursiveReadOnly: Enabled}')).toEqual([
    { field: 'spec.containers[0].volumeMounts[0].recursiveReadOnly', message: 'Forbidden: may only be specified when readOnly is true' },
  ]);
});

test('qualifiedNameErrors', () => {
  expect(qualifiedNameErrors('app')).toEqual([]);
  expect(qualifiedNameErrors('example.com/team')).toEqual([]);
  expect(qualifiedNameErrors('/x')).toEqual(['prefix part must be non-empty']);
  expect(qualifiedNameErrors('a/b/c')[0]).toMatch(/^a qualified name must consist of/);
  expect(qualifiedNameErrors('x'.repeat(64))).toContain('name part must be no more than 63 characters');
});

test('env fileKeyRef: the volume must be an emptyDir of the pod, key/volumeName/path as the apiserver checks them', () => {
  const env = (ref: string) => `    env:\n    - {name: X, valueFrom: {fileKeyRef: ${ref}}}\n`;
  const volumes = '  - {name: data, emptyDir: {}}\n  - {name: host, hostPath: {path: /srv}}';
  expect(errors(volumes, mount, env('{volumeName: data, path: sub/x.env, key: "my.key-1"}'))).toEqual([]);
  expect(errors(volumes, mount, env('{volumeName: host, path: x.env, key: K}'))).toEqual([
    { field: 'spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName', message: 'Invalid value: "host": referenced volume must be of type emptyDir' },
  ]);
  expect(errors(volumes, mount, env('{volumeName: nope, path: ../x.env, key: "A=B"}'))).toEqual([
    {
      field: 'spec.containers[0].env[0].valueFrom.fileKeyRef.key',
      message: `Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
    },
    { field: 'spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName', message: 'Not found: "nope"' },
    { field: 'spec.containers[0].env[0].valueFrom.fileKeyRef.path', message: `Invalid value: "../x.env": must not contain '..'` },
  ]);
  expect(errors(volumes, mount, env('{}')).map((e) => `${e.field}: ${e.message}`)).toEqual([
    'spec.containers[0].env[0].valueFrom.fileKeyRef.key: Required value',
    'spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Required value',
    'spec.containers[0].env[0].valueFrom.fileKeyRef.path: Required value',
  ]);
});
