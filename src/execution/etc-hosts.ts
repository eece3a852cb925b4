// kubelet's managed /etc/hosts (pkg/kubelet/kubelet_pods.go makeHostsMount): each container of a pod gets the file
// <pod dir>/etc-hosts at /etc/hosts, unless it mounts a volume there itself. Pure: the caller reads the node's hosts
// file (for a host-network pod) and writes the result.
import type { V1Container, V1HostAlias, V1Pod } from '@kubernetes/client-node';
import { podHostname } from './runtime-config.js';

export const etcHostsPath = '/etc/hosts';
const managedHostsHeader = '# Kubernetes-managed hosts file.\n';
const managedHostsHeaderWithHostNetwork = '# Kubernetes-managed hosts file (host network).\n';

/**
 * kubelet's shouldMountHostsFile and its per-container check: a pod on the pod network once it has an IP, or a
 * host-network pod; never for a container that mounts something at /etc/hosts.
 */
export function mountsManagedHosts(pod: V1Pod, container: V1Container, podIPs: string[]): boolean {
  if (podIPs.length === 0 && !pod.spec?.hostNetwork) return false;
  return !(container.volumeMounts ?? []).some((m) => m.mountPath === etcHostsPath);
}

/**
 * kubelet's GeneratePodHostNameAndDomain domain: `<subdomain>.<namespace>.svc.<cluster domain>` when both are set and
 * no hostnameOverride names the pod.
 */
export function podHostDomain(pod: V1Pod, clusterDomain: string): string {
  if (pod.spec?.hostnameOverride !== undefined) return '';
  const subdomain = pod.spec?.subdomain;
  if (!subdomain || !clusterDomain) return '';
  return `${subdomain}.${pod.metadata?.namespace ?? 'default'}.svc.${clusterDomain}`;
}

function hostAliasEntries(aliases: V1HostAlias[] | undefined): string {
  if (!aliases?.length) return '';
  return `\n# Entries added by HostAliases.\n${aliases.map((a) => `${a.ip ?? ''}\t${(a.hostnames ?? []).join('\t')}\n`).join('')}`;
}

/**
 * The file's content: for a host-network pod the node's hosts file under its own header, otherwise localhost, the
 * pod's IPs with its hostname (and FQDN), then the pod's hostAliases.
 */
export function managedHostsContent(pod: V1Pod, podIPs: string[], clusterDomain: string, nodeHosts: string): string {
  if (pod.spec?.hostNetwork) return managedHostsHeaderWithHostNetwork + nodeHosts + hostAliasEntries(pod.spec.hostAliases);
  const hostname = podHostname(pod);
  const domain = podHostDomain(pod, clusterDomain);
  const lines = [
    '127.0.0.1\tlocalhost',
    '::1\tlocalhost ip6-localhost ip6-loopback',
    'fe00::0\tip6-localnet',
    'fe00::0\tip6-mcastprefix',
    'fe00::1\tip6-allnodes',
    'fe00::2\tip6-allrouters',
    ...podIPs.map((ip) => (domain ? `${ip}\t${hostname}.${domain}\t${hostname}` : `${ip}\t${hostname}`)),
  ];
  return `${managedHostsHeader}${lines.join('\n')}\n${hostAliasEntries(pod.spec?.hostAliases)}`;
}
