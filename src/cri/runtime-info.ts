// What the runtime's Status tells: its conditions as kubelet prints them, and of its own configuration (containerd's CRI
// plugin "config" info, in the verbose answer).
import type { RuntimeCondition } from './types.js';

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
 * The cgroup driver of the runtime's default runc runtime (its SystemdCgroup option), from the `config` entry of a
 * verbose Status's info; undefined when the info does not say (another runtime, or not containerd's format).
 * kubelet asks CRI RuntimeConfig (KubeletCgroupDriverFromCRI); containerd 1.6 does not implement it, its Status does.
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
