// Builds the CRI sandbox and container configs for a pod, with kubelet's labels, annotations and log layout.
import { totalmem } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ContainerConfig, DnsConfig, KeyValueMap, Mount, NamespaceOption, PodSandboxConfig, PortMapping, Protocol, UserNamespace } from '../cri/types.js';
import { containerHash } from '../decisions/container-hash.js';
import { ExpansionLimitError, expandVars } from '../core/env-expansion.js';
import { configError } from './env.js';
import {
  containerHashAnnotation,
  containerNameLabel,
  containerPortsAnnotation,
  containerPreStopHandlerAnnotation,
  containerRestartCountAnnotation,
  containerTerminationMessagePathAnnotation,
  containerTerminationMessagePolicyAnnotation,
  podNameLabel,
  podNamespaceLabel,
  podTerminationGracePeriodAnnotation,
  podUidLabel,
} from '../core/labels.js';
import type { NodeDnsSettings } from './dns.js';
import { containerResources, podCgroupParent, runtimeCgroupParent } from './resources.js';
import type { CgroupDriver } from '../cri/runtime-info.js';
import { containerSecurityContext, podSysctls, sandboxSecurityContext, type ImageUser } from './security-context.js';
import { envValueBytes } from './env-bytes.js';

/** What the node contributes to every pod's runtime config. */
export interface NodeRuntimeSettings {
  /** Root of pod log directories (kubelet's podLogsDir, /var/log/pods). */
  podLogsDir: string;
  /** Cluster DNS and the host's resolver file, for the pods' DNS config (see dns.ts). */
  dns: NodeDnsSettings;
  /** kubelet's --cgroups-per-qos: sandboxes get the cgroup parent kubepods[/<qos>]/pod<uid>; unset leaves the runtime's default. */
  cgroupsPerQOS?: boolean;
  /** kubelet's cgroupRoot, the cgroup kubepods sits in; default "/". */
  cgroupRoot?: string;
  /** The cgroup driver (the runtime's): with systemd the cgroup parent is given in systemd's slice form. */
  cgroupDriver?: CgroupDriver;
  /** kubelet's podPidsLimit: every pod cgroup's pids.max when positive (default -1, no limit). */
  podPidsLimit?: number;
  /** The machine's memory (MemTotal), for Burstable OOM scores; defaults to this host's. */
  memoryCapacityBytes?: bigint;
  /** Directory of Localhost seccomp profiles (kubelet's <root-dir>/seccomp). */
  seccompProfileRoot?: string;
}

export const defaultTerminationGracePeriodSeconds = 30;

/** `<namespace>_<name>_<uid>` under the pod log root, as kubelet lays it out. */
export function podLogDirectory(podLogsDir: string, pod: V1Pod): string {
  const m = pod.metadata ?? {};
  return join(podLogsDir, `${m.namespace ?? 'default'}_${m.name ?? ''}_${m.uid ?? ''}`);
}

export function containerLogPath(name: string, restartCount: number): string {
  return `${name}/${restartCount}.log`;
}

export function podIdentityLabels(pod: V1Pod): KeyValueMap {
  return {
    [podNameLabel]: pod.metadata?.name ?? '',
    [podNamespaceLabel]: pod.metadata?.namespace ?? 'default',
    [podUidLabel]: pod.metadata?.uid ?? '',
  };
}

export function terminationGracePeriodSeconds(pod: V1Pod): number {
  return pod.spec?.terminationGracePeriodSeconds ?? defaultTerminationGracePeriodSeconds;
}

/**
 * kubelet's NamespacesForPod. The user namespace is sent only for a pod with its own (hostUsers: false): kubelet sends
 * NODE mode for the others, which containerd treats as no option at all, but containerd refuses a container whose option
 * differs from its sandbox's, and sandboxes created by an earlier nodelet have none.
 */
function namespaceOptions(pod: V1Pod, userNamespace: UserNamespace | undefined): NamespaceOption {
  const spec = pod.spec ?? { containers: [] };
  return {
    network: spec.hostNetwork ? 'NODE' : 'POD',
    pid: spec.hostPID ? 'NODE' : spec.shareProcessNamespace ? 'POD' : 'CONTAINER',
    ipc: spec.hostIPC ? 'NODE' : 'POD',
    ...(userNamespace ? { usernsOptions: userNamespace } : {}),
  };
}

function containerNamespaceOptions(pod: V1Pod, targetContainerId: string | undefined, userNamespace: UserNamespace | undefined): NamespaceOption {
  const options = namespaceOptions(pod, userNamespace);
  return targetContainerId && options.pid === 'CONTAINER' ? { ...options, pid: 'TARGET', targetId: targetContainerId } : options;
}

/**
 * kubelet's GeneratePodHostNameAndDomain hostname: spec.hostnameOverride (GA in 1.37; the pod then has no domain), else
 * spec.hostname, else the pod name; one longer than 63 characters is cut there, without a trailing '-' or '.'.
 */
export function podHostname(pod: V1Pod): string {
  const name = pod.spec?.hostnameOverride ?? (pod.spec?.hostname || (pod.metadata?.name ?? ''));
  return name.length <= 63 ? name : name.slice(0, 63).replace(/[-.]+$/, '');
}

