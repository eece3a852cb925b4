// The three PATCH formats of kube-apiserver: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch for built-in kinds.
import { elementType, fieldType, mergeListMeta, modelForKind, type TypeName } from './schema.js';

/** A patch that cannot be applied; `status` is the HTTP status kube-apiserver answers with (400 malformed patch, 422 inapplicable). */
export class PatchError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 422,
  ) {
    super(message);
    this.name = 'PatchError';
  }
}

type JsonObject = Record<string, unknown>;

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

/** Go's %v rendering of decoded JSON, so error messages read like kube-apiserver's. */
function goFormat(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return `[${v.map(goFormat).join(' ')}]`;
  if (isObject(v)) {
    return `map[${Object.keys(v)
      .sort()
      .map((k) => `${k}:${goFormat(v[k])}`)
      .join(' ')}]`;
  }
  return String(v);
}

/** The Go type encoding/json decodes a value into; strategic merge patch compares these. */
function goType(v: unknown): string {
  if (v === null) return 'nil';
  if (Array.isArray(v)) return '[]interface {}';
  if (typeof v === 'object') return 'map[string]interface {}';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'boolean') return 'bool';
  return 'string';
}

// ---------------------------------------------------------------------------------------------------------------
// JSON merge patch

/** Removes null-valued keys from objects, recursively (nulls inside arrays stay), as evanphx/json-patch does for inserted values. */
function pruneNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(pruneNulls);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, child] of Object.entries(v)) if (child !== null) out[k] = pruneNulls(child);
  return out;
}

function mergePatchInto(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return pruneNulls(structuredClone(patch));
  const out: JsonObject = isObject(target) ? structuredClone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = k in out && out[k] !== null ? mergePatchInto(out[k], v) : pruneNulls(structuredClone(v));
  }
  return out;
}

/**
 * RFC 7386 merge: objects merge key by key, null deletes a key, any other value replaces. A top-level patch that is
 * neither an object nor a list is refused with 400 "Invalid JSON Patch", as kube-apiserver (evanphx/json-patch) does.
 */
export function applyJsonMergePatch(original: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object') throw new PatchError('Invalid JSON Patch', 400);
  return mergePatchInto(original, patch);
}

// ---------------------------------------------------------------------------------------------------------------
// JSON patch

type Container = JsonObject | unknown[];

/** Splits a JSON pointer into unescaped reference tokens; undefined when it is not a pointer. */
function pointerTokens(path: string): string[] | undefined {
  if (path === '') return [];
  if (!path.startsWith('/')) return undefined;
  return path
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The container holding the value `path` points at, and the last token; undefined when an ancestor is missing. */
function findParent(doc: unknown, path: string): { parent: Container; key: string } | undefined {
  const tokens = pointerTokens(path);
  if (tokens === undefined || tokens.length === 0) return undefined;
  let node: unknown = doc;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(node)) {
      const idx = arrayIndex(token, node.length);
      if (idx === undefined) return undefined;
      node = node[idx];
    } else if (isObject(node) && token in node) {
      node = node[token];
    } else {
      return undefined;
    }
  }
  if (!Array.isArray(node) && !isObject(node)) return undefined;
  return { parent: node, key: tokens[tokens.length - 1]! };
}

/** An existing element's index (negative counts from the end, as evanphx/json-patch allows); undefined when out of range. */
function arrayIndex(token: string, length: number): number | undefined {
  if (!/^-?(0|[1-9][0-9]*)$/.test(token)) return undefined;
  let idx = Number(token);
  if (idx < 0) idx += length;
  return idx >= 0 && idx < length ? idx : undefined;
}

function invalidIndex(token: string): string {
  return /^-?[0-9]+$/.test(token)
    ? `Unable to access invalid index: ${Number(token)}: invalid index referenced`
    : `value was not a proper array index: '${token}'`;
}

function inapplicable(message: string): PatchError {
  return new PatchError(message, 422);
}

