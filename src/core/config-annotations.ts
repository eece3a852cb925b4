// The annotations kubelet puts on pods by where they came from (pkg/kubelet/types), and the predicates that read them.
import type { V1Pod } from '@kubernetes/client-node';

/** Annotations kubelet puts on every static pod. */
export const CONFIG_HASH_ANNOTATION = 'kubernetes.io/config.hash';
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_SEEN_ANNOTATION = 'kubernetes.io/config.seen';
/** The config.source of pods read from the manifest directory. */
export const FILE_SOURCE = 'file';

/** The annotation that marks a mirror pod (the API copy of a static pod), holding the static pod's config hash. */
export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** kubelet's IsStaticPod: a pod from a source other than the API server. */
export function isStaticPod(pod: V1Pod): boolean {
  const source = pod.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION];
  return source !== undefined && source !== 'api';
}

/** kubelet's IsMirrorPod. */
export function isMirrorPod(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined;
}
