// One pod's worker: serialises its syncs and walks it one way through syncing -> terminating -> terminated.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { isUnavailable } from '../cri/errors.js';
import type { Logger } from '../core/log.js';
import { computePodActions, isNoop, type PodActions } from '../decisions/compute-actions.js';
import { canonicalJson } from '../core/canonical-json.js';
import type { RuntimeObserver } from './runtime-observer.js';
import { handlerSupportsRecursiveReadOnly } from '../volume/recursive-read-only.js';
import type { PodRuntimeState } from '../core/runtime-state.js';
import { podLogDirectory, terminationGracePeriodSeconds } from '../execution/runtime-config.js';
import { derivePodStatus, readinessGatesChangeReady, type WaitingReason } from '../decisions/status.js';
import type { StepResult } from '../core/sync-result.js';
import { collectPodGarbage, crashBackoffKey, executePodActions, recordMountFailures, terminatePod, type SyncDeps } from '../execution/sync-pod.js';
import { unsupportedPodFields } from '../decisions/unsupported.js';
import { forbiddenSysctls } from '../decisions/sysctl-admission.js';
import { activeDeadline, deadlineExceeded } from '../decisions/active-deadline.js';
import type { PodProber } from '../prober/manager.js';
import type { PodWorkerOperation } from '../core/metrics.js';
import type { PodStartupLatencyTracker } from '../execution/pod-startup-latency.js';
import { allocationOf, resizeEventMessage, resizeInProgress } from '../decisions/resize.js';
import type { ResizeConditions } from './resize-conditions.js';
import type { PodCgroupConfig } from '../host/cgroups.js';
import { featureGatesOf } from '../core/kube-minor.js';
import { podCgroupParent } from '../execution/resources.js';

export interface PodWorkerDeps extends SyncDeps {
  observer: RuntimeObserver;
  runtimeName: () => string;
  /** How often a pod is synced with nothing to wake it (kubelet's syncFrequency). */
  resyncIntervalMs: number;
  /** How soon a failed sync is retried. */
  errorRetryMs: number;
  log: Logger;
  /** Runs the pods' probes; its results decide restarts (liveness, startup) and readiness. */
  prober: PodProber;
  /** Receives every status derived for a pod; `final` once its containers are stopped for good (cluster mode writes it to the API). */
  onStatus?: (pod: V1Pod, status: V1PodStatus, final: boolean) => void;
  /** Told every change of a pod as `apiPod()` shows it, undefined once its worker is gone (the status socket's watch). */
  onPodChange?: (uid: string, pod: V1Pod | undefined) => void;
  /** kubelet's runtimeState.networkErrors: why the pod network is not ready, undefined when it is. */
  networkNotReady?: () => string | undefined;
  /** The pods' PodResizePending / PodResizeInProgress conditions (with `resize`: in-place resizes). */
  resizeConditions?: ResizeConditions;
  /** The pod startup SLI's image pull windows (the image manager records them). */
  startupLatency?: Pick<PodStartupLatencyTracker, 'podStarted' | 'forget'>;
}

/** Every container of the pod has started (kubelet's test before it observes the pod startup SLI). */
function allContainersStarted(pod: V1Pod, status: V1PodStatus): boolean {
  const statuses = status.containerStatuses ?? [];
  return (pod.spec?.containers ?? []).every((c) => statuses.find((s) => s.name === c.name)?.state?.running !== undefined);
}

/**
 * kubelet's podsDifferSemantically: only the spec, labels, annotations and deletion mark make a pod worth a sync. Its
 * status and resourceVersion change with every status write (echoed back by the watch) and must not wake the worker.
 */
export function podsDifferSemantically(a: V1Pod, b: V1Pod): boolean {
  const semantic = (p: V1Pod) =>
    canonicalJson({
      spec: p.spec,
      labels: p.metadata?.labels ?? {},
      annotations: p.metadata?.annotations ?? {},
      deletionTimestamp: p.metadata?.deletionTimestamp,
      deletionGracePeriodSeconds: p.metadata?.deletionGracePeriodSeconds,
    });
  return semantic(a) !== semantic(b);
}

export type PodLifecycle = 'syncing' | 'terminating' | 'terminated';

/** What a worker knows of a pod it has no spec for (found in the runtime, or removed). */
export interface PodIdentity {
  uid: string;
  name: string;
  namespace: string;
  gracePeriodSeconds: number;
}

