// The agent's settings: command-line flags and the KubeletConfiguration, as the CLI resolved them.
import type { KubeletConfiguration } from './kubelet-config.js';

/** A configuration the agent cannot start with; the message names the setting. */
export class AgentConfigError extends Error {}

export interface AgentConfig {
  /** kubeconfig of the API server (cluster mode); '' runs standalone. */
  kubeconfig: string;
  /** kubeconfig with a bootstrap token for the TLS bootstrap of --kubeconfig's client certificate; '' for none. */
  bootstrapKubeconfig: string;
  /** KubeletConfiguration file (--config); '' for none. */
  configFile: string;
  podManifestPath: string;
  runtimeEndpoint: string;
  rootDir: string;
  hostnameOverride: string;
  nodeIP: string;
  podCIDR: string;
  cniConfDir: string;
  /**
   * Whether the pod CIDR (--pod-cidr, then Node.spec.podCIDR) goes into the host-local ranges of the directory's
   * network, as containerd fills its conf_template: for nodelet's own cni-conf/ or with an explicit --pod-cidr. A
   * cluster's directory (kindnet's conflist) is used exactly as written, as containerd uses it.
   */
  podCidrInConfDir: boolean;
  cniBinDirs: string[];
  cniCacheDir: string;
  cniSocket: string;
  /** The nodelet-spawn helper's path; '' starts programs with child_process. */
  spawnHelper: string;
  podLogsDir: string;
  /** --cert-dir (default <root-dir>/pki): the kubelet API's self-signed serving certificate, and the client certificates (kubelet-client-current.pem). */
  certDir: string;
  runtimeRequestTimeoutMs: number;
  syncFrequencyMs: number;
  fileCheckFrequencyMs: number;
  relistPeriodMs: number;
  /** How often images are garbage collected (nodelet's own flag; kubelet's fixed ImageGCPeriod is 5m). */
  imageGCPeriodMs: number;
  /** kubelet's --housekeeping-interval (a flag, not in KubeletConfiguration): how often pods' cgroup stats are sampled. */
  housekeepingIntervalMs: number;
  /** The KubeletConfiguration in effect: --config over kubelet's defaults, command-line flags over both. */
  kubelet: KubeletConfiguration;
}
