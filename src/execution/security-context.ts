// Pod and container security contexts turned into CRI security settings, as kubelet's determineEffectiveSecurityContext does (pure).
import { join } from 'node:path';
import type { V1Container, V1Pod, V1SeccompProfile, V1SecurityContext } from '@kubernetes/client-node';
import type {
  KeyValueMap, LinuxContainerSecurityContext, LinuxSandboxSecurityContext, NamespaceOption, SecurityProfile, SupplementalGroupsPolicy,
} from '../cri/types.js';
import { dottedSysctlName } from '../core/sysctl.js';
import { SyncError } from '../core/sync-result.js';
import { podContainers } from '../core/pod-containers.js';

/** The user an image runs as, from CRI ImageStatus: a numeric uid, else a user name, else (neither) root. */
export interface ImageUser {
  uid?: number;
  username: string;
}

/** Where Localhost seccomp profiles live when the node names no directory: nodelet's default --root-dir. */
export const defaultSeccompProfileRoot = '/var/lib/nodelet/seccomp';

// kubelet's defaults for containers with the Default proc mount; containerd 1.6 masks nothing unless they are sent.
const defaultMaskedPaths = [
  '/proc/asound', '/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list',
  '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware', '/sys/devices/virtual/powercap',
];
const defaultReadonlyPaths = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/** kubelet's format.Pod: `name_namespace(uid)`. */
function podDescription(pod: V1Pod): string {
  const m = pod.metadata ?? {};
  return `${m.name ?? ''}_${m.namespace ?? ''}(${m.uid ?? ''})`;
}

/**
 * kubelet's DetermineEffectiveSecurityContext: the pod's runAsUser, runAsGroup, runAsNonRoot and SELinux
 * options, overridden field by field by the container's security context.
 */
export function effectiveSecurityContext(pod: V1Pod, container: V1Container): V1SecurityContext {
  const podSc = pod.spec?.securityContext;
  const effective: V1SecurityContext = {};
  if (podSc) {
    if (podSc.seLinuxOptions) effective.seLinuxOptions = { ...podSc.seLinuxOptions };
    if (podSc.runAsUser !== undefined) effective.runAsUser = podSc.runAsUser;
    if (podSc.runAsGroup !== undefined) effective.runAsGroup = podSc.runAsGroup;
    if (podSc.runAsNonRoot !== undefined) effective.runAsNonRoot = podSc.runAsNonRoot;
  }
  const sc = container.securityContext;
  if (!sc) return effective;
  if (sc.seLinuxOptions) effective.seLinuxOptions = { ...sc.seLinuxOptions };
  if (sc.capabilities) effective.capabilities = { ...sc.capabilities };
  for (const key of ['privileged', 'runAsUser', 'runAsGroup', 'runAsNonRoot', 'readOnlyRootFilesystem', 'allowPrivilegeEscalation', 'procMount'] as const) {
    if (sc[key] !== undefined) (effective as Record<string, unknown>)[key] = sc[key];
  }
  return effective;
}

const maxUserID = 2147483647;

/**
 * kubelet's verifyRunAsNonRoot: with runAsNonRoot, the container must not run as uid 0, whether set in the
 * security context or taken from the image; an image naming a user by name cannot be verified.
 * Throws a CreateContainerConfigError with kubelet's message.
 */
export function verifyRunAsNonRoot(pod: V1Pod, container: V1Container, image: ImageUser): void {
  const sc = effectiveSecurityContext(pod, container);
  if (!sc.runAsNonRoot) return;
  const where = `(pod: ${JSON.stringify(podDescription(pod))}, container: ${container.name})`;
  const refuse = (message: string): never => {
    throw new SyncError('CreateContainerConfigError', `${message} ${where}`);
  };
  if (sc.runAsUser !== undefined) {
    if (sc.runAsUser === 0) refuse("container's runAsUser breaks non-root policy");
    return;
  }
  if (image.uid === undefined && image.username !== '') {
    refuse(`container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root`);
  }
  const uid = image.uid ?? 0;
  if (uid === 0) refuse('container has runAsNonRoot and image will run as root');
  if (uid < 0 || uid > maxUserID) {
    refuse(
      `container has runAsNonRoot and image has an invalid user id (${uid}). (Must be 1-(${maxUserID})): must be between 0 and ${maxUserID}, inclusive`,
    );
  }
}

/**
 * kubelet's seccomp choice: the container's seccompProfile, else the pod's, else Unconfined (kubelet's
 * --seccomp-default is off); Localhost profiles are files under the node's seccomp profile root.
 */
export function seccompProfile(pod: V1Pod, container: V1Container, profileRoot: string): SecurityProfile {
  const field: V1SeccompProfile | undefined = container.securityContext?.seccompProfile ?? pod.spec?.securityContext?.seccompProfile;
  switch (field?.type) {
    case 'RuntimeDefault':
      return { profileType: 'RuntimeDefault' };
    case 'Localhost':
      if (!field.localhostProfile) {
        throw new SyncError(
          'CreateContainerConfigError',
          `localhostProfile must be set if seccompProfile type is Localhost (pod: ${JSON.stringify(podDescription(pod))}, container: ${container.name})`,
        );
      }
      return { profileType: 'Localhost', localhostRef: join(profileRoot, field.localhostProfile) };
    default:
      return { profileType: 'Unconfined' };
  }
}

