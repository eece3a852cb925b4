// Per-resource rules of kube's registry strategies: what create resets, what an update of the main resource or of
// /status keeps from the stored object, whether deletion is graceful, whether PUT may create.
import { podQOSClass } from './defaults.js';
import type { Obj } from './resources.js';

function rec(v: unknown): Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}
function arr(v: unknown): Obj[] {
  return Array.isArray(v) ? (v as Obj[]) : [];
}

export interface Strategy {
  /** PrepareForCreate: clears what users may not set on create. */
  prepareForCreate(obj: Obj): void;
  /** PrepareForUpdate of the main resource (status is kept from the stored object where the kind has one). */
  prepareForUpdate(obj: Obj, old: Obj): void;
  /** PrepareForUpdate of the status subresource (everything but status and metadata kept), if the kind has one. */
  prepareForStatusUpdate?(obj: Obj, old: Obj): void;
  /** Graceful deletion (pods): the grace period a delete gets, or undefined to delete at once. */
  gracePeriod?(obj: Obj, requested: number | undefined): number;
  /** AllowCreateOnUpdate: PUT of a missing object creates it (events). */
  allowCreateOnUpdate: boolean;
}

const keepStatus = (obj: Obj, old: Obj): void => {
  if (old.status === undefined) delete obj.status;
  else obj.status = structuredClone(old.status);
};

const keepSpec = (obj: Obj, old: Obj): void => {
  if (old.spec === undefined) delete obj.spec;
  else obj.spec = structuredClone(old.spec);
};

const none = (): void => {};

const pods: Strategy = {
  prepareForCreate(pod) {
    const spec = rec(pod.spec);
    const status: Obj = { phase: 'Pending', qosClass: podQOSClass(pod) };
    if (arr(spec.schedulingGates).length > 0) {
      status.conditions = [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated', message: 'Scheduling is blocked due to non-empty scheduling gates' }];
    }
    pod.status = status;
  },
  prepareForUpdate: keepStatus,
  prepareForStatusUpdate(pod, old) {
    keepSpec(pod, old);
    // The status endpoint may not touch owner references (old kubelets corrupted them), as kube's podStatusStrategy.
    const meta = rec(pod.metadata);
    const oldMeta = rec(old.metadata);
    if (oldMeta.ownerReferences === undefined) delete meta.ownerReferences;
    else meta.ownerReferences = structuredClone(oldMeta.ownerReferences);
  },
  gracePeriod(pod, requested) {
    const spec = rec(pod.spec);
    let period = requested ?? (typeof spec.terminationGracePeriodSeconds === 'number' ? spec.terminationGracePeriodSeconds : 0);
    // Not scheduled, or already finished: nothing runs that needs time to stop.
    if (!spec.nodeName) period = 0;
    const phase = rec(pod.status).phase;
    if (phase === 'Failed' || phase === 'Succeeded') period = 0;
    if (period < 0) period = 1;
    return period;
  },
  allowCreateOnUpdate: false,
};

const nodes: Strategy = {
  // Kubelet registers its Node with status included; create keeps it.
  prepareForCreate: none,
  prepareForUpdate: keepStatus,
  prepareForStatusUpdate: keepSpec,
  allowCreateOnUpdate: false,
};

const namespaces: Strategy = {
  prepareForCreate(ns) {
    ns.status = { phase: 'Active' };
    const spec = rec(ns.spec);
    const finalizers = Array.isArray(spec.finalizers) ? (spec.finalizers as string[]) : [];
    if (!finalizers.includes('kubernetes')) spec.finalizers = [...finalizers, 'kubernetes'];
    ns.spec = spec;
  },
  prepareForUpdate(ns, old) {
    keepStatus(ns, old);
    // Finalizers of the spec change only through namespaces/finalize.
    const spec = rec(ns.spec);
    const oldFinalizers = rec(old.spec).finalizers;
    if (oldFinalizers === undefined) delete spec.finalizers;
    else spec.finalizers = structuredClone(oldFinalizers);
    ns.spec = spec;
  },
  prepareForStatusUpdate: keepSpec,
  allowCreateOnUpdate: false,
};

const plain = (allowCreateOnUpdate: boolean): Strategy => ({ prepareForCreate: none, prepareForUpdate: none, allowCreateOnUpdate });

const STRATEGIES: Record<string, Strategy> = {
  pods,
  nodes,
  namespaces,
  configmaps: plain(false),
  secrets: plain(false),
  // No cluster IP allocation: a Service keeps the clusterIP it is created with.
  services: plain(false),
  serviceaccounts: plain(false),
  events: plain(true),
  leases: plain(false),
};

export function strategyFor(storage: string): Strategy {
  const s = STRATEGIES[storage];
  if (!s) throw new Error(`no strategy for ${storage}`);
  return s;
}
