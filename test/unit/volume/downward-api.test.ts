// downwardAPI volume content: kubelet's byte-exact formatting of labels/annotations, field values and resource values.
import type { V1Pod } from '@kubernetes/client-node';
import type { NodeAllocatable } from '../../../src/host/allocatable.js';
import { parseQuantity } from '../../../src/core/quantity.js';
import { downwardApiPayload, formatMap, goQuote, podFieldValue, resourceFieldValue, splitSubscriptedPath } from '../../../src/volume/downward-api.js';

const allocatable: NodeAllocatable = { cpu: parseQuantity('2'), memory: parseQuantity('4Gi'), 'ephemeral-storage': parseQuantity('90G') };

const pod: V1Pod = {
  metadata: {
    name: 'web-node1',
    namespace: 'prod',
    uid: '1234-abcd',
    labels: { tier: 'front', app: 'web', 'example.com/team': 'blue' },
    annotations: { note: 'line1\nline2 "quoted" \\ back' },
  },
  spec: {
    containers: [
      { name: 'main', image: 'busybox', resources: { limits: { cpu: '250m', memory: '64Mi' }, requests: { cpu: '100m', memory: '32Mi' } } },
      { name: 'bare', image: 'busybox' },
    ],
    initContainers: [{ name: 'init', image: 'busybox', resources: { requests: { 'ephemeral-storage': '1Gi' } } }],
  },
};

describe('goQuote (Go %q)', () => {
  test.each([
    ['plain', '"plain"'],
    ['', '""'],
    ['a"b', '"a\\"b"'],
    ['back\\slash', '"back\\\\slash"'],
    ['tab\tnl\ncr\r', '"tab\\tnl\\ncr\\r"'],
    ['\x07\b\f\v', '"\\a\\b\\f\\v"'],
    ['\x00\x1f\x7f', '"\\x00\\x1f\\x7f"'],
    ['héllo wörld ☃', '"héllo wörld ☃"'],
    ['nbsp\u00a0soft\u00ad', '"nbsp\\u00a0soft\\u00ad"'],
    ['emoji 😀', '"emoji 😀"'],
    ['\u{e0001}', '"\\U000e0001"'],
  ])('%j -> %s', (input, out) => {
    expect(goQuote(input)).toBe(out);
  });
});

test('formatMap: key="value" lines sorted by key, no trailing newline', () => {
  expect(formatMap(pod.metadata!.labels)).toBe('app="web"\nexample.com/team="blue"\ntier="front"');
  expect(formatMap({ B: '1', a: '2', _: '3' })).toBe('B="1"\n_="3"\na="2"');
  expect(formatMap({})).toBe('');
  expect(formatMap(undefined)).toBe('');
});

describe('podFieldValue', () => {
  test.each([
    ['metadata.name', 'web-node1'],
    ['metadata.namespace', 'prod'],
    ['metadata.uid', '1234-abcd'],
    ['metadata.labels', 'app="web"\nexample.com/team="blue"\ntier="front"'],
    ['metadata.annotations', 'note="line1\\nline2 \\"quoted\\" \\\\ back"'],
    ["metadata.labels['tier']", 'front'],
    ["metadata.labels['missing']", ''],
    ["metadata.annotations['note']", 'line1\nline2 "quoted" \\ back'],
  ])('%s', (path, value) => {
    expect(podFieldValue(pod, path)).toBe(value);
  });

  test('unsupported paths fail with kubelet words', () => {
    expect(() => podFieldValue(pod, 'spec.nodeName')).toThrow('unsupported fieldPath: spec.nodeName');
    expect(() => podFieldValue(pod, "metadata.name['x']")).toThrow(`fieldPath "metadata.name['x']" does not support subscript`);
  });

  test('splitSubscriptedPath', () => {
    expect(splitSubscriptedPath("metadata.annotations['a[b]c']")).toEqual(['metadata.annotations', 'a[b]c']);
    expect(splitSubscriptedPath("metadata.labels['']")).toEqual(['metadata.labels', '']);
    expect(splitSubscriptedPath('metadata.labels')).toBeUndefined();
    expect(splitSubscriptedPath("['x']")).toBeUndefined();
  });
});

describe('resourceFieldValue: ceil(value / divisor)', () => {
  test.each([
    ['main', 'limits.cpu', undefined, '1'],
    ['main', 'limits.cpu', '1m', '250'],
    ['main', 'requests.cpu', '1m', '100'],
    ['main', 'requests.cpu', undefined, '1'],
    ['main', 'limits.memory', undefined, String(64 * 1024 * 1024)],
    ['main', 'limits.memory', '1Mi', '64'],
    ['main', 'limits.memory', '1M', '68'],
    ['main', 'requests.memory', '1Ki', String(32 * 1024)],
    // Unset limits read as the node's allocatable; unset requests as 0.
    ['bare', 'limits.cpu', undefined, '2'],
    ['bare', 'limits.cpu', '1m', '2000'],
    ['bare', 'limits.memory', '1Gi', '4'],
    ['bare', 'limits.ephemeral-storage', '1G', '90'],
    ['bare', 'requests.memory', undefined, '0'],
    ['init', 'requests.ephemeral-storage', '1Mi', '1024'],
  ])('%s %s divisor %s = %s', (containerName, resource, divisor, out) => {
    expect(resourceFieldValue(pod, { containerName, resource, ...(divisor ? { divisor } : {}) }, allocatable)).toBe(out);
  });

  test('an unknown container fails', () => {
    expect(() => resourceFieldValue(pod, { containerName: 'nope', resource: 'limits.cpu' }, allocatable)).toThrow('container nope not found');
  });
});

describe('downwardApiPayload', () => {
  test('files keyed by cleaned path with item mode, else defaultMode, else 0644', () => {
    const payload = downwardApiPayload(
      pod,
      {
        defaultMode: 0o600,
        items: [
          { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
          { path: './meta//name/', fieldRef: { fieldPath: 'metadata.name' }, mode: 0o444 },
          { path: 'cpu_limit', resourceFieldRef: { containerName: 'main', resource: 'limits.cpu', divisor: '1m' } },
        ],
      },
      allocatable,
    );
    expect([...payload.keys()]).toEqual(['labels', 'meta/name', 'cpu_limit']);
    expect(payload.get('labels')).toEqual({ data: Buffer.from('app="web"\nexample.com/team="blue"\ntier="front"'), mode: 0o600 });
    expect(payload.get('meta/name')).toEqual({ data: Buffer.from('web-node1'), mode: 0o444 });
    expect(payload.get('cpu_limit')!.data.toString()).toBe('250');
    expect(downwardApiPayload(pod, { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name' } }] }, allocatable).get('n')!.mode).toBe(0o644);
  });

  test('every failing item is reported', () => {
    expect(() =>
      downwardApiPayload(
        pod,
        { items: [{ path: 'a', resourceFieldRef: { containerName: 'x', resource: 'limits.cpu' } }, { path: 'b', fieldRef: { fieldPath: 'status.podIP' } }] },
        allocatable,
      ),
    ).toThrow('[container x not found, unsupported fieldPath: status.podIP]');
  });
});