/** Inserts `value` at parent[key]; returns an error text instead of throwing so each op words it its own way. */
function addAt(parent: Container, key: string, value: unknown): string | undefined {
  if (!Array.isArray(parent)) {
    parent[key] = value;
    return undefined;
  }
  if (key === '-') {
    parent.push(value);
    return undefined;
  }
  if (!/^-?(0|[1-9][0-9]*)$/.test(key)) return invalidIndex(key);
  let idx = Number(key);
  if (idx < 0) idx += parent.length + 1;
  if (idx < 0 || idx > parent.length) return invalidIndex(key);
  parent.splice(idx, 0, value);
  return undefined;
}

/** Removes parent[key] and returns it, or an error text. */
function removeAt(parent: Container, key: string): { value: unknown } | string {
  if (Array.isArray(parent)) {
    const idx = arrayIndex(key, parent.length);
    if (idx === undefined) return invalidIndex(key);
    return { value: parent.splice(idx, 1)[0] };
  }
  if (!(key in parent)) return `Unable to remove nonexistent key: ${key}: missing value`;
  const value = parent[key];
  delete parent[key];
  return { value };
}

function valueAt(parent: Container, key: string): { value: unknown } | undefined {
  if (Array.isArray(parent)) {
    const idx = arrayIndex(key, parent.length);
    return idx === undefined ? undefined : { value: parent[idx] };
  }
  return key in parent ? { value: parent[key] } : undefined;
}

function stringField(op: JsonObject, name: 'path' | 'from'): string | undefined {
  const v = op[name];
  return typeof v === 'string' ? v : undefined;
}

/** Applies one operation to `doc` (mutated) and returns the document, which is new when the root is replaced. */
function applyOperation(doc: unknown, op: JsonObject): unknown {
  const kind = typeof op.op === 'string' ? op.op : 'unknown';
  const path = stringField(op, 'path');
  const value = structuredClone(op.value ?? null);
  if (!['add', 'remove', 'replace', 'move', 'copy', 'test'].includes(kind)) throw inapplicable(`Unexpected kind: ${kind}`);
  if (path === undefined) throw inapplicable(`${kind} operation failed to decode path: missing value`);

  switch (kind) {
    case 'add': {
      if (path === '') return value;
      const loc = findParent(doc, path);
      if (!loc) throw inapplicable(`add operation does not apply: doc is missing path: "${path}": missing value`);
      const err = addAt(loc.parent, loc.key, value);
      if (err) throw inapplicable(`error in add for path: '${path}': ${err}`);
      return doc;
    }
    case 'remove': {
      const loc = findParent(doc, path);
      if (!loc) throw inapplicable(`remove operation does not apply: doc is missing path: "${path}": missing value`);
      const removed = removeAt(loc.parent, loc.key);
      if (typeof removed === 'string') throw inapplicable(`error in remove for path: '${path}': ${removed}`);
      return doc;
    }
    case 'replace': {
      if (path === '') {
        if (typeof value !== 'object' || value === null) throw inapplicable('replace operation value must be object or array');
        return value;
      }
      const loc = findParent(doc, path);
      if (!loc) throw inapplicable(`replace operation does not apply: doc is missing path: ${path}: missing value`);
      if (!valueAt(loc.parent, loc.key)) {
        throw inapplicable(
          Array.isArray(loc.parent)
            ? `error in remove for path: '${path}': ${invalidIndex(loc.key)}`
            : `replace operation does not apply: doc is missing key: ${path}: missing value`,
        );
      }
      if (Array.isArray(loc.parent)) loc.parent[arrayIndex(loc.key, loc.parent.length)!] = value;
      else loc.parent[loc.key] = value;
      return doc;
    }
    case 'move':
    case 'copy': {
      const from = stringField(op, 'from');
      if (from === undefined) throw inapplicable(`${kind} operation failed to decode from: missing value`);
      const src = findParent(doc, from);
      const found = src && valueAt(src.parent, src.key);
      if (!src || !found) throw inapplicable(`${kind} operation does not apply: doc is missing from path: ${from}: missing value`);
      let moved = found.value;
      if (kind === 'move') removeAt(src.parent, src.key);
      else moved = structuredClone(moved);
      if (path === '') return moved;
      const dst = findParent(doc, path);
      if (!dst) throw inapplicable(`${kind} operation does not apply: doc is missing destination path: ${path}: missing value`);
      const err = addAt(dst.parent, dst.key, moved);
      if (err) throw inapplicable(kind === 'move' ? `error in move for path: '${path}': ${err}` : `error while adding value during copy: ${err}`);
      return doc;
    }
    default: {
      // test: a missing key compares equal to null, as in evanphx/json-patch.
      let actual: unknown;
      if (path === '') {
        actual = doc;
      } else {
        const loc = findParent(doc, path);
        if (!loc) throw inapplicable(`test operation does not apply: is missing path: ${path}: missing value`);
        actual = valueAt(loc.parent, loc.key)?.value ?? null;
      }
      if (!deepEqual(actual, value)) throw inapplicable(`testing value ${path} failed: test failed`);
      return doc;
    }
  }
}

