// kubelet's DNS configurer (pkg/kubelet/network/dns): a pod's resolver settings from its dnsPolicy and dnsConfig, the
// node's cluster DNS and the host's resolv.conf, cut to the resolver's limits. Pure: the caller reads the file and
// records the events.
import type { V1Pod, V1PodDNSConfigOption } from '@kubernetes/client-node';
import type { DnsConfig } from '../cri/types.js';
import type { EventType } from '../core/events.js';

/** The node's DNS settings (KubeletConfiguration clusterDNS, clusterDomain, resolvConf). */
export interface NodeDnsSettings {
  /** Cluster DNS server IPs; empty: ClusterFirst pods fall back to Default. */
  clusterDNS: string[];
  clusterDomain: string;
  /** The host resolver file's path; '' means none (Default pods get the node's loopback as nameserver, search "."). */
  resolvConf: string;
  /** The node's IPs, for the loopback nameservers of the '' resolvConf case (one per address family). */
  nodeIPs: string[];
}

/** An event kubelet records while forming a pod's DNS config, about the pod or about the node. */
export interface DnsEvent {
  about: 'pod' | 'node';
  type: EventType;
  reason: 'DNSConfigForming' | 'MissingClusterDNS';
  message: string;
}

/** The resolver's limits kubelet applies (validation.MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars). */
export const maxDNSNameservers = 3;
export const maxDNSSearchPaths = 32;
export const maxDNSSearchListChars = 2048;
/** A longer search path aborts some resolvers (glibc 2.28): kubelet drops it (DNS1123SubdomainMaxLength). */
const maxSearchPathLength = 253;
const defaultDNSOptions = ['ndots:5'];

/** A host resolv.conf kubelet refuses to use (a `nameserver` line without an address). */
export class ResolvConfError extends Error {}

/** Option name: the part before the first ':'. */
const optionName = (option: string) => option.split(':')[0]!;

/**
 * kubelet's appendOptions: options by name, a later one replacing an earlier one of the same name. Kubelet returns
 * them in Go's map order (unspecified); here the first occurrence's position is kept.
 */
function appendOptions(options: string[], added: string[]): string[] {
  const byName = new Map<string, string>();
  for (const option of [...options, ...added]) byName.set(optionName(option), option);
  return [...byName.values()];
}

/**
 * kubelet's parseResolvConf: nameservers accumulate, the last `search` line wins (trailing dots trimmed, a lone "."
 * dropped), options merge by name. Throws ResolvConfError, as kubelet, when a nameserver line has no address.
 */
export function parseResolvConf(text: string): DnsConfig {
  const dns: DnsConfig = { servers: [], searches: [], options: [] };
  const errors: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/\s+/).filter(Boolean);
    if (fields.length === 0) continue;
    if (fields[0] === 'nameserver') {
      if (fields.length >= 2) dns.servers.push(fields[1]!);
      else errors.push('nameserver list is empty ');
    }
    if (fields[0] === 'search') dns.searches = fields.slice(1).filter((s) => s !== '.').map((s) => s.replace(/\.$/, ''));
    if (fields[0] === 'options') dns.options = appendOptions(dns.options, fields.slice(1));
  }
  if (errors.length > 0) throw new ResolvConfError(errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`);
  return dns;
}

const omitDuplicates = (values: string[]) => [...new Set(values)];

/** kubelet's mergeDNSOptions: the pod's dnsConfig options replace the base's of the same name. */
function mergeDNSOptions(base: string[], podOptions: V1PodDNSConfigOption[]): string[] {
  const byName = new Map<string, string>();
  for (const option of base) {
    const i = option.indexOf(':');
    byName.set(i === -1 ? option : option.slice(0, i), i === -1 ? '' : option.slice(i + 1));
  }
  for (const option of podOptions) byName.set(option.name ?? '', option.value ?? '');
  return [...byName].map(([name, value]) => (value ? `${name}:${value}` : name));
}

/** kubelet's formDNSNameserversFitsLimits. */
function fitNameservers(servers: string[], events: DnsEvent[]): string[] {
  if (servers.length <= maxDNSNameservers) return servers;
  const kept = servers.slice(0, maxDNSNameservers);
  events.push({
    about: 'pod',
    type: 'Warning',
    reason: 'DNSConfigForming',
    message: `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${kept.join(' ')}`,
  });
  return kept;
}

/** kubelet's formDNSSearchFitsLimits: at most 32 paths, none over 253 characters, a search line of at most 2048. */
function fitSearches(searches: string[], events: DnsEvent[]): string[] {
  let exceeded = false;
  let kept = searches;
  if (kept.length > maxDNSSearchPaths) {
    kept = kept.slice(0, maxDNSSearchPaths);
    exceeded = true;
  }
  const short = kept.filter((s) => s.length <= maxSearchPathLength);
  if (short.length !== kept.length) exceeded = true;
  kept = short;
  const lineLength = kept.join(' ').length;
  if (lineLength > maxDNSSearchListChars) {
    // Drop paths from the end until the line fits.
    let cut = 0;
    let cutLength = 0;
    for (let i = kept.length - 1; i >= 0; i--) {
      cutLength += kept[i]!.length + 1;
      cut++;
      if (lineLength - cutLength <= maxDNSSearchListChars) break;
    }
    kept = kept.slice(0, kept.length - cut);
    exceeded = true;
  }
  if (exceeded) {
    events.push({
      about: 'pod',
      type: 'Warning',
      reason: 'DNSConfigForming',
      message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${kept.join(' ')}`,
    });
  }
  return kept;
}

