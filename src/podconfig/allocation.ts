// kubelet's allocation manager: what each admitted pod was allocated, and in-place resizes accepted (the allocation
// follows the spec), deferred until room appears, or infeasible. The pod workers sync the allocated pod.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { EventRecorder } from '../core/events.js';
import type { Logger } from '../core/log.js';
import { allocationOf, podFromAllocation, resizeEventMessage } from '../decisions/resize.js';
import type { PodResourcesState } from '../host/pod-resources-state.js';
import type { ResizeConditions } from '../lifecycle/resize-conditions.js';
import { admitPod } from './admission.js';

const uidOf = (p: V1Pod) => p.metadata!.uid!;

export class AllocationManager {
  constructor(
    private readonly allocated: PodResourcesState,
    private readonly conditions: ResizeConditions,
    private readonly events: EventRecorder,
    private readonly log: Logger,
  ) {}

  /** The pod as allocated: after a restart the checkpoint, not the spec, says what it runs with (kubelet's AddPod). */
  allocatedPod(pod: V1Pod): V1Pod {
    return podFromAllocation(pod, this.allocated.get(uidOf(pod))).pod;
  }

  /** Records an admitted pod's allocation (kept if it has one). */
  admitted(pod: V1Pod): void {
    if (!this.allocated.has(uidOf(pod))) this.allocated.set(uidOf(pod), allocationOf(pod));
  }

  /** Whether a resize waits for room (kubelet retries those when pods go). */
  hasPending(): boolean {
    return this.pendingUids.size > 0;
  }

  private readonly pendingUids = new Set<string>();

  /**
   * kubelet's handlePodResourcesResize for every admitted pod whose spec differs from its allocation: accepted when the
   * node's admission admits the pod with its new requests next to the others' allocations (ResizeStarted, and
   * PodResizeInProgress until applied), else PodResizePending Deferred (or Infeasible) with the admission's message.
   * A spec back at its allocation clears a pending resize.
   */
  handleResizes(pods: readonly V1Pod[], node: V1Node | undefined): void {
    const allocatedPods = pods.map((p) => this.allocatedPod(p));
    pods.forEach((pod, i) => {
      const uid = uidOf(pod);
      const generation = pod.metadata?.generation ?? 0;
      if (allocatedPods[i] === pod) {
        this.conditions.clearPending(uid);
        this.pendingUids.delete(uid);
        return;
      }
      const others = allocatedPods.filter((_, j) => j !== i);
      const result = node ? admitPod(pod, others, node) : { admit: true as const };
      const ref = { pod };
      if (result.admit) {
        this.allocated.set(uid, allocationOf(pod));
        allocatedPods[i] = pod;
        this.conditions.clearPending(uid);
        this.pendingUids.delete(uid);
        this.conditions.clearInProgress(uid);
        this.conditions.setInProgress(uid, '', '', generation);
        this.log.info({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, podUid: uid, generation }, 'Pod resize allocated');
        this.events.event(ref, 'Normal', 'ResizeStarted', resizeEventMessage('Pod resize started', pod, generation));
        return;
      }
      this.pendingUids.add(uid);
      if (this.conditions.setPending(uid, result.reason, result.message, generation)) {
        const reason = this.conditions.pending(uid)!.reason!;
        this.log.info({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, podUid: uid, reason }, `Pod resize ${reason}: ${result.message}`);
        this.events.event(ref, 'Warning', reason === 'Infeasible' ? 'ResizeInfeasible' : 'ResizeDeferred', resizeEventMessage(`Pod resize ${reason}`, pod, generation, result.message));
      }
    });
  }

  /** Forgets pods no source has any more (their allocation and conditions). */
  retain(uids: ReadonlySet<string>): void {
    this.allocated.retain(uids);
    this.conditions.retain(uids);
    for (const uid of [...this.pendingUids]) if (!uids.has(uid)) this.pendingUids.delete(uid);
  }
}