/**
 * RFC 6902 operations applied in order to a copy of `original` (`~0`/`~1` escapes, `-` appends, negative indices count
 * from the end as evanphx/json-patch allows). A body that is not a list of operations is 400; an operation that does not
 * apply (missing path, failed test) is 422, as kube-apiserver answers. Unlike evanphx/json-patch v4, `replace` of a
 * missing object key fails, as the RFC says.
 */
export function applyJsonPatch(original: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) {
    throw new PatchError(`json: cannot unmarshal ${ops === null ? 'null' : isObject(ops) ? 'object' : typeof ops} into Go value of type jsonpatch.Patch`, 400);
  }
  let doc = structuredClone(original);
  for (const op of ops) {
    if (!isObject(op)) throw new PatchError('json: cannot unmarshal array into Go value of type jsonpatch.Operation', 400);
    doc = applyOperation(doc, op);
  }
  return doc;
}

// ---------------------------------------------------------------------------------------------------------------
// Strategic merge patch (the semantics of apimachinery's strategicpatch.StrategicMergeMapPatch)

const directiveMarker = '$patch';
const retainKeysDirective = '$retainKeys';
const deleteFromPrimitiveListPrefix = '$deleteFromPrimitiveList';
const setElementOrderPrefix = '$setElementOrder';

const badPrimitiveList = 'invalid patch format of primitive list';
const badRetainKeys = 'invalid patch format of retainKeys';
const badSetElementOrder = 'invalid patch format of setElementOrder list';

// strategicpatch errors kube-apiserver does not map to a status come back as 500; this fixture answers 422 for them.
function noMergeKey(m: JsonObject, key: string): PatchError {
  return new PatchError(`map: ${goFormat(m)} does not contain declared merge key: ${key}`, 422);
}

/** The list field name inside a `$deleteFromPrimitiveList/<field>` or `$setElementOrder/<field>` key. */
function directiveField(key: string, prefix: string, error: string): string {
  const slash = key.indexOf('/');
  if (slash < 0 || key.slice(0, slash) !== prefix) throw new PatchError(error, 400);
  return key.slice(slash + 1);
}

/** Drops maps carrying `$patch` (and the keys holding them); returns keep=false when `v` itself is one. */
function removeDirectives(v: unknown): { value: unknown; keep: boolean } {
  if (Array.isArray(v)) {
    return { value: v.map(removeDirectives).filter((r) => r.keep).map((r) => r.value), keep: true };
  }
  if (!isObject(v)) return { value: v, keep: true };
  if (directiveMarker in v) return { value: undefined, keep: false };
  for (const [k, child] of Object.entries(v)) {
    const r = removeDirectives(child);
    if (r.keep) v[k] = r.value;
    else delete v[k];
  }
  return { value: v, keep: true };
}

