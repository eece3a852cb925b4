// What the runtime's verbose Status tells of its own configuration (containerd's CRI plugin "config" info).

export type CgroupDriver = 'cgroupfs' | 'systemd';

interface ContainerdCriConfig {
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
  if (!info['config']) return undefined;
  let config: ContainerdCriConfig;
  try {
    config = JSON.parse(info['config']) as ContainerdCriConfig;
  } catch {
    return undefined;
  }
  const name = config.containerd?.defaultRuntimeName;
  const runtime = name ? config.containerd?.runtimes?.[name] : undefined;
  if (!runtime) return undefined;
  const options = runtime.options ?? {};
  return options['SystemdCgroup'] === true ? 'systemd' : 'cgroupfs';
}
