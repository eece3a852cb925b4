// downwardAPI volume content (pure): the files kubelet projects from pod metadata and container resources, byte for byte.
import { posix } from 'node:path';
import type { V1Container, V1DownwardAPIVolumeSource, V1Pod, V1ResourceFieldSelector } from '@kubernetes/client-node';
import type { NodeAllocatable } from '../host/allocatable.js';
import { parseQuantity, type Quantity } from '../core/quantity.js';
import type { FileProjection } from './atomic-writer.js';
import { podContainers } from '../core/pod-containers.js';

/** The API's default mode of downwardAPI files. */
export const downwardApiDefaultMode = 0o644;

const goEscapes: Record<string, string> = { '\x07': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v', '"': '\\"', '\\': '\\\\' };
const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** Go's strconv.Quote (the `%q` verb): printable runes as they are, others as \a..\v, \xHH, \uHHHH or \UHHHHHHHH. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (goEscapes[ch]) out += goEscapes[ch];
    else if (cp >= 0xd800 && cp <= 0xdfff) out += '\ufffd'; // a lone surrogate reaches the file as U+FFFD
    else if (printable.test(ch)) out += ch;
    else if (cp < 0x80) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/** Go's byte-wise string order (UTF-8), which sort.Strings uses. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** kubelet's fieldpath.FormatMap: `key="value"` lines (value Go-quoted), keys sorted, no trailing newline. */
export function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort(byteOrder)
    .map((k) => `${k}=${goQuote(map![k]!)}`)
    .join('\n');
}

/** `metadata.labels['key']` -> ["metadata.labels", "key"], as fieldpath.SplitMaybeSubscriptedPath. */
export function splitSubscriptedPath(fieldPath: string): [string, string] | undefined {
  if (!fieldPath.endsWith("']")) return undefined;
  const s = fieldPath.slice(0, -2);
  const at = s.indexOf("['");
  if (at <= 0) return undefined;
  return [s.slice(0, at), s.slice(at + 2)];
}

/** The text of a pod field (fieldpath.ExtractFieldPathAsString for the paths a volume may use). */
export function podFieldValue(pod: V1Pod, fieldPath: string): string {
  const m = pod.metadata ?? {};
  const sub = splitSubscriptedPath(fieldPath);
  if (sub) {
    const [path, key] = sub;
    if (path === 'metadata.annotations') return m.annotations?.[key] ?? '';
    if (path === 'metadata.labels') return m.labels?.[key] ?? '';
    throw new Error(`fieldPath "${fieldPath}" does not support subscript`);
  }
  switch (fieldPath) {
    case 'metadata.annotations':
      return formatMap(m.annotations);
    case 'metadata.labels':
      return formatMap(m.labels);
    case 'metadata.name':
      return m.name ?? '';
    case 'metadata.namespace':
      return m.namespace ?? '';
    case 'metadata.uid':
      return m.uid ?? '';
  }
  throw new Error(`unsupported fieldPath: ${fieldPath}`);
}

function findContainer(pod: V1Pod, name: string): V1Container {
  const c = podContainers(pod).find((x) => x.name === name);
  if (!c) throw new Error(`container ${name} not found`);
  return c;
}

const resourceKeys: Record<string, [kind: 'limits' | 'requests', name: keyof NodeAllocatable]> = {
  'limits.cpu': ['limits', 'cpu'],
  'limits.memory': ['limits', 'memory'],
  'limits.ephemeral-storage': ['limits', 'ephemeral-storage'],
  'requests.cpu': ['requests', 'cpu'],
  'requests.memory': ['requests', 'memory'],
  'requests.ephemeral-storage': ['requests', 'ephemeral-storage'],
};

function quantityOf(list: Record<string, string | number> | undefined, name: string): Quantity | undefined {
  const v = list?.[name];
  return v === undefined ? undefined : parseQuantity(v);
}

/** ceil(value / divisor), exactly, as kubelet's convertQuantityToString; 0 for a non-positive value or divisor. */
export function ceilRatio(value: Quantity, divisor: Quantity): bigint {
  if (value.sign() <= 0 || divisor.sign() <= 0) return 0n;
  return (value.nanos + divisor.nanos - 1n) / divisor.nanos;
}

/**
 * A container resource as kubelet writes it: ceil(value / divisor). An unset or zero limit reads as the node's
 * allocatable (MergeContainerResourceLimits); an unset request reads as 0 (the pod source has already defaulted
 * requests from limits).
 */
export function resourceFieldValue(pod: V1Pod, ref: V1ResourceFieldSelector, allocatable: NodeAllocatable): string {
  const container = findContainer(pod, ref.containerName ?? '');
  const key = resourceKeys[ref.resource];
  if (!key) throw new Error(`unsupported container resource : ${ref.resource}`);
  const [kind, name] = key;
  const limits = container.resources?.limits as Record<string, string> | undefined;
  const requests = container.resources?.requests as Record<string, string> | undefined;
  let value: Quantity | undefined;
  if (kind === 'limits') {
    value = quantityOf(limits, name);
    if (!value || value.isZero()) value = allocatable[name];
  } else {
    value = quantityOf(requests, name);
  }
  const given = ref.divisor === undefined ? undefined : parseQuantity(ref.divisor);
  const divisor = !given || given.isZero() ? parseQuantity('1') : given;
  return value ? ceilRatio(value, divisor).toString() : '0';
}

/**
 * The files of a downwardAPI volume keyed by cleaned path (downwardapi.CollectData). Every item is tried;
 * the errors of those that fail are joined as one.
 */
export function downwardApiPayload(pod: V1Pod, source: V1DownwardAPIVolumeSource, allocatable: NodeAllocatable): Map<string, FileProjection> {
  const defaultMode = source.defaultMode ?? downwardApiDefaultMode;
  const payload = new Map<string, FileProjection>();
  const errors: string[] = [];
  for (const item of source.items ?? []) {
    const mode = item.mode ?? defaultMode;
    let data = '';
    try {
      if (item.fieldRef) data = podFieldValue(pod, item.fieldRef.fieldPath);
      else if (item.resourceFieldRef) data = resourceFieldValue(pod, item.resourceFieldRef, allocatable);
    } catch (err) {
      errors.push((err as Error).message);
    }
    payload.set(posix.normalize(item.path).replace(/\/+$/, ''), { data: Buffer.from(data, 'utf8'), mode });
  }
  if (errors.length === 1) throw new Error(errors[0]);
  if (errors.length > 1) throw new Error(`[${errors.join(', ')}]`);
  return payload;
}
