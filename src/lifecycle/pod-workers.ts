// Keeps one worker per pod UID in step with the desired pods and with what the relist finds in the runtime.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../core/log.js';
import { podNameLabel, podNamespaceLabel, podTerminationGracePeriodAnnotation, podUidLabel } from '../core/labels.js';
import { PodWorker, type PodWorkerDeps } from './pod-worker.js';
import { defaultTerminationGracePeriodSeconds, terminationGracePeriodSeconds } from '../execution/runtime-config.js';
import { podUidsOf, type NodeRuntimeSnapshot } from './runtime-observer.js';

export class PodWorkers {
  private readonly workers = new Map<string, PodWorker>();
  /** Until the pod source has spoken once, runtime pods without a worker may still be wanted: keep them. */
  private desiredKnown = false;
  private desired = new Map<string, V1Pod>();
  /**
   * Pods that ended (Succeeded or Failed) and are not deleted: stopped, their runtime objects and logs kept until the
   * pod is deleted (kubelet's ShouldPodContentBeRemoved is false for them). Once one leaves this set, the relist finds
   * its objects unknown and an orphan worker removes them.
   */
  private retained = new Map<string, V1Pod>();
  private readonly log: Logger;

  constructor(private readonly deps: PodWorkerDeps) {
    this.log = deps.log;
  }

  /**
   * The full set of pods this node should run (the pod sources' SET); others are terminated. Runtime pods nobody
   * wants are torn down only once every source has reported (`allSourcesReady`).
   */
  setDesiredPods(pods: V1Pod[], allSourcesReady = true, ended: V1Pod[] = []): void {
    this.desiredKnown ||= allSourcesReady;
    const wanted = new Map(pods.map((p) => [p.metadata!.uid!, p]));
    this.desired = wanted;
    const retained = new Map(ended.filter((p) => !wanted.has(p.metadata!.uid!)).map((p) => [p.metadata!.uid!, p]));
    for (const uid of this.retained.keys()) {
      if (!retained.has(uid) && !this.workers.has(uid)) this.deps.onPodChange?.(uid, undefined);
    }
    for (const [uid, pod] of retained) {
      if (!this.workers.has(uid) && this.retained.get(uid) !== pod) this.deps.onPodChange?.(uid, pod);
    }
    this.retained = retained;
    for (const [uid, worker] of this.workers) {
      if (!wanted.has(uid)) worker.terminate(undefined, retained.has(uid));
    }
    for (const pod of wanted.values()) {
      try {
        this.ensureWorker(pod);
      } catch (err) {
        // One pod nodelet cannot take on must not keep the others from their workers.
        this.log.error({ err, pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, podUid: pod.metadata?.uid }, 'Cannot start or update the pod worker');
      }
    }
  }

  /** Starts a pod's termination with this grace period (the pod was deleted); no-op for a pod without a worker. */
  terminatePod(uid: string, gracePeriodSeconds: number): void {
    this.workers.get(uid)?.terminate(gracePeriodSeconds);
  }

  /** Updates the pod's worker, or starts one; a pod wanted again while terminating restarts after it. */
  private ensureWorker(pod: V1Pod): void {
    const uid = pod.metadata!.uid!;
    const worker = this.workers.get(uid);
    if (worker) {
      if (worker.state === 'syncing') worker.update(pod);
      return;
    }
    this.start(
      new PodWorker(this.deps, pod, {
        uid,
        name: pod.metadata!.name!,
        namespace: pod.metadata!.namespace ?? 'default',
        gracePeriodSeconds: terminationGracePeriodSeconds(pod),
      }),
    );
  }

