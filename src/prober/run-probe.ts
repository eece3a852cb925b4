// Runs one probe of a container: resolves its handler (port names, host, URL, command) and calls the exec, http, tcp or grpc prober.
import { isIP } from 'node:net';
import type { IntOrString, V1Container, V1Probe } from '@kubernetes/client-node';
import type { RuntimeService } from '../cri/types.js';
import { expandVars } from '../core/env-expansion.js';
import { cidrContains, parseCidr, parseIp } from '../cni/cidr.js';
import { execProbe } from './exec-probe.js';
import { grpcProbe } from './grpc-probe.js';
import { httpProbe } from './http-probe.js';
import { ProbeError, type ProbeOutcome } from './outcome.js';
import { probeSettings } from './probe-spec.js';
import { joinHostPort, tcpProbe } from './tcp-probe.js';

export interface ProbeRunContext {
  container: V1Container;
  containerId: string;
  /** The probe's manifest field, e.g. `spec.containers[0].livenessProbe`, for errors. */
  field: string;
  /** The pod's IPs (the host's for host-network pods), primary first: the default probe host. */
  podIPs: string[];
  /** This host's own addresses: besides loopback and the pod's IPs, the only hosts a probe may reach. */
  hostIPs: string[];
  /** The node's pod network subnets: the other pods of this node, which a handler may name as its host. */
  podSubnets?: string[];
  runtime: Pick<RuntimeService, 'execSync'>;
  /** The User-Agent of an httpGet or grpc handler (probeUserAgent). */
  userAgent: string;
  signal?: AbortSignal;
}

/** kubelet's ResolveContainerPort: a number, or the containerPort of the container's port with that name. */
export function resolveContainerPort(port: IntOrString | undefined, container: V1Container, field: string): number {
  let value: number;
  if (typeof port === 'number') {
    value = port;
  } else {
    const named = (container.ports ?? []).find((p) => p.name === port);
    if (!named) throw new ProbeError(`port ${JSON.stringify(port ?? '')} not found in the ports of container "${container.name}" (${field})`, field);
    value = named.containerPort;
  }
  if (!Number.isInteger(value) || value <= 0 || value >= 65536) throw new ProbeError(`invalid port number: ${value} (${field})`, field);
  return value;
}

function isLoopback(ip: string): boolean {
  return isIP(ip) === 4 ? ip.startsWith('127.') : ip === '::1';
}

/** Network safety: a probe reaches only the pod's own IPs, loopback, this host's addresses and this node's pods. */
export function isAllowedProbeHost(host: string, podIPs: string[], hostIPs: string[], podSubnets: string[] = []): boolean {
  const ip = host.replace(/^\[(.*)\]$/, '$1');
  if (ip === 'localhost') return true;
  if (isIP(ip) === 0) return false;
  if (isLoopback(ip) || podIPs.includes(ip) || hostIPs.includes(ip)) return true;
  const parsed = parseIp(ip);
  return parsed !== undefined && podSubnets.some((s) => cidrContains(parseCidr(s), parsed));
}

function probeHost(explicit: string | undefined, ctx: ProbeRunContext, field: string): string {
  const host = explicit || ctx.podIPs[0];
  if (!host) throw new ProbeError(`the pod has no IP yet to probe (${field})`, field);
  if (!isAllowedProbeHost(host, ctx.podIPs, ctx.hostIPs, ctx.podSubnets)) {
    throw new ProbeError(`host ${JSON.stringify(host)} is neither a pod of this node nor an address of this host; nodelet probes nothing else (${field})`, field);
  }
  return host.replace(/^\[(.*)\]$/, '$1');
}

/** The probe URL: the path may carry a query, but never moves the request to another host. */
export function probeUrl(scheme: string, host: string, port: number, path: string): URL {
  const url = new URL(`${scheme}://${joinHostPort(host, port)}/`);
  const withSlash = path.startsWith('/') ? path : `/${path}`;
  const q = withSlash.indexOf('?');
  url.pathname = q < 0 ? withSlash : withSlash.slice(0, q);
  if (q >= 0) url.search = withSlash.slice(q);
  return url;
}

/**
 * Runs the probe's handler once. Resolves with the outcome (failures included); rejects with a
 * ProbeError when the run could not be judged, or with the abort reason when `ctx.signal` aborts.
 */
export async function runProbe(probe: V1Probe, ctx: ProbeRunContext): Promise<ProbeOutcome> {
  const { timeoutSeconds } = probeSettings(probe);
  if (probe.exec) {
    // kubelet expands $(VAR) in the command with the container's plain env values only.
    const env = new Map((ctx.container.env ?? []).map((e) => [e.name, e.value ?? '']));
    const command = (probe.exec.command ?? []).map((s) => expandVars(s, env));
    return execProbe(ctx.runtime, ctx.containerId, command, timeoutSeconds, ctx.signal);
  }
  if (probe.httpGet) {
    const field = `${ctx.field}.httpGet`;
    const port = resolveContainerPort(probe.httpGet.port, ctx.container, `${field}.port`);
    const host = probeHost(probe.httpGet.host, ctx, `${field}.host`);
    const scheme = (probe.httpGet.scheme || 'HTTP').toLowerCase();
    const url = probeUrl(scheme, host, port, probe.httpGet.path || '/');
    return httpProbe({ url, headers: probe.httpGet.httpHeaders ?? [], userAgent: ctx.userAgent }, timeoutSeconds * 1000, ctx.signal);
  }
  if (probe.tcpSocket) {
    const field = `${ctx.field}.tcpSocket`;
    const port = resolveContainerPort(probe.tcpSocket.port, ctx.container, `${field}.port`);
    const host = probeHost(probe.tcpSocket.host, ctx, `${field}.host`);
    return tcpProbe(host, port, timeoutSeconds * 1000, ctx.signal);
  }
  if (probe.grpc) {
    // As kubelet: always the pod's IP (the handler has no host).
    const field = `${ctx.field}.grpc`;
    return grpcProbe(probeHost(undefined, ctx, field), probe.grpc.port, probe.grpc.service ?? '', timeoutSeconds, ctx.userAgent, ctx.signal);
  }
  throw new ProbeError(`missing probe handler (${ctx.field})`, ctx.field);
}
