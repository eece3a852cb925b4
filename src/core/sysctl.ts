// Sysctl names as Kubernetes reads them: the dotted form and the namespace a sysctl belongs to (utilsysctl).

/** A name written with slashes has its separators swapped ("net/ipv4/ip_forward" is net.ipv4.ip_forward; "eth0.100" survives as "eth0/100"). */
export function dottedSysctlName(name: string): string {
  const first = name.search(/[./]/);
  if (first < 0 || name[first] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'));
}

const ipcSysctls = new Set(['kernel.sem']);
const ipcSysctlPrefixes = ['kernel.shm', 'kernel.msg', 'fs.mqueue.'];

/** The kernel namespace a (dotted) sysctl is scoped to, which a pod shares with the host under hostIPC / hostNetwork. */
export function sysctlNamespace(dottedName: string): 'ipc' | 'net' | undefined {
  if (ipcSysctls.has(dottedName) || ipcSysctlPrefixes.some((p) => dottedName.startsWith(p))) return 'ipc';
  if (dottedName.startsWith('net.')) return 'net';
  return undefined;
}
