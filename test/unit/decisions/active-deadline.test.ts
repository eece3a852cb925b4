// kubelet's active deadline: counted from the pod's start time; no deadline or no start time is never past it.
import { activeDeadline } from '../../../src/decisions/active-deadline.js';

const pod = (activeDeadlineSeconds?: number) => ({ spec: { containers: [], ...(activeDeadlineSeconds !== undefined ? { activeDeadlineSeconds } : {}) } });
const start = new Date('2026-01-01T00:00:00Z');

test('past the deadline at start + activeDeadlineSeconds, before it the time left', () => {
  expect(activeDeadline(pod(30), start, start.getTime() + 29_500)).toEqual({ exceeded: false, remainingMs: 500 });
  expect(activeDeadline(pod(30), start, start.getTime() + 30_000)).toEqual({ exceeded: true });
  expect(activeDeadline(pod(30), start.toISOString(), start.getTime() + 31_000)).toEqual({ exceeded: true });
  expect(activeDeadline(pod(0), start, start.getTime())).toEqual({ exceeded: true });
});

test('no deadline, or no start time yet, is never past it', () => {
  expect(activeDeadline(pod(), start, start.getTime() + 1e9)).toEqual({ exceeded: false });
  expect(activeDeadline(pod(5), undefined, start.getTime())).toEqual({ exceeded: false });
});
