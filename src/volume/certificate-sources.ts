// The files of clusterTrustBundle and podCertificate projected sources (kubelet's projected collectData for them).
import type { V1ClusterTrustBundleProjection } from '@kubernetes/client-node';
import type { PodCertificateSource, PodCredentials } from '../core/api-objects.js';
import type { FileProjection } from './atomic-writer.js';

/** A clusterTrustBundle source: the normalized anchors at its path (empty when optional and nothing matched). */
export function clusterTrustBundleFiles(source: V1ClusterTrustBundleProjection, anchors: Buffer, file: Omit<FileProjection, 'data'>): Map<string, FileProjection> {
  return new Map([[source.path, { ...file, data: anchors }]]);
}

/**
 * A podCertificate source: the credential bundle (the PKCS#8 key, then the chain: one read gets a matching pair), the
 * key and the chain, each at its path when that is set.
 */
export function podCertificateFiles(source: PodCertificateSource, credentials: PodCredentials, file: Omit<FileProjection, 'data'>): Map<string, FileProjection> {
  const files = new Map<string, FileProjection>();
  if (source.credentialBundlePath) files.set(source.credentialBundlePath, { ...file, data: Buffer.concat([credentials.privateKey, credentials.certificateChain]) });
  if (source.keyPath) files.set(source.keyPath, { ...file, data: credentials.privateKey });
  if (source.certificateChainPath) files.set(source.certificateChainPath, { ...file, data: credentials.certificateChain });
  return files;
}
