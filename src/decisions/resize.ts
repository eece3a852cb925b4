// In-place pod resize (GA in 1.35), the pure parts: a pod's allocated resources, the allocated pod kubelet syncs, and
// which running containers a sync must resize in place or restart (kubelet's allocation manager and
// computePodResizeAction).
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { tryParseQuantity } from '../core/quantity.js';
import type { ContainerObservation } from '../core/runtime-state.js';
import type { PodAllocation } from '../host/pod-resources-state.js';

/** A container's cpu (millicores) and memory (bytes), as a resize compares them (kubelet's resourceRequirements). */
export interface ResizeValues {
  cpuRequest: bigint;
  cpuLimit: bigint;
  memoryRequest: bigint;
  memoryLimit: bigint;
}

export type ResizeResource = 'cpu' | 'memory';

/** One running container to update in place for one resource. */
export interface ContainerResourceUpdate {
  id: string;
  name: string;
  /** The container's allocated resources, as the update sends them. */
  desired: ResizeValues;
  /** What was last applied to it (the actuated resources). */
  current: ResizeValues;
}

const list = (r: V1ResourceRequirements | undefined, kind: 'requests' | 'limits') => r?.[kind] as Record<string, unknown> | undefined;

function quantity(r: V1ResourceRequirements | undefined, kind: 'requests' | 'limits', name: string, milli: boolean): bigint {
  const q = tryParseQuantity(list(r, kind)?.[name]);
  if (!q) return 0n;
  return milli ? q.milliValue() : q.value();
}

export function resizeValues(r: V1ResourceRequirements | undefined): ResizeValues {
  return {
    cpuRequest: quantity(r, 'requests', 'cpu', true),
    cpuLimit: quantity(r, 'limits', 'cpu', true),
    memoryRequest: quantity(r, 'requests', 'memory', false),
    memoryLimit: quantity(r, 'limits', 'memory', false),
  };
}

/** Every container kubelet 1.37 allocates and resizes: regular and init containers (sidecars or not). */
function resizableContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}

/** apiequality.Semantic on a resource list: the same names, each quantity equal in value ("1" = "1000m"). */
function resourceListsEqual(a: Record<string, unknown> | undefined, b: Record<string, unknown> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  const kb = Object.keys(b ?? {});
  if (ka.length !== kb.length) return false;
  return ka.every((k) => {
    if (!Object.hasOwn(b ?? {}, k)) return false;
    const qa = tryParseQuantity(a![k]);
    const qb = tryParseQuantity(b![k]);
    return qa && qb ? qa.cmp(qb) === 0 : a![k] === b![k];
  });
}

export function requirementsEqual(a: V1ResourceRequirements | undefined, b: V1ResourceRequirements | undefined): boolean {
  return resourceListsEqual(list(a, 'requests'), list(b, 'requests')) && resourceListsEqual(list(a, 'limits'), list(b, 'limits'));
}

/** kubelet's ResourceInfoForPod: what a pod is allocated when admitted or when a resize is accepted. */
export function allocationOf(pod: V1Pod): PodAllocation {
  const alloc: PodAllocation = {};
  for (const c of resizableContainers(pod)) alloc[c.name] = structuredClone(c.resources ?? {});
  return alloc;
}

/**
 * kubelet's UpdatePodFromAllocation: the pod with each container's resources replaced by its allocation where they
 * differ (a resize not yet accepted), and whether any did. The pod itself is not changed.
 */
export function podFromAllocation(pod: V1Pod, alloc: PodAllocation | undefined): { pod: V1Pod; updated: boolean } {
  if (!alloc) return { pod, updated: false };
  let updated = false;
  const replace = (cs: V1Container[] | undefined) =>
    cs?.map((c) => {
      const a = alloc[c.name];
      if (!a || requirementsEqual(c.resources, a)) return c;
      updated = true;
      return { ...c, resources: structuredClone(a) };
    });
  const spec = { ...pod.spec!, containers: replace(pod.spec?.containers) ?? [] };
  if (pod.spec?.initContainers) spec.initContainers = replace(pod.spec.initContainers)!;
  return updated ? { pod: { ...pod, spec }, updated } : { pod, updated };
}

