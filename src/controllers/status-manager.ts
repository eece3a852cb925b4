// Status manager: writes the pods' statuses to the API server (PATCH pods/<name>/status with a UID precondition), coalesced
// per pod, and deletes a terminated pod that was being deleted (grace 0, UID precondition), as kubelet's status manager.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { KubeClient } from '../kubeapi/client.js';
import { isConflict, isNotFound, strategicMergePatch } from '../kubeapi/client.js';
import type { Logger } from '../core/log.js';
import { isStaticPod } from '../core/config-annotations.js';
import { mergePodStatus, podStatusPatch, refuseStatusUpdate, sameStatus, terminalPodStatus } from './pod-status-patch.js';
import { systemClock, type Clock } from '../core/clock.js';

export type StatusClient = Pick<KubeClient, 'request'>;

export interface StatusManagerOptions {
  client: StatusClient;
  log: Logger;
  /** Delay before retrying a failed write; doubles per failure up to 16 times this. */
  retryMs?: number;
  /** Times the retries. */
  clock?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
}

interface Entry {
  /** The pod as its source gave it (API pod, or static pod whose status goes to its mirror pod). */
  pod: V1Pod;
  /** The latest status the node derived; the latest one wins. */
  status?: V1PodStatus;
  /** The pod is terminated on the node: its status is final (terminal phase for API pods). */
  final: boolean;
  /** The pod is being deleted in the API and is terminated here: delete it once the final status is written. */
  deleteWhenFinal: boolean;
  running: boolean;
  dirty: boolean;
  failures: number;
  retryTimer?: unknown;
}

