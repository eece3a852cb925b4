// A pod's PodResizePending and PodResizeInProgress conditions, as kubelet's status manager keeps them: set by the
// allocation (a resize accepted or not) and by the pod's syncs (applied, or failed), read into every status.
import type { V1PodCondition } from '@kubernetes/client-node';

interface Conditions {
  pending?: V1PodCondition;
  inProgress?: V1PodCondition;
}

export class ResizeConditions {
  private readonly pods = new Map<string, Conditions>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  /** kubelet's updatedPodResizeCondition: the transition time moves only when the reason changes. */
  private condition(type: string, old: V1PodCondition | undefined, reason: string, message: string, observedGeneration: number): V1PodCondition {
    const now = this.now();
    return {
      type,
      status: 'True',
      lastProbeTime: now,
      lastTransitionTime: old && (old.reason ?? '') === reason ? old.lastTransitionTime! : now,
      ...(observedGeneration ? { observedGeneration } : {}),
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
    };
  }

  private of(uid: string): Conditions {
    let c = this.pods.get(uid);
    if (!c) this.pods.set(uid, (c = {}));
    return c;
  }

  /** A resize not accepted: Infeasible, or Deferred for any other reason. True when the reason or generation changed. */
  setPending(uid: string, reason: string, message: string, generation: number): boolean {
    const c = this.of(uid);
    const old = c.pending;
    const r = reason === 'Infeasible' ? 'Infeasible' : 'Deferred';
    c.pending = this.condition('PodResizePending', old, r, message, generation);
    return !old || old.reason !== r || (old.observedGeneration ?? 0) !== generation;
  }

  clearPending(uid: string): void {
    const c = this.pods.get(uid);
    if (c) delete c.pending;
  }

  pending(uid: string): V1PodCondition | undefined {
    return this.pods.get(uid)?.pending;
  }

  /**
   * kubelet's SetPodResizeInProgressCondition: an existing condition keeps its generation (and its reason and message
   * unless new ones are given). Returns the condition's generation and whether it changed.
   */
  setInProgress(uid: string, reason: string, message: string, generation: number): { generation: number; changed: boolean } {
    const c = this.of(uid);
    const old = c.inProgress;
    if (old && !reason && !message) {
      reason = old.reason ?? '';
      message = old.message ?? '';
    }
    const gen = old ? (old.observedGeneration ?? 0) : generation;
    c.inProgress = this.condition('PodResizeInProgress', old, reason, message, gen);
    const changed = !old || (old.reason ?? '') !== reason || (old.message ?? '') !== message;
    return { generation: gen, changed };
  }

  /** The generation of the cleared condition; undefined when there was none. */
  clearInProgress(uid: string): number | undefined {
    const c = this.pods.get(uid);
    if (!c?.inProgress) return undefined;
    const generation = c.inProgress.observedGeneration ?? 0;
    delete c.inProgress;
    return generation;
  }

  /** In kubelet's order: PodResizePending, then PodResizeInProgress. */
  list(uid: string): V1PodCondition[] {
    const c = this.pods.get(uid);
    return [c?.pending, c?.inProgress].filter((x): x is V1PodCondition => x !== undefined);
  }

  /** Drops the conditions of pods not in `uids`. */
  retain(uids: ReadonlySet<string>): void {
    for (const uid of [...this.pods.keys()]) if (!uids.has(uid)) this.pods.delete(uid);
  }
}