/** kubelet's podResizeMessage: the allocated resources of every container as JSON, after a prefix. */
export function resizeEventMessage(prefix: string, pod: V1Pod, generation: number, error?: string): string {
  const entry = (c: V1Container) => ({ name: c.name, resources: resourcesJson(c.resources) });
  const inits = (pod.spec?.initContainers ?? []).map(entry);
  const containers = (pod.spec?.containers ?? []).map(entry);
  const summary = {
    ...(inits.length ? { initContainers: inits } : {}),
    ...(containers.length ? { containers } : {}),
    generation,
    ...(error ? { error } : {}),
  };
  return `${prefix}: ${JSON.stringify(summary)}`;
}

/** Go's json of a ResourceRequirements: limits before requests, names sorted, canonical quantities. */
function resourcesJson(r: V1ResourceRequirements | undefined): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const kind of ['limits', 'requests'] as const) {
    const l = list(r, kind);
    if (!l || Object.keys(l).length === 0) continue;
    out[kind] = Object.fromEntries(
      Object.keys(l)
        .sort()
        .map((k) => [k, tryParseQuantity(l[k])?.toString() ?? String(l[k])]),
    );
  }
  return out;
}

/** What one running container needs for its allocation: nothing, an in-place update per resource, or a restart. */
export type ContainerResize =
  | { kind: 'none' }
  | { kind: 'restart'; message: string }
  | { kind: 'update'; updates: Partial<Record<ResizeResource, ContainerResourceUpdate>>; grows: Partial<Record<ResizeResource, boolean>> };

/**
 * kubelet's computePodResizeAction for one running container: compares its allocated resources with the actuated ones;
 * a changed resource whose resizePolicy is RestartContainer restarts it, otherwise each changed resource (limit first,
 * then request) is updated in place. An unknown actuated record counts as zero, as in kubelet (an update is idempotent).
 */
export function containerResize(container: V1Container, running: ContainerObservation, actuated: V1ResourceRequirements | undefined): ContainerResize {
  const desired = resizeValues(container.resources);
  const current = resizeValues(actuated);
  const policy = (r: ResizeResource) => container.resizePolicy?.find((p) => p.resourceName === r)?.restartPolicy ?? 'NotRequired';
  const changed: Record<ResizeResource, [bigint, bigint] | undefined> = {
    memory: desired.memoryLimit !== current.memoryLimit ? [desired.memoryLimit, current.memoryLimit] : desired.memoryRequest !== current.memoryRequest ? [desired.memoryRequest, current.memoryRequest] : undefined,
    cpu: desired.cpuLimit !== current.cpuLimit ? [desired.cpuLimit, current.cpuLimit] : desired.cpuRequest !== current.cpuRequest ? [desired.cpuRequest, current.cpuRequest] : undefined,
  };
  if (!changed.memory && !changed.cpu) return { kind: 'none' };
  if ((['memory', 'cpu'] as const).some((r) => changed[r] && policy(r) === 'RestartContainer')) {
    return { kind: 'restart', message: `Container ${container.name} resize requires restart` };
  }
  const updates: Partial<Record<ResizeResource, ContainerResourceUpdate>> = {};
  const grows: Partial<Record<ResizeResource, boolean>> = {};
  for (const r of ['memory', 'cpu'] as const) {
    const c = changed[r];
    if (!c) continue;
    updates[r] = { id: running.id, name: container.name, desired, current: { ...current } };
    grows[r] = c[0] > c[1];
  }
  return { kind: 'update', updates, grows };
}

/**
 * kubelet's isContainerResourceResizeInProgress: a running resizable container whose actuated cpu or memory differs
 * from its allocation.
 */
export function resizeInProgress(pod: V1Pod, running: (name: string) => boolean, actuated: (name: string) => V1ResourceRequirements | undefined): boolean {
  return resizableContainers(pod).some((c) => {
    if (!running(c.name)) return false;
    const a = resizeValues(c.resources);
    const b = resizeValues(actuated(c.name));
    return a.cpuRequest !== b.cpuRequest || a.cpuLimit !== b.cpuLimit || a.memoryRequest !== b.memoryRequest || a.memoryLimit !== b.memoryLimit;
  });
}
