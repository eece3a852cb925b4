// Limits on walking user-supplied data (manifests, API objects, plugin results): a value that is too deep or refers to
// itself is refused with the path where the walk stopped, instead of exhausting the stack or looping forever.

/**
 * The deepest nesting nodelet accepts in a decoded object. apimachinery's JSON decoder stops at 10,000 levels, but
 * V8's own JSON.stringify and structuredClone, which nodelet uses on pods, overflow the stack between 1,000 and 5,000;
 * the Pod schema itself is under 20 levels deep.
 */
export const MAX_OBJECT_DEPTH = 1000;

const MAX_SHOWN_PATH = 100;

/** A value over a limit: `field` is the path where the walk stopped (`spec.containers[0].env`, "" for the root). */
export class ObjectLimitError extends Error {
  readonly field: string;

  constructor(
    field: string,
    readonly detail: string,
  ) {
    // A path a thousand levels deep says no more than its start does.
    const shown = field.length > MAX_SHOWN_PATH ? `${field.slice(0, MAX_SHOWN_PATH)}...` : field;
    super(shown ? `${shown}: ${detail}` : detail);
    this.field = shown;
    this.name = 'ObjectLimitError';
  }
}

export interface BoundedCopyOptions {
  maxDepth?: number;
  /** Drop object keys whose value is null (Go decodes an explicit null as "not set"). */
  dropNulls?: boolean;
}

/**
 * A plain copy of a decoded JSON/YAML value, checked on the way: throws ObjectLimitError when it nests deeper than
 * `maxDepth` or contains itself (a YAML alias inside its own anchor decodes to a cycle).
 */
export function boundedCopy(value: unknown, opts: BoundedCopyOptions = {}): unknown {
  const maxDepth = opts.maxDepth ?? MAX_OBJECT_DEPTH;
  const ancestors = new Set<object>();
  const walk = (v: unknown, path: string, depth: number): unknown => {
    if (typeof v !== 'object' || v === null) return v;
    if (depth >= maxDepth) throw new ObjectLimitError(path, `nested more than ${maxDepth} levels deep`);
    if (ancestors.has(v)) throw new ObjectLimitError(path, 'refers to itself (a recursive alias)');
    ancestors.add(v);
    let out: unknown;
    if (Array.isArray(v)) {
      out = v.map((item, i) => walk(item, `${path}[${i}]`, depth + 1));
    } else {
      const obj: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(v)) {
        if (item === null && opts.dropNulls) continue;
        obj[k] = walk(item, path ? `${path}.${k}` : k, depth + 1);
      }
      out = obj;
    }
    ancestors.delete(v);
    return out;
  };
  return walk(value, '', 0);
}
