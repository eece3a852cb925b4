// The cluster's KubeletConfiguration (kubeadm's kube-system/kubelet-config ConfigMap) and the node's own settings on it,
// as `kubeadm join`'s kubelet-start phase writes /var/lib/kubelet/config.yaml.
import { parseDocument } from 'yaml';
import type { KubeClient } from '../kubeapi/client.js';

/** kubeadm's ConfigMap of the cluster-wide KubeletConfiguration, readable by bootstrap tokens. */
export const kubeletConfigMapPath = '/api/v1/namespaces/kube-system/configmaps/kubelet-config';

/** The KubeletConfiguration text of the ConfigMap (its `kubelet` key). */
export async function fetchClusterKubeletConfig(client: KubeClient, signal: AbortSignal): Promise<string> {
  const cm = await client.request<{ data?: Record<string, string> }>({ method: 'GET', path: kubeletConfigMapPath, signal });
  const text = cm.data?.['kubelet'];
  if (!text) throw new Error('the kube-system/kubelet-config ConfigMap has no "kubelet" key');
  return text;
}

export interface NodeKubeletSettings {
  /** --cri-socket: the node's container runtime (kubeadm writes it into the configuration with NodeLocalCRISocket). */
  containerRuntimeEndpoint?: string;
  /** Where this node keeps the cluster CA: the cluster's path (the control plane's certificatesDir) means nothing here. */
  clientCAFile?: string;
}

/** The cluster's configuration with the node's settings set; every other field and comment is kept as the cluster wrote it. */
export function nodeKubeletConfig(clusterText: string, node: NodeKubeletSettings): string {
  const doc = parseDocument(clusterText);
  if (doc.errors.length > 0) throw new Error(`the cluster's KubeletConfiguration is not YAML: ${doc.errors[0]!.message}`);
  // New nodes, so the cluster's quoting of the old values (containerRuntimeEndpoint: "") does not stay on the node's.
  if (node.containerRuntimeEndpoint) doc.set('containerRuntimeEndpoint', doc.createNode(node.containerRuntimeEndpoint));
  if (node.clientCAFile && doc.hasIn(['authentication', 'x509', 'clientCAFile'])) doc.setIn(['authentication', 'x509', 'clientCAFile'], doc.createNode(node.clientCAFile));
  return doc.toString();
}
