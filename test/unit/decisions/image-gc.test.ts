// kubelet's image GC decisions: records (first detected, last used, forgotten when gone), eviction order (least recently
// used, then first detected; never in use or pinned), the bytes to free between the thresholds, and the age rules.
import { bytesToFree, detectImages, evictionOrder, removableForSpace, tooLongUnused, type ImageRecord } from '../../../src/decisions/image-gc.js';

const img = (id: string, size = 10, pinned = false) => ({ id, size, pinned });

test('detectImages: first seen keeps its time, in use is used now, images gone are forgotten', () => {
  let records: Map<string, ImageRecord> = detectImages(new Map(), [img('a'), img('b'), img('pause', 1, true)], new Set(['a']), 100);
  expect(records.get('a')).toEqual({ firstDetectedMs: 100, lastUsedMs: 100, size: 10, pinned: false });
  expect(records.get('b')).toEqual({ firstDetectedMs: 100, size: 10, pinned: false });
  records = detectImages(records, [img('a', 12), img('c')], new Set(), 200);
  expect(records.get('a')).toEqual({ firstDetectedMs: 100, lastUsedMs: 100, size: 12, pinned: false });
  expect(records.get('c')).toEqual({ firstDetectedMs: 200, size: 10, pinned: false });
  expect(records.has('b')).toBe(false);
});

test('evictionOrder: never used first, then least recently used, ties by first detected; in use and pinned left out', () => {
  const records = new Map<string, ImageRecord>([
    ['recent', { firstDetectedMs: 0, lastUsedMs: 300, size: 1, pinned: false }],
    ['old', { firstDetectedMs: 0, lastUsedMs: 100, size: 1, pinned: false }],
    ['never-late', { firstDetectedMs: 50, size: 1, pinned: false }],
    ['never-early', { firstDetectedMs: 10, size: 1, pinned: false }],
    ['running', { firstDetectedMs: 0, lastUsedMs: 400, size: 1, pinned: false }],
    ['pause', { firstDetectedMs: 0, size: 1, pinned: true }],
  ]);
  expect(evictionOrder(records, new Set(['running'])).map((c) => c.id)).toEqual(['never-early', 'never-late', 'old', 'recent']);
});

test('bytesToFree: nothing below the high threshold, else down to the low one', () => {
  const policy = { highThresholdPercent: 85, lowThresholdPercent: 80 };
  expect(bytesToFree(1000, 200, policy)).toEqual({ usagePercent: 80, amount: 0 });
  expect(bytesToFree(1000, 150, policy)).toEqual({ usagePercent: 85, amount: 50 });
  expect(bytesToFree(1000, 2000, policy)).toEqual({ usagePercent: 0, amount: 0 });
});

test('age rules: imageMinimumGCAge from first detection; imageMaximumGCAge only once it has passed since GC began', () => {
  const candidates = [
    { id: 'young', firstDetectedMs: 950, size: 1, pinned: false },
    { id: 'used-now', firstDetectedMs: 0, lastUsedMs: 1000, size: 1, pinned: false },
    { id: 'old', firstDetectedMs: 0, lastUsedMs: 100, size: 1, pinned: false },
  ];
  expect(removableForSpace(candidates, 1000, 100).map((c) => c.id)).toEqual(['old']);
  expect(tooLongUnused(candidates, 1000, 0, 0)).toEqual([]);
  expect(tooLongUnused(candidates, 1000, 500, 800)).toEqual([]);
  expect(tooLongUnused(candidates, 1000, 0, 800).map((c) => c.id)).toEqual(['young', 'old']);
});
