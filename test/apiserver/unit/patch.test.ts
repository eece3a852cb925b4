// Table tests of the PATCH formats: JSON merge patch, JSON patch, and strategic merge patch with k8s.io/api v1.32 merge keys (cases after apimachinery's strategicpatch tests, mapped onto Pod/Node fields).
import { PatchError, applyJsonMergePatch, applyJsonPatch, applyStrategicMergePatch } from '../patch.js';

type Obj = Record<string, unknown>;

function expectPatchError(fn: () => unknown, status: 400 | 422, message: string | RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(PatchError);
  expect((caught as PatchError).status).toBe(status);
  if (typeof message === 'string') expect((caught as PatchError).message).toBe(message);
  else expect((caught as PatchError).message).toMatch(message);
}

describe('applyJsonMergePatch', () => {
  const cases: { name: string; original: unknown; patch: unknown; result: unknown }[] = [
    { name: 'adds and replaces keys', original: { a: 1, b: { c: 1 } }, patch: { a: 2, d: 3 }, result: { a: 2, b: { c: 1 }, d: 3 } },
    { name: 'null deletes a key', original: { a: 1, b: 2 }, patch: { a: null }, result: { b: 2 } },
    { name: 'merges nested objects', original: { m: { x: 1, y: 2 } }, patch: { m: { y: null, z: 3 } }, result: { m: { x: 1, z: 3 } } },
    { name: 'a list replaces a list', original: { l: [1, 2, 3] }, patch: { l: [4] }, result: { l: [4] } },
    { name: 'an object replaces a scalar, its nulls dropped', original: { a: 'x' }, patch: { a: { b: 1, c: null } }, result: { a: { b: 1 } } },
    { name: 'a scalar replaces an object', original: { a: { b: 1 } }, patch: { a: 'x' }, result: { a: 'x' } },
    { name: 'deleting a missing key is a no-op', original: { a: 1 }, patch: { b: null }, result: { a: 1 } },
    { name: 'top-level list replaces the document', original: { a: 1 }, patch: [1, 2], result: [1, 2] },
  ];
  it.each(cases)('$name', ({ original, patch, result }) => {
    const before = structuredClone(original);
    expect(applyJsonMergePatch(original, patch)).toEqual(result);
    expect(original).toEqual(before);
  });

  it.each([null, 'x', 3])('refuses a top-level %p patch with 400 like kube-apiserver', (patch) => {
    expectPatchError(() => applyJsonMergePatch({ a: 1 }, patch), 400, 'Invalid JSON Patch');
  });
});