function discardNulls(v: unknown): void {
  if (Array.isArray(v)) {
    v.forEach(discardNulls);
  } else if (isObject(v)) {
    for (const [k, child] of Object.entries(v)) {
      if (child === null) delete v[k];
      else discardNulls(child);
    }
  }
}

/** Puts a patch value where the original has none (or one of another type): nulls and directives dropped. */
function takePatchValue(original: JsonObject, key: string, patchValue: unknown): void {
  discardNulls(patchValue);
  const r = removeDirectives(patchValue);
  if (r.keep) original[key] = r.value;
  else delete original[key];
}

/** The Go kind shared by every element of the lists; refuses lists of lists and mixed elements. */
function sliceElementKind(...lists: unknown[][]): string {
  let kind: string | undefined;
  for (const list of lists) {
    for (const v of list) {
      const t = goType(v);
      if (kind === undefined) {
        if (Array.isArray(v)) throw new PatchError('lists of lists are not supported', 422);
        kind = t;
      } else if (t !== kind) {
        throw new PatchError(`list element types are not identical: ${goFormat(lists)}`, 422);
      }
    }
  }
  if (kind === undefined) throw new PatchError('no elements in any of the given slices', 422);
  return kind;
}

const isMapKind = (kind: string): boolean => kind === 'map[string]interface {}';

/** Identity of a list element for ordering and lookup: its merge key value for maps, itself for primitives. */
function identity(item: unknown, mergeKey: string, kind: string): unknown {
  if (!isMapKind(kind)) return item;
  return isObject(item) ? item[mergeKey] : undefined;
}

function indexIn(list: unknown[], item: unknown, mergeKey: string, kind: string): number {
  const id = identity(item, mergeKey, kind);
  return list.findIndex((v) => identity(v, mergeKey, kind) === id);
}

function requireMergeKey(lists: unknown[][], mergeKey: string): void {
  for (const list of lists) {
    for (const v of list) {
      if (!isObject(v)) throw new PatchError(`expected a map[string]interface {}, but received a ${goType(v)}`, 422);
      if (!(mergeKey in v)) throw noMergeKey(v, mergeKey);
    }
  }
}

/** Sorts `items` by their position in `order` (stable); `$patch: delete` items go last. */
function sortByOrder(items: unknown[], order: unknown[], mergeKey: string, kind: string): unknown[] {
  let toSort = items;
  let deletions: unknown[] = [];
  if (isMapKind(kind)) {
    requireMergeKey([items, order], mergeKey);
    toSort = items.filter((v) => (v as JsonObject)[directiveMarker] !== 'delete');
    deletions = items.filter((v) => (v as JsonObject)[directiveMarker] === 'delete');
  }
  const sorted = toSort
    .map((v, i) => ({ v, i, at: indexIn(order, v, mergeKey, kind) }))
    .sort((a, b) => (a.at >= 0 && b.at >= 0 && a.at !== b.at ? a.at - b.at : a.i - b.i))
    .map((e) => e.v);
  return [...sorted, ...deletions];
}

/**
 * Final order of a merged list: the patch's items in the patch's (or $setElementOrder's) order, with the items only the
 * server had interleaved by their order in the live list; a server item goes before a patch item only when both are in
 * the live list and it came first there, so items new to the list come before the server-only items that follow them.
 */
function normalizeOrder(patchItems: unknown[], serverOnly: unknown[], patchOrder: unknown[], serverOrder: unknown[], mergeKey: string, kind: string): unknown[] {
  const right = sortByOrder(patchItems, patchOrder, mergeKey, kind);
  const left = sortByOrder(serverOnly, serverOrder, mergeKey, kind);
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (j >= right.length) out.push(left[i++]);
    else if (i >= left.length) out.push(right[j++]);
    else {
      const li = indexIn(serverOrder, left[i], mergeKey, kind);
      const ri = indexIn(serverOrder, right[j], mergeKey, kind);
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]);
      else out.push(right[j++]);
    }
  }
  return out;
}

