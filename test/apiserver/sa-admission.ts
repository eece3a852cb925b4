// The ServiceAccount admission plugin on pod creation: default service account, its existence, the kube-api-access projected volume, image pull secrets.
import { randomInt } from 'node:crypto';
import { WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS } from './tokens.js';
import type { ClusterView, Decision } from './types.js';

export const DEFAULT_SERVICE_ACCOUNT_NAME = 'default';
export const SERVICE_ACCOUNT_VOLUME_PREFIX = 'kube-api-access-';
export const DEFAULT_API_TOKEN_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The ConfigMap kube's root-ca-cert-publisher puts in every namespace. */
export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';
const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
/** corev1.ProjectedVolumeSourceDefaultMode (0644), set explicitly by the plugin. */
const PROJECTED_DEFAULT_MODE = 420;
/** The alphabet of apiserver's SimpleNameGenerator (utilrand.String): no vowels, no confusable digits. */
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * Admit and Validate of kube's ServiceAccount plugin for a pod being created, mutating `pod` in place.
 * Mirror pods are not mutated but may not reference a service account, secrets or service account token projections.
 * Other pods get spec.serviceAccountName "default" when unset, must name an existing service account, get the
 * kube-api-access-xxxxx projected volume mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in every
 * init and regular container (unless automount is off on the pod, else on the service account, or a container already
 * mounts that path), and the service account's imagePullSecrets when the pod has none.
 * The namespace is the pod's metadata.namespace. A denial's reason follows `pods "<name>" is forbidden: `.
 */
export function admitServiceAccount(pod: Record<string, unknown>, view: ClusterView): Decision {
  const metadata = rec(pod['metadata']);
  const spec = rec(pod['spec']);
  pod['spec'] = spec;
  const namespace = typeof metadata['namespace'] === 'string' ? metadata['namespace'] : '';

  if (MIRROR_POD_ANNOTATION in rec(metadata['annotations'])) return validateMirrorPod(spec);

  if (typeof spec['serviceAccountName'] !== 'string' || spec['serviceAccountName'] === '') {
    spec['serviceAccountName'] = DEFAULT_SERVICE_ACCOUNT_NAME;
  }
  const saName = spec['serviceAccountName'] as string;
  const sa = view.get('serviceaccounts', namespace, saName);
  if (!sa) {
    return { allowed: false, reason: `error looking up service account ${namespace}/${saName}: serviceaccount "${saName}" not found` };
  }
  if (shouldAutomount(sa, spec)) mountServiceAccountToken(spec);
  const pullSecrets = arr(sa['imagePullSecrets']);
  if (arr(spec['imagePullSecrets']).length === 0 && pullSecrets.length > 0) {
    spec['imagePullSecrets'] = pullSecrets.map((s) => ({ name: rec(s)['name'] }));
  }
  return { allowed: true, reason: '' };
}

function validateMirrorPod(spec: Record<string, unknown>): Decision {
  if (typeof spec['serviceAccountName'] === 'string' && spec['serviceAccountName'] !== '') {
    return { allowed: false, reason: 'a mirror pod may not reference service accounts' };
  }
  if (referencesSecrets(spec)) return { allowed: false, reason: 'a mirror pod may not reference secrets' };
  for (const v of arr(spec['volumes'])) {
    if (arr(rec(rec(v)['projected'])['sources']).some((s) => rec(s)['serviceAccountToken'] !== undefined)) {
      return { allowed: false, reason: 'a mirror pod may not use ServiceAccountToken volume projections' };
    }
  }
  return { allowed: true, reason: '' };
}

/** podutil.VisitPodSecretNames found anything: pull secrets, env, envFrom, and volume sources that name secrets. */
function referencesSecrets(spec: Record<string, unknown>): boolean {
  if (arr(spec['imagePullSecrets']).length > 0) return true;
  for (const key of ['initContainers', 'containers', 'ephemeralContainers']) {
    for (const c of arr(spec[key])) {
      const container = rec(c);
      if (arr(container['envFrom']).some((f) => rec(f)['secretRef'] !== undefined)) return true;
      if (arr(container['env']).some((e) => rec(rec(e)['valueFrom'])['secretKeyRef'] !== undefined)) return true;
    }
  }
  return arr(spec['volumes']).some((v) => {
    const vol = rec(v);
    if (vol['secret'] !== undefined || vol['azureFile'] !== undefined) return true;
    if (arr(rec(vol['projected'])['sources']).some((s) => rec(s)['secret'] !== undefined)) return true;
    if (['cephfs', 'cinder', 'flexVolume', 'iscsi', 'rbd', 'scaleIO', 'storageos'].some((p) => rec(vol[p])['secretRef'] !== undefined)) return true;
    return rec(vol['csi'])['nodePublishSecretRef'] !== undefined;
  });
}

function shouldAutomount(sa: Record<string, unknown>, spec: Record<string, unknown>): boolean {
  // The pod's preference wins over the service account's; the default is true.
  if (typeof spec['automountServiceAccountToken'] === 'boolean') return spec['automountServiceAccountToken'];
  if (typeof sa['automountServiceAccountToken'] === 'boolean') return sa['automountServiceAccountToken'];
  return true;
}

function mountServiceAccountToken(spec: Record<string, unknown>): void {
  const volumes = arr(spec['volumes']);
  const existing = volumes.map((v) => rec(v)['name']).find((n): n is string => typeof n === 'string' && n.startsWith(SERVICE_ACCOUNT_VOLUME_PREFIX));
  const volumeName = existing ?? generateVolumeName();
  let needsVolume = false;
  for (const key of ['initContainers', 'containers']) {
    for (const c of arr(spec[key])) {
      const container = rec(c);
      const mounts = arr(container['volumeMounts']);
      if (mounts.some((m) => rec(m)['mountPath'] === DEFAULT_API_TOKEN_MOUNT_PATH)) continue;
      container['volumeMounts'] = [...mounts, { name: volumeName, readOnly: true, mountPath: DEFAULT_API_TOKEN_MOUNT_PATH }];
      needsVolume = true;
    }
  }
  if (existing === undefined && needsVolume) spec['volumes'] = [...volumes, { name: volumeName, projected: tokenVolumeSource() }];
}

/** serviceaccount.TokenVolumeSource(): token, the cluster CA and the namespace, as every pod sees them. */
export function tokenVolumeSource(): Record<string, unknown> {
  return {
    defaultMode: PROJECTED_DEFAULT_MODE,
    sources: [
      { serviceAccountToken: { path: 'token', expirationSeconds: WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS } },
      { configMap: { name: ROOT_CA_CONFIGMAP, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
    ],
  };
}

function generateVolumeName(): string {
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += NAME_ALPHABET[randomInt(NAME_ALPHABET.length)];
  return SERVICE_ACCOUNT_VOLUME_PREFIX + suffix;
}

function rec(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