describe('applyJsonPatch', () => {
  const doc = { metadata: { labels: { 'a/b': 'x', 'c~d': 'y' } }, list: [1, 2, 3] };
  const cases: { name: string; ops: unknown[]; result: unknown }[] = [
    { name: 'add to an object', ops: [{ op: 'add', path: '/metadata/name', value: 'n' }], result: { ...doc, metadata: { ...doc.metadata, name: 'n' } } },
    { name: 'add with - appends', ops: [{ op: 'add', path: '/list/-', value: 4 }], result: { ...doc, list: [1, 2, 3, 4] } },
    { name: 'add inserts at an index', ops: [{ op: 'add', path: '/list/1', value: 9 }], result: { ...doc, list: [1, 9, 2, 3] } },
    { name: 'add at the end index', ops: [{ op: 'add', path: '/list/3', value: 9 }], result: { ...doc, list: [1, 2, 3, 9] } },
    { name: 'remove with ~1 escape', ops: [{ op: 'remove', path: '/metadata/labels/a~1b' }], result: { ...doc, metadata: { labels: { 'c~d': 'y' } } } },
    { name: 'replace with ~0 escape', ops: [{ op: 'replace', path: '/metadata/labels/c~0d', value: 'z' }], result: { ...doc, metadata: { labels: { 'a/b': 'x', 'c~d': 'z' } } } },
    { name: 'remove from a list', ops: [{ op: 'remove', path: '/list/0' }], result: { ...doc, list: [2, 3] } },
    { name: 'negative index counts from the end', ops: [{ op: 'remove', path: '/list/-1' }], result: { ...doc, list: [1, 2] } },
    { name: 'move', ops: [{ op: 'move', from: '/list', path: '/moved' }], result: { metadata: doc.metadata, moved: [1, 2, 3] } },
    { name: 'copy', ops: [{ op: 'copy', from: '/list/2', path: '/list/0' }], result: { ...doc, list: [3, 1, 2, 3] } },
    { name: 'test then replace', ops: [{ op: 'test', path: '/list/0', value: 1 }, { op: 'replace', path: '/list/0', value: 0 }], result: { ...doc, list: [0, 2, 3] } },
    { name: 'test of a missing key against null passes', ops: [{ op: 'test', path: '/nope', value: null }], result: doc },
    { name: 'replace the root', ops: [{ op: 'replace', path: '', value: { x: 1 } }], result: { x: 1 } },
  ];
  it.each(cases)('$name', ({ ops, result }) => {
    const before = structuredClone(doc);
    expect(applyJsonPatch(doc, ops)).toEqual(result);
    expect(doc).toEqual(before);
  });

  const failures: { name: string; ops: unknown; status: 400 | 422; message: string }[] = [
    { name: 'failed test', ops: [{ op: 'test', path: '/list/0', value: 5 }], status: 422, message: 'testing value /list/0 failed: test failed' },
    { name: 'add under a missing parent', ops: [{ op: 'add', path: '/spec/x', value: 1 }], status: 422, message: 'add operation does not apply: doc is missing path: "/spec/x": missing value' },
    { name: 'remove of a missing key', ops: [{ op: 'remove', path: '/metadata/name' }], status: 422, message: "error in remove for path: '/metadata/name': Unable to remove nonexistent key: name: missing value" },
    { name: 'replace of a missing key', ops: [{ op: 'replace', path: '/metadata/name', value: 'x' }], status: 422, message: 'replace operation does not apply: doc is missing key: /metadata/name: missing value' },
    { name: 'add past the end of a list', ops: [{ op: 'add', path: '/list/7', value: 1 }], status: 422, message: "error in add for path: '/list/7': Unable to access invalid index: 7: invalid index referenced" },
    { name: 'move from a missing path', ops: [{ op: 'move', from: '/a/b', path: '/c' }], status: 422, message: 'move operation does not apply: doc is missing from path: /a/b: missing value' },
    { name: 'unknown op', ops: [{ op: 'frobnicate', path: '/a' }], status: 422, message: 'Unexpected kind: frobnicate' },
    { name: 'not a list of operations', ops: { op: 'add' }, status: 400, message: 'json: cannot unmarshal object into Go value of type jsonpatch.Patch' },
  ];
  it.each(failures)('$name -> $status', ({ ops, status, message }) => {
    const before = structuredClone(doc);
    expectPatchError(() => applyJsonPatch(doc, ops), status, message);
    expect(doc).toEqual(before);
  });
});

