// Volume fields nodelet cannot honour without an API server (or at all yet), as field paths for the pod's refusal.
import type { V1Pod, V1Volume } from '@kubernetes/client-node';

/** The volume sources nodelet sets up itself. */
const supportedSources = new Set(['name', 'emptyDir', 'hostPath', 'downwardAPI']);

function unsupportedSource(volume: V1Volume): string | undefined {
  const sources = Object.keys(volume).filter((k) => !supportedSources.has(k));
  if (sources.length > 0) return sources[0];
  const medium = volume.emptyDir?.medium ?? '';
  if (medium !== '' && medium !== 'Memory') return 'emptyDir.medium';
  return undefined;
}

/**
 * Field paths of volume features nodelet refuses: sources other than emptyDir (disk or Memory), hostPath and
 * downwardAPI (configMap, secret, projected, persistentVolumeClaim, ... need an API server), hugepage media and
 * resources, recursiveReadOnly mounts and volumeDevices.
 */
export function unsupportedVolumeFields(pod: V1Pod): string[] {
  const fields: string[] = [];
  (pod.spec?.volumes ?? []).forEach((v, i) => {
    const source = unsupportedSource(v);
    if (source) fields.push(`spec.volumes[${i}].${source}`);
    (v.downwardAPI?.items ?? []).forEach((item, j) => {
      if (item.resourceFieldRef?.resource.includes('hugepages-')) fields.push(`spec.volumes[${i}].downwardAPI.items[${j}].resourceFieldRef`);
    });
  });
  const lists = [['spec.initContainers', pod.spec?.initContainers ?? []], ['spec.containers', pod.spec?.containers ?? []]] as const;
  for (const [path, list] of lists) {
    list.forEach((c, i) => {
      if (c.volumeDevices?.length) fields.push(`${path}[${i}].volumeDevices`);
      (c.volumeMounts ?? []).forEach((m, j) => {
        if (m.recursiveReadOnly && m.recursiveReadOnly !== 'Disabled') fields.push(`${path}[${i}].volumeMounts[${j}].recursiveReadOnly`);
      });
    });
  }
  return fields;
}
