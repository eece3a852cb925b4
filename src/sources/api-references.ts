// Static pods may not reference API objects (kubelet 1.37's file source: podutil.HasAPIObjectReference), since the
// node's credentials should not let a manifest on disk read the cluster's Secrets, ConfigMaps or tokens.
import type { V1Container, V1Pod } from '@kubernetes/client-node';

/** The first API object reference of a pod, in kubelet's order: the field that makes it and kubelet's resource words. */
export interface ApiObjectReference {
  field: string;
  resource: string;
}

type Found = ApiObjectReference | undefined;

function containers(pod: V1Pod): [string, V1Container[]][] {
  return [
    ['spec.initContainers', pod.spec?.initContainers ?? []],
    ['spec.containers', pod.spec?.containers ?? []],
    ['spec.ephemeralContainers', (pod.spec?.ephemeralContainers ?? []) as V1Container[]],
  ];
}

/** A container's envFrom and env references of one kind (secretRef/secretKeyRef or configMapRef/configMapKeyRef), named. */
function containerReference(pod: V1Pod, from: 'secretRef' | 'configMapRef', key: 'secretKeyRef' | 'configMapKeyRef'): string | undefined {
  for (const [path, list] of containers(pod)) {
    for (const [i, c] of list.entries()) {
      const j = (c.envFrom ?? []).findIndex((e) => e[from]?.name);
      if (j >= 0) return `${path}[${i}].envFrom[${j}].${from}`;
      const k = (c.env ?? []).findIndex((e) => e.valueFrom?.[key]?.name);
      if (k >= 0) return `${path}[${i}].env[${k}].valueFrom.${key}`;
    }
  }
  return undefined;
}

/** podutil.VisitPodSecretNames: the first non-empty Secret name the pod uses. */
function secretReference(pod: V1Pod): string | undefined {
  const pull = (pod.spec?.imagePullSecrets ?? []).findIndex((s) => s.name);
  if (pull >= 0) return `spec.imagePullSecrets[${pull}]`;
  const inContainer = containerReference(pod, 'secretRef', 'secretKeyRef');
  if (inContainer) return inContainer;
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    const at = `spec.volumes[${i}]`;
    if (v.azureFile) {
      if (v.azureFile.secretName) return `${at}.azureFile.secretName`;
    } else if (v.cephfs || v.cinder || v.flexVolume || v.rbd || v.scaleIO || v.iscsi || v.storageos) {
      const kind = (['cephfs', 'cinder', 'flexVolume', 'rbd', 'scaleIO', 'iscsi', 'storageos'] as const).find((s) => v[s])!;
      if (v[kind]!.secretRef?.name) return `${at}.${kind}.secretRef`;
    } else if (v.projected) {
      const j = (v.projected.sources ?? []).findIndex((s) => s.secret?.name);
      if (j >= 0) return `${at}.projected.sources[${j}].secret`;
    } else if (v.secret) {
      if (v.secret.secretName) return `${at}.secret`;
    } else if (v.csi?.nodePublishSecretRef?.name) {
      return `${at}.csi.nodePublishSecretRef`;
    }
  }
  return undefined;
}

/** podutil.VisitPodConfigmapNames: the first non-empty ConfigMap name the pod uses. */
function configMapReference(pod: V1Pod): string | undefined {
  const inContainer = containerReference(pod, 'configMapRef', 'configMapKeyRef');
  if (inContainer) return inContainer;
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    if (v.projected) {
      const j = (v.projected.sources ?? []).findIndex((s) => s.configMap?.name);
      if (j >= 0) return `spec.volumes[${i}].projected.sources[${j}].configMap`;
    } else if (v.configMap?.name) {
      return `spec.volumes[${i}].configMap`;
    }
  }
  return undefined;
}

/** Volume sources that read no API object. */
const plainVolumeSources = [
  'awsElasticBlockStore', 'azureDisk', 'cephfs', 'cinder', 'downwardAPI', 'emptyDir', 'fc', 'flexVolume', 'flocker',
  'gcePersistentDisk', 'gitRepo', 'hostPath', 'image', 'iscsi', 'nfs', 'photonPersistentDisk', 'portworxVolume', 'quobyte',
  'rbd', 'scaleIO', 'storageos', 'vsphereVolume',
] as const;

/** The volume kinds kubelet names, with its words. */
const apiVolumeSources: [source: string, resource: string][] = [
  ['configMap', 'configmaps (via configmap volumes)'],
  ['secret', 'secrets (via secret volumes)'],
  ['csi', 'csidrivers (via CSI volumes)'],
  ['glusterfs', 'endpoints (via glusterFS volumes)'],
  ['persistentVolumeClaim', 'persistentvolumeclaims'],
  ['ephemeral', 'persistentvolumeclaims (via ephemeral volumes)'],
  ['azureFile', 'secrets (via azureFile volumes)'],
];

const projectedApiSources: [source: string, resource: string][] = [
  ['configMap', 'configmaps (via projected volumes)'],
  ['secret', 'secrets (via projected volumes)'],
  ['serviceAccountToken', 'serviceaccounts (via projected volumes)'],
  ['clusterTrustBundle', 'clustertrustbundles'],
  ['podCertificate', 'podcertificates'],
];

function volumeReference(pod: V1Pod): Found {
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    const volume = v as unknown as Record<string, unknown>;
    if (plainVolumeSources.some((s) => volume[s] !== undefined)) continue;
    const api = apiVolumeSources.find(([s]) => volume[s] !== undefined);
    if (api) return { field: `spec.volumes[${i}].${api[0]}`, resource: api[1] };
    for (const [j, source] of (v.projected?.sources ?? []).entries()) {
      const s = source as Record<string, unknown>;
      const found = projectedApiSources.find(([k]) => s[k] !== undefined);
      if (found) return { field: `spec.volumes[${i}].projected.sources[${j}].${found[0]}`, resource: found[1] };
      // Validation leaves each projected source exactly one known kind; downwardAPI is the one that reads no object.
    }
  }
  return undefined;
}

/**
 * The pod's first reference to an API object, checked in kubelet's order (serviceAccountName, Secrets, ConfigMaps,
 * resourceClaims, then the volumes that read objects); undefined when it has none. A static pod with one is refused
 * with `static pods may not reference <resource>`.
 */
export function apiObjectReference(pod: V1Pod): Found {
  if (pod.spec?.serviceAccountName) return { field: 'spec.serviceAccountName', resource: 'serviceaccounts' };
  const secret = secretReference(pod);
  if (secret) return { field: secret, resource: 'secrets' };
  const configMap = configMapReference(pod);
  if (configMap) return { field: configMap, resource: 'configmaps' };
  if (pod.spec?.resourceClaims?.length) return { field: 'spec.resourceClaims', resource: 'resourceclaims' };
  return volumeReference(pod);
}
