// Applies the Node's spec.podCIDR to the pod network: new pods get IPs from it, after the same host-route check as at start.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { cidrContains, parseCidr, parseIp } from '../cni/cidr.js';
import { bridgeNames, hostLocalSubnets, loadPodNetworks, subnetCollisions } from '../cni/conflist.js';
import type { PodNetwork } from '../cni/pod-network.js';
import { hostRoutes } from '../host/routes.js';

/** The IPv4 addresses ("10.99.0.1/24") of a host interface; none when it does not exist. */
async function interfaceIPv4Addresses(dev: string, signal: AbortSignal): Promise<string[]> {
  // A missing device makes `ip` fail: no addresses.
  const stdout = await promisify(execFile)('ip', ['-j', '-4', 'addr', 'show', 'dev', dev], { timeout: 10_000, signal }).then((r) => r.stdout, () => '');
  if (!stdout) return [];
  const links = JSON.parse(stdout) as Array<{ addr_info?: Array<{ local?: string; prefixlen?: number }> }>;
  return links.flatMap((l) => (l.addr_info ?? []).filter((a) => a.local).map((a) => `${a.local}/${a.prefixlen ?? 32}`));
}

/** The pod CIDR cannot be used on this host; the message says why. */
export class PodCIDRRefusedError extends Error {}

export interface PodCIDRApplierOptions {
  podNetwork: PodNetwork;
  /** The agent's --cni-conf-dir: the main network is reloaded from it with the new host-local range. */
  cniConfDir: string;
}

/**
 * Returns the function NodeController calls when Node.spec.podCIDR appears or changes: it reloads the main network
 * with host-local allocating from the CIDR and refuses a CIDR that overlaps a host route (other than the pod bridge's
 * own), exactly as the agent refuses its configured subnet at start, or that the pod bridge cannot take next to the
 * gateway address it already has. Running pods keep their IPs.
 */
export function podCIDRApplier(opts: PodCIDRApplierOptions): (cidr: string, signal: AbortSignal) => Promise<void> {
  return async (cidr, signal) => {
    let networks;
    try {
      networks = await loadPodNetworks(opts.cniConfDir, { podCidr: cidr });
    } catch (err) {
      throw new PodCIDRRefusedError(`pod CIDR ${cidr}: ${(err as Error).message}`, { cause: err });
    }
    const routes = await hostRoutes({ signal });
    for (const subnet of hostLocalSubnets(networks.main)) {
      const clash = subnetCollisions(subnet, routes, bridgeNames(networks.main));
      if (clash.length > 0) {
        throw new PodCIDRRefusedError(
          `pod CIDR ${cidr} (Node.spec.podCIDR) overlaps host routes: ${clash.map((r) => `${r.dst}${r.dev ? ` dev ${r.dev}` : ''}`).join(', ')}`,
        );
      }
    }
    // The bridge plugin keeps one IPv4 gateway per bridge and refuses to add another ("already has an IP address
    // different from ..."): while the bridge carries the previous range's gateway (its pods may still use it),
    // switching would make every new sandbox fail, so the previous range stays.
    const cidrNet = parseCidr(cidr);
    for (const bridge of bridgeNames(networks.main)) {
      const foreign = (await interfaceIPv4Addresses(bridge, signal)).filter((a) => !cidrContains(cidrNet, parseIp(a.split('/')[0]!)!));
      if (foreign.length > 0) {
        throw new PodCIDRRefusedError(
          `pod CIDR ${cidr} (Node.spec.podCIDR) cannot be used while bridge ${bridge} carries ${foreign.join(', ')} of the previous pod range ` +
            `(the bridge plugin allows one IPv4 subnet per bridge); start nodelet with --pod-cidr ${cidr} to use it`,
        );
      }
    }
    opts.podNetwork.setMain(networks.main);
  };
}