const podPath = (ns: string, name: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(name)}`;
const key = (ns: string | undefined, name: string | undefined) => `${ns ?? 'default'}/${name ?? ''}`;

export class StatusManager {
  private readonly entries = new Map<string, Entry>();
  /** The API server's pods (from the watch, refreshed by our own writes' responses), by UID. */
  private apiPods = new Map<string, V1Pod>();
  /** Mirror pods by namespace/name: where static pods' statuses go. */
  private mirrors = new Map<string, V1Pod>();
  /** Cancels the writes in flight when the agent stops. */
  private readonly stopping = new AbortController();
  private writes = 0;
  private readonly retryMs: number;
  private readonly clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  private readonly log: Logger;

  constructor(private readonly opts: StatusManagerOptions) {
    this.retryMs = opts.retryMs ?? 1_000;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log;
  }

  /** Status writes (PATCH) made so far. */
  get statusWrites(): number {
    return this.writes;
  }

  /**
   * The API server's current pods bound to this node (pods and mirror pods). Entries of API pods that are gone
   * are forgotten; static pods' entries wait for their mirror pods.
   */
  setApiPods(pods: V1Pod[], mirrorPods: V1Pod[]): void {
    const next = new Map<string, V1Pod>();
    for (const p of [...pods, ...mirrorPods]) {
      const uid = p.metadata!.uid!;
      const known = this.apiPods.get(uid);
      // A response to our own write may be newer than the watch event that arrives after it.
      next.set(uid, known && newerResourceVersion(known, p) ? known : p);
    }
    const before = new Map([...this.entries].map(([uid, e]) => [uid, this.target(e)]));
    this.apiPods = next;
    this.mirrors = new Map(mirrorPods.map((m) => [key(m.metadata?.namespace, m.metadata?.name), next.get(m.metadata!.uid!)!]));
    for (const [uid, e] of this.entries) {
      if (!isStaticPod(e.pod) && !next.has(uid)) {
        this.forget(uid);
        continue;
      }
      // The reflector hands unchanged objects over as the same objects: only pods whose API copy changed are
      // compared (a status the node derives kicks its own write through setStatus).
      if (this.target(e) === before.get(uid)) continue;
      if (!e.running && this.needsSync(e)) this.kick(uid, e);
    }
  }

  /** The node's latest status of a pod; `final` once the pod is terminated on the node. */
  setStatus(pod: V1Pod, status: V1PodStatus, final = false): void {
    const uid = pod.metadata!.uid!;
    let e = this.entries.get(uid);
    if (!e) {
      e = { pod, final: false, deleteWhenFinal: false, running: false, dirty: false, failures: 0 };
      this.entries.set(uid, e);
    }
    e.pod = pod;
    e.status = final ? terminalPodStatus(pod, status) : status;
    e.final ||= final;
    this.kick(uid, e);
  }

  /**
   * An API pod with a deletionTimestamp has nothing left on the node: write its final status, then delete it.
   * A pod the node never ran (rejected, or deleted while the agent was down) ends with its stored status made final.
   */
  podTerminated(pod: V1Pod): void {
    const uid = pod.metadata!.uid!;
    let e = this.entries.get(uid);
    if (!e) {
      e = { pod, final: false, deleteWhenFinal: false, running: false, dirty: false, failures: 0 };
      this.entries.set(uid, e);
    }
    if (e.deleteWhenFinal) return;
    e.deleteWhenFinal = true;
    e.pod = pod;
    if (!e.final) {
      e.status = terminalPodStatus(pod, e.status ?? pod.status ?? {});
      e.final = true;
    }
    this.kick(uid, e);
  }

  /** A pod neither source has any more (static pod removed): its status is no longer written. */
  forget(uid: string): void {
    const e = this.entries.get(uid);
    if (!e) return;
    this.clock.clearTimeout(e.retryTimer);
    this.entries.delete(uid);
  }

  stop(): void {
    this.stopping.abort(new Error('status manager stopped'));
    for (const e of this.entries.values()) this.clock.clearTimeout(e.retryTimer);
  }

  /** The API object the pod's status goes to: the pod itself, or a static pod's mirror pod. */
  private target(e: Entry): V1Pod | undefined {
    if (isStaticPod(e.pod)) return this.mirrors.get(key(e.pod.metadata?.namespace, e.pod.metadata?.name));
    return this.apiPods.get(e.pod.metadata!.uid!);
  }

  private needsSync(e: Entry): boolean {
    const target = this.target(e);
    if (!target || !e.status) return e.deleteWhenFinal;
    return e.deleteWhenFinal || !sameStatus(target.status, mergePodStatus(target.status, e.status));
  }

  private kick(uid: string, e: Entry): void {
    if (this.stopping.signal.aborted) return;
    if (e.running) {
      e.dirty = true;
      return;
    }
    if (e.retryTimer) return;
    e.running = true;
    void this.syncLoop(uid, e);
  }

  /** One write in flight per pod; changes arriving meanwhile are written after it (the latest status wins). */
  private async syncLoop(uid: string, e: Entry): Promise<void> {
    do {
      e.dirty = false;
      try {
        await this.sync(uid, e);
        e.failures = 0;
      } catch (err) {
        if (this.stopping.signal.aborted || this.entries.get(uid) !== e) break;
        const delay = Math.min(this.retryMs * 2 ** e.failures, this.retryMs * 16);
        e.failures++;
        this.log.warn({ err, pod: key(e.pod.metadata?.namespace, e.pod.metadata?.name), podUid: uid, retryInMs: delay }, 'Failed to update pod status; will retry');
        e.retryTimer = this.clock.setTimeout(() => {
          e.retryTimer = undefined;
          if (this.entries.get(uid) === e) this.kick(uid, e);
        }, delay);
        break;
      }
    } while (e.dirty && !this.stopping.signal.aborted && this.entries.get(uid) === e);
    e.running = false;
  }

  private async sync(uid: string, e: Entry): Promise<void> {
    if (!e.status) return;
    const found = this.target(e);
    if (!found) return;
    let target: V1Pod = found;
    const log = this.log.child({ pod: key(target.metadata?.namespace, target.metadata?.name), podUid: uid });
    for (let attempt = 0; ; attempt++) {
      const stored = target.status;
      const merged = mergePodStatus(stored, e.status);
      const refused = refuseStatusUpdate(e.pod, stored, merged);
      if (refused) {
        log.debug({ reason: refused }, 'Pod status not written');
        break;
      }
      const patch = podStatusPatch(target.metadata!.uid!, stored, merged);
      if (!patch) break;
      try {
        const updated = await this.opts.client.request<V1Pod>({
          method: 'PATCH',
          path: `${podPath(target.metadata!.namespace!, target.metadata!.name!)}/status`,
          body: patch,
          contentType: strategicMergePatch,
          signal: this.stopping.signal,
        });
        this.writes++;
        this.remember(updated);
        log.debug({ phase: merged.phase }, 'Pod status written');
        break;
      } catch (err) {
        if (isNotFound(err)) {
          if (!isStaticPod(e.pod)) this.forget(uid);
          return;
        }
        // A conflict: the pod changed or was replaced under the same name; read it again and decide anew.
        if (!isConflict(err) || attempt >= 2) throw err;
        const fresh: V1Pod = await this.opts.client.request<V1Pod>({
          method: 'GET',
          path: podPath(target.metadata!.namespace!, target.metadata!.name!),
          signal: this.stopping.signal,
        });
        if (fresh.metadata?.uid !== target.metadata?.uid) {
          log.info('Pod was deleted and created again under its name; its old status is dropped');
          if (!isStaticPod(e.pod)) this.forget(uid);
          return;
        }
        this.remember(fresh);
        target = fresh;
      }
    }
    if (e.deleteWhenFinal && !isStaticPod(e.pod)) await this.deletePod(uid, e, target, log);
  }

  /** kubelet's final step: the pod is terminated here and its terminal status stored, so it goes with grace 0. */
  private async deletePod(uid: string, e: Entry, target: V1Pod, log: Logger): Promise<void> {
    const current = this.apiPods.get(uid) ?? target;
    if (!current.metadata?.deletionTimestamp) return;
    try {
      await this.opts.client.request({
        method: 'DELETE',
        path: podPath(current.metadata.namespace!, current.metadata.name!),
        body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid } },
        signal: this.stopping.signal,
      });
      log.info('Pod terminated on the node and deleted from the API server');
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
    if (this.entries.get(uid) === e) this.forget(uid);
  }

  private remember(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    if (this.apiPods.has(uid)) this.apiPods.set(uid, pod);
    const k = key(pod.metadata?.namespace, pod.metadata?.name);
    if (this.mirrors.get(k)?.metadata?.uid === uid) this.mirrors.set(k, pod);
  }
}

/** Whether `a` is a later version than `b` (resourceVersions compare as integers on kube-apiserver's etcd storage). */
function newerResourceVersion(a: V1Pod, b: V1Pod): boolean {
  const ra = a.metadata?.resourceVersion;
  const rb = b.metadata?.resourceVersion;
  if (!ra || !rb || !/^\d+$/.test(ra) || !/^\d+$/.test(rb)) return false;
  return BigInt(ra) > BigInt(rb);
}
