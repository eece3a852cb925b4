// A pod's containers as kubelet's VisitContainers walks them: init containers, regular containers, ephemeral containers.
import type { V1Container, V1Pod } from '@kubernetes/client-node';

/**
 * spec.ephemeralContainers as containers: an ephemeral container has a container's fields (the API server refuses
 * those it may not use: ports, probes, lifecycle, resources) plus targetContainerName.
 */
export function ephemeralContainers(pod: V1Pod): V1Container[] {
  return (pod.spec?.ephemeralContainers ?? []) as V1Container[];
}

/** Every container of the pod, ephemeral ones included (names are unique across the three lists). */
export function podContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? []), ...ephemeralContainers(pod)];
}
