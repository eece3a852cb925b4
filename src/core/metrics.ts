// kubelet's metrics as the layers record them (/metrics and /metrics/probes). The interface is all a layer sees: the
// Prometheus registry behind it is the kubelet API's (server/metrics.ts); a component built without one records nothing.
import type { ProbeType } from './probe-results.js';
import type { ObservedContainerState } from './runtime-state.js';

/** kubelet's container_state label: the runtime state in lower case, as nodelet observes it. */
export type ContainerStateLabel = ObservedContainerState;

/** kubelet's operation_type of kubelet_pod_worker_duration_seconds: the pod's first sync, a new spec, a resync, termination. */
export type PodWorkerOperation = 'create' | 'update' | 'sync' | 'kill';

/** kubelet's container_type label of the started-containers counters. */
export type ContainerTypeLabel = 'container' | 'init_container' | 'ephemeral_container';

/** Who a probe metric is about: kubelet's prober labels. */
export interface ProbeMetricTarget {
  probeType: ProbeType;
  container: string;
  pod: string;
  namespace: string;
  podUid: string;
}

export interface NodeMetrics {
  /** A CRI call finished (kubelet's instrumented runtime service); `operation` is kubelet's operation_type. */
  runtimeOperation(operation: string, seconds: number, failed: boolean): void;
  /** A relist ran for `seconds`, `intervalSeconds` after the previous one started (undefined for the first). */
  relist(seconds: number, intervalSeconds: number | undefined): void;
  /** What the latest relist found: pods with a ready sandbox, containers by state. */
  runtimeCounts(runningPods: number, containers: Record<ContainerStateLabel, number>): void;
  podWorkerSync(operation: PodWorkerOperation, seconds: number): void;
  /** A pod first ran: seconds since nodelet first saw it. */
  podStarted(secondsSinceFirstSeen: number): void;
  /** A pod's containers all started: kubelet's pod startup SLI (from creation, image pulls excluded). */
  podStartSli(seconds: number, firstWithNetwork: boolean): void;
  /** A sandbox creation was attempted (kubelet_started_pods_total), and whether it failed. */
  sandboxStarted(failed: boolean): void;
  /** A container is about to be created (kubelet_started_containers_total). */
  containerStarted(type: ContainerTypeLabel): void;
  /** Creating or starting it failed; `code` is the CRI call's gRPC code as Go names it. */
  containerStartFailed(type: ContainerTypeLabel, code: string): void;
  /** A probe run concluded (an errored run concludes nothing, as in kubelet); `seconds` is its duration. */
  probeResult(target: ProbeMetricTarget, result: 'successful' | 'failed', seconds: number): void;
  /** A probe worker ended: its series go, as kubelet deletes them. */
  probeWorkerStopped(target: ProbeMetricTarget): void;
}