/** fsGroup first, then the pod's supplementalGroups, as kubelet lists them. */
function podSupplementalGroups(pod: V1Pod): number[] {
  const sc = pod.spec?.securityContext;
  return [...(sc?.fsGroup !== undefined ? [sc.fsGroup] : []), ...(sc?.supplementalGroups ?? [])];
}

/**
 * The pod's supplementalGroupsPolicy for CRI (kubelet sends it to the sandbox and every container); unset is the
 * runtime's default, Merge. Validation admits only Merge and Strict.
 */
function supplementalGroupsPolicy(pod: V1Pod): SupplementalGroupsPolicy | undefined {
  const policy = pod.spec?.securityContext?.supplementalGroupsPolicy;
  return policy === 'Merge' || policy === 'Strict' ? policy : undefined;
}

/**
 * kubelet's determineEffectiveSecurityContext: the container's CRI security context. The image's user applies
 * when no runAsUser is set (root when the image names none); runAsNonRoot is verified first.
 */
export function containerSecurityContext(
  pod: V1Pod,
  container: V1Container,
  image: ImageUser,
  namespaceOptions: NamespaceOption,
  seccompProfileRoot: string = defaultSeccompProfileRoot,
): LinuxContainerSecurityContext {
  verifyRunAsNonRoot(pod, container, image);
  const sc = effectiveSecurityContext(pod, container);
  const result: LinuxContainerSecurityContext = {
    namespaceOptions,
    privileged: sc.privileged === true,
    readonlyRootfs: sc.readOnlyRootFilesystem === true,
    // no_new_privs only when allowPrivilegeEscalation is explicitly false (AddNoNewPrivileges).
    noNewPrivs: sc.allowPrivilegeEscalation === false,
    seccomp: seccompProfile(pod, container, seccompProfileRoot),
  };
  // kubelet sends capability names as written (e.g. NET_ADMIN); containerd adds the CAP_ prefix itself.
  if (sc.capabilities) result.capabilities = { addCapabilities: [...(sc.capabilities.add ?? [])], dropCapabilities: [...(sc.capabilities.drop ?? [])] };
  if (sc.runAsUser !== undefined) result.runAsUser = sc.runAsUser;
  else if (image.uid !== undefined) result.runAsUser = image.uid;
  else if (image.username !== '') result.runAsUsername = image.username;
  else result.runAsUser = 0;
  if (sc.runAsGroup !== undefined) result.runAsGroup = sc.runAsGroup;
  const groups = podSupplementalGroups(pod);
  if (groups.length > 0) result.supplementalGroups = groups;
  const policy = supplementalGroupsPolicy(pod);
  if (policy) result.supplementalGroupsPolicy = policy;
  // Privileged containers see everything (containerd clears the lists for them anyway); Unmasked shows /proc whole.
  if (!result.privileged && sc.procMount !== 'Unmasked') {
    result.maskedPaths = defaultMaskedPaths;
    result.readonlyPaths = defaultReadonlyPaths;
  } else if (sc.procMount === 'Unmasked') {
    result.maskedPaths = [];
    result.readonlyPaths = [];
  }
  return result;
}

/** kubelet's HasPrivilegedContainer: any container, init container included, asks for privileged. */
export function hasPrivilegedContainer(pod: V1Pod): boolean {
  return podContainers(pod).some((c) => c.securityContext?.privileged === true);
}

/**
 * kubelet's generatePodSandboxLinuxConfig security part: privileged when a container is (containerd refuses
 * privileged containers in an unprivileged sandbox), the runtime's default seccomp profile for the sandbox
 * itself, and the pod's user, group and supplemental groups.
 */
export function sandboxSecurityContext(pod: V1Pod, namespaceOptions: NamespaceOption): LinuxSandboxSecurityContext {
  const sc = pod.spec?.securityContext;
  const result: LinuxSandboxSecurityContext = {
    namespaceOptions,
    privileged: hasPrivilegedContainer(pod),
    seccomp: { profileType: 'RuntimeDefault' },
  };
  if (sc?.runAsUser !== undefined) result.runAsUser = sc.runAsUser;
  if (sc?.runAsGroup !== undefined) result.runAsGroup = sc.runAsGroup;
  const groups = podSupplementalGroups(pod);
  if (groups.length > 0) result.supplementalGroups = groups;
  const policy = supplementalGroupsPolicy(pod);
  if (policy) result.supplementalGroupsPolicy = policy;
  return result;
}

/** The pod's sysctls for the sandbox (kubelet applies them to the whole pod, in the sandbox's namespaces). */
export function podSysctls(pod: V1Pod): KeyValueMap {
  const sysctls: KeyValueMap = {};
  for (const s of pod.spec?.securityContext?.sysctls ?? []) sysctls[dottedSysctlName(s.name)] = s.value;
  return sysctls;
}
