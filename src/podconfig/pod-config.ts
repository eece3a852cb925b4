// The pod config: merges the static pods and the API's pods, admits new pods, and tells the workers, the status manager
// and the mirror pod manager what to do (kubelet's pod config + HandlePodAdditions/Removes + pod cleanup). Standalone it
// has only the file source, admits every pod and has no status manager or mirror pods.
import type { V1Node, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { compareStrings } from '../core/compare.js';
import { CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../core/config-annotations.js';
import type { EventRecorder } from '../core/events.js';
import type { Logger } from '../core/log.js';
import { admitPod, rejectedStatus, type AdmitResult } from './admission.js';
import type { AllocationManager } from './allocation.js';
import { podQOSClass } from '../decisions/qos.js';
import { defaultTerminationGracePeriodSeconds } from '../execution/runtime-config.js';
import { podUidsOf, type NodeRuntimeSnapshot } from '../lifecycle/runtime-observer.js';
import { isTerminalPhase } from '../controllers/pod-status-patch.js';

export type PodSourceName = 'file' | 'api';

/** What pod config drives in the pod workers. */
export interface DesiredPodsSink {
  /** `ended`: pods that ended (Succeeded or Failed) and are not deleted, whose stopped content stays until deletion. */
  setDesiredPods(pods: V1Pod[], allSourcesReady: boolean, ended: V1Pod[]): void;
  /** Starts a pod's termination with this grace period (deletion); no-op for a pod without a worker. */
  terminatePod(uid: string, gracePeriodSeconds: number): void;
  /** Whether a UID has a worker, is desired, or ended with its content kept. */
  isKnown(uid: string): boolean;
  /** Whether a UID has a worker (running or being stopped). */
  hasWorker(uid: string): boolean;
}

export interface PodStatusSink {
  setApiPods(pods: V1Pod[], mirrorPods: V1Pod[]): void;
  setStatus(pod: V1Pod, status: V1PodStatus, final?: boolean): void;
  podTerminated(pod: V1Pod): void;
  forget(uid: string): void;
}

export interface MirrorPodSink {
  sync(staticPods: V1Pod[], mirrorPods: V1Pod[]): void;
}

export interface PodConfigOptions {
  /** The sources whose first report is awaited before pods nobody wants are cleaned up. */
  sources: PodSourceName[];
  /**
   * The node as admission sees it (allocatable, labels, taints). Without it every pod is admitted (standalone): the
   * worker refuses what nodelet cannot run and reports it Failed on the status socket, where a rejected pod would vanish.
   */
  node?: () => V1Node;
  workers: DesiredPodsSink;
  /** Where pod statuses go (cluster mode's status manager); standalone the workers keep them for the status socket. */
  status?: PodStatusSink;
  mirrors?: MirrorPodSink;
  /** The pods' allocations and in-place resizes; without it pods run as their spec says and are never resized. */
  allocation?: AllocationManager;
  /** A rejected pod gets a Warning event with the admission's reason and message (kubelet's rejectPod). */
  events: EventRecorder;
  log: Logger;
  /** The wall clock of the API pods' config.seen annotation (default Date.now). */
  now?: () => number;
}

const uidOf = (p: V1Pod) => p.metadata!.uid!;
const nameOf = (p: V1Pod) => `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`;

/** The grace of a pod being deleted: min(spec.terminationGracePeriodSeconds, metadata.deletionGracePeriodSeconds). */
export function deletionGracePeriodSeconds(pod: V1Pod): number {
  const spec = pod.spec?.terminationGracePeriodSeconds ?? defaultTerminationGracePeriodSeconds;
  const deletion = pod.metadata?.deletionGracePeriodSeconds;
  return deletion === undefined || deletion === null ? spec : Math.min(spec, deletion);
}

function creationOrder(a: V1Pod, b: V1Pod): number {
  const ta = new Date(a.metadata?.creationTimestamp ?? 0).getTime();
  const tb = new Date(b.metadata?.creationTimestamp ?? 0).getTime();
  return ta - tb || compareStrings(nameOf(a), nameOf(b));
}

export class PodConfig {
  private staticPods: V1Pod[] = [];
  private apiPods: V1Pod[] = [];
  private mirrorPods: V1Pod[] = [];
  private readonly spoken = new Set<PodSourceName>();
  /** Pods admitted once stay admitted; rejected ones stay rejected (kubelet decides at a pod's first sight). */
  private readonly admitted = new Set<string>();
  private readonly rejected = new Set<string>();
  /** Pods whose termination was requested because the API marked them for deletion, with the grace asked for. */
  private readonly deleting = new Map<string, number>();
  /** Pods being deleted that were handed to the status manager for their final write and deletion. */
  private readonly finished = new Set<string>();
  /** UIDs in the runtime at the last relist made after the sources had spoken; undefined before such a relist. */
  private runtimeUids?: Set<string>;
  /** When each API pod was first seen (its config.seen), by UID. */
  private apiFirstSeen = new Map<string, string>();
  private readonly log: Logger;

  constructor(private readonly opts: PodConfigOptions) {
    this.log = opts.log;
  }

  get allSourcesReady(): boolean {
    return this.opts.sources.every((s) => this.spoken.has(s));
  }

  setStaticPods(pods: V1Pod[]): void {
    const gone = this.staticPods.filter((p) => !pods.some((q) => uidOf(q) === uidOf(p)));
    this.staticPods = pods;
    this.spoken.add('file');
    for (const p of gone) this.opts.status?.forget(uidOf(p));
    this.update();
  }

  setApiPods(pods: V1Pod[], mirrorPods: V1Pod[]): void {
    // As kubelet's pod config, the pods the workers run carry their source and first sight (config.source "api",
    // config.seen): the sandbox's annotations and a downwardAPI volume of the annotations show them.
    const seen = new Map<string, string>();
    this.apiPods = pods.map((p) => {
      const at = this.apiFirstSeen.get(uidOf(p)) ?? new Date((this.opts.now ?? Date.now)()).toISOString();
      seen.set(uidOf(p), at);
      return { ...p, metadata: { ...p.metadata, annotations: { ...p.metadata?.annotations, [CONFIG_SOURCE_ANNOTATION]: 'api', [CONFIG_SEEN_ANNOTATION]: at } } };
    });
    this.apiFirstSeen = seen;
    this.mirrorPods = mirrorPods;
    this.spoken.add('api');
    this.opts.status?.setApiPods(pods, mirrorPods);
    this.update();
  }

  /** A pod's status from its worker: only pods a source still has are reported. */
  podStatus(pod: V1Pod, status: V1PodStatus, final: boolean): void {
    const uid = uidOf(pod);
    if (!this.staticPods.some((p) => uidOf(p) === uid) && !this.apiPods.some((p) => uidOf(p) === uid)) return;
    if (this.rejected.has(uid)) return;
    this.opts.status?.setStatus(pod, status, final);
  }

  /** After each runtime relist (and the workers' handling of it): pods being deleted that are gone from the node are finished. */
  onRelist(snapshot: NodeRuntimeSnapshot): void {
    if (!this.allSourcesReady) return;
    // A deferred resize is retried as pods go (kubelet retries on removals and every 3 minutes).
    if (this.opts.allocation?.hasPending()) this.update();
    this.runtimeUids = podUidsOf(snapshot);
    this.finishDeletions();
  }

  private update(): void {
    const { workers, status, allocation } = this.opts;
    const all = [...this.staticPods, ...this.apiPods];
    const present = new Set(all.map(uidOf));
    for (const uid of [...this.admitted]) if (!present.has(uid)) this.admitted.delete(uid);
    for (const uid of [...this.rejected]) if (!present.has(uid)) this.rejected.delete(uid);
    for (const uid of [...this.deleting.keys()]) if (!present.has(uid)) this.deleting.delete(uid);
    for (const uid of [...this.finished]) if (!present.has(uid)) this.finished.delete(uid);

    // A pod the API already reports terminal, or marked for deletion, is not (or no longer) run.
    const ended = (p: V1Pod) => isTerminalPhase(p.status?.phase) || !!p.metadata?.deletionTimestamp;
    const active = () => all.filter((p) => this.admitted.has(uidOf(p)) && !ended(p));
    const fresh = all.filter((p) => !this.admitted.has(uidOf(p)) && !this.rejected.has(uidOf(p)) && !ended(p)).sort(creationOrder);
    if (fresh.length > 0) {
      const node = this.opts.node?.();
      // kubelet's filterOutInactivePods: a pod being deleted (or reported terminal) holds its resources until its
      // worker has stopped it.
      let running = all.filter((p) => this.admitted.has(uidOf(p)) && (!ended(p) || workers.hasWorker(uidOf(p))));
      for (const candidate of fresh) {
        // Admission counts a pod with what it was allocated (after a restart, the checkpoint's), others likewise.
        const pod = allocation?.allocatedPod(candidate) ?? candidate;
        const result: AdmitResult = node ? this.admit(pod, running.map((p) => allocation?.allocatedPod(p) ?? p), node) : { admit: true };
        if (result.admit) {
          this.admitted.add(uidOf(pod));
          allocation?.admitted(pod);
          running = [...running, pod];
          continue;
        }
        this.rejected.add(uidOf(pod));
        this.log.warn({ pod: nameOf(pod), podUid: uidOf(pod), reason: result.reason }, `Pod rejected by admission: ${result.message}`);
        this.opts.events.event({ pod }, 'Warning', result.reason, result.message);
        status?.setStatus(pod, { ...rejectedStatus(result, podQOSClass(pod)), startTime: pod.status?.startTime ?? new Date() });
      }
    }

    for (const p of this.apiPods) {
      if (!p.metadata?.deletionTimestamp) continue;
      const grace = deletionGracePeriodSeconds(p);
      // A second DELETE may only shorten the grace period; the worker then restarts its stop with the shorter one.
      if ((this.deleting.get(uidOf(p)) ?? Infinity) <= grace) continue;
      this.deleting.set(uidOf(p), grace);
      this.log.info({ pod: nameOf(p), podUid: uidOf(p), gracePeriodSeconds: grace }, 'Pod deleted in the API server; terminating it');
      workers.terminatePod(uidOf(p), grace);
    }
    const finished = this.apiPods.filter((p) => isTerminalPhase(p.status?.phase) && !p.metadata?.deletionTimestamp);
    let desired = active();
    if (allocation) {
      if (this.allSourcesReady) allocation.retain(present);
      allocation.handleResizes(desired, this.opts.node?.());
      desired = desired.map((p) => allocation.allocatedPod(p));
    }
    workers.setDesiredPods(desired, this.allSourcesReady, finished);
    this.resyncMirrors();
    this.finishDeletions();
  }

  /** admitPod, where a pod that makes it throw is that pod's rejection (kubelet's UnexpectedAdmissionError), not every pod's. */
  private admit(pod: V1Pod, running: V1Pod[], node: V1Node): AdmitResult {
    try {
      return admitPod(pod, running, node);
    } catch (err) {
      return { admit: false, reason: 'UnexpectedAdmissionError', message: `Admission failed unexpectedly: ${err instanceof Error ? err.message : String(err)}` };
    }
  }

  /** Mirror pods follow the static pods; orphaned ones are only known once every source has spoken. */
  resyncMirrors(): void {
    if (this.allSourcesReady) this.opts.mirrors?.sync(this.staticPods, this.mirrorPods);
  }

  /**
   * kubelet deletes a pod from the API once it is terminated on the node: no worker, nothing in the runtime (as of
   * a relist made after the sources had spoken). Pods deleted while the agent was down end here too.
   */
  private finishDeletions(): void {
    const runtime = this.runtimeUids;
    if (!runtime) return;
    for (const p of this.apiPods) {
      const uid = uidOf(p);
      if (!p.metadata?.deletionTimestamp || this.finished.has(uid) || this.opts.workers.isKnown(uid) || runtime.has(uid)) continue;
      this.finished.add(uid);
      this.opts.status?.podTerminated(p);
    }
  }
}
