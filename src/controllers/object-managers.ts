// The cluster-mode ApiObjectSource: configmap and secret managers (watch strategy), the token, ClusterTrustBundle and pod
// certificate managers, fed by the pods registered with it.
import type { V1ClusterTrustBundleProjection, V1ConfigMap, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { EventRecorder } from '../core/events.js';
import type { Logger } from '../core/log.js';
import type { KubeClient } from '../kubeapi/client.js';
import { WatchedObjectCache } from './object-cache.js';
import { podObjectReferences, type ApiObjectSource, type PodCredentials, type PodObjectReferences, type ServiceAccountToken, type TokenProjectionRequest } from '../core/api-objects.js';
import { ServiceAccountTokenManager } from './token-manager.js';
import { ClusterTrustBundleManager } from './trust-bundles.js';
import { PodCertificateManager } from './pod-certificates.js';

export interface ClusterObjectSourceOptions {
  client: Pick<KubeClient, 'request' | 'watch'>;
  log: Logger;
  nodeName: string;
  /** The registered Node's UID, for PodCertificateRequests; undefined until registered. */
  nodeUid: () => string | undefined;
  /** kubelet's events about pod certificates (denied, failed, overdue, expired). */
  events?: EventRecorder;
  /** Pods whose configmaps or secrets changed (appeared, were updated or deleted): their volumes are rewritten on their next sync. */
  onPodsChanged?: (podUids: string[]) => void;
  now?: () => number;
  /** How long a read waits for the first list of an object just registered. */
  syncTimeoutMs?: number;
}

interface Registration {
  /** The pod object registered: every sync registers its pod again, usually the very same object. */
  pod: V1Pod;
  namespace: string;
  refs: PodObjectReferences;
}

/**
 * kubelet's configMapManager and secretManager with the default "Watch" change detection strategy, and its token
 * manager. registerPod / unregisterPod keep one watch per referenced object while some pod references it.
 */
export class ClusterObjectSource implements ApiObjectSource {
  private readonly configMaps: WatchedObjectCache<V1ConfigMap>;
  private readonly secrets: WatchedObjectCache<V1Secret>;
  private readonly tokens: ServiceAccountTokenManager;
  private readonly trustBundles: ClusterTrustBundleManager;
  private readonly podCertificates: PodCertificateManager;
  private readonly pods = new Map<string, Registration>();
  /** Set by the wiring once the pod workers exist. */
  onPodsChanged?: (podUids: string[]) => void;

  constructor(opts: ClusterObjectSourceOptions) {
    if (opts.onPodsChanged) this.onPodsChanged = opts.onPodsChanged;
    const common = { client: opts.client, log: opts.log, ...(opts.syncTimeoutMs !== undefined ? { syncTimeoutMs: opts.syncTimeoutMs } : {}) };
    this.configMaps = new WatchedObjectCache<V1ConfigMap>({ ...common, resource: 'configmaps', kind: 'configmap', onChange: (ns, name) => this.changed('configMaps', ns, name) });
    this.secrets = new WatchedObjectCache<V1Secret>({ ...common, resource: 'secrets', kind: 'secret', onChange: (ns, name) => this.changed('secrets', ns, name) });
    this.tokens = new ServiceAccountTokenManager({ client: opts.client, log: opts.log, ...(opts.now ? { now: opts.now } : {}) });
    // A bundle changed: every pod projecting one rewrites it (the anchors of a selector can change with any bundle).
    this.trustBundles = new ClusterTrustBundleManager({ client: opts.client, log: opts.log, onChange: () => this.changedTrustBundles() });
    this.podCertificates = new PodCertificateManager({
      client: opts.client,
      log: opts.log,
      nodeName: opts.nodeName,
      nodeUid: opts.nodeUid,
      ...(opts.events ? { events: opts.events } : {}),
      ...(opts.now ? { now: opts.now } : {}),
      onPodsChanged: (uids) => this.onPodsChanged?.(uids),
    });
  }

  registerPod(pod: V1Pod): void {
    const uid = pod.metadata!.uid!;
    const previous = this.pods.get(uid);
    if (previous?.pod === pod) return;
    const namespace = pod.metadata?.namespace ?? 'default';
    const refs = podObjectReferences(pod);
    // Acquire the new references before releasing the old, so an object referenced by both keeps its watch.
    for (const name of refs.configMaps) this.configMaps.acquire(namespace, name);
    for (const name of refs.secrets) this.secrets.acquire(namespace, name);
    if (previous) this.release(previous);
    this.pods.set(uid, { pod, namespace, refs });
    this.podCertificates.trackPod(pod);
  }

  unregisterPod(uid: string): void {
    const previous = this.pods.get(uid);
    if (previous) this.release(previous);
    this.pods.delete(uid);
    this.tokens.deletePodTokens(uid);
    this.podCertificates.forgetPod(uid);
  }

  getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<V1ConfigMap> {
    return this.configMaps.get(namespace, name, signal);
  }

  getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<V1Secret> {
    return this.secrets.get(namespace, name, signal);
  }

  serviceAccountToken(pod: V1Pod, request: TokenProjectionRequest): Promise<ServiceAccountToken> {
    return this.tokens.getToken({
      namespace: pod.metadata?.namespace ?? 'default',
      serviceAccountName: request.serviceAccountName,
      audiences: request.audiences,
      expirationSeconds: request.expirationSeconds,
      pod: { name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' },
    });
  }

  trustAnchors(source: V1ClusterTrustBundleProjection, signal?: AbortSignal): Promise<Buffer> {
    return this.trustBundles.trustAnchors(source, signal);
  }

  podCertificate(pod: V1Pod, volumeName: string, sourceIndex: number): PodCredentials {
    return this.podCertificates.credentials(pod, volumeName, sourceIndex);
  }

  /** Objects watched, for tests and logs. */
  get watched(): { configMaps: number; secrets: number } {
    return { configMaps: this.configMaps.size, secrets: this.secrets.size };
  }

  /** Stops every watch (the agent is stopping). */
  stop(): void {
    this.configMaps.stop();
    this.secrets.stop();
    this.trustBundles.stop();
    this.podCertificates.stop();
  }

  private release(reg: Registration): void {
    for (const name of reg.refs.configMaps) this.configMaps.release(reg.namespace, name);
    for (const name of reg.refs.secrets) this.secrets.release(reg.namespace, name);
  }

  private changedTrustBundles(): void {
    const uids = [...this.pods].filter(([, r]) => (r.pod.spec?.volumes ?? []).some((v) => v.projected?.sources?.some((s) => s.clusterTrustBundle))).map(([uid]) => uid);
    if (uids.length > 0) this.onPodsChanged?.(uids);
  }

  private changed(kind: keyof PodObjectReferences, namespace: string, name: string): void {
    const uids = [...this.pods].filter(([, r]) => r.namespace === namespace && r.refs[kind].has(name)).map(([uid]) => uid);
    if (uids.length > 0) this.onPodsChanged?.(uids);
  }
}