describe('applyStrategicMergePatch', () => {
  const cases: { name: string; kind: string; original: Obj; patch: Obj; result: Obj }[] = [
    {
      name: 'status.conditions merge by type (kubelet status patch with $setElementOrder)',
      kind: 'Pod',
      original: {
        status: {
          phase: 'Pending',
          conditions: [
            { type: 'PodScheduled', status: 'True' },
            { type: 'Ready', status: 'False', reason: 'ContainersNotReady' },
          ],
        },
      },
      patch: {
        status: {
          '$setElementOrder/conditions': [{ type: 'PodScheduled' }, { type: 'Initialized' }, { type: 'Ready' }],
          conditions: [
            { type: 'Initialized', status: 'True' },
            { type: 'Ready', status: 'True', reason: null },
          ],
          phase: 'Running',
        },
      },
      result: {
        status: {
          phase: 'Running',
          conditions: [
            { type: 'PodScheduled', status: 'True' },
            { type: 'Initialized', status: 'True' },
            { type: 'Ready', status: 'True' },
          ],
        },
      },
    },
    {
      name: 'status.containerStatuses is atomic in k8s.io/api v1.32 (the patch list replaces it)',
      kind: 'Pod',
      original: { status: { containerStatuses: [{ name: 'a', ready: true, restartCount: 2 }, { name: 'b', ready: true }] } },
      patch: { status: { containerStatuses: [{ name: 'a', ready: false }] } },
      result: { status: { containerStatuses: [{ name: 'a', ready: false }] } },
    },
    {
      name: 'status.podIPs merge by ip',
      kind: 'Pod',
      original: { status: { podIPs: [{ ip: '10.0.0.1' }] } },
      patch: { status: { podIP: 'fd00::1', podIPs: [{ ip: 'fd00::1' }] } },
      result: { status: { podIP: 'fd00::1', podIPs: [{ ip: 'fd00::1' }, { ip: '10.0.0.1' }] } },
    },
    {
      name: '$patch: delete removes a container by name',
      kind: 'Pod',
      original: { spec: { containers: [{ name: 'a', image: 'x' }, { name: 'b', image: 'y' }] } },
      patch: { spec: { containers: [{ name: 'a', $patch: 'delete' }] } },
      result: { spec: { containers: [{ name: 'b', image: 'y' }] } },
    },
    {
      name: 'container image patched by name; env merged by name inside it',
      kind: 'Pod',
      original: { spec: { containers: [{ name: 'a', image: 'x:1', env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }] }] } },
      patch: { spec: { containers: [{ name: 'a', image: 'x:2', env: [{ name: 'B', value: '3' }] }] } },
      result: { spec: { containers: [{ name: 'a', image: 'x:2', env: [{ name: 'A', value: '1' }, { name: 'B', value: '3' }] }] } },
    },
    {
      name: 'patch order wins; server-only items keep their place (kube: "preserve the order from the patch in a merging list 2")',
      kind: 'Pod',
      original: { spec: { containers: [{ name: '1' }, { name: '2', image: 'b' }, { name: '3' }] } },
      patch: { spec: { containers: [{ name: '3', image: 'c' }, { name: '1', image: 'a' }] } },
      result: { spec: { containers: [{ name: '2', image: 'b' }, { name: '3', image: 'c' }, { name: '1', image: 'a' }] } },
    },
    {
      name: 'a new list item without $setElementOrder goes before the server-only items',
      kind: 'Pod',
      original: { status: { conditions: [{ type: 'PodScheduled', status: 'True' }] } },
      patch: { status: { conditions: [{ type: 'Ready', status: 'False' }] } },
      result: { status: { conditions: [{ type: 'Ready', status: 'False' }, { type: 'PodScheduled', status: 'True' }] } },
    },
    {
      name: 'kube: "add map and delete map from merging list" ($setElementOrder with deletion)',
      kind: 'Pod',
      original: { spec: { containers: [{ name: '1' }, { name: '2', image: 'b' }, { name: '4', image: 'c' }] } },
      patch: { spec: { '$setElementOrder/containers': [{ name: '2' }, { name: '3' }], containers: [{ name: '3' }, { name: '1', $patch: 'delete' }] } },
      result: { spec: { containers: [{ name: '2', image: 'b' }, { name: '4', image: 'c' }, { name: '3' }] } },
    },
    {
      name: 'kube: "add multiple items in a list and preserve order"',
      kind: 'Pod',
      original: { spec: { containers: [{ name: '1', image: 'a' }, { name: '2', image: '2', tty: true }] } },
      patch: { spec: { '$setElementOrder/containers': [{ name: '1' }, { name: '4' }, { name: '2' }, { name: '3' }], containers: [{ name: '4', image: '4' }, { name: '3', image: '3' }] } },
      result: { spec: { containers: [{ name: '1', image: 'a' }, { name: '4', image: '4' }, { name: '2', image: '2', tty: true }, { name: '3', image: '3' }] } },
    },
    {
      name: '$patch: replace item replaces the whole list',
      kind: 'Pod',
      original: { spec: { volumes: [{ name: 'a', emptyDir: {} }, { name: 'b', emptyDir: {} }] } },
      patch: { spec: { volumes: [{ $patch: 'replace' }, { name: 'c', emptyDir: {} }] } },
      result: { spec: { volumes: [{ name: 'c', emptyDir: {} }] } },
    },
    {
      name: '$retainKeys on a volume clears the old source',
      kind: 'Pod',
      original: { spec: { volumes: [{ name: 'v', emptyDir: {} }] } },
      patch: { spec: { volumes: [{ name: 'v', $retainKeys: ['configMap', 'name'], configMap: { name: 'cm' } }] } },
      result: { spec: { volumes: [{ name: 'v', configMap: { name: 'cm' } }] } },
    },
    {
      name: 'tolerations are atomic',
      kind: 'Pod',
      original: { spec: { tolerations: [{ key: 'a', operator: 'Exists' }] } },
      patch: { spec: { tolerations: [{ key: 'b', operator: 'Exists' }] } },
      result: { spec: { tolerations: [{ key: 'b', operator: 'Exists' }] } },
    },
    {
      name: 'finalizers merge as a set; $deleteFromPrimitiveList removes',
      kind: 'Pod',
      original: { metadata: { finalizers: ['a', 'b'] } },
      patch: { metadata: { finalizers: ['b', 'c'], '$deleteFromPrimitiveList/finalizers': ['a'] } },
      result: { metadata: { finalizers: ['b', 'c'] } },
    },
    {
      name: 'kube: "add and delete items in lists of scalars" with $setElementOrder',
      kind: 'Node',
      original: { spec: { podCIDRs: ['1', '2', '3'] } },
      patch: { spec: { '$setElementOrder/podCIDRs': ['1', '2', '4'], '$deleteFromPrimitiveList/podCIDRs': ['3'], podCIDRs: ['4'] } },
      result: { spec: { podCIDRs: ['1', '2', '4'] } },
    },
    {
      name: 'ownerReferences merge by uid',
      kind: 'ConfigMap',
      original: { metadata: { ownerReferences: [{ uid: 'u1', name: 'a', kind: 'Pod', apiVersion: 'v1' }] } },
      patch: { metadata: { ownerReferences: [{ uid: 'u2', name: 'b', kind: 'Pod', apiVersion: 'v1' }] } },
      result: { metadata: { ownerReferences: [{ uid: 'u2', name: 'b', kind: 'Pod', apiVersion: 'v1' }, { uid: 'u1', name: 'a', kind: 'Pod', apiVersion: 'v1' }] } },
    },
    {
      name: 'null deletes a label; $patch: replace on annotations',
      kind: 'ConfigMap',
      original: { metadata: { labels: { a: '1', b: '2' }, annotations: { x: '1', y: '2' } }, data: { k: 'v' } },
      patch: { metadata: { labels: { a: null, c: '3' }, annotations: { $patch: 'replace', z: '3' } } },
      result: { metadata: { labels: { b: '2', c: '3' }, annotations: { z: '3' } }, data: { k: 'v' } },
    },
    {
      name: '$patch: delete on a map empties it',
      kind: 'ConfigMap',
      original: { data: { a: '1' } },
      patch: { data: { $patch: 'delete' } },
      result: { data: {} },
    },
    {
      name: 'node addresses and conditions merge by type; images are atomic',
      kind: 'Node',
      original: {
        status: {
          addresses: [{ type: 'InternalIP', address: '10.0.0.1' }, { type: 'Hostname', address: 'n1' }],
          conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: 't1' }, { type: 'MemoryPressure', status: 'False' }],
          images: [{ names: ['a'] }, { names: ['b'] }],
        },
      },
      patch: {
        status: {
          addresses: [{ type: 'InternalIP', address: '10.0.0.2' }],
          conditions: [{ type: 'Ready', lastHeartbeatTime: 't2' }],
          images: [{ names: ['c'] }],
        },
      },
      result: {
        status: {
          addresses: [{ type: 'InternalIP', address: '10.0.0.2' }, { type: 'Hostname', address: 'n1' }],
          conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: 't2' }, { type: 'MemoryPressure', status: 'False' }],
          images: [{ names: ['c'] }],
        },
      },
    },
    {
      name: 'a value of another type replaces the original',
      kind: 'Lease',
      original: { spec: { holderIdentity: 'n1', leaseDurationSeconds: 40 } },
      patch: { spec: { renewTime: '2024-01-01T00:00:00.000000Z', leaseDurationSeconds: 30 } },
      result: { spec: { holderIdentity: 'n1', leaseDurationSeconds: 30, renewTime: '2024-01-01T00:00:00.000000Z' } },
    },
  ];
  it.each(cases)('$name', ({ kind, original, patch, result }) => {
    const cleanPatch = JSON.parse(JSON.stringify(patch)) as Obj;
    const before = structuredClone(original);
    const patchBefore = structuredClone(cleanPatch);
    expect(applyStrategicMergePatch(original, cleanPatch, kind)).toEqual(result);
    expect(original).toEqual(before);
    expect(cleanPatch).toEqual(patchBefore);
  });

  const failures: { name: string; kind: string; original: Obj; patch: Obj; status: 400 | 422; message: string | RegExp }[] = [
    {
      name: 'missing merge key',
      kind: 'Pod',
      original: { spec: { containers: [{ name: 'a' }] } },
      patch: { spec: { containers: [{ image: 'b' }] } },
      status: 422,
      message: 'map: map[image:b] does not contain declared merge key: name',
    },
    {
      name: '$setElementOrder disagreeing with the patch list',
      kind: 'Pod',
      original: { spec: { containers: [{ name: '1' }, { name: '3' }, { name: '2' }] } },
      patch: { spec: { '$setElementOrder/containers': [{ name: '1' }, { name: '2' }, { name: '3' }], containers: [{ name: '3', image: '3' }, { name: '1', image: '1' }] } },
      status: 422,
      message: /doesn't match \$setElementOrder list/,
    },
    {
      name: 'a key outside $retainKeys',
      kind: 'Pod',
      original: { spec: { volumes: [{ name: 'v', emptyDir: {} }] } },
      patch: { spec: { volumes: [{ name: 'v', $retainKeys: ['name'], hostPath: { path: '/x' } }] } },
      status: 400,
      message: 'invalid patch format of retainKeys',
    },
    {
      name: '$deleteFromPrimitiveList without a field',
      kind: 'Pod',
      original: { metadata: {} },
      patch: { metadata: { $deleteFromPrimitiveList: ['a'] } },
      status: 400,
      message: 'invalid patch format of primitive list',
    },
    {
      name: '$patch: merge on a list item',
      kind: 'Pod',
      original: { spec: { containers: [{ name: 'a' }] } },
      patch: { spec: { containers: [{ name: 'a', $patch: 'merge' }] } },
      status: 422,
      message: 'merging lists cannot yet be specified in the patch',
    },
    {
      name: 'unknown $patch on a map',
      kind: 'Pod',
      original: { metadata: { labels: { a: '1' } } },
      patch: { metadata: { labels: { $patch: 'frob' } } },
      status: 422,
      message: 'unknown patch type: frob in map: map[$patch:frob]',
    },
    { name: 'a kind without a schema', kind: 'Widget', original: {}, patch: {}, status: 400, message: 'strategic merge patch format is not supported' },
  ];
  it.each(failures)('$name -> $status', ({ kind, original, patch, status, message }) => {
    expectPatchError(() => applyStrategicMergePatch(original, patch, kind), status, message);
  });
});