type PodDnsType = 'cluster' | 'host' | 'none';

/** kubelet's getPodDNSType: ClusterFirst on the host network is Default; an unknown policy counts as ClusterFirst. */
export function podDnsType(pod: V1Pod): PodDnsType {
  switch (pod.spec?.dnsPolicy ?? 'ClusterFirst') {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'ClusterFirst':
      return pod.spec?.hostNetwork ? 'host' : 'cluster';
    case 'Default':
      return 'host';
    default:
      return 'cluster';
  }
}

/** kubelet's format.Pod: name_namespace(uid). */
const podDesc = (pod: V1Pod) => `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;

/**
 * kubelet's GetPodDNS. `host` is the parsed resolvConf (empty when node.resolvConf is ''). ClusterFirst: the cluster
 * DNS servers only, search `<ns>.svc.<domain> svc.<domain> <domain>` then the host's, `options ndots:5`; without
 * cluster DNS it falls back to Default with kubelet's MissingClusterDNS events. Default: the host's file (without one,
 * the node's loopback and search "."). None: nothing. Then the pod's dnsConfig is appended (duplicates dropped, its
 * options replacing those of the same name) and the result cut to the resolver's limits (DNSConfigForming events).
 */
export function podDnsConfig(pod: V1Pod, node: NodeDnsSettings, host: DnsConfig): { dnsConfig: DnsConfig; events: DnsEvent[] } {
  const events: DnsEvent[] = [];
  let dns: DnsConfig = { servers: [...host.servers], searches: [...host.searches], options: [...host.options] };
  let type = podDnsType(pod);
  if (type === 'none') dns = { servers: [], searches: [], options: [] };
  if (type === 'cluster') {
    if (node.clusterDNS.length > 0) {
      const domain = node.clusterDomain;
      dns.servers = [...node.clusterDNS];
      if (domain) dns.searches = omitDuplicates([`${pod.metadata?.namespace ?? ''}.svc.${domain}`, `svc.${domain}`, domain, ...dns.searches]);
      dns.options = [...defaultDNSOptions];
    } else {
      const message = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
      events.push({ about: 'node', type: 'Warning', reason: 'MissingClusterDNS', message });
      events.push({ about: 'pod', type: 'Warning', reason: 'MissingClusterDNS', message: `pod: "${podDesc(pod)}". ${message}` });
      type = 'host';
    }
  }
  if (type === 'host' && node.resolvConf === '') {
    // No resolver file: the node's own resolver (loopback), and no search path.
    dns.servers.push(...node.nodeIPs.map((ip) => (ip.includes(':') ? '::1' : '127.0.0.1')));
    if (dns.servers.length === 0) dns.servers.push('127.0.0.1');
    dns.searches = ['.'];
  }
  const custom = pod.spec?.dnsConfig;
  if (custom) {
    dns.servers = omitDuplicates([...dns.servers, ...(custom.nameservers ?? [])]);
    dns.searches = omitDuplicates([...dns.searches, ...(custom.searches ?? [])]);
    dns.options = mergeDNSOptions(dns.options, custom.options ?? []);
  }
  dns.servers = fitNameservers(dns.servers, events);
  dns.searches = fitSearches(dns.searches, events);
  return { dnsConfig: dns, events };
}

/**
 * kubelet's CheckLimitsForResolvConf, made once when its sync loop starts: the host resolver file's search line
 * checked against what pods can take (3 paths fewer with a cluster domain, which ClusterFirst pods put first). The
 * message of the node's CheckLimitsForResolvConf warning event, or undefined when the file is within the limits.
 * `text` is undefined when the file could not be read (`readError` then says why).
 */
export function resolvConfLimitWarning(resolvConf: string, text: string | undefined, clusterDomain: string, readError = ''): string | undefined {
  if (text === undefined) return readError;
  let searches: string[];
  try {
    searches = parseResolvConf(text).searches;
  } catch (err) {
    return (err as Error).message;
  }
  const domainCountLimit = maxDNSSearchPaths - (clusterDomain ? 3 : 0);
  if (searches.length > domainCountLimit) return `Resolv.conf file '${resolvConf}' contains search line consisting of more than ${domainCountLimit} domains!`;
  if (searches.some((s) => s.length > maxSearchPathLength)) {
    return `Resolv.conf file "${resolvConf}" contains a search path which length is more than allowed ${maxSearchPathLength} chars!`;
  }
  if (searches.join(' ').length > maxDNSSearchListChars) {
    return `Resolv.conf file '${resolvConf}' contains search line which length is more than allowed ${maxDNSSearchListChars} chars!`;
  }
  return undefined;
}
