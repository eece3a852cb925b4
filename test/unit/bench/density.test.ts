// The density phase's reading of the agent's relist histogram (Prometheus text, kubelet's buckets).
import { bucketQuantileMs, histogramDelta, parseHistogram } from '../../../bench/density.js';

const name = 'kubelet_pleg_relist_duration_seconds';
const exposition = (counts: number[], sum: number) => [
  `# HELP ${name} Duration in seconds for relisting pods in PLEG.`,
  `# TYPE ${name} histogram`,
  ...['0.005', '0.01', '0.025', '0.05', '0.1', '+Inf'].map((le, i) => `${name}_bucket{le="${le}"} ${counts[i]}`),
  `${name}_sum ${sum}`,
  `${name}_count ${counts.at(-1)}`,
  'kubelet_pleg_relist_interval_seconds_count 99',
].join('\n');

test('the observations of a window: the difference of two readings, its quantiles as bucket bounds', () => {
  const before = parseHistogram(exposition([10, 20, 20, 20, 20, 20], 0.1), name);
  const after = parseHistogram(exposition([60, 150, 218, 219, 220, 220], 2.6), name);
  const window = histogramDelta(before, after);
  expect(window.count).toBe(200);
  expect(window.sum).toBeCloseTo(2.5);
  expect(window.buckets.map(([, n]) => n)).toEqual([50, 130, 198, 199, 200, 200]);
  expect(bucketQuantileMs(window, 0.5)).toBe(10);
  expect(bucketQuantileMs(window, 0.99)).toBe(25);
  expect(bucketQuantileMs(window, 1)).toBe(100);
});

test('an exposition without the histogram is an error naming it', () => {
  expect(() => parseHistogram('kubelet_pleg_relist_interval_seconds_count 1\n', name)).toThrow(`no ${name} histogram`);
});
