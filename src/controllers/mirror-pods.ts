// Mirror pods: the API server's read-only copies of this node's static pods, created, replaced and removed as kubelet's
// mirror client does (annotation kubernetes.io/config.mirror = the static pod's config hash, owned by the Node).
import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../kubeapi/client.js';
import { isAlreadyExists, isConflict, isNotFound } from '../kubeapi/client.js';
import type { Logger } from '../core/log.js';
import { CONFIG_HASH_ANNOTATION, CONFIG_MIRROR_ANNOTATION } from '../core/config-annotations.js';
import { systemClock, type Clock } from '../core/clock.js';

export interface MirrorPodManagerOptions {
  client: Pick<KubeClient, 'request'>;
  nodeName: string;
  /** The registered Node's UID for the owner reference; undefined until the node is registered (no mirror pod before). */
  nodeUid: () => Promise<string | undefined>;
  log: Logger;
  /** Delay before the next attempt after a failure or while the node is not registered. */
  retryMs?: number;
  /** Times the retries. */
  clock?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
}

const key = (p: V1Pod) => `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`;
const podPath = (ns: string, name: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(name)}`;

/** kubelet's IsMirrorPodOf: same name and namespace, and the mirror carries the static pod's current hash. */
export function isMirrorPodOf(mirror: V1Pod, pod: V1Pod): boolean {
  return key(mirror) === key(pod) && mirror.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] === pod.metadata?.annotations?.[CONFIG_HASH_ANNOTATION];
}

/** The mirror pod of a static pod: its metadata and spec, bound to this node, marked with the hash, owned by the Node. */
export function mirrorPodFor(pod: V1Pod, nodeName: string, nodeUid: string): V1Pod {
  const m = pod.metadata ?? {};
  const metadata: V1ObjectMeta = {
    name: m.name,
    namespace: m.namespace ?? 'default',
    annotations: { ...m.annotations, [CONFIG_MIRROR_ANNOTATION]: m.annotations?.[CONFIG_HASH_ANNOTATION] ?? '' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUid, controller: true }],
  };
  if (m.labels) metadata.labels = { ...m.labels };
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec: { ...structuredClone(pod.spec!), nodeName } };
}

export class MirrorPodManager {
  private staticPods: V1Pod[] = [];
  private mirrorPods: V1Pod[] = [];
  private running = false;
  private again = false;
  private retryTimer?: unknown;
  private stopped = false;
  /** Aborts the requests in flight when the agent stops. */
  private readonly stopping = new AbortController();
  /** Mirror pods created by us whose watch event has not arrived yet (key -> hash), so they are not created twice. */
  private readonly created = new Map<string, string>();
  /** Mirror pods deleted by us whose watch event has not arrived yet. */
  private readonly deleted = new Set<string>();
  private waitingForNodeLogged = false;
  private readonly retryMs: number;
  private readonly clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;

  constructor(private readonly opts: MirrorPodManagerOptions) {
    this.retryMs = opts.retryMs ?? 2_000;
    this.clock = opts.clock ?? systemClock;
  }

  /** The static pods and the API's mirror pods, both complete sets; reconciles in the background. */
  sync(staticPods: V1Pod[], mirrorPods: V1Pod[]): void {
    this.staticPods = staticPods;
    this.mirrorPods = mirrorPods;
    for (const uid of [...this.deleted]) if (!mirrorPods.some((m) => m.metadata?.uid === uid)) this.deleted.delete(uid);
    for (const m of mirrorPods) if (this.created.get(key(m)) === m.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION]) this.created.delete(key(m));
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    this.clock.clearTimeout(this.retryTimer);
    this.stopping.abort(new Error('mirror pod manager stopped'));
  }

  private kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.clock.clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    let retry = false;
    do {
      this.again = false;
      try {
        retry = !(await this.reconcile());
      } catch (err) {
        if (this.stopped) break;
        this.opts.log.warn({ err }, 'Failed to reconcile mirror pods; will retry');
        retry = true;
      }
    } while (this.again && !this.stopped);
    this.running = false;
    if (retry && !this.stopped) {
      this.retryTimer = this.clock.setTimeout(() => this.kick(), this.retryMs);
    }
  }

  /** One pass; false when something is left to do later (node not registered yet). */
  private async reconcile(): Promise<boolean> {
    const wanted = new Map(this.staticPods.map((p) => [key(p), p]));
    let done = true;
    // Mirror pods of no static pod, outdated ones and ones being deleted go first (kubelet's DeleteMirrorPod: grace 0, UID precondition).
    const valid = new Map<string, V1Pod>();
    for (const m of this.mirrorPods) {
      if (this.deleted.has(m.metadata!.uid!)) continue;
      const pod = wanted.get(key(m));
      if (pod && isMirrorPodOf(m, pod) && !m.metadata?.deletionTimestamp) {
        valid.set(key(m), m);
        continue;
      }
      await this.deleteMirror(m, pod ? 'outdated' : 'orphaned');
    }
    for (const [k, pod] of wanted) {
      if (valid.has(k) || this.created.get(k) === pod.metadata?.annotations?.[CONFIG_HASH_ANNOTATION]) continue;
      const nodeUid = await this.opts.nodeUid();
      if (!nodeUid) {
        if (!this.waitingForNodeLogged) this.opts.log.info('Mirror pods wait for the node to be registered');
        this.waitingForNodeLogged = true;
        done = false;
        break;
      }
      const mirror = mirrorPodFor(pod, this.opts.nodeName, nodeUid);
      try {
        await this.opts.client.request({ method: 'POST', path: `/api/v1/namespaces/${encodeURIComponent(mirror.metadata!.namespace!)}/pods`, body: mirror, signal: this.stopping.signal });
        this.opts.log.info({ pod: k }, 'Created mirror pod');
      } catch (err) {
        // One left over that is being deleted: the next pass, after its removal, creates ours.
        if (!isAlreadyExists(err)) throw err;
        done = false;
        continue;
      }
      this.created.set(k, pod.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] ?? '');
    }
    return done;
  }

  private async deleteMirror(m: V1Pod, why: string): Promise<void> {
    const uid = m.metadata!.uid!;
    try {
      await this.opts.client.request({
        method: 'DELETE',
        path: podPath(m.metadata!.namespace!, m.metadata!.name!),
        body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid } },
        signal: this.stopping.signal,
      });
      this.opts.log.info({ pod: key(m), podUid: uid, why }, 'Deleted mirror pod');
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
    this.deleted.add(uid);
    this.created.delete(key(m));
  }
}
