// A fake ApiObjectSource: configmaps and secrets in maps, tokens counted, registrations recorded.
import type { V1ClusterTrustBundleProjection, V1ConfigMap, V1Pod, V1Secret } from '@kubernetes/client-node';
import { ObjectNotFoundError, type ApiObjectSource, type PodCredentials, type ServiceAccountToken, type TokenProjectionRequest } from '../../../src/core/api-objects.js';

export class FakeApiObjects implements ApiObjectSource {
  readonly configMaps = new Map<string, V1ConfigMap>();
  readonly secrets = new Map<string, V1Secret>();
  readonly tokenRequests: { pod: string; request: TokenProjectionRequest }[] = [];
  readonly registered = new Set<string>();
  /** The signal of every configMap and secret read, in order. */
  readonly readSignals: (AbortSignal | undefined)[] = [];
  token = 'header.payload.signature';
  /** Trust anchors per ClusterTrustBundle name (or signer name). */
  readonly anchors = new Map<string, string>();
  /** Pod certificate credentials per `<pod uid>/<volume>/<source index>`; a string is the error thrown. */
  readonly podCredentials = new Map<string, PodCredentials | string>();

  configMap(namespace: string, name: string, data: Record<string, string>, binaryData?: Record<string, string>): this {
    this.configMaps.set(`${namespace}/${name}`, { metadata: { name, namespace }, data, ...(binaryData ? { binaryData } : {}) });
    return this;
  }

  /** `data` in plain text; stored base64 as the API returns it. */
  secret(namespace: string, name: string, data: Record<string, string>): this {
    const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
    this.secrets.set(`${namespace}/${name}`, { metadata: { name, namespace }, data: encoded });
    return this;
  }

  registerPod(pod: V1Pod): void {
    this.registered.add(pod.metadata!.uid!);
  }

  unregisterPod(uid: string): void {
    this.registered.delete(uid);
  }

  async getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<V1ConfigMap> {
    this.readSignals.push(signal);
    const cm = this.configMaps.get(`${namespace}/${name}`);
    if (!cm) throw new ObjectNotFoundError('configmap', namespace, name);
    return cm;
  }

  async getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<V1Secret> {
    this.readSignals.push(signal);
    const s = this.secrets.get(`${namespace}/${name}`);
    if (!s) throw new ObjectNotFoundError('secret', namespace, name);
    return s;
  }

  async serviceAccountToken(pod: V1Pod, request: TokenProjectionRequest): Promise<ServiceAccountToken> {
    this.tokenRequests.push({ pod: pod.metadata!.uid!, request });
    return { token: this.token, expirationTimestamp: new Date(Date.now() + request.expirationSeconds * 1000) };
  }

  async trustAnchors(source: V1ClusterTrustBundleProjection): Promise<Buffer> {
    const anchors = this.anchors.get(source.name ?? source.signerName ?? '');
    if (anchors === undefined && !source.optional) throw new Error('combination of signerName and labelSelector matched zero ClusterTrustBundles');
    return Buffer.from(anchors ?? '');
  }

  podCertificate(pod: V1Pod, volumeName: string, sourceIndex: number): PodCredentials {
    const credentials = this.podCredentials.get(`${pod.metadata!.uid}/${volumeName}/${sourceIndex}`) ?? 'credential bundle is not issued yet';
    if (typeof credentials === 'string') throw new Error(credentials);
    return credentials;
  }
}
