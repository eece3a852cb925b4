// Volume fields nodelet cannot honour yet, as field paths for the pod's refusal.
import type { V1Pod, V1Volume } from '@kubernetes/client-node';

/**
 * The volume sources nodelet sets up itself (configMap, secret and projected from the API server; static pods may not
 * use them; image: the runtime mounts it). gitRepo is admitted as kubelet admits it, and its set-up fails
 * (gitRepoDisabled).
 */
const supportedSources = new Set(['name', 'emptyDir', 'hostPath', 'downwardAPI', 'configMap', 'secret', 'projected', 'image', 'gitRepo']);

/**
 * kubelet's git_repo plugin's SetUp error: the GitRepoVolumeDriver gate is off since 1.33 and locked off since 1.36, so
 * a gitRepo volume never mounts (FailedMount; the pod stays ContainerCreating). The gate can no longer be turned on.
 */
export const gitRepoDisabled = 'git-repo volume plugin has been disabled; if necessary, it may be re-enabled by enabling the feature-gate `GitRepoVolumeDriver`';
/** The projected sources nodelet writes. */
const projectedSources = new Set(['configMap', 'secret', 'downwardAPI', 'serviceAccountToken', 'clusterTrustBundle', 'podCertificate']);

function unsupportedSource(volume: V1Volume): string | undefined {
  const sources = Object.keys(volume).filter((k) => !supportedSources.has(k));
  if (sources.length > 0) return sources[0];
  const medium = volume.emptyDir?.medium ?? '';
  if (medium !== '' && medium !== 'Memory') return 'emptyDir.medium';
  return undefined;
}

/**
 * Field paths of volume features nodelet refuses: sources other than emptyDir (disk or Memory), hostPath,
 * downwardAPI, configMap, secret, projected and image (persistentVolumeClaim, ...), projected sources other than
 * configMap, secret, downwardAPI, serviceAccountToken, clusterTrustBundle and podCertificate, hugepage media and
 * resources, and volumeDevices.
 */
export function unsupportedVolumeFields(pod: V1Pod): string[] {
  const fields: string[] = [];
  (pod.spec?.volumes ?? []).forEach((v, i) => {
    const source = unsupportedSource(v);
    if (source) fields.push(`spec.volumes[${i}].${source}`);
    (v.downwardAPI?.items ?? []).forEach((item, j) => {
      if (item.resourceFieldRef?.resource.includes('hugepages-')) fields.push(`spec.volumes[${i}].downwardAPI.items[${j}].resourceFieldRef`);
    });
    (v.projected?.sources ?? []).forEach((source, j) => {
      const other = Object.keys(source).find((k) => !projectedSources.has(k));
      if (other) fields.push(`spec.volumes[${i}].projected.sources[${j}].${other}`);
      (source.downwardAPI?.items ?? []).forEach((item, k) => {
        if (item.resourceFieldRef?.resource.includes('hugepages-')) fields.push(`spec.volumes[${i}].projected.sources[${j}].downwardAPI.items[${k}].resourceFieldRef`);
      });
    });
  });
  const lists = [['spec.initContainers', pod.spec?.initContainers ?? []], ['spec.containers', pod.spec?.containers ?? []]] as const;
  for (const [path, list] of lists) {
    list.forEach((c, i) => {
      if (c.volumeDevices?.length) fields.push(`${path}[${i}].volumeDevices`);
    });
  }
  return fields;
}