  /** Wakes the workers of pods whose runtime objects changed; terminates runtime pods nobody wants. */
  handleRelist(changed: Iterable<string>, snapshot: NodeRuntimeSnapshot): void {
    for (const uid of changed) this.workers.get(uid)?.wake();
    if (!this.desiredKnown) return;
    for (const uid of podUidsOf(snapshot)) {
      if (this.workers.has(uid)) continue;
      const sandbox = snapshot.sandboxes.find((s) => s.labels[podUidLabel] === uid);
      const container = snapshot.containers.find((c) => c.labels[podUidLabel] === uid);
      // An ended pod's content stays, stopped: only what still runs (an agent stopped between a container's exit and
      // the sandbox's stop) is stopped.
      const keepContent = this.retained.has(uid);
      if (keepContent && !runsAnything(snapshot, uid)) continue;
      const labels = sandbox?.labels ?? container?.labels ?? {};
      const grace = Number(container?.annotations[podTerminationGracePeriodAnnotation] ?? defaultTerminationGracePeriodSeconds);
      const identity = {
        uid,
        name: labels[podNameLabel] ?? '',
        namespace: labels[podNamespaceLabel] ?? '',
        gracePeriodSeconds: Number.isFinite(grace) ? grace : defaultTerminationGracePeriodSeconds,
      };
      this.log.info({ pod: `${identity.namespace}/${identity.name}`, podUid: uid }, 'Found a pod in the runtime that is not desired; terminating it');
      this.start(new PodWorker(this.deps, undefined, identity, keepContent));
    }
  }

  /** The pod source has reported its pods once: from now on, UIDs nobody claims are orphans. */
  get desiredPodsKnown(): boolean {
    return this.desiredKnown;
  }

  /**
   * Whether a pod UID is desired, has a worker or ended with its content kept; every UID counts as known until the pod
   * source has spoken.
   */
  isKnown(uid: string): boolean {
    return !this.desiredKnown || this.workers.has(uid) || this.desired.has(uid) || this.retained.has(uid);
  }

  /** Whether a pod has a worker: it runs, or is being stopped, and so holds the node's resources. */
  hasWorker(uid: string): boolean {
    return this.workers.has(uid);
  }

  /** These pods sync soon (e.g. a configMap or secret they read changed). */
  wakePods(uids: Iterable<string>): void {
    for (const uid of uids) this.workers.get(uid)?.wake();
  }

  /** Every worker syncs again (e.g. the runtime came back). */
  wakeAll(): void {
    for (const w of this.workers.values()) w.wake();
  }

  /** Desired pods with their current status, and the ended pods whose content is kept, as the API server has them. */
  pods(): V1Pod[] {
    const running = [...this.workers.values()].map((w) => w.apiPod()).filter((p): p is V1Pod => p !== undefined);
    return [...running, ...[...this.retained.values()].filter((p) => !this.workers.has(p.metadata!.uid!))];
  }

  /** Resolves when no pod is terminating any more. */
  async settled(): Promise<void> {
    await Promise.all([...this.workers.values()].filter((w) => w.state === 'terminating').map((w) => w.terminated));
  }

  /** Stops all workers without touching the runtime. */
  stop(): void {
    for (const w of this.workers.values()) w.stop();
  }

  private start(worker: PodWorker): void {
    this.workers.set(worker.uid, worker);
    this.deps.onPodChange?.(worker.uid, worker.apiPod());
    void worker.terminated.then(() => {
      if (this.workers.get(worker.uid) !== worker) return;
      this.workers.delete(worker.uid);
      this.deps.onPodChange?.(worker.uid, this.retained.get(worker.uid));
      const again = this.desired.get(worker.uid);
      if (again) this.ensureWorker(again);
    });
    worker.wake();
  }
}

/** Whether the relist saw something of the pod that a kill stops: a ready sandbox, a running (or unknown) container. */
function runsAnything(snapshot: NodeRuntimeSnapshot, uid: string): boolean {
  return (
    snapshot.sandboxes.some((s) => s.labels[podUidLabel] === uid && s.state === 'SANDBOX_READY') ||
    snapshot.containers.some((c) => c.labels[podUidLabel] === uid && (c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_UNKNOWN'))
  );
}
