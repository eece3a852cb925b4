// What the runtime's Status tells: its conditions as kubelet prints them, and of its own configuration (containerd's CRI
// plugin "config" info, in the verbose answer).
import type { RuntimeCondition, RuntimeConfig } from './types.js';

/** %v of kubelet's RuntimeCondition ("NetworkReady=false reason:... message:..."), "<nil>" when the runtime omitted it. */
export function describeRuntimeCondition(c: RuntimeCondition | undefined): string {
  return c ? `${c.type}=${c.status} reason:${c.reason} message:${c.message}` : '<nil>';
}

/** kubelet's runtimeState network error for a NetworkReady condition that is not true. */
export function networkNotReadyError(c: RuntimeCondition | undefined): string {
  return `container runtime network not ready: ${describeRuntimeCondition(c)}`;
}

export type CgroupDriver = 'cgroupfs' | 'systemd';

interface ContainerdCriConfig {
  containerdRootDir?: string;
  sandboxImage?: string;
  containerd?: {
    defaultRuntimeName?: string;
    runtimes?: Record<string, { options?: Record<string, unknown> | null } | undefined>;
  };
  systemdCgroup?: boolean;
}

/**
 * The Kubernetes release whose kubelet needs CRI RuntimeConfig: kubelet 1.37 counts a runtime without it in
 * kubelet_cri_losing_support{version="1.38.0"} (cmd/kubelet/app/server.go getCgroupDriverFromCRI).
 */
export const runtimeConfigRequiredFrom = '1.38.0';

/** What kubelet 1.37 logs when the runtime does not implement RuntimeConfig, and then uses its own cgroupDriver. */
export const runtimeConfigUnimplementedMessage =
  'CRI implementation should be updated to support RuntimeConfig. Falling back to using cgroupDriver from kubelet config.';

/** A RuntimeConfig answer kubelet refuses to start with: a cgroup driver it does not know. */
export class UnknownCgroupDriverError extends Error {}

/**
 * The cgroup driver a CRI RuntimeConfig answer tells, as kubelet 1.37 reads it (getCgroupDriverFromCRI, with
 * KubeletCgroupDriverFromCRI GA): the runtime's driver; undefined without a Linux configuration (kubelet then keeps
 * its cgroupDriver); a driver it does not know is an error ("runtime returned an unknown cgroup driver <n>").
 */
export function cgroupDriverFromRuntimeConfig(answer: RuntimeConfig): CgroupDriver | undefined {
  const driver = answer.linux?.cgroupDriver;
  if (driver === undefined) return undefined;
  if (driver === 'SYSTEMD') return 'systemd';
  if (driver === 'CGROUPFS') return 'cgroupfs';
  throw new UnknownCgroupDriverError(`runtime returned an unknown cgroup driver ${driver}`);
}

/**
 * The cgroup driver of the runtime's default runc runtime (its SystemdCgroup option), from the `config` entry of a
 * verbose Status's info; undefined when the info does not say (another runtime, or not containerd's format).
 * kubelet asks CRI RuntimeConfig instead (cgroupDriverFromRuntimeConfig); this reads it from containerd's own
 * configuration where no CRI call tells (the bench's floor).
 */
export function cgroupDriverFromStatusInfo(info: Record<string, string>): CgroupDriver | undefined {
  const config = criConfig(info);
  if (!config) return undefined;
  const name = config.containerd?.defaultRuntimeName;
  const runtime = name ? config.containerd?.runtimes?.[name] : undefined;
  if (!runtime) return undefined;
  const options = runtime.options ?? {};
  return options['SystemdCgroup'] === true ? 'systemd' : 'cgroupfs';
}

/**
 * containerd's content store directory (`<root>/io.containerd.content.v1.content`, where pulls write their blobs), from
 * the `config` entry of a verbose Status's info; undefined when the info does not say.
 */
export function contentStoreDirFromStatusInfo(info: Record<string, string>): string | undefined {
  const root = criConfig(info)?.containerdRootDir;
  return root ? `${root}/io.containerd.content.v1.content` : undefined;
}

/** The sandbox (pause) image the runtime runs pods on (containerd's `sandbox_image`), from a verbose Status's info. */
export function sandboxImageFromStatusInfo(info: Record<string, string>): string | undefined {
  return criConfig(info)?.sandboxImage || undefined;
}

function criConfig(info: Record<string, string>): ContainerdCriConfig | undefined {
  try {
    return JSON.parse(info['config'] ?? '') as ContainerdCriConfig;
  } catch {
    return undefined;
  }
}
