// kubelet's service environment variables (getServiceEnvVarMap, envvars.FromServices): <SVC>_SERVICE_HOST/_PORT and the
// docker-link variables of the Services a pod sees: those of its namespace (enableServiceLinks) and default/kubernetes.
import type { V1Service } from '@kubernetes/client-node';

/** The Services of the default namespace every pod gets variables for, even with enableServiceLinks false. */
const masterServices = new Set(['kubernetes']);

/** kubelet's IsServiceIPSet: a ClusterIP that is neither "None" (headless) nor empty (ExternalName). */
export function isServiceIPSet(service: V1Service): boolean {
  const ip = service.spec?.clusterIP ?? '';
  return ip !== '' && ip !== 'None';
}

/** kubelet's makeEnvVariableName: upper case, '-' as '_'. */
const envName = (name: string) => name.replaceAll('-', '_').toUpperCase();

/** Go's net.JoinHostPort: an IPv6 address in brackets. */
const joinHostPort = (host: string, port: number) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

/** kubelet's FromServices for one Service, in kubelet's order. */
function serviceVariables(service: V1Service): Array<[string, string]> {
  const prefix = envName(service.metadata?.name ?? '');
  const ip = service.spec!.clusterIP!;
  const ports = service.spec?.ports ?? [];
  const vars: Array<[string, string]> = [[`${prefix}_SERVICE_HOST`, ip]];
  // The API server requires a port on a Service with a cluster IP; kubelet would not survive one without.
  if (ports.length === 0) return vars;
  vars.push([`${prefix}_SERVICE_PORT`, String(ports[0]!.port)]);
  for (const p of ports) if (p.name) vars.push([`${prefix}_SERVICE_PORT_${envName(p.name)}`, String(p.port)]);
  // Docker-compatible link variables; the first port also as <SVC>_PORT.
  for (const [i, p] of ports.entries()) {
    const protocol = p.protocol || 'TCP';
    const url = `${protocol.toLowerCase()}://${joinHostPort(ip, p.port)}`;
    if (i === 0) vars.push([`${prefix}_PORT`, url]);
    const portPrefix = `${prefix}_PORT_${p.port}_${protocol.toUpperCase()}`;
    vars.push([portPrefix, url], [`${portPrefix}_PROTO`, protocol.toLowerCase()], [`${portPrefix}_PORT`, String(p.port)], [`${portPrefix}_ADDR`, ip]);
  }
  return vars;
}

/**
 * kubelet's getServiceEnvVarMap: the variables of the Services with a cluster IP in the pod's namespace (when
 * enableServiceLinks) and of default/kubernetes (always; a "kubernetes" Service of the pod's own namespace wins).
 * Services are taken in name order (kubelet's is Go's map order, unspecified; their variable names do not collide).
 */
export function serviceEnvVarMap(services: readonly V1Service[], namespace: string, enableServiceLinks: boolean): Map<string, string> {
  const byName = new Map<string, V1Service>();
  for (const service of services) {
    if (!isServiceIPSet(service)) continue;
    const name = service.metadata?.name ?? '';
    const ns = service.metadata?.namespace ?? '';
    if (ns === 'default' && masterServices.has(name)) {
      if (!byName.has(name)) byName.set(name, service);
    } else if (ns === namespace && enableServiceLinks) {
      byName.set(name, service);
    }
  }
  const env = new Map<string, string>();
  for (const name of [...byName.keys()].sort()) for (const [k, v] of serviceVariables(byName.get(name)!)) env.set(k, v);
  return env;
}
