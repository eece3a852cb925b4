// Crash-loop and image-pull back-off: 10 s doubling to 300 s, reset after a long quiet run.
import { Backoff, isInBackoffSince, kubeletBackoff, nextBackoff } from '../../../src/decisions/backoff.js';

describe('Backoff', () => {
  test('doubles from 10 s up to the 300 s cap', () => {
    const b = new Backoff();
    const durations: number[] = [];
    let t = 0;
    for (let i = 0; i < 8; i++) {
      durations.push(b.next('k', t).durationMs);
      t += 1_000;
    }
    expect(durations).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000]);
  });

  test('a restart is held back until the duration has passed since the exit', () => {
    const entry = nextBackoff(kubeletBackoff, undefined, 0);
    expect(isInBackoffSince(kubeletBackoff, entry, 1_000, 5_000)).toBe(true);
    expect(isInBackoffSince(kubeletBackoff, entry, 1_000, 11_001)).toBe(false);
    expect(isInBackoffSince(kubeletBackoff, undefined, 1_000, 1_000)).toBe(false);
  });

  test('resets to 10 s after the container ran for more than 10 minutes', () => {
    const b = new Backoff();
    for (let i = 0; i < 5; i++) b.next('k', i);
    expect(b.get('k')!.durationMs).toBe(160_000);
    expect(b.isInBackoffSince('k', 700_000, 700_001)).toBe(false);
    expect(b.next('k', 700_001).durationMs).toBe(10_000);
  });

  test('since-update check (image pulls) and forgetting a pod', () => {
    const b = new Backoff();
    b.next('uid/img', 0);
    expect(b.isInBackoffSinceUpdate('uid/img', 9_999)).toBe(true);
    expect(b.isInBackoffSinceUpdate('uid/img', 10_000)).toBe(false);
    b.forgetPrefix('uid/');
    expect(b.get('uid/img')).toBeUndefined();
  });

  test('staleness of a restart is judged at the container\'s finish, the update stamped now', () => {
    const b = new Backoff();
    b.next('k', 0);
    b.next('k', 1_000);
    expect(b.get('k')!.durationMs).toBe(20_000);
    // Finished 11 min after the last restart: stale even though the restart comes 5 s later.
    expect(b.next('k', 661_000 + 5_000, 661_000)).toEqual({ durationMs: 10_000, lastUpdate: 666_000 });
  });
});
