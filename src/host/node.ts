// Facts about the host nodelet runs on: its name and its IPs.
import { readFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import { hostname, networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { canonicalIP } from '../core/ip.js';

/** kubelet's node name: --hostname-override, else the host name, lower-cased. */
export function nodeName(override?: string): string {
  return (override || hostname()).trim().toLowerCase();
}

/** The interface of the IPv4 default route, from /proc/net/route text. */
export function defaultRouteInterface(procNetRoute: string): string | undefined {
  for (const line of procNetRoute.split('\n').slice(1)) {
    const [iface, destination, , , , , , mask] = line.trim().split(/\s+/);
    if (destination === '00000000' && mask === '00000000') return iface;
  }
  return undefined;
}

/** What the node's IP is chosen from: the host's interfaces and the IPv4 default route's interface. */
export interface NodeIPFacts {
  interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>;
  defaultRouteInterface: string | undefined;
}

/** The host's interfaces and, unless --node-ip names the address (the route then decides nothing), its default route now. */
export async function readNodeIPFacts(nodeIPFlag = ''): Promise<NodeIPFacts> {
  const route = givenNodeIP(nodeIPFlag) ? '' : await readFile('/proc/net/route', 'utf8').catch(() => '');
  return { interfaces: networkInterfaces(), defaultRouteInterface: defaultRouteInterface(route) };
}

/** kubelet's validateNodeIP: an address a node can be reached at, on one of this host's interfaces; else why not. */
export function nodeIPProblem(ip: string, facts: NodeIPFacts): string | undefined {
  const canonical = canonicalIP(ip);
  if (!canonical) return 'nodeIP must be a valid IP address';
  const v4 = isIPv4(canonical) ? canonical.split('.').map(Number) : undefined;
  const firstHextet = v4 ? 0 : parseInt(canonical.split(':')[0] || '0', 16);
  if (v4 ? v4[0] === 127 : canonical === '::1') return "nodeIP can't be loopback address";
  if (v4 ? v4[0]! >= 224 && v4[0]! <= 239 : firstHextet >= 0xff00) return "nodeIP can't be a multicast address";
  if (v4 ? v4[0] === 169 && v4[1] === 254 : (firstHextet & 0xffc0) === 0xfe80) return "nodeIP can't be a link-local unicast address";
  if (canonical === '0.0.0.0' || canonical === '::') return "nodeIP can't be an all zeros address";
  const onHost = Object.values(facts.interfaces).some((list) => (list ?? []).some((a) => canonicalIP(a.address) === canonical));
  return onHost ? undefined : `node IP: "${ip}" not found in the host's network interfaces`;
}

/** The node's InternalIP could not be determined (kubelet's NodeAddress setter error). */
export class NodeIPError extends Error {}

/**
 * The node's InternalIP as kubelet's NodeAddress setter picks it without a cloud provider, at every status update:
 * --node-ip when given (validated: it must still be on the host), else the hostname when it is an IP, else the first
 * IPv4 address of the default route's interface, else any non-loopback IPv4 address. kubelet also looks the node
 * name up in DNS before the default route; nodelet does not (no name lookups leave the node for its own address).
 */
export function chooseNodeIP(nodeIP: string, hostname: string, facts: NodeIPFacts): string {
  if (givenNodeIP(nodeIP)) {
    const problem = nodeIPProblem(nodeIP, facts);
    if (problem) throw new NodeIPError(`failed to validate nodeIP: ${problem}`);
    return nodeIP;
  }
  if (canonicalIP(hostname)) return hostname;
  const v4 = (name: string) => (facts.interfaces[name] ?? []).find((a) => a.family === 'IPv4' && !a.internal)?.address;
  const fromRoute = facts.defaultRouteInterface ? v4(facts.defaultRouteInterface) : undefined;
  if (fromRoute) return fromRoute;
  for (const name of Object.keys(facts.interfaces)) {
    const ip = v4(name);
    if (ip) return ip;
  }
  throw new NodeIPError(`can't get ip address of node ${hostname}: no non-loopback IPv4 address on the host`);
}

/** Whether --node-ip names an address: unset and the unspecified addresses mean "find it" to kubelet. */
function givenNodeIP(nodeIP: string | undefined): nodeIP is string {
  return !!nodeIP && nodeIP !== '0.0.0.0' && nodeIP !== '::';
}

/**
 * The node's IP at start: --node-ip as given (its syntax checked with the flags; whether it is on the host is checked
 * by each node status update, as kubelet does), else as chooseNodeIP finds it, else 127.0.0.1 (a host with no network).
 */
export async function detectNodeIP(override?: string, hostname = ''): Promise<string> {
  if (givenNodeIP(override)) return override;
  try {
    return chooseNodeIP('', hostname, await readNodeIPFacts());
  } catch {
    return '127.0.0.1';
  }
}

/** Every address of this host's interfaces, loopback included (what "the host" means to probes). */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
}
