// A pod's QoS class and its containers' OOM score adjustments, as kubelet's GetPodQOS and GetContainerOOMScoreAdjust (pure).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { tryParseQuantity, type Quantity } from '../core/quantity.js';

export type PodQOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** The resources QoS looks at; others (ephemeral-storage, extended resources) never change the class. */
const qosResources = ['cpu', 'memory'] as const;
type QosResource = (typeof qosResources)[number];

/** A resource of a resource list; unparsable quantities count as unset (validation refuses them earlier). */
export function resourceQuantity(list: Record<string, unknown> | undefined, name: string): Quantity | undefined {
  return list && Object.hasOwn(list, name) ? tryParseQuantity(list[name]) : undefined;
}

function allContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
}

/**
 * kubelet's GetPodQOS: BestEffort without any cpu/memory request or limit; Guaranteed when every container
 * limits both cpu and memory and the pod's summed requests equal its summed limits; Burstable otherwise.
 */
export function podQOSClass(pod: V1Pod): PodQOSClass {
  const requests = new Map<QosResource, Quantity>();
  const limits = new Map<QosResource, Quantity>();
  let guaranteed = true;
  const sumPositive = (into: Map<QosResource, Quantity>, name: QosResource, q: Quantity | undefined): boolean => {
    if (!q || q.sign() <= 0) return false;
    const prev = into.get(name);
    into.set(name, prev ? prev.add(q) : q);
    return true;
  };
  for (const c of allContainers(pod)) {
    let limited = 0;
    for (const name of qosResources) {
      sumPositive(requests, name, resourceQuantity(c.resources?.requests, name));
      if (sumPositive(limits, name, resourceQuantity(c.resources?.limits, name))) limited++;
    }
    if (limited < qosResources.length) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [name, request] of requests) {
      const limit = limits.get(name);
      if (!limit || limit.cmp(request) !== 0) guaranteed = false;
    }
  }
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/** Priority at and above which a pod is critical (scheduling.SystemCriticalPriority). */
const systemCriticalPriority = 2_000_000_000;

/** kubelet's IsCriticalPod: static and mirror pods, and pods with a system-critical priority. */
export function isCriticalPod(pod: V1Pod): boolean {
  const source = pod.metadata?.annotations?.['kubernetes.io/config.source'];
  if (source !== undefined && source !== 'api') return true;
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) return true;
  return (pod.spec?.priority ?? 0) >= systemCriticalPriority;
}

/** kubelet's IsNodeCriticalPod: a critical pod of priority class system-node-critical. */
export function isNodeCriticalPod(pod: V1Pod): boolean {
  return isCriticalPod(pod) && pod.spec?.priorityClassName === 'system-node-critical';
}

export const guaranteedOOMScoreAdj = -997;
export const besteffortOOMScoreAdj = 1000;
/** The scheduler's assumed memory request of a container without one (schedulerutil.DefaultMemoryRequest). */
const defaultMemoryRequest = 200n * 1024n * 1024n;

function memoryRequest(c: V1Container): bigint {
  return resourceQuantity(c.resources?.requests, 'memory')?.value() ?? 0n;
}

/** The smallest memory request among regular containers, a missing request counting as the scheduler default. */
function minRegularMemoryRequest(pod: V1Pod): bigint | undefined {
  let min: bigint | undefined;
  for (const c of pod.spec?.containers ?? []) {
    const q = resourceQuantity(c.resources?.requests, 'memory');
    const v = q ? q.value() : defaultMemoryRequest;
    if (min === undefined || v < min) min = v;
  }
  return min;
}

/**
 * kubelet's GetContainerOOMScoreAdjust: -997 for node-critical and Guaranteed pods, 1000 for BestEffort,
 * and for Burstable 1000 - 1000 × memoryRequest / memoryCapacity kept within [3, 999], a sidecar (restartable
 * init container) scored from the smallest request among itself and the regular containers.
 *
 * The runtime may not apply the value as is: containerd with restrict_oom_score_adj (needed on machines
 * where runc lacks CAP_SYS_RESOURCE) raises any value below its own score to that score, so a Guaranteed
 * container there gets containerd's score instead of -997. That is the runtime's documented clamp, not an error.
 */
export function containerOOMScoreAdjust(pod: V1Pod, container: V1Container, memoryCapacity: bigint): number {
  if (isNodeCriticalPod(pod)) return guaranteedOOMScoreAdj;
  switch (podQOSClass(pod)) {
    case 'Guaranteed':
      return guaranteedOOMScoreAdj;
    case 'BestEffort':
      return besteffortOOMScoreAdj;
    case 'Burstable':
      break;
  }
  const capacity = memoryCapacity > 0n ? memoryCapacity : 1n;
  const request = memoryRequest(container);
  let adjust = 1000n - (1000n * request) / capacity;
  const isSidecar = container.restartPolicy === 'Always' && (pod.spec?.initContainers ?? []).some((c) => c.name === container.name);
  if (isSidecar) {
    const own = resourceQuantity(container.resources?.requests, 'memory')?.value() ?? defaultMemoryRequest;
    const regular = minRegularMemoryRequest(pod);
    const min = regular !== undefined && regular < own ? regular : own;
    adjust = 1000n - (1000n * min) / capacity;
    // A sidecar requesting no more than the smallest regular container goes before it.
    if (min <= request) adjust += 1n;
  }
  if (adjust < BigInt(1000 + guaranteedOOMScoreAdj)) return 1000 + guaranteedOOMScoreAdj;
  if (adjust === BigInt(besteffortOOMScoreAdj)) return besteffortOOMScoreAdj - 1;
  return Number(adjust);
}
