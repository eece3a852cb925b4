// The bounded walk over user-supplied values: a plain copy, or the path where it is too deep or refers to itself.
import { boundedCopy, MAX_OBJECT_DEPTH, ObjectLimitError } from '../../../src/core/bounded-walk.js';

function nested(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = i % 2 ? { k: v } : [v];
  return v;
}

test('copies plain values, dropping null-valued keys when asked', () => {
  const input = { a: [1, { b: null, c: 'x' }], d: null, e: true };
  const out = boundedCopy(input, { dropNulls: true });
  expect(out).toEqual({ a: [1, { c: 'x' }], e: true });
  expect(boundedCopy(input)).toEqual(input);
  expect(boundedCopy(input)).not.toBe(input);
});

test('a value exactly at the depth limit is kept; one level more is refused with its path', () => {
  expect(() => boundedCopy(nested(MAX_OBJECT_DEPTH))).not.toThrow();
  expect(() => boundedCopy(nested(MAX_OBJECT_DEPTH + 1))).toThrow(ObjectLimitError);
  let err: ObjectLimitError | undefined;
  try {
    boundedCopy({ spec: nested(3) }, { maxDepth: 3 });
  } catch (e) {
    err = e as ObjectLimitError;
  }
  expect(err).toMatchObject({ field: 'spec[0].k', detail: 'nested more than 3 levels deep', message: 'spec[0].k: nested more than 3 levels deep' });
});

test('a long path is shortened in the error', () => {
  try {
    boundedCopy({ spec: nested(2000) });
    throw new Error('not refused');
  } catch (e) {
    expect((e as ObjectLimitError).field).toMatch(/^spec\.k\[0\]\.k\[0\].*\.\.\.$/);
    expect((e as ObjectLimitError).field.length).toBe(103);
  }
});

test('a value that contains itself is refused, a value shared twice is not', () => {
  const shared = { x: 1 };
  expect(boundedCopy({ a: shared, b: [shared, shared] })).toEqual({ a: { x: 1 }, b: [{ x: 1 }, { x: 1 }] });
  const cyclic: Record<string, unknown>[] = [];
  cyclic.push({ again: cyclic });
  expect(() => boundedCopy({ a: cyclic })).toThrow(new ObjectLimitError('a[0].again', 'refers to itself (a recursive alias)'));
});