/** Splits `merged` into the items present in `by` and the rest, keeping their order. */
function partition(merged: unknown[], by: unknown[], mergeKey: string, kind: string): [unknown[], unknown[]] {
  if (isMapKind(kind)) requireMergeKey([merged], mergeKey);
  const inBy: unknown[] = [];
  const rest: unknown[] = [];
  for (const v of merged) (indexIn(by, v, mergeKey, kind) >= 0 ? inBy : rest).push(v);
  return [inBy, rest];
}

/** Applies `$patch: delete` / `$patch: replace` list items; returns the remaining original and patch items. */
function applySpecialElements(original: unknown[], patch: unknown[], mergeKey: string): { original: unknown[]; patch: unknown[]; replaced: boolean } {
  let remaining = original;
  const plain: unknown[] = [];
  let replace = false;
  for (const item of patch) {
    const m = item as JsonObject;
    if (!(directiveMarker in m)) {
      plain.push(item);
      continue;
    }
    const directive = m[directiveMarker];
    if (directive === 'delete') {
      if (!(mergeKey in m)) throw noMergeKey(m, mergeKey);
      remaining = remaining.filter((o) => !(isObject(o) && mergeKey in o && o[mergeKey] === m[mergeKey]));
    } else if (directive === 'replace') {
      replace = true;
    } else if (directive === 'merge') {
      throw new PatchError('merging lists cannot yet be specified in the patch', 422);
    } else {
      throw new PatchError(`unknown patch type: ${goFormat(directive)} in map: ${goFormat(m)}`, 422);
    }
  }
  if (replace) {
    discardNulls(plain);
    return { original: removeDirectives(plain).value as unknown[], patch: [], replaced: true };
  }
  return { original: remaining, patch: plain, replaced: false };
}

/**
 * A merged list, and the live list as strategicpatch's later ordering step sees it: Go deletes `$patch: delete` items in
 * place and appends new items into the freed slots of the same array, so the caller's view of the original list becomes
 * the remaining items followed by the new ones (cut to the original length). $setElementOrder orders against that view.
 */
interface MergedList {
  merged: unknown[];
  liveView: unknown[];
}

/** Merges a list whose patchStrategy is merge (or a `$deleteFromPrimitiveList` list). */
function mergeSlice(original: unknown[], patch: unknown[], itemType: TypeName | undefined, mergeKey: string, isDeleteList: boolean): MergedList {
  if (original.length === 0 && patch.length === 0) return { merged: original, liveView: original };
  const kind = sliceElementKind(original, patch);
  let merged: unknown[];
  let patchOrder = patch;
  let serverOrder = original;
  let liveView = original;
  if (!isMapKind(kind)) {
    if (isDeleteList) return { merged: original.filter((v) => !patch.includes(v)), liveView };
    merged = [...original, ...patch].filter((v, i, all) => all.indexOf(v) === i);
  } else {
    if (mergeKey === '') throw new PatchError(`cannot merge lists without merge key for ${itemType ?? 'unknown'}`, 422);
    const special = applySpecialElements(original, patch, mergeKey);
    serverOrder = special.original;
    patchOrder = special.patch;
    merged = [...special.original];
    const appended: unknown[] = [];
    for (const item of special.patch) {
      const m = item as JsonObject;
      if (!(mergeKey in m)) throw noMergeKey(m, mergeKey);
      const at = merged.findIndex((o, i) => {
        if (!isObject(o)) throw new PatchError(`value for key ${i} is not a map`, 422);
        return mergeKey in o && o[mergeKey] === m[mergeKey];
      });
      if (at >= 0) {
        merged[at] = mergeMap(merged[at] as JsonObject, m, itemType);
      } else {
        discardNulls(m);
        const added = removeDirectives(m).value;
        merged.push(added);
        appended.push(added);
      }
    }
    const filled = [...special.original, ...appended];
    if (!special.replaced) liveView = [...filled, ...original.slice(filled.length)].slice(0, original.length);
  }
  const [patchItems, serverOnly] = partition(merged, patchOrder, mergeKey, kind);
  return { merged: normalizeOrder(patchItems, serverOnly, patchOrder, serverOrder, mergeKey, kind), liveView };
}

