// Image volumes (spec.volumes[].image, KEP 4639): kubelet pulls their images before it starts containers and hands the
// runtime the image itself in the CRI Mount, which containerd mounts read-only. Nothing of them lives under the pod dir.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ImageSpec } from '../cri/types.js';
import type { SyncError } from '../core/sync-result.js';

/** kubelet's imageVolumePullResult: the image to mount, or why its pull failed (a SyncError with kubelet's reason). */
export type ImageVolumePull = { image: ImageSpec } | { error: SyncError };

/** The pull result of each image volume of the pod, by volume name (kubelet's imageVolumePulls). */
export type ImageVolumePulls = ReadonlyMap<string, ImageVolumePull>;

/** The ImageSpec kubelet puts in an image volume's Mount: the pulled image's ID and the pod's annotations. */
export function imageVolumeSpec(imageRef: string, pod: V1Pod): ImageSpec {
  return { image: imageRef, annotations: { ...(pod.metadata?.annotations ?? {}) } };
}

/**
 * Why a container cannot start for its image volumes, as kubelet's toKubeContainerImageVolumes: the failed pull of each
 * of its volumeMounts whose image volume could not be pulled (a Failed event each), the last of them the start's error;
 * undefined when every image volume it mounts is there.
 */
export function imageVolumeFailures(container: V1Container, pulls: ImageVolumePulls): SyncError[] | undefined {
  const failed: SyncError[] = [];
  for (const mount of container.volumeMounts ?? []) {
    const pull = pulls.get(mount.name);
    if (pull && 'error' in pull) failed.push(pull.error);
  }
  return failed.length > 0 ? failed : undefined;
}
