// Facts about the host nodelet runs on: its name and its IPs.
import { readFile } from 'node:fs/promises';
import { hostname, networkInterfaces } from 'node:os';

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

/** The node's IP: --node-ip, else the first IPv4 address of the default route's interface, else any non-loopback IPv4. */
export async function detectNodeIP(override?: string): Promise<string> {
  if (override) return override;
  const ifaces = networkInterfaces();
  const routeIface = defaultRouteInterface(await readFile('/proc/net/route', 'utf8').catch(() => ''));
  const v4 = (name: string) => (ifaces[name] ?? []).find((a) => a.family === 'IPv4' && !a.internal)?.address;
  const fromRoute = routeIface ? v4(routeIface) : undefined;
  if (fromRoute) return fromRoute;
  for (const name of Object.keys(ifaces)) {
    const ip = v4(name);
    if (ip) return ip;
  }
  return '127.0.0.1';
}

/** Every address of this host's interfaces, loopback included (what "the host" means to probes). */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
}