/** A list field of a value of type `parent`: merged when its patchStrategy is merge, else the patch's list wins. */
function mergeListField(original: unknown[], patch: unknown[], parent: TypeName | undefined, key: string, isDeleteList: boolean): MergedList {
  const meta = mergeListMeta(parent, key);
  if (!meta && !isDeleteList) return { merged: patch, liveView: original };
  const listType = parent === undefined ? undefined : fieldType(parent, key);
  const itemType = listType === undefined ? undefined : elementType(listType);
  return mergeSlice(original, patch, itemType, meta?.mergeKey ?? '', isDeleteList);
}

/** `$retainKeys`: clears the original's keys not in the list; every key the patch sets must be in it. */
function applyRetainKeys(original: JsonObject, patch: JsonObject): void {
  if (!(retainKeysDirective in patch)) return;
  const list = patch[retainKeysDirective];
  delete patch[retainKeysDirective];
  if (!Array.isArray(list)) throw new PatchError(badRetainKeys, 400);
  const keep = new Set(list);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || k.startsWith(deleteFromPrimitiveListPrefix) || k.startsWith(setElementOrderPrefix)) continue;
    if (!keep.has(k)) throw new PatchError(badRetainKeys, 400);
  }
  for (const k of Object.keys(original)) if (!keep.has(k)) delete original[k];
}

/** Checks that the patch list's items appear in the same relative order in the $setElementOrder list. */
function checkOrderConsistent(patchList: unknown[], order: unknown[], mergeKey: string): void {
  if (order.length === 0 || patchList.length === 0) return;
  const items = mergeKey === '' ? patchList : patchList.filter((v) => !(isObject(v) && v[directiveMarker] === 'delete'));
  let p = 0;
  let o = 0;
  while (p < items.length && o < order.length) {
    const item = items[p];
    if (isObject(item) && directiveMarker in item) {
      p++;
      continue;
    }
    const expected = order[o];
    let same: boolean;
    if (mergeKey === '') {
      same = item === expected;
    } else {
      if (!isObject(item) || !isObject(expected)) throw new PatchError(`expected a map[string]interface {}, but received a ${goType(isObject(item) ? expected : item)}`, 422);
      if (!(mergeKey in item)) throw noMergeKey(item, mergeKey);
      if (!(mergeKey in expected)) throw noMergeKey(expected, mergeKey);
      same = item[mergeKey] === expected[mergeKey];
    }
    if (same) p++;
    o++;
  }
  if (p < items.length) {
    throw new PatchError(`The order in patch list:\n${goFormat(patchList)}\n doesn't match ${setElementOrderPrefix} list:\n${goFormat(order)}\n`, 422);
  }
}

function listAt(m: JsonObject, key: string): unknown[] | undefined {
  if (!(key in m)) return undefined;
  const v = m[key];
  if (!Array.isArray(v)) throw new PatchError(`expected a []interface {}, but received a ${goType(v)}`, 422);
  return v;
}