export class PodWorker {
  private lifecycle: PodLifecycle;
  private status?: V1PodStatus;
  private readonly reasons = new Map<string, WaitingReason>();
  /** Containers the last sync found in back-off, with the back-off's end: kubelet shows a back-off from the sync after. */
  private readonly backoffsSeen = new Map<string, number>();
  private timer?: unknown;
  private inFlight?: AbortController;
  private running = false;
  private pending = false;
  private resolveTerminated!: () => void;
  /** Resolves once the pod is gone from the runtime. */
  readonly terminated = new Promise<void>((resolve) => (this.resolveTerminated = resolve));
  private readonly log: Logger;
  private warnedUnsupported = false;
  /** Why the last sync refused to run the pod (unsupported, forbidden sysctls, past its deadline): the final status keeps it. */
  private rejection: WaitingReason | undefined;
  /** The termination under way keeps the pod's runtime objects and logs (it ended and is not deleted). */
  private keepContent = false;
  /** The network was not ready at the last sync (logged once per wait). */
  private waitingForNetwork = false;
  /** The pod cgroup's cpu and memory read at the last sync of a pod the API server has Running (status.resources). */
  private podCgroup: PodCgroupConfig | undefined;
  /** Whether a sync has observed the runtime for this pod yet (the first may skip it: see observeNewPod). */
  private synced = false;
  /** kubelet's sync type of the next sync, for kubelet_pod_worker_duration_seconds. */
  private nextOperation: PodWorkerOperation = 'create';
  /** When this worker first saw the pod (kubelet's firstSeenTime). */
  private readonly firstSeen: number;
  /** The startup SLI is settled: observed, or the pod was already running when first seen (adopted). */
  private startupObserved = false;

  constructor(
    private readonly deps: PodWorkerDeps,
    private pod: V1Pod | undefined,
    private readonly identity: PodIdentity,
    /** For a pod known only from the runtime: whether its termination keeps its content (see terminate). */
    keepContent = false,
  ) {
    this.lifecycle = pod ? 'syncing' : 'terminating';
    this.keepContent = !pod && keepContent;
    if (!pod) this.nextOperation = 'kill';
    this.firstSeen = deps.clock.now();
    this.log = deps.log.child({ pod: `${identity.namespace}/${identity.name}`, podUid: identity.uid });
  }

  get uid(): string {
    return this.identity.uid;
  }

  get state(): PodLifecycle {
    return this.lifecycle;
  }

  /** The pod with its latest derived status; undefined for a pod known only from the runtime. */
  apiPod(): V1Pod | undefined {
    return this.pod ? { ...this.pod, status: this.status ?? { phase: 'Pending' } } : undefined;
  }

  /** A new desired spec for the same UID; the latest one wins. */
  update(pod: V1Pod): void {
    if (this.lifecycle !== 'syncing' || this.pod === pod) return;
    // As kubelet's HandlePodReconcile: a readiness gate's condition set by another controller may change Ready.
    const changed = !this.pod || podsDifferSemantically(this.pod, pod) || readinessGatesChangeReady(pod, this.status);
    this.pod = pod;
    this.deps.onPodChange?.(this.uid, this.apiPod());
    if (changed) {
      if (this.nextOperation === 'sync') this.nextOperation = 'update';
      this.wake();
    }
  }

  /**
   * Starts termination: an in-flight sync is cancelled, then the pod is torn down with the grace period. `keepContent`
   * (a pod that ended and is not deleted) stops it but leaves its runtime objects and logs for later removal.
   */
  terminate(gracePeriodSeconds?: number, keepContent = false): void {
    if (this.lifecycle === 'terminating' && gracePeriodSeconds !== undefined && gracePeriodSeconds < this.identity.gracePeriodSeconds) {
      // As kubelet's pod workers: the grace period only decreases; a shorter one cancels the stop under way, which
      // starts again with it.
      this.identity.gracePeriodSeconds = gracePeriodSeconds;
      this.inFlight?.abort(new Error('termination grace period shortened'));
      this.wake();
      return;
    }
    if (this.lifecycle !== 'syncing') return;
    this.lifecycle = 'terminating';
    this.keepContent = keepContent;
    this.nextOperation = 'kill';
    this.deps.startupLatency?.forget(this.uid);
    this.deps.prober.removePod(this.uid);
    if (gracePeriodSeconds !== undefined) this.identity.gracePeriodSeconds = gracePeriodSeconds;
    else if (this.pod) this.identity.gracePeriodSeconds = terminationGracePeriodSeconds(this.pod);
    this.inFlight?.abort(new Error('pod is terminating'));
    this.wake();
  }

