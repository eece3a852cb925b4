// The client certificate's rotation deadline (jittered 70-90 % of its lifetime) and the retry delay after a failure.
import { rotationDeadline, rotationRetryDelay } from '../../../src/bootstrap/rotation-deadline.js';

const hour = 3_600_000;
test.each([
  [0, 10 * hour, 0, 7 * hour],
  [0, 10 * hour, 0.5, 8 * hour],
  [0, 10 * hour, 0.999999, 9 * hour - 8],
  [1_000, 1_000 + 60_000, 0, 1_000 + 42_000],
  [1_000, 1_000 + 60_000, 0.25, 1_000 + 45_000],
])('certificate valid %d..%d, random %d: deadline %d', (notBefore, notAfter, random, expected) => {
  expect(rotationDeadline(notBefore, notAfter, random)).toBe(expected);
});

test('the deadline is always within 70-90 % of the lifetime', () => {
  for (let i = 0; i < 1000; i++) {
    const d = rotationDeadline(5_000, 105_000, Math.random());
    expect(d).toBeGreaterThanOrEqual(75_000);
    expect(d).toBeLessThan(95_000);
  }
});

test.each([
  [1, 0, hour, 2_000],
  [2, 0, hour, 4_000],
  [5, 0, hour, 32_000],
  [20, 0, hour, 300_000],
  [20, 0, 60_000, 50_000],
  [3, 0, 12_000, 2_000],
  [3, 0, 5_000, 1_000],
])('failure %d at %d, certificate ends %d: retry after %d ms', (failures, now, notAfter, expected) => {
  expect(rotationRetryDelay(failures, now, notAfter)).toBe(expected);
});
