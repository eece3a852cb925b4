// What pod volumes and container env read from the API server (configmaps, secrets, service account tokens, trust bundles,
// pod certificates), as an interface with typed errors.
import type { V1ClusterTrustBundleProjection, V1ConfigMap, V1Pod, V1PodCertificateProjection, V1Secret, V1Service } from '@kubernetes/client-node';
import { podContainers } from './pod-containers.js';

/** The kind names kubelet's object managers use in their NotFound errors (`configmap "x" not found`). */
export type ObjectKind = 'configmap' | 'secret';

/** The object does not exist (or was deleted): optional references are skipped, others fail with this message. */
export class ObjectNotFoundError extends Error {
  constructor(
    readonly kind: ObjectKind,
    readonly namespace: string,
    readonly objectName: string,
  ) {
    super(`${kind} "${objectName}" not found`);
    this.name = 'ObjectNotFoundError';
  }
}

export const isObjectNotFound = (err: unknown): err is ObjectNotFoundError => err instanceof ObjectNotFoundError;

/** What a serviceAccountToken projection asks for (kubelet's TokenRequest spec without the bound pod). */
export interface TokenProjectionRequest {
  serviceAccountName: string;
  /** Empty: the API server's own audience. */
  audiences: string[];
  expirationSeconds: number;
}

export interface ServiceAccountToken {
  token: string;
  expirationTimestamp: Date;
}

/** The 1.37 podCertificate projection, with userAnnotations (not in the client library's model yet). */
export type PodCertificateSource = V1PodCertificateProjection & { userAnnotations?: Record<string, string> };

/** The issued credentials of a podCertificate projection: the node-made key (PKCS#8 PEM) and the signer's chain (PEM). */
export interface PodCredentials {
  privateKey: Buffer;
  certificateChain: Buffer;
}

/**
 * The API objects a node reads for its pods (kubelet's configmap, secret and token managers). A pod is registered
 * before its volumes and env are built, so its objects are watched and cached; it is unregistered when it is gone.
 */
export interface ApiObjectSource {
  /** Starts (or keeps) watching what the pod references; a new spec for the same UID replaces the old references. */
  registerPod(pod: V1Pod): void;
  /** Stops watching what only this pod referenced and forgets its tokens. */
  unregisterPod(uid: string): void;
  /** Rejects with ObjectNotFoundError when the object does not exist. */
  getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<V1ConfigMap>;
  getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<V1Secret>;
  /** A token bound to the pod, from the cache while it is fresh, else from TokenRequest. */
  serviceAccountToken(pod: V1Pod, request: TokenProjectionRequest): Promise<ServiceAccountToken>;
  /** A clusterTrustBundle projection's file: the selected bundles' certificates, deduplicated (empty when optional and none). */
  trustAnchors(source: V1ClusterTrustBundleProjection, signal?: AbortSignal): Promise<Buffer>;
  /** A podCertificate projection's credentials; throws kubelet's message while they are pending, denied or failed. */
  podCertificate(pod: V1Pod, volumeName: string, sourceIndex: number): PodCredentials;
}

/** The configmaps and secrets a pod reads (kubelet's VisitPodConfigmapNames and VisitPodSecretNames, for the sources nodelet uses). */
export interface PodObjectReferences {
  configMaps: Set<string>;
  secrets: Set<string>;
}

export function podObjectReferences(pod: V1Pod): PodObjectReferences {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  for (const ref of pod.spec?.imagePullSecrets ?? []) if (ref.name) secrets.add(ref.name);
  for (const v of pod.spec?.volumes ?? []) {
    if (v.configMap?.name) configMaps.add(v.configMap.name);
    if (v.secret?.secretName) secrets.add(v.secret.secretName);
    for (const s of v.projected?.sources ?? []) {
      if (s.configMap?.name) configMaps.add(s.configMap.name);
      if (s.secret?.name) secrets.add(s.secret.name);
    }
  }
  for (const c of podContainers(pod)) {
    for (const from of c.envFrom ?? []) {
      if (from.configMapRef?.name) configMaps.add(from.configMapRef.name);
      if (from.secretRef?.name) secrets.add(from.secretRef.name);
    }
    for (const e of c.env ?? []) {
      if (e.valueFrom?.configMapKeyRef?.name) configMaps.add(e.valueFrom.configMapKeyRef.name);
      if (e.valueFrom?.secretKeyRef?.name) secrets.add(e.valueFrom.secretKeyRef.name);
    }
  }
  return { configMaps, secrets };
}

/**
 * The cluster's Services as the node's informer has them (kubelet's serviceLister), for the pods' service environment
 * variables. Undefined without an API server: pods then get no service variables, as kubelet without one.
 */
export interface ServiceLister {
  /** Whether the first list has been read: until then pods from the API server cannot get their variables. */
  hasSynced(): boolean;
  /** Every Service of every namespace. */
  list(): V1Service[];
}
