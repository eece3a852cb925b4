// kubelet's sysctl admission: a pod may set only the safe sysctls (namespaced and isolated per pod); others refuse the pod.
import type { V1Pod } from '@kubernetes/client-node';
import { dottedSysctlName, sysctlNamespace } from '../core/sysctl.js';
import type { WaitingReason } from './status.js';

/** kubelet's SafeSysctlAllowlist (no --allowed-unsafe-sysctls in nodelet yet). */
export const safeSysctls: ReadonlySet<string> = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);

/**
 * The rejection kubelet's sysctl allowlist gives a pod (reason SysctlForbidden), or undefined when it may run:
 * every sysctl must be safe, and not in a namespace the pod shares with the host.
 */
export function forbiddenSysctls(pod: V1Pod): WaitingReason | undefined {
  for (const s of pod.spec?.securityContext?.sysctls ?? []) {
    const name = dottedSysctlName(s.name);
    let problem: string | undefined;
    if (!safeSysctls.has(name)) problem = `${JSON.stringify(name)} not allowlisted`;
    else {
      const ns = sysctlNamespace(name);
      if (ns === 'ipc' && pod.spec?.hostIPC) problem = `${JSON.stringify(name)} not allowed with host ipc enabled`;
      if (ns === 'net' && pod.spec?.hostNetwork) problem = `${JSON.stringify(name)} not allowed with host net enabled`;
    }
    if (problem) return { reason: 'SysctlForbidden', message: `forbidden sysctl: ${problem}` };
  }
  return undefined;
}
