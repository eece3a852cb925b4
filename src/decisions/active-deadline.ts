// kubelet's activeDeadlineHandler (pkg/kubelet/active_deadline.go): a pod with spec.activeDeadlineSeconds that has been
// active on the node that long, counted from its status.startTime, fails with reason DeadlineExceeded and is stopped.
import type { V1Pod } from '@kubernetes/client-node';
import type { WaitingReason } from './status.js';

export const deadlineExceeded: WaitingReason = {
  reason: 'DeadlineExceeded',
  message: 'Pod was active on the node longer than the specified deadline',
};

/**
 * Whether the pod is past its active deadline now; otherwise the milliseconds left (undefined: no deadline, or no
 * start time yet).
 */
export function activeDeadline(pod: V1Pod, startTime: Date | string | undefined, nowMs: number): { exceeded: true } | { exceeded: false; remainingMs?: number } {
  const seconds = pod.spec?.activeDeadlineSeconds;
  if (seconds === undefined || seconds === null || startTime === undefined) return { exceeded: false };
  const started = new Date(startTime).getTime();
  if (Number.isNaN(started)) return { exceeded: false };
  const remainingMs = started + seconds * 1000 - nowMs;
  return remainingMs <= 0 ? { exceeded: true } : { exceeded: false, remainingMs };
}
