// Pure parts of the status manager: kubelet's mergePodStatus, its terminal guards, TerminatePod's final status, and the status patch.
import type { V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import { isStaticPod } from '../core/config-annotations.js';
import { canonicalJson } from '../core/canonical-json.js';

/** Conditions kubelet owns (kubetypes.PodConditionByKubelet); others (readiness gates, DisruptionTarget ...) belong to others. */
export const kubeletConditionTypes: ReadonlySet<string> = new Set([
  'PodScheduled', 'Ready', 'Initialized', 'ContainersReady', 'PodResizeInProgress', 'PodResizePending', 'PodReadyToStartContainers',
]);

/** The resize conditions carry their own transition times (the reason's), not the status's (kubelet's status manager). */
const ownTransitionTime = new Set(['PodResizeInProgress', 'PodResizePending']);

export const isTerminalPhase = (phase: string | undefined): boolean => phase === 'Succeeded' || phase === 'Failed';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const rfc3339WithFraction = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d+Z$/;

/**
 * A status as the API server stores it: plain JSON, times at second precision (metav1.Time), no undefined or
 * null members (they mean "unset"), and no empty objects: kube-apiserver serialises an unset struct field that is not
 * a pointer as `{}` (a container status's `lastState: {}`, which the node never sends), so `{}` and unset are the same
 * status; except `resources`, a pointer kubelet sends as `{}` for a container (or pod) without requests or limits.
 * Comparisons and patches use this form.
 */
export function normalizeStatus(status: V1PodStatus | undefined): { [key: string]: Json } {
  const text = JSON.stringify(status ?? {}, (_key, value: unknown) => {
    if (typeof value === 'string') {
      const m = rfc3339WithFraction.exec(value);
      return m ? `${m[1]}Z` : value;
    }
    return value === null ? undefined : value;
  });
  return dropEmptyObjects(JSON.parse(text) as Json) as { [key: string]: Json };
}

function dropEmptyObjects(v: Json, key?: string): Json | undefined {
  if (Array.isArray(v)) return v.map((e) => dropEmptyObjects(e) ?? {});
  if (!isObject(v)) return v;
  const out: { [key: string]: Json } = {};
  for (const [k, x] of Object.entries(v)) {
    const y = dropEmptyObjects(x, k);
    if (y !== undefined) out[k] = y;
  }
  return Object.keys(out).length === 0 && key !== 'resources' ? undefined : out;
}

/** Fields of PodStatus that are lists merged by a key in a strategic merge patch (patchMergeKey); others are atomic. */
const listMergeKeys: Record<string, string> = { conditions: 'type', podIPs: 'ip', hostIPs: 'ip' };

function isObject(v: Json | undefined): v is { [key: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Key order does not count: kube-apiserver answers in Go struct order, which is not the order the node builds. */
function equalJson(a: Json | undefined, b: Json | undefined): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

function diffObjects(before: { [key: string]: Json }, after: { [key: string]: Json }, atStatusRoot: boolean): { [key: string]: Json } {
  const patch: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(after)) {
    const old = before[key];
    if (equalJson(old, value)) continue;
    const mergeKey = atStatusRoot ? listMergeKeys[key] : undefined;
    if (mergeKey && Array.isArray(value) && Array.isArray(old)) {
      // The same elements in another order: nothing to write (the server keeps its order).
      const list = diffMergeList(old, value, mergeKey);
      if (list.length > 0) patch[key] = list;
    } else if (isObject(value) && isObject(old)) patch[key] = diffObjects(old, value, false);
    else patch[key] = value;
  }
  // A field the new status no longer has is deleted with null.
  for (const key of Object.keys(before)) if (!(key in after)) patch[key] = null;
  return patch;
}

/** Changed and new elements (with their merge key), removed ones as `$patch: delete`. */
function diffMergeList(before: Json[], after: Json[], mergeKey: string): Json[] {
  const keyOf = (e: Json) => (isObject(e) ? String(e[mergeKey]) : JSON.stringify(e));
  const oldByKey = new Map(before.map((e) => [keyOf(e), e]));
  const out: Json[] = [];
  for (const e of after) {
    const old = oldByKey.get(keyOf(e));
    if (equalJson(old, e)) continue;
    if (isObject(e) && isObject(old)) out.push({ [mergeKey]: e[mergeKey]!, ...diffObjects(old, e, false) });
    else out.push(e);
  }
  const newKeys = new Set(after.map(keyOf));
  for (const e of before) if (isObject(e) && !newKeys.has(keyOf(e))) out.push({ [mergeKey]: e[mergeKey]!, $patch: 'delete' });
  return out;
}

/**
 * The body of kubelet's PatchPodStatus: a two-way strategic merge patch from the stored status to the new one,
 * with the pod's UID as a precondition; undefined when nothing changed.
 */
export function podStatusPatch(uid: string, stored: V1PodStatus | undefined, next: V1PodStatus): { metadata: { uid: string }; status: { [key: string]: Json } } | undefined {
  const diff = diffObjects(normalizeStatus(stored), normalizeStatus(next), true);
  if (Object.keys(diff).length === 0) return undefined;
  return { metadata: { uid }, status: diff };
}

/** Whether two statuses are the same once stored (kubelet's isPodStatusByKubeletEqual on normalized statuses). */
export function sameStatus(a: V1PodStatus | undefined, b: V1PodStatus | undefined): boolean {
  return equalJson(conditionsByType(normalizeStatus(a)), conditionsByType(normalizeStatus(b)));
}

/**
 * Conditions compared by type, whatever their order (as kubelet's isPodStatusByKubeletEqual): the API server keeps the
 * order in which the scheduler and the node first wrote them, which is not the order the node derives.
 */
function conditionsByType(status: { [key: string]: Json }): { [key: string]: Json } {
  const conditions = status['conditions'];
  if (!Array.isArray(conditions)) return status;
  const type = (c: Json) => (isObject(c) ? String(c['type']) : '');
  return { ...status, conditions: [...conditions].sort((x, y) => (type(x) < type(y) ? -1 : type(x) > type(y) ? 1 : 0)) };
}

function terminalReadyCondition(type: string, phase: string): V1PodCondition {
  return { type, status: 'False', ...(phase === 'Failed' ? { reason: 'PodFailed' } : { reason: 'PodCompleted' }) };
}

/**
 * kubelet's updateLastTransitionTime against the published status: a condition whose status did not change keeps its
 * transition time, so an agent that restarted (and derives fresh times) does not rewrite them.
 */
function keepTransitionTime(stored: V1PodStatus | undefined, c: V1PodCondition): V1PodCondition {
  const old = ownTransitionTime.has(c.type) ? undefined : stored?.conditions?.find((o) => o.type === c.type);
  return old && old.status === c.status && old.lastTransitionTime ? { ...c, lastTransitionTime: old.lastTransitionTime } : c;
}

/**
 * kubelet's mergePodStatus: conditions others own stay as the API server has them, kubelet's come from the new
 * status; a terminal phase never shows Ready or ContainersReady true.
 */
export function mergePodStatus(stored: V1PodStatus | undefined, next: V1PodStatus): V1PodStatus {
  const conditions: V1PodCondition[] = (stored?.conditions ?? []).filter((c) => !kubeletConditionTypes.has(c.type));
  for (const c of next.conditions ?? []) if (kubeletConditionTypes.has(c.type)) conditions.push(keepTransitionTime(stored, c));
  const merged: V1PodStatus = { ...next, conditions };
  // kubelet's updateStatusInternal: the published startTime stays (a restarted agent derives a new one).
  if (stored?.startTime) merged.startTime = stored.startTime;
  if (isTerminalPhase(merged.phase)) {
    merged.conditions = conditions.map((c) =>
      (c.type === 'Ready' || c.type === 'ContainersReady') && c.status === 'True'
        ? { ...terminalReadyCondition(c.type, merged.phase!), lastTransitionTime: c.lastTransitionTime }
        : c,
    );
  }
  return merged;
}

/** Why a status must not be written over the stored one, or undefined when it may (kubelet's status guards). */
export function refuseStatusUpdate(pod: V1Pod, stored: V1PodStatus | undefined, next: V1PodStatus): string | undefined {
  if (isTerminalPhase(stored?.phase) && !isTerminalPhase(next.phase)) {
    return `pod is already ${stored!.phase}; a ${next.phase ?? 'phaseless'} status is not written over it`;
  }
  const restartPolicy = pod.spec?.restartPolicy ?? 'Always';
  if (restartPolicy === 'Always') return undefined;
  const check = (oldList: V1ContainerStatus[] | undefined, newList: V1ContainerStatus[] | undefined) => {
    for (const old of oldList ?? []) {
      const t = old.state?.terminated;
      if (!t || (t.exitCode !== 0 && restartPolicy === 'OnFailure')) continue;
      const now = (newList ?? []).find((s) => s.name === old.name);
      if (now && !now.state?.terminated) return `terminated container ${old.name} attempted illegal transition to non-terminated state`;
    }
    return undefined;
  };
  return check(stored?.containerStatuses, next.containerStatuses) ?? check(stored?.initContainerStatuses, next.initContainerStatuses);
}

const unknownTerminated = {
  terminated: { exitCode: 137, reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated' },
};

/**
 * The status of a pod whose containers are all gone (kubelet's TerminatePod plus getPhase for a terminal pod):
 * containers not known to have terminated are reported terminated with ContainerStatusUnknown (137); a pod that
 * is not static ends Succeeded when every container exited 0, else Failed.
 */
export function terminalPodStatus(pod: V1Pod, last: V1PodStatus): V1PodStatus {
  const status: V1PodStatus = structuredClone(last);
  const initialized = !(pod.spec?.initContainers?.length) || (status.containerStatuses ?? []).some((s) => s.lastState?.terminated || !s.state?.waiting);
  if (initialized) {
    status.containerStatuses = (status.containerStatuses ?? []).map((s) =>
      s.state?.terminated ? s : ({ ...s, ready: false, started: false, state: structuredClone(unknownTerminated) } as V1ContainerStatus),
    );
  }
  // Init containers that tried to start (all but the trailing never-started ones) and did not finish are failed.
  const inits = status.initContainerStatuses ?? [];
  let lastTried = 0;
  inits.forEach((s, i) => {
    if (!s.state?.waiting || s.lastState?.terminated) lastTried = i;
  });
  status.initContainerStatuses = inits.length
    ? inits.map((s, i) => (i > lastTried || s.state?.terminated ? s : ({ ...s, ready: false, state: structuredClone(unknownTerminated) } as V1ContainerStatus)))
    : status.initContainerStatuses;
  if (!isStaticPod(pod) && !isTerminalPhase(status.phase)) {
    const all = status.containerStatuses ?? [];
    status.phase = all.length > 0 && all.every((s) => s.state?.terminated?.exitCode === 0) ? 'Succeeded' : 'Failed';
  }
  return status;
}