function portMappings(pod: V1Pod): PortMapping[] {
  const mappings: PortMapping[] = [];
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      mappings.push({ protocol: (p.protocol ?? 'TCP') as Protocol, containerPort: p.containerPort, hostPort: p.hostPort, hostIp: p.hostIP ?? '' });
    }
  }
  return mappings;
}

/**
 * The sandbox's config; `dnsConfig` is the pod's (dns.ts podDnsConfig), absent where the runtime does not read it;
 * `userNamespace` the pod's own (host/user-namespaces.ts), absent for a pod in the host's.
 */
export function buildSandboxConfig(pod: V1Pod, attempt: number, node: NodeRuntimeSettings, dnsConfig?: DnsConfig, userNamespace?: UserNamespace): PodSandboxConfig {
  const m = pod.metadata ?? {};
  return {
    metadata: { name: m.name ?? '', namespace: m.namespace ?? 'default', uid: m.uid ?? '', attempt },
    hostname: pod.spec?.hostNetwork ? '' : podHostname(pod),
    logDirectory: podLogDirectory(node.podLogsDir, pod),
    ...(dnsConfig ? { dnsConfig } : {}),
    portMappings: portMappings(pod),
    labels: { ...(m.labels ?? {}), ...podIdentityLabels(pod) },
    annotations: { ...(m.annotations ?? {}) },
    linux: {
      ...(node.cgroupsPerQOS ? { cgroupParent: runtimeCgroupParent(podCgroupParent(pod, node.cgroupRoot), node.cgroupDriver) } : {}),
      securityContext: sandboxSecurityContext(pod, namespaceOptions(pod, userNamespace)),
      sysctls: podSysctls(pod),
    },
  };
}

/** What a container's config needs beyond the pod: the image's user and the node's settings. */
export interface ContainerConfigInputs {
  /**
   * The image's user from ImageStatus (kubelet's getImageUser): it applies when no runAsUser is set and decides
   * runAsNonRoot. Without it the image counts as running as root, as kubelet counts an image naming no user.
   */
  imageUser?: ImageUser;
  node?: NodeRuntimeSettings;
  /** The container's volume mounts (see volume/pod-volumes.ts containerMounts). */
  mounts?: Mount[];
  /**
   * An ephemeral container's target (targetContainerName): the running container whose process namespace it joins,
   * as kubelet does when the pod does not share one namespace already.
   */
  targetContainerId?: string;
  /** The pod's own user namespace (the sandbox's): the container joins it and its volumes are mounted idmapped into it. */
  userNamespace?: UserNamespace;
}

/**
 * `env` is the container's resolved environment (see env.ts); command and args are expanded against it.
 * Throws SyncError CreateContainerConfigError for user errors (runAsNonRoot violated, an invalid quantity).
 */
/** The container's command or args with $(VAR) expanded; an expansion over the limit is its CreateContainerConfigError. */
function expandAll(pod: V1Pod, container: V1Container, field: 'command' | 'args', env: ReadonlyMap<string, string>): string[] {
  return (container[field] ?? []).map((s, i) => {
    try {
      return expandVars(s, env);
    } catch (err) {
      if (err instanceof ExpansionLimitError) throw configError(pod, container, `${field}[${i}]: ${err.message}`, err);
      throw err;
    }
  });
}

export function buildContainerConfig(
  pod: V1Pod,
  container: V1Container,
  restartCount: number,
  env: ReadonlyMap<string, string>,
  inputs: ContainerConfigInputs = {},
): ContainerConfig {
  const annotations: KeyValueMap = {
    [containerHashAnnotation]: containerHash(container),
    [containerRestartCountAnnotation]: String(restartCount),
    [containerTerminationMessagePathAnnotation]: container.terminationMessagePath ?? '/dev/termination-log',
    [containerTerminationMessagePolicyAnnotation]: container.terminationMessagePolicy ?? 'File',
    [podTerminationGracePeriodAnnotation]: String(terminationGracePeriodSeconds(pod)),
  };
  if (container.ports?.length) annotations[containerPortsAnnotation] = JSON.stringify(container.ports);
  if (container.lifecycle?.preStop) annotations[containerPreStopHandlerAnnotation] = JSON.stringify(container.lifecycle.preStop);
  return {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: container.image ?? '' },
    command: expandAll(pod, container, 'command', env),
    args: expandAll(pod, container, 'args', env),
    workingDir: container.workingDir ?? '',
    envs: [...env].map(([key, value]) => ({ key, value: envValueBytes(value) })),
    // As kubelet: every mount carries the pod's mappings, so the runtime mounts it idmapped (host root is the pod's root).
    mounts: (inputs.mounts ?? []).map((m) =>
      inputs.userNamespace ? { ...m, uidMappings: inputs.userNamespace.uids, gidMappings: inputs.userNamespace.gids } : m,
    ),
    labels: { ...podIdentityLabels(pod), [containerNameLabel]: container.name },
    annotations,
    logPath: containerLogPath(container.name, restartCount),
    stdin: container.stdin ?? false,
    tty: container.tty ?? false,
    linux: {
      resources: containerResources(pod, container, inputs.node?.memoryCapacityBytes ?? BigInt(totalmem())),
      securityContext: containerSecurityContext(
        pod,
        container,
        inputs.imageUser ?? { username: '' },
        containerNamespaceOptions(pod, inputs.targetContainerId, inputs.userNamespace),
        inputs.node?.seccompProfileRoot,
      ),
    },
  };
}
