// Keeps a probe worker per container and probe type of every pod in step with its spec and observed containers; serves results.
import { isRestartableInitContainer } from '../decisions/init-containers.js';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { canonicalJson } from '../core/canonical-json.js';
import type { EventRecorder } from '../core/events.js';
import type { RuntimeService } from '../cri/types.js';
import type { Logger } from '../core/log.js';
import type { NodeMetrics, ProbeMetricTarget } from '../core/metrics.js';
import { shouldContainerBeRestarted } from '../decisions/compute-actions.js';
import { latestContainer, type PodRuntimeState } from '../core/runtime-state.js';
import { systemClock, type Clock } from '../core/clock.js';
import type { ProbeResult, ProbeType } from '../core/probe-results.js';
import { probeField, probeOf, probeSettings, probeTypes } from './probe-spec.js';
import { ProbeResultStore } from './results.js';
import { runProbe } from './run-probe.js';
import { probeUserAgent } from './http-probe.js';
import type { KubeMinor } from '../core/kube-minor.js';
import { ProbeWorker } from './worker.js';

/** What the pod lifecycle uses of the prober. */
export interface PodProber {
  /**
   * After each sync of a pod: its spec and freshly observed runtime state. Starts and stops the
   * pod's workers to match the spec; `wake` is called whenever a result of the pod changes.
   */
  update(pod: V1Pod, state: PodRuntimeState, wake: () => void): void;
  /** Stops every worker of the pod and drops its results (termination, agent shutdown). */
  removePod(uid: string): void;
  result(type: ProbeType, containerId: string): ProbeResult | undefined;
}

export interface ProbeManagerDeps {
  runtime: Pick<RuntimeService, 'execSync'>;
  /** The node's IP: the pod IP of host-network pods. */
  hostIP: () => string;
  /** Every address of this host: with loopback and the pod's IPs, what a probe may reach. */
  hostIPs: () => string[];
  /** The node's pod network subnets (a handler may name another pod of this node as its host); none when absent. */
  podSubnets?: () => string[];
  log: Logger;
  /** Where Unhealthy and ProbeWarning events go; without it probe failures are only logged. */
  events?: EventRecorder;
  clock?: Clock;
  random?: () => number;
  /** The Kubernetes minor the node serves: the probes' User-Agent names it. */
  kubeMinor: KubeMinor;
  /** kubelet's prober metrics (/metrics/probes); without it nothing is recorded. */
  metrics?: Pick<NodeMetrics, 'probeResult' | 'probeWorkerStopped'>;
}

interface WorkerEntry {
  worker: ProbeWorker;
  /** What the worker was built from; a change replaces the worker. */
  source: string;
}

interface PodEntry {
  pod: V1Pod;
  state: PodRuntimeState;
  podIPs: string[];
  wake: () => void;
  /** By `<container>/<probe type>`. */
  workers: Map<string, WorkerEntry>;
}

/** Every spec container has finished and none will run again: kubelet's workers end with the pod's terminal phase. */
function podFinished(pod: V1Pod, state: PodRuntimeState): boolean {
  const restartPolicy = pod.spec?.restartPolicy ?? 'Always';
  return (pod.spec?.containers ?? []).every((c) => {
    const latest = latestContainer(state, c.name);
    return latest?.state === 'exited' && !shouldContainerBeRestarted(latest, restartPolicy);
  });
}

/** The containers kubelet probes: regular containers and sidecars (init containers with restartPolicy Always). */
function probedContainers(pod: V1Pod): { container: V1Container; field: string }[] {
  return [
    ...(pod.spec?.initContainers ?? []).flatMap((container, i) => (isRestartableInitContainer(container) ? [{ container, field: `spec.initContainers[${i}]` }] : [])),
    ...(pod.spec?.containers ?? []).map((container, i) => ({ container, field: `spec.containers[${i}]` })),
  ];
}

export class ProbeManager implements PodProber {
  private readonly pods = new Map<string, PodEntry>();
  private readonly results = new ProbeResultStore();
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly startedAt: number;

  constructor(private readonly deps: ProbeManagerDeps) {
    this.clock = deps.clock ?? systemClock;
    this.random = deps.random ?? Math.random;
    this.startedAt = this.clock.now();
  }

  result(type: ProbeType, containerId: string): ProbeResult | undefined {
    return this.results.get(type, containerId);
  }