/** `$setElementOrder/<field>`: merges that field now and orders it by the directive's list. */
function applySetElementOrder(original: JsonObject, patch: JsonObject, type: TypeName | undefined): void {
  for (const directiveKey of Object.keys(patch)) {
    if (!directiveKey.startsWith(setElementOrderPrefix)) continue;
    const order = patch[directiveKey];
    delete patch[directiveKey];
    if (!Array.isArray(order)) throw new PatchError(`expected a []interface {}, but received a ${goType(order)}`, 422);
    const key = directiveField(directiveKey, setElementOrderPrefix, badSetElementOrder);
    const originalList = listAt(original, key);
    const patchList = listAt(patch, key);
    const mergeKey = mergeListMeta(type, key)?.mergeKey ?? '';
    checkOrderConsistent(patchList ?? [], order, mergeKey);

    let merged: unknown[];
    let liveView = originalList ?? [];
    if (originalList && patchList) ({ merged, liveView } = mergeListField(originalList, patchList, type, key, false));
    else if (patchList) merged = removeDirectives(patchList).value as unknown[];
    else if (originalList) merged = originalList;
    else continue;

    delete patch[key];
    if (merged.length === 0) {
      original[key] = merged;
      continue;
    }
    const kind = sliceElementKind(originalList ?? [], patchList ?? []);
    const [patchItems, serverOnly] = partition(merged, order, mergeKey, kind);
    original[key] = normalizeOrder(patchItems, serverOnly, order, liveView, mergeKey, kind);
  }
}

/** Merges `patch` into `original` (both mutated; `type` is the model of the value, undefined when unknown). */
function mergeMap(original: JsonObject, patch: JsonObject, type: TypeName | undefined): JsonObject {
  if (directiveMarker in patch) {
    const directive = patch[directiveMarker];
    if (directive === 'replace') {
      delete patch[directiveMarker];
      discardNulls(patch);
      return removeDirectives(patch).value as JsonObject;
    }
    if (directive === 'delete') return {};
    throw new PatchError(`unknown patch type: ${goFormat(directive)} in map: ${goFormat(patch)}`, 422);
  }
  applyRetainKeys(original, patch);
  applySetElementOrder(original, patch, type);

  for (const [patchKey, patchValue] of Object.entries(patch)) {
    let key = patchKey;
    let isDeleteList = false;
    if (patchKey.startsWith(deleteFromPrimitiveListPrefix)) {
      key = directiveField(patchKey, deleteFromPrimitiveListPrefix, badPrimitiveList);
      isDeleteList = true;
    }
    if (patchValue === null) {
      delete original[key];
      continue;
    }
    const originalValue = original[key];
    if (!(key in original) || goType(originalValue) !== goType(patchValue)) {
      if (!isDeleteList) takePatchValue(original, key, patchValue);
      continue;
    }
    if (isObject(originalValue)) {
      original[key] = mergeMap(originalValue, patchValue as JsonObject, type === undefined ? undefined : fieldType(type, key));
    } else if (Array.isArray(originalValue)) {
      original[key] = mergeListField(originalValue, patchValue as unknown[], type, key, isDeleteList).merged;
    } else {
      original[key] = patchValue;
    }
  }
  return original;
}

/** Removes directive keys left in values taken verbatim from the patch (kube's decoder drops them as unknown fields). */
function stripDirectiveKeys(v: unknown): void {
  if (Array.isArray(v)) {
    v.forEach(stripDirectiveKeys);
  } else if (isObject(v)) {
    for (const k of Object.keys(v)) {
      if (k === directiveMarker || k === retainKeysDirective || k.startsWith(`${setElementOrderPrefix}/`) || k.startsWith(`${deleteFromPrimitiveListPrefix}/`)) {
        delete v[k];
      } else {
        stripDirectiveKeys(v[k]);
      }
    }
  }
}

/**
 * Kubernetes strategic merge patch of a built-in kind (by its `kind`): lists with patchStrategy merge are merged by their
 * patchMergeKey (lists of primitives as sets), other lists are replaced; `$patch: replace|delete` on maps and list items,
 * `$retainKeys`, `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` and null-deletes apply. Inputs are not mutated.
 */
export function applyStrategicMergePatch(original: Record<string, unknown>, patch: Record<string, unknown>, kind: string): Record<string, unknown> {
  const apiVersion = typeof original.apiVersion === 'string' ? original.apiVersion : undefined;
  const model = modelForKind(kind, apiVersion);
  if (model === undefined) throw new PatchError('strategic merge patch format is not supported', 400);
  const result = mergeMap(structuredClone(original), structuredClone(patch), model);
  stripDirectiveKeys(result);
  return result;
}
