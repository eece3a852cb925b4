// The two patch types nodelet sends to the Node, applied as kube-apiserver applies them, for the node controller's unit
// test: JSON merge patch (RFC 7386) and strategic merge patch, reduced to what a Node's patches use (the merge keys of
// NodeStatus's lists and the `$patch: replace` / `$patch: delete` directives). Anything else is refused, so a patch
// this applier does not understand fails the test instead of being applied wrongly.

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 7386: objects merge recursively, null removes a member, anything else replaces. */
export function applyJsonMergePatch(original: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = isObject(original) ? structuredClone(original) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyJsonMergePatch(out[k], v);
  }
  return out;
}

/**
 * The patch strategy of the lists in a Node (k8s.io/api core/v1 types.go, `patchMergeKey`): merged element by element on
 * this key; other lists are replaced whole.
 */
const nodeMergeKeys: Record<string, string> = {
  'status.conditions': 'type',
  'status.addresses': 'type',
  'spec.taints': 'key',
};

/** Strategic merge patch of a Node (`kind` is checked: only the Node's list strategies are known here). */
export function applyStrategicMergePatch(original: Record<string, unknown>, patch: Record<string, unknown>, kind: string): Record<string, unknown> {
  if (kind !== 'Node') throw new Error(`strategic merge patch of ${kind}: only Node is known to this applier`);
  return mergeMap(original, patch, '') as Record<string, unknown>;
}

function mergeMap(original: unknown, patch: Record<string, unknown>, path: string): Record<string, unknown> {
  const { $patch: directive, ...fields } = patch;
  if (directive === 'replace') return structuredClone(fields);
  if (directive !== undefined) throw new Error(`${path || '.'}: unsupported $patch ${JSON.stringify(directive)}`);
  const out: Record<string, unknown> = isObject(original) ? structuredClone(original) : {};
  for (const [k, v] of Object.entries(fields)) {
    if (k.startsWith('$')) throw new Error(`${path}.${k}: unsupported directive`);
    const at = path ? `${path}.${k}` : k;
    if (v === null) delete out[k];
    else if (Array.isArray(v)) out[k] = mergeList(out[k], v, at);
    else if (isObject(v)) out[k] = mergeMap(out[k], v, at);
    else out[k] = v;
  }
  return out;
}

function mergeList(original: unknown, patch: unknown[], path: string): unknown[] {
  const key = nodeMergeKeys[path];
  if (!key) return structuredClone(patch);
  const elements = patch.filter((e) => !(isObject(e) && e['$patch'] === 'replace' && Object.keys(e).length === 1));
  // `{$patch: replace}` as an element: the list is replaced by the patch's other elements.
  if (elements.length !== patch.length) return structuredClone(elements);
  const out = Array.isArray(original) ? structuredClone(original) as Record<string, unknown>[] : [];
  for (const e of elements) {
    if (!isObject(e) || e[key] === undefined) throw new Error(`${path}: element without its merge key ${key}: ${JSON.stringify(e)}`);
    const i = out.findIndex((x) => x[key] === e[key]);
    if (e['$patch'] === 'delete') {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) {
      out[i] = mergeMap(out[i], e, `${path}[${key}=${String(e[key])}]`);
    } else {
      out.push(mergeMap(undefined, e, `${path}[${key}=${String(e[key])}]`));
    }
  }
  return out;
}