  /** Something may have changed (relist, timer, runtime back): sync soon. */
  wake(): void {
    this.pending = true;
    if (!this.running) void this.loop();
  }

  /** Stops work without touching the runtime (agent shutdown: pods keep running). */
  stop(): void {
    this.deps.clock.clearTimeout(this.timer);
    this.inFlight?.abort(new Error('agent is stopping'));
    this.pending = false;
    this.deps.prober.removePod(this.uid);
  }

  private schedule(delayMs: number): void {
    this.deps.clock.clearTimeout(this.timer);
    this.timer = this.deps.clock.setTimeout(() => this.wake(), delayMs);
  }

  private async loop(): Promise<void> {
    this.running = true;
    while (this.pending && this.lifecycle !== 'terminated') {
      this.pending = false;
      const controller = new AbortController();
      this.inFlight = controller;
      const operation = this.nextOperation;
      const started = this.deps.clock.now();
      try {
        if (this.lifecycle === 'terminating') await this.syncTerminating(controller.signal);
        else await this.syncPod(controller.signal);
        this.deps.metrics?.podWorkerSync(operation, (this.deps.clock.now() - started) / 1000);
        if (operation !== 'kill') this.nextOperation = 'sync';
      } catch (err) {
        if (!controller.signal.aborted) {
          // An unreachable runtime is reported once by the relist, not by every pod every retry.
          if (isUnavailable(err)) this.log.debug({ err }, 'Pod sync waits for the container runtime');
          else this.log.warn({ err, lifecycle: this.lifecycle }, 'Pod sync failed; will retry');
          this.schedule(this.deps.errorRetryMs);
        }
      } finally {
        this.inFlight = undefined;
      }
    }
    this.running = false;
  }

  private async syncTerminating(signal: AbortSignal): Promise<void> {
    const state = await this.deps.observer.observePod(this.uid, signal);
    const { name, namespace, uid, gracePeriodSeconds } = this.identity;
    const logDir = podLogDirectory(this.deps.node.podLogsDir, { metadata: { name, namespace, uid } });
    const pod = this.pod ?? { metadata: { name, namespace, uid } };
    await terminatePod(this.deps, pod, state, gracePeriodSeconds, logDir, this.log, signal, this.finalStatusReader(signal), this.keepContent);
    this.deps.crashBackoff.forgetPrefix(`${uid}/`);
    this.deps.apiObjects?.unregisterPod(uid);
    this.deps.resize?.actuated.remove(uid);
    this.lifecycle = 'terminated';
    this.deps.clock.clearTimeout(this.timer);
    this.log.info(this.keepContent ? 'Pod terminated; its stopped containers and logs are kept until it is deleted' : 'Pod terminated and removed from the runtime');
    this.resolveTerminated();
  }