  update(pod: V1Pod, state: PodRuntimeState, wake: () => void): void {
    const uid = pod.metadata?.uid ?? '';
    const podIPs = pod.spec?.hostNetwork ? [this.deps.hostIP()].filter(Boolean) : (state.sandboxes[0]?.ips ?? []);
    let entry = this.pods.get(uid);
    if (!entry) this.pods.set(uid, (entry = { pod, state, podIPs, wake, workers: new Map() }));
    Object.assign(entry, { pod, state, podIPs, wake });

    const wanted = new Map<string, { container: V1Container; field: string; type: ProbeType; source: string }>();
    if (!podFinished(pod, state)) {
      for (const { container, field } of probedContainers(pod)) {
        for (const type of probeTypes) {
          const probe = probeOf(container, type);
          if (!probe) continue;
          // The worker reads its container (ports, env, other probes) and the restart policy.
          const source = canonicalJson({ container, restartPolicy: pod.spec?.restartPolicy });
          wanted.set(`${container.name}/${type}`, { container, field, type, source });
        }
      }
    }
    for (const [key, w] of entry.workers) {
      if (wanted.get(key)?.source === w.source) continue;
      w.worker.stop();
      entry.workers.delete(key);
    }
    for (const [key, want] of wanted) {
      if (!entry.workers.has(key)) entry.workers.set(key, { worker: this.startWorker(entry, want.container, want.field, want.type), source: want.source });
    }
    this.triggerReadiness(entry);
  }

  removePod(uid: string): void {
    const entry = this.pods.get(uid);
    if (!entry) return;
    for (const w of entry.workers.values()) w.worker.stop();
    this.pods.delete(uid);
  }

  /**
   * As kubelet's UpdatePodStatus: a started, running container whose readiness has not succeeded
   * gets its readiness probe run now rather than at the next tick.
   */
  private triggerReadiness(entry: PodEntry): void {
    for (const { container } of probedContainers(entry.pod)) {
      const w = entry.workers.get(`${container.name}/readiness`);
      const latest = latestContainer(entry.state, container.name);
      if (!w || latest?.state !== 'running') continue;
      if (!this.isStarted(container, latest.id) || this.results.get('readiness', latest.id) === 'success') continue;
      w.worker.trigger();
    }
  }

  private isStarted(container: V1Container, containerId: string): boolean {
    return !container.startupProbe || this.results.get('startup', containerId) === 'success';
  }

  private startWorker(entry: PodEntry, container: V1Container, containerField: string, type: ProbeType): ProbeWorker {
    const probe = probeOf(container, type)!;
    const settings = probeSettings(probe);
    const field = probeField(containerField, type);
    const m = entry.pod.metadata ?? {};
    const log = this.deps.log.child({ pod: `${m.namespace}/${m.name}`, podUid: m.uid, container: container.name, probeType: type });
    const metricTarget: ProbeMetricTarget = { probeType: type, container: container.name, pod: m.name ?? '', namespace: m.namespace ?? '', podUid: m.uid ?? '' };
    const metrics = this.deps.metrics;
    const worker = new ProbeWorker(
      type,
      settings,
      {
        target: () => {
          const c = latestContainer(entry.state, container.name);
          return c && { containerId: c.id, state: c.state, ...(c.startedAt !== undefined ? { startedAt: c.startedAt } : {}) };
        },
        started: (id) => this.isStarted(container, id),
        restartPolicy: () => entry.pod.spec?.restartPolicy ?? 'Always',
        publish: (id, result) => {
          if (this.results.set(type, id, result)) entry.wake();
        },
        forget: (id) => this.results.remove(type, id),
        warningEvent: (reason, message) => this.deps.events?.event({ pod: entry.pod, containerName: container.name }, 'Warning', reason, message),
        ...(metrics
          ? { recordResult: (result, seconds) => metrics.probeResult(metricTarget, result, seconds), stopped: () => metrics.probeWorkerStopped(metricTarget) }
          : {}),
        run: (id, signal) =>
          runProbe(probe, { container, containerId: id, field, podIPs: entry.podIPs, hostIPs: this.deps.hostIPs(), podSubnets: this.deps.podSubnets?.() ?? [], runtime: this.deps.runtime, userAgent: probeUserAgent('probe', this.deps.kubeMinor), signal }),
      },
      this.clock,
      log,
    );
    // Right after the agent starts, workers of adopted pods would all probe at once: spread them over a period.
    const periodMs = settings.periodSeconds * 1000;
    worker.start(this.clock.now() - this.startedAt < periodMs ? this.random() * periodMs : 0);
    return worker;
  }
}
