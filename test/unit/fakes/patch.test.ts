import { applyJsonMergePatch, applyStrategicMergePatch } from './patch.js';

describe('applyJsonMergePatch (RFC 7386)', () => {
  test('merges objects, removes members set to null, replaces everything else', () => {
    const original = { metadata: { name: 'n1', labels: { a: '1', b: '2' } }, list: [1, 2] };
    expect(applyJsonMergePatch(original, { metadata: { labels: { b: null, c: '3' } }, list: [3] }))
      .toEqual({ metadata: { name: 'n1', labels: { a: '1', c: '3' } }, list: [3] });
    expect(original.metadata.labels).toEqual({ a: '1', b: '2' });
  });

  test('a non-object patch replaces the document', () => {
    expect(applyJsonMergePatch({ a: 1 }, 'x')).toBe('x');
  });
});

describe('applyStrategicMergePatch of a Node', () => {
  const node = {
    metadata: { name: 'n1' },
    status: {
      conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady' }, { type: 'MemoryPressure', status: 'False' }],
      addresses: [{ type: 'InternalIP', address: '10.0.0.1' }, { type: 'Hostname', address: 'n1' }],
      capacity: { cpu: '2', pods: '110' },
      images: [{ names: ['a'] }],
    },
  };

  test('conditions merge by type: a patched one changes, the others stay, a new one is appended', () => {
    const out = applyStrategicMergePatch(node, { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }, { type: 'PIDPressure', status: 'False' }] } }, 'Node');
    expect((out['status'] as typeof node.status).conditions).toEqual([
      { type: 'Ready', status: 'True', reason: 'KubeletReady' },
      { type: 'MemoryPressure', status: 'False' },
      { type: 'PIDPressure', status: 'False' },
    ]);
  });

  test('a `$patch: replace` element replaces the whole list; `$patch: delete` removes an element', () => {
    const replaced = applyStrategicMergePatch(node, { status: { addresses: [{ type: 'InternalIP', address: '10.0.0.2' }, { $patch: 'replace' }] } }, 'Node');
    expect((replaced['status'] as typeof node.status).addresses).toEqual([{ type: 'InternalIP', address: '10.0.0.2' }]);
    const deleted = applyStrategicMergePatch(node, { status: { conditions: [{ type: 'MemoryPressure', $patch: 'delete' }] } }, 'Node');
    expect((deleted['status'] as typeof node.status).conditions.map((c) => c.type)).toEqual(['Ready']);
  });

  test('maps merge by key with null removing one; lists without a merge key are replaced', () => {
    const out = applyStrategicMergePatch(node, { status: { capacity: { pods: '50', cpu: null }, images: [{ names: ['b'] }] } }, 'Node');
    expect(out['status']).toMatchObject({ capacity: { pods: '50' }, images: [{ names: ['b'] }] });
    expect((out['status'] as typeof node.status).capacity).toEqual({ pods: '50' });
  });

  test('refuses what it does not know instead of applying it wrongly', () => {
    expect(() => applyStrategicMergePatch(node, {}, 'Pod')).toThrow('only Node');
    expect(() => applyStrategicMergePatch(node, { status: { conditions: [{ status: 'True' }] } }, 'Node')).toThrow('merge key type');
    expect(() => applyStrategicMergePatch(node, { status: { $retainKeys: ['a'] } }, 'Node')).toThrow('unsupported directive');
  });
});
