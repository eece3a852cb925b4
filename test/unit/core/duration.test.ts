// Go durations as kubelet reads them in flags and its configuration file.
import { parseGoDuration } from '../../../src/core/duration.js';

test('Go durations', () => {
  expect(parseGoDuration('10s')).toBe(10_000);
  expect(parseGoDuration('1m0s')).toBe(60_000);
  expect(parseGoDuration('1h30m')).toBe(5_400_000);
  expect(parseGoDuration('250ms')).toBe(250);
  expect(parseGoDuration('1.5s')).toBe(1500);
  expect(parseGoDuration('0')).toBe(0);
  expect(parseGoDuration('500us')).toBe(0.5);
  for (const bad of ['', '10', 's', '10x', '1m 0s']) expect(() => parseGoDuration(bad)).toThrow(/invalid duration/);
});
