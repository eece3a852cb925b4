// kubelet's Prometheus metrics with prom-client: /metrics (kubelet_*, process_* and nodejs_*) and /metrics/probes
// (prober_*), with kubelet v1.32's names, help texts, types, labels and buckets (pkg/kubelet/metrics, pkg/kubelet/prober);
// the start-up gauges kubelet_cgroup_version and kubelet_cri_losing_support as kubelet 1.37 sets them.
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import type { ContainerStateLabel, ContainerTypeLabel, NodeMetrics, PodWorkerOperation, ProbeMetricTarget } from '../core/metrics.js';
import type { ProbeType } from '../core/probe-results.js';

// prom-client's own modules, not its index: the index also loads the Summary (tdigest), the Pushgateway (http, https)
// and the cluster aggregator (node:cluster), which nodelet never uses: 1 MB of the agent's heap for good.
const requirePromClient = createRequire(import.meta.url);
const Counter = requirePromClient('prom-client/lib/counter') as typeof PromClient.Counter;
const Gauge = requirePromClient('prom-client/lib/gauge') as typeof PromClient.Gauge;
const Histogram = requirePromClient('prom-client/lib/histogram') as typeof PromClient.Histogram;
const Registry = requirePromClient('prom-client/lib/registry') as typeof PromClient.Registry;
const { exponentialBuckets } = requirePromClient('prom-client/lib/bucketGenerators') as Pick<typeof PromClient, 'exponentialBuckets'>;
const collectDefaultMetrics = requirePromClient('prom-client/lib/defaultMetrics') as typeof PromClient.collectDefaultMetrics;
type Counter<T extends string = string> = PromClient.Counter<T>;
type Gauge<T extends string = string> = PromClient.Gauge<T>;
type Histogram<T extends string = string> = PromClient.Histogram<T>;

/** Prometheus' (and component-base's) DefBuckets. */
const defBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const podStartupDurationBuckets = [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600];
const containerStates: ContainerStateLabel[] = ['created', 'running', 'exited', 'unknown'];
/** kubelet's probe_type label values. */
const probeTypeLabels: Record<ProbeType, string> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

export class KubeletMetrics implements NodeMetrics {
  /** Served at /metrics. */
  readonly registry = new Registry();
  /** Served at /metrics/probes. */
  readonly probeRegistry = new Registry();

  private readonly runningPods: Gauge;
  private readonly runningContainers: Gauge<'container_state'>;
  private readonly podStartDuration: Histogram;
  private readonly podStartSliDuration: Histogram<'first_with_network'>;
  private readonly podWorkerDuration: Histogram<'operation_type'>;
  private readonly runtimeOperations: Counter<'operation_type'>;
  private readonly runtimeOperationsDuration: Histogram<'operation_type'>;
  private readonly runtimeOperationsErrors: Counter<'operation_type'>;
  private readonly plegRelistDuration: Histogram;
  private readonly plegRelistInterval: Histogram;
  private readonly plegLastSeen: Gauge;
  private readonly startedPods: Counter;
  private readonly startedPodsErrors: Counter;
  private readonly startedContainers: Counter<'container_type'>;
  private readonly startedContainersErrors: Counter<'container_type' | 'code'>;
  private readonly probeTotal: Counter<'probe_type' | 'result' | 'container' | 'pod' | 'namespace' | 'pod_uid'>;
  private readonly probeDuration: Histogram<'probe_type' | 'container' | 'pod' | 'namespace'>;
  private readonly cgroupVersionGauge: Gauge;
  /** Registered once a runtime without RuntimeConfig is met, as kubelet 1.37 registers it then. */
  private criLosingSupportGauge?: Gauge<'version'>;