  private async syncPod(signal: AbortSignal): Promise<void> {
    const pod = this.pod!;
    let state = this.synced ? await this.deps.observer.observePod(this.uid, signal) : await this.deps.observer.observeNewPod(this.uid, signal);
    this.synced = true;
    const now = this.deps.clock.now();
    const deadline = activeDeadline(pod, this.status?.startTime ?? pod.status?.startTime, now);
    const rejection = unsupportedPodFields(pod) ?? forbiddenSysctls(pod) ??
      (deadline.exceeded ? deadlineExceeded : undefined);
    // Its configMaps and secrets are watched while it runs (kubelet's RegisterPod); the same spec again is a no-op.
    if (!rejection) this.deps.apiObjects?.registerPod(pod);
    let nextWake = this.deps.resyncIntervalMs;
    // Synced again when the deadline comes, as kubelet's sync loop asks its activeDeadlineHandler every second.
    if (!deadline.exceeded && deadline.remainingMs !== undefined) nextWake = Math.min(nextWake, deadline.remainingMs);
    this.rejection = rejection;
    if (rejection) {
      if (!this.warnedUnsupported) {
        this.log.warn({ reason: rejection.reason }, rejection.message);
        // kubelet's activeDeadlineHandler records its eviction as a Normal event; refusals are warnings.
        this.deps.events.event({ pod }, rejection === deadlineExceeded ? 'Normal' : 'Warning', rejection.reason, rejection.message);
      }
      this.warnedUnsupported = true;
    } else {
      const actuated = this.deps.resize?.actuated;
      // kubelet's InitializeActuatedPod: a pod first synced (or first since the checkpoint existed) runs what it was allocated.
      if (actuated && !actuated.has(this.uid)) actuated.set(this.uid, allocationOf(pod));
      const actions = computePodActions(pod, state, {
        now,
        backoffPolicy: this.deps.crashBackoff.policy,
        crashBackoff: (name) => this.deps.crashBackoff.get(crashBackoffKey(pod, name)),
        liveness: (id) => this.deps.prober.result('liveness', id),
        startup: (id) => this.deps.prober.result('startup', id),
        ...(actuated ? { actuated: (name: string) => actuated.container(this.uid, name) } : {}),
      });
      let results: StepResult[] = [];
      // kubelet's SyncPod: while the network is not ready only host-network pods get anything started.
      const networkError = isNoop(actions) || pod.spec?.hostNetwork ? undefined : this.deps.networkNotReady?.();
      if (networkError) {
        const message = `network is not ready: ${networkError}`;
        if (!this.waitingForNetwork) this.log.warn(message);
        this.waitingForNetwork = true;
        this.deps.events.event({ pod }, 'Warning', 'NetworkNotReady', message);
        this.setStatus(this.deriveStatus(pod, state));
        nextWake = Math.min(nextWake, this.deps.errorRetryMs);
      } else if (!isNoop(actions)) {
        this.waitingForNetwork = false;
        // As kubelet's SyncPod, the status as observed goes out before the actions run: a slow pull or start shows
        // ContainerCreating / PodInitializing meanwhile, not a bare Pending.
        this.setStatus(this.deriveStatus(pod, state));
        results = await executePodActions(this.deps, pod, actions, state, this.log, signal);
        const started = results.flatMap((r) => (r.containerId ? [r.containerId] : []));
        state = await this.deps.observer.observePod(this.uid, signal, started);
      } else if (state.containers.some((c) => c.state === 'running')) {
        // downwardAPI, configMap, secret and projected files follow their sources (labels, API objects, token
        // rotation): every sync refreshes them, as kubelet's remount.
        await this.deps.volumes.setUp(pod, this.log, signal).catch((err: unknown) => {
          this.log.warn({ err }, 'Failed to refresh pod volumes');
          recordMountFailures(this.deps, pod, err);
        });
      }
      this.recordReasons(pod, actions, results);
      this.recordResize(pod, state, results);
      this.podCgroup = pod.status?.phase === 'Running' ? await this.deps.podCgroups?.readPod(podCgroupParent(pod, this.deps.node.cgroupRoot)) : undefined;
      await collectPodGarbage(this.deps, pod, state, this.log, signal);
      for (const b of actions.containersInBackoff) nextWake = Math.min(nextWake, b.retryAt - now);
      if (results.some((r) => r.error)) nextWake = Math.min(nextWake, this.deps.errorRetryMs);
    }
    // A sync cancelled by termination must not bring back the probe workers termination stopped.
    if (!signal.aborted && !rejection) this.deps.prober.update(pod, state, () => this.wake());
    this.setStatus(this.deriveStatus(pod, state, rejection));
    // As kubelet's syncPod, a pod past its active deadline is stopped, not only reported Failed (its stopped containers
    // and logs stay, as for any pod that ended); a static pod too, which no API server status would stop.
    if (rejection === deadlineExceeded) this.terminate(undefined, true);
    else this.schedule(nextWake);
  }

  /** kubelet's reason cache: a container's last start failure or back-off, cleared by a successful start. */
  private recordReasons(pod: V1Pod, actions: PodActions, results: StepResult[]): void {
    for (const r of results) {
      if (r.action !== 'StartContainer') continue;
      if (r.error) this.reasons.set(r.target, { reason: r.error.code, message: r.error.message });
      else this.reasons.delete(r.target);
    }
    const m = pod.metadata ?? {};
    const seen = new Map(this.backoffsSeen);
    this.backoffsSeen.clear();
    for (const b of actions.containersInBackoff) {
      this.deps.events.event({ pod, containerName: b.name }, 'Warning', 'BackOff', `Back-off restarting failed container ${b.name} in pod ${m.name}_${m.namespace}(${m.uid})`);
      this.backoffsSeen.set(b.name, b.retryAt);
      // kubelet 1.37 reads its reason cache at the start of a sync and requeues a pod in back-off when the back-off ends
      // (at most a resync later): the sync that finds the back-off leaves the container terminated in the status, and
      // CrashLoopBackOff shows from the next sync within the same back-off (one longer than the resync interval).
      if (seen.get(b.name) !== b.retryAt) continue;
      this.reasons.set(b.name, {
        reason: 'CrashLoopBackOff',
        message: `back-off ${Math.round(b.durationMs / 1000)}s restarting failed container=${b.name} pod=${m.name}_${m.namespace}(${m.uid})`,
      });
    }
  }

