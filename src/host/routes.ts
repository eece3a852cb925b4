// The host's routes in every routing table (from iproute2's JSON output), to keep the pod subnet off host networks.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

export interface HostRoute {
  /** CIDR, a bare address (a host route) or "default". */
  dst: string;
  dev?: string;
  gateway?: string;
  /** Absent for the main table. */
  table?: string;
  /** Absent for unicast routes; "local", "broadcast", ... otherwise. */
  type?: string;
}

/** Reads `ip -j route show table all` (IPv4 and IPv6). */
export async function hostRoutes(opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<HostRoute[]> {
  const { stdout } = await promisify(execFile)('ip', ['-j', 'route', 'show', 'table', 'all'], {
    timeout: opts.timeoutMs ?? 10_000,
    maxBuffer: 64 * 1024 * 1024,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  return parseIpRouteJson(stdout);
}

/** Parses iproute2's route JSON, keeping only the fields nodelet reasons about. */
export function parseIpRouteJson(text: string): HostRoute[] {
  const parsed: unknown = JSON.parse(text === '' ? '[]' : text);
  if (!Array.isArray(parsed)) throw new Error('ip route JSON is not a list');
  const routes: HostRoute[] = [];
  for (const entry of parsed as Record<string, unknown>[]) {
    if (typeof entry?.dst !== 'string') continue;
    const route: HostRoute = { dst: entry.dst };
    if (typeof entry.dev === 'string') route.dev = entry.dev;
    if (typeof entry.gateway === 'string') route.gateway = entry.gateway;
    if (typeof entry.table === 'string') route.table = entry.table;
    if (typeof entry.type === 'string') route.type = entry.type;
    routes.push(route);
  }
  return routes;
}