  constructor(nodeName: string, private readonly now: () => number) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    new Gauge({ name: 'kubelet_node_name', help: "The node's name. The count is always 1.", labelNames: ['node'], registers }).set({ node: nodeName }, 1);
    this.runningPods = new Gauge({ name: 'kubelet_running_pods', help: 'Number of pods that have a running pod sandbox', registers });
    this.runningContainers = new Gauge({ name: 'kubelet_running_containers', help: 'Number of containers currently running', labelNames: ['container_state'], registers });
    this.podStartDuration = new Histogram({
      name: 'kubelet_pod_start_duration_seconds',
      help: 'Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run',
      buckets: podStartupDurationBuckets,
      registers,
    });
    this.podStartSliDuration = new Histogram({
      name: 'kubelet_pod_start_sli_duration_seconds',
      help: 'Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch',
      labelNames: ['first_with_network'],
      buckets: podStartupDurationBuckets,
      registers,
    });
    this.podWorkerDuration = new Histogram({
      name: 'kubelet_pod_worker_duration_seconds',
      help: 'Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
      labelNames: ['operation_type'],
      buckets: defBuckets,
      registers,
    });
    this.runtimeOperations = new Counter({ name: 'kubelet_runtime_operations_total', help: 'Cumulative number of runtime operations by operation type.', labelNames: ['operation_type'], registers });
    this.runtimeOperationsDuration = new Histogram({
      name: 'kubelet_runtime_operations_duration_seconds',
      help: 'Duration in seconds of runtime operations. Broken down by operation type.',
      labelNames: ['operation_type'],
      buckets: exponentialBuckets(0.005, 2.5, 14),
      registers,
    });
    this.runtimeOperationsErrors = new Counter({
      name: 'kubelet_runtime_operations_errors_total',
      help: 'Cumulative number of runtime operation errors by operation type.',
      labelNames: ['operation_type'],
      registers,
    });
    this.plegRelistDuration = new Histogram({ name: 'kubelet_pleg_relist_duration_seconds', help: 'Duration in seconds for relisting pods in PLEG.', buckets: defBuckets, registers });
    this.plegRelistInterval = new Histogram({ name: 'kubelet_pleg_relist_interval_seconds', help: 'Interval in seconds between relisting in PLEG.', buckets: defBuckets, registers });
    this.plegLastSeen = new Gauge({ name: 'kubelet_pleg_last_seen_seconds', help: 'Timestamp in seconds when PLEG was last seen active.', registers });
    this.startedPods = new Counter({ name: 'kubelet_started_pods_total', help: 'Cumulative number of pods started', registers });
    this.startedPodsErrors = new Counter({ name: 'kubelet_started_pods_errors_total', help: 'Cumulative number of errors when starting pods', registers });
    this.startedContainers = new Counter({ name: 'kubelet_started_containers_total', help: 'Cumulative number of containers started', labelNames: ['container_type'], registers });
    this.startedContainersErrors = new Counter({
      name: 'kubelet_started_containers_errors_total',
      help: 'Cumulative number of errors when starting containers',
      labelNames: ['container_type', 'code'],
      registers,
    });
    // kubelet 1.37's cgroupVersionCheck sets it at start (pkg/kubelet/metrics CgroupVersion, pkg/kubelet/kubelet_linux.go).
    this.cgroupVersionGauge = new Gauge({ name: 'kubelet_cgroup_version', help: 'cgroup version on the hosts.', registers });
    const probeRegisters = [this.probeRegistry];
    this.probeTotal = new Counter({
      name: 'prober_probe_total',
      help: 'Cumulative number of a liveness, readiness or startup probe for a container by result.',
      labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
      registers: probeRegisters,
    });
    this.probeDuration = new Histogram({
      name: 'prober_probe_duration_seconds',
      help: 'Duration in seconds for a probe response.',
      labelNames: ['probe_type', 'container', 'pod', 'namespace'],
      buckets: defBuckets,
      registers: probeRegisters,
    });
  }

  runtimeOperation(operation: string, seconds: number, failed: boolean): void {
    this.runtimeOperations.inc({ operation_type: operation });
    this.runtimeOperationsDuration.observe({ operation_type: operation }, seconds);
    if (failed) this.runtimeOperationsErrors.inc({ operation_type: operation });
  }

  /** kubelet_cgroup_version: the host's cgroup version, as kubelet's start-up check sets it. */
  cgroupVersion(version: 1 | 2): void {
    this.cgroupVersionGauge.set(version);
  }

  /**
   * kubelet_cri_losing_support{version}: the runtime does not implement CRI RuntimeConfig, which kubelet `version`
   * requires (kubelet 1.37 registers the gauge and increments it when it falls back to its cgroupDriver).
   */
  criLosingSupport(version: string): void {
    this.criLosingSupportGauge ??= new Gauge({
      name: 'kubelet_cri_losing_support',
      help: 'the Kubernetes version that the currently running CRI implementation will lose support on if not upgraded.',
      labelNames: ['version'],
      registers: [this.registry],
    });
    this.criLosingSupportGauge.inc({ version });
  }

  relist(seconds: number, intervalSeconds: number | undefined): void {
    this.plegRelistDuration.observe(seconds);
    if (intervalSeconds !== undefined) this.plegRelistInterval.observe(intervalSeconds);
    this.plegLastSeen.set(this.now() / 1000);
  }

  runtimeCounts(runningPods: number, containers: Record<ContainerStateLabel, number>): void {
    this.runningPods.set(runningPods);
    for (const state of containerStates) this.runningContainers.set({ container_state: state }, containers[state]);
  }

  podWorkerSync(operation: PodWorkerOperation, seconds: number): void {
    this.podWorkerDuration.observe({ operation_type: operation }, seconds);
  }

  podStarted(secondsSinceFirstSeen: number): void {
    this.podStartDuration.observe(secondsSinceFirstSeen);
  }

  podStartSli(seconds: number, firstWithNetwork: boolean): void {
    this.podStartSliDuration.observe({ first_with_network: String(firstWithNetwork) }, seconds);
  }

  sandboxStarted(failed: boolean): void {
    this.startedPods.inc();
    if (failed) this.startedPodsErrors.inc();
  }

  containerStarted(type: ContainerTypeLabel): void {
    this.startedContainers.inc({ container_type: type });
  }

  containerStartFailed(type: ContainerTypeLabel, code: string): void {
    this.startedContainersErrors.inc({ container_type: type, code });
  }

  probeResult(target: ProbeMetricTarget, result: 'successful' | 'failed', seconds: number): void {
    const { probe_type, container, pod, namespace, pod_uid } = probeLabels(target);
    this.probeTotal.inc({ probe_type, result, container, pod, namespace, pod_uid });
    // As kubelet, the duration of successful runs only (a failed one may be a timeout).
    if (result === 'successful') this.probeDuration.observe({ probe_type, container, pod, namespace }, seconds);
  }

  probeWorkerStopped(target: ProbeMetricTarget): void {
    const { probe_type, container, pod, namespace, pod_uid } = probeLabels(target);
    for (const result of ['successful', 'failed', 'unknown']) this.probeTotal.remove({ probe_type, result, container, pod, namespace, pod_uid });
    this.probeDuration.remove({ probe_type, container, pod, namespace });
  }
}

function probeLabels(t: ProbeMetricTarget) {
  return { probe_type: probeTypeLabels[t.probeType], container: t.container, pod: t.pod, namespace: t.namespace, pod_uid: t.podUid };
}