  /**
   * kubelet's PodResizeInProgress after a sync: Error (with a ResizeError event) when the resize failed, kept while a
   * running container's applied resources differ from its allocation, cleared (ResizeCompleted) once they match.
   */
  private recordResize(pod: V1Pod, state: PodRuntimeState, results: StepResult[]): void {
    const conditions = this.deps.resizeConditions;
    const actuated = this.deps.resize?.actuated;
    if (!conditions || !actuated) return;
    const generation = pod.metadata?.generation ?? 0;
    const failed = results.find((r) => r.action === 'ResizePodInPlace' && r.error);
    if (failed) {
      const set = conditions.setInProgress(this.uid, 'Error', failed.error!.message, generation);
      if (set.changed) this.deps.events.event({ pod }, 'Warning', 'ResizeError', resizeEventMessage('Pod resize error', pod, set.generation, failed.error!.message));
      return;
    }
    const running = (name: string) => state.containers.some((c) => c.name === name && c.state === 'running');
    if (resizeInProgress(pod, running, (name) => actuated.container(this.uid, name))) {
      conditions.setInProgress(this.uid, '', '', generation);
      return;
    }
    const cleared = conditions.clearInProgress(this.uid);
    if (cleared !== undefined) {
      this.log.info({ generation: cleared }, 'Pod resize completed');
      this.deps.events.event({ pod }, 'Normal', 'ResizeCompleted', resizeEventMessage('Pod resize completed', pod, cleared));
    }
  }

  private deriveStatus(pod: V1Pod, state: PodRuntimeState, rejection?: WaitingReason): V1PodStatus {
    const actuated = this.deps.resize?.actuated;
    return derivePodStatus({
      pod,
      state,
      waitingReasons: this.reasons,
      hostIP: this.deps.hostIP(),
      runtimeName: this.deps.runtimeName(),
      recursiveReadOnlyMounts: handlerSupportsRecursiveReadOnly(this.deps.runtimeHandlers?.()),
      previous: this.status,
      now: new Date(this.deps.clock.now()),
      rejection,
      readiness: (id) => this.deps.prober.result('readiness', id),
      startup: (id) => this.deps.prober.result('startup', id),
      ...(actuated ? { actuated: (name: string) => actuated.container(this.uid, name) } : {}),
      ...(this.deps.resizeConditions ? { resizeConditions: this.deps.resizeConditions.list(this.uid) } : {}),
      ...(this.podCgroup ? { podCgroup: this.podCgroup } : {}),
      featureGates: featureGatesOf(this.deps.kubeMinor),
    });
  }

  /**
   * kubelet's pod start metrics: the first time a pod this worker saw pending runs (since first seen), and the first
   * time all its containers run (the startup SLI). A pod already running when first seen (adopted) counts for neither.
   */
  private recordStartup(pod: V1Pod, before: V1PodStatus | undefined, status: V1PodStatus): void {
    const now = this.deps.clock.now();
    if (before && before.phase !== 'Running' && status.phase === 'Running') this.deps.metrics?.podStarted((now - this.firstSeen) / 1000);
    if (this.startupObserved || !allContainersStarted(pod, status)) return;
    this.startupObserved = true;
    if (!before) return;
    const sli = this.deps.startupLatency?.podStarted(pod, now);
    if (sli) this.deps.metrics?.podStartSli(sli.seconds, sli.firstWithNetwork);
  }

  /** The final status shows how the containers ended: read after they stopped, before they are removed. */
  private finalStatusReader(signal: AbortSignal): (() => Promise<void>) | undefined {
    const pod = this.pod;
    const onStatus = this.deps.onStatus;
    if (!pod || !onStatus) return undefined;
    return async () => onStatus(pod, this.deriveStatus(pod, await this.deps.observer.observePod(this.uid, signal), this.rejection), true);
  }

  private setStatus(status: V1PodStatus): void {
    const before = this.status;
    this.status = status;
    if (this.pod && this.lifecycle === 'syncing') this.recordStartup(this.pod, before, status);
    this.deps.onPodChange?.(this.uid, this.apiPod());
    if (this.pod) this.deps.onStatus?.(this.pod, status, false);
    if (before?.phase !== status.phase) this.log.info({ phase: status.phase, podIP: status.podIP }, 'Pod phase changed');
  }
}
