// kubelet's node lease controller: keeps Lease kube-node-lease/<node> renewed, the heartbeat the node lifecycle controller watches.
import type { V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../core/log.js';
import { isConflict, isNotFound, type KubeClient } from '../kubeapi/client.js';
import { systemClock, type Clock } from '../core/clock.js';

/** What the controllers need of KubeClient (a fake in unit tests). */
export type ApiRequester = Pick<KubeClient, 'request'>;

export const nodeLeaseNamespace = 'kube-node-lease';
/** kubelet's NodeLeaseRenewIntervalFraction: renew every quarter of the lease duration. */
export const nodeLeaseRenewIntervalFraction = 0.25;
/** component-helpers' lease controller: immediate update attempts per renewal, and the cap of the ensure back-off. */
const maxUpdateRetries = 5;
const maxBackoffMs = 7_000;
const initialBackoffMs = 100;
/** wait.JitterUntil's jitter factor used by the lease controller. */
const renewJitter = 0.04;

/** metav1.MicroTime's JSON form, "2006-01-02T15:04:05.000000Z" (JavaScript time has milliseconds). */
export function formatMicroTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface NodeLeaseOptions {
  client: ApiRequester;
  nodeName: string;
  leaseDurationSeconds: number;
  /** Deadline of each lease request; shorter than the renew interval so a stalled connection cannot skip renewals. */
  requestTimeoutMs: number;
  /** The Node's UID once it is registered (the Lease's owner; kubelet creates the Lease only once the Node exists). */
  nodeUID: () => string | undefined;
  log: Logger;
  clock?: Pick<Clock, 'now' | 'sleep'>;
  /** The renew interval's jitter. */
  random?: () => number;
  /** Called after every successful create or renewal (tests, metrics). */
  onRenewed?: (lease: V1Lease) => void;
}

const leasePath = (name?: string) =>
  `/apis/coordination.k8s.io/v1/namespaces/${nodeLeaseNamespace}/leases${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;

export class NodeLeaseController {
  private readonly clock: Pick<Clock, 'now' | 'sleep'>;
  private readonly random: () => number;
  private readonly renewIntervalMs: number;
  /** The Lease as last written: renewals update from it without a GET, as kubelet does. */
  private latest: V1Lease | undefined;

  constructor(private readonly opts: NodeLeaseOptions) {
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
    this.renewIntervalMs = opts.leaseDurationSeconds * 1000 * nodeLeaseRenewIntervalFraction;
  }

  /** The Lease as last written, if any. */
  get lease(): V1Lease | undefined {
    return this.latest;
  }

  /** Renews until the signal aborts: one sync at once, then one per renew interval (plus up to 4% jitter) after each. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.sync(signal);
      await this.clock.sleep(this.renewIntervalMs * (1 + this.random() * renewJitter), signal);
    }
  }

  private async sync(signal: AbortSignal): Promise<void> {
    if (this.latest) {
      try {
        await this.retryUpdate(this.latest, signal);
        return;
      } catch (err) {
        if (signal.aborted) return;
        this.opts.log.info({ err }, 'Failed to update lease using latest lease, fallback to ensure lease');
      }
    }
    const ensured = await this.backoffEnsure(signal);
    if (!ensured) return;
    this.latest = ensured.lease;
    if (ensured.created) return;
    try {
      await this.retryUpdate(ensured.lease, signal);
    } catch (err) {
      if (!signal.aborted) this.opts.log.error({ err, retryInMs: this.renewIntervalMs }, 'Failed to renew the node lease; will retry');
    }
  }

  /** Gets or creates the Lease, retrying with back-off (200 ms doubling to 7 s) until it works or the signal aborts. */
  private async backoffEnsure(signal: AbortSignal): Promise<{ lease: V1Lease; created: boolean } | undefined> {
    let sleepMs = initialBackoffMs;
    while (!signal.aborted) {
      try {
        return await this.ensure(signal);
      } catch (err) {
        if (signal.aborted) return undefined;
        sleepMs = Math.min(2 * sleepMs, maxBackoffMs);
        this.opts.log.error({ err, retryInMs: sleepMs }, 'Failed to ensure the node lease exists, will retry');
        await this.clock.sleep(sleepMs, signal);
      }
    }
    return undefined;
  }

  /** The existing Lease, or a new one; undefined (nothing created) while the Node is not registered. */
  private async ensure(signal: AbortSignal): Promise<{ lease: V1Lease; created: boolean } | undefined> {
    try {
      const lease = await this.opts.client.request<V1Lease>({
        method: 'GET',
        path: leasePath(this.opts.nodeName),
        timeoutMs: this.opts.requestTimeoutMs,
        signal,
      });
      return { lease, created: false };
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const uid = this.opts.nodeUID();
    // kubelet: an owner reference cannot be set yet, so the Lease is not created this time.
    if (!uid) return undefined;
    const lease = await this.opts.client.request<V1Lease>({
      method: 'POST',
      path: leasePath(),
      body: this.desired(undefined, uid),
      timeoutMs: this.opts.requestTimeoutMs,
      signal,
    });
    this.opts.onRenewed?.(lease);
    return { lease, created: true };
  }

  /** Updates the Lease's renewTime: up to 5 immediate attempts; a conflict re-reads the Lease first. */
  private async retryUpdate(base: V1Lease, signal: AbortSignal): Promise<void> {
    let current: V1Lease | undefined = base;
    let lastError: unknown;
    for (let attempt = 0; attempt < maxUpdateRetries && !signal.aborted; attempt++) {
      if (!current) break;
      try {
        const lease = await this.opts.client.request<V1Lease>({
          method: 'PUT',
          path: leasePath(this.opts.nodeName),
          body: this.desired(current, this.opts.nodeUID()),
          timeoutMs: this.opts.requestTimeoutMs,
          signal,
        });
        this.latest = lease;
        this.opts.onRenewed?.(lease);
        return;
      } catch (err) {
        lastError = err;
        if (signal.aborted) break;
        this.opts.log.warn({ err, attempt: attempt + 1 }, 'Failed to update the node lease');
        if (isConflict(err)) current = (await this.backoffEnsure(signal))?.lease;
      }
    }
    throw new Error(`failed ${maxUpdateRetries} attempts to update lease`, { cause: lastError });
  }

  /** A new Lease (base undefined) or a copy of `base`, renewed now, owned by the Node when its UID is known. */
  private desired(base: V1Lease | undefined, nodeUID: string | undefined): V1Lease {
    const name = this.opts.nodeName;
    const lease: V1Lease = base
      ? { ...base, metadata: { ...base.metadata }, spec: { ...base.spec } }
      : {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace: nodeLeaseNamespace },
          spec: { holderIdentity: name, leaseDurationSeconds: this.opts.leaseDurationSeconds },
        };
    lease.spec!.renewTime = formatMicroTime(new Date(this.clock.now())) as unknown as Date;
    if (nodeUID && (lease.metadata!.ownerReferences ?? []).length === 0) {
      lease.metadata!.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name, uid: nodeUID }];
    }
    return lease;
  }
}
