// Keeps one worker per pod UID in step with the desired pods and with what the relist finds in the runtime.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../core/log.js';
import { podNameLabel, podNamespaceLabel, podTerminationGracePeriodAnnotation, podUidLabel } from '../execution/labels.js';
import { PodWorker, type PodWorkerDeps } from './pod-worker.js';
import { defaultTerminationGracePeriodSeconds, terminationGracePeriodSeconds } from '../execution/runtime-config.js';
import { podUidsOf, type NodeRuntimeSnapshot } from './runtime-observer.js';

export class PodWorkers {
  private readonly workers = new Map<string, PodWorker>();
  /** Until the pod source has spoken once, runtime pods without a worker may still be wanted: keep them. */
  private desiredKnown = false;
  private desired = new Map<string, V1Pod>();
  private readonly log: Logger;

  constructor(private readonly deps: PodWorkerDeps) {
    this.log = deps.log;
  }

  /**
   * The full set of pods this node should run (the pod sources' SET); others are terminated. Runtime pods nobody
   * wants are torn down only once every source has reported (`allSourcesReady`).
   */
  setDesiredPods(pods: V1Pod[], allSourcesReady = true): void {
    this.desiredKnown ||= allSourcesReady;
    const wanted = new Map(pods.map((p) => [p.metadata!.uid!, p]));
    this.desired = wanted;
    for (const [uid, worker] of this.workers) {
      if (!wanted.has(uid)) worker.terminate();
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
      const labels = sandbox?.labels ?? container?.labels ?? {};
      const grace = Number(container?.annotations[podTerminationGracePeriodAnnotation] ?? defaultTerminationGracePeriodSeconds);
      const identity = {
        uid,
        name: labels[podNameLabel] ?? '',
        namespace: labels[podNamespaceLabel] ?? '',
        gracePeriodSeconds: Number.isFinite(grace) ? grace : defaultTerminationGracePeriodSeconds,
      };
      this.log.info({ pod: `${identity.namespace}/${identity.name}`, podUid: uid }, 'Found a pod in the runtime that is not desired; terminating it');
      this.start(new PodWorker(this.deps, undefined, identity));
    }
  }

  /** The pod source has reported its pods once: from now on, UIDs nobody claims are orphans. */
  get desiredPodsKnown(): boolean {
    return this.desiredKnown;
  }

  /** Whether a pod UID is desired or has a worker; every UID counts as known until the pod source has spoken. */
  isKnown(uid: string): boolean {
    return !this.desiredKnown || this.workers.has(uid) || this.desired.has(uid);
  }

  /** These pods sync soon (e.g. a configMap or secret they read changed). */
  wakePods(uids: Iterable<string>): void {
    for (const uid of uids) this.workers.get(uid)?.wake();
  }

  /** Every worker syncs again (e.g. the runtime came back). */
  wakeAll(): void {
    for (const w of this.workers.values()) w.wake();
  }

  /** Desired pods with their current status. */
  pods(): V1Pod[] {
    return [...this.workers.values()].map((w) => w.apiPod()).filter((p): p is V1Pod => p !== undefined);
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
      this.deps.onPodChange?.(worker.uid, undefined);
      const again = this.desired.get(worker.uid);
      if (again) this.ensureWorker(again);
    });
    worker.wake();
  }
}
