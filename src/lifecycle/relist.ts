// The pod lifecycle event generator: periodically lists the runtime and reports which pods changed.
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { ContainerStateLabel, NodeMetrics } from '../core/metrics.js';
import { podUidLabel } from '../core/labels.js';
import { stateNames, type NodeRuntimeSnapshot, type RuntimeObserver } from './runtime-observer.js';

/** Per pod UID, the ids and states of its sandboxes and containers: a change means its worker must look. */
export function podFingerprints(snapshot: NodeRuntimeSnapshot): Map<string, string> {
  const parts = new Map<string, string[]>();
  const add = (uid: string | undefined, part: string) => {
    if (!uid) return;
    const list = parts.get(uid) ?? [];
    list.push(part);
    parts.set(uid, list);
  };
  for (const s of snapshot.sandboxes) add(s.labels[podUidLabel], `s:${s.id}:${s.state}`);
  for (const c of snapshot.containers) add(c.labels[podUidLabel], `c:${c.id}:${c.state}`);
  return new Map([...parts].map(([uid, list]) => [uid, list.sort().join(',')]));
}

/** UIDs whose fingerprint differs between two relists (appeared, changed or vanished). */
export function changedPods(before: Map<string, string>, after: Map<string, string>): Set<string> {
  const changed = new Set<string>();
  for (const [uid, fp] of after) if (before.get(uid) !== fp) changed.add(uid);
  for (const uid of before.keys()) if (!after.has(uid)) changed.add(uid);
  return changed;
}

/** kubelet's running pods and containers gauges from a relist: pods with a ready sandbox, the pods' containers by state. */
export function runtimeCounts(snapshot: NodeRuntimeSnapshot): { runningPods: number; containers: Record<ContainerStateLabel, number> } {
  const containers: Record<ContainerStateLabel, number> = { created: 0, running: 0, exited: 0, unknown: 0 };
  const running = new Set<string>();
  for (const s of snapshot.sandboxes) {
    const uid = s.labels[podUidLabel];
    if (uid && s.state === 'SANDBOX_READY') running.add(uid);
  }
  for (const c of snapshot.containers) if (c.labels[podUidLabel]) containers[stateNames[c.state]]++;
  return { runningPods: running.size, containers };
}

export interface RelistHandler {
  onRelist(changed: Set<string>, snapshot: NodeRuntimeSnapshot): void;
  /** The runtime answered again after failing. */
  onRuntimeRecovered(): void;
}

export class Relister {
  private fingerprints = new Map<string, string>();
  private healthy: boolean | undefined;
  private lastStart?: number;

  constructor(
    private readonly observer: RuntimeObserver,
    private readonly periodMs: number,
    private readonly handler: RelistHandler,
    private readonly log: Logger,
    private readonly clock: Pick<Clock, 'sleep' | 'now'>,
    private readonly metrics?: Pick<NodeMetrics, 'relist' | 'runtimeCounts'>,
  ) {}

  /** True once a relist succeeded and the latest did too. */
  get runtimeHealthy(): boolean {
    return this.healthy === true;
  }

  async relist(signal?: AbortSignal): Promise<void> {
    const started = this.clock.now();
    const interval = this.lastStart === undefined ? undefined : (started - this.lastStart) / 1000;
    this.lastStart = started;
    let snapshot: NodeRuntimeSnapshot;
    try {
      snapshot = await this.observer.snapshot(signal);
    } catch (err) {
      if (signal?.aborted) return;
      if (this.healthy !== false) this.log.error({ err }, 'Container runtime is not responding; will keep retrying');
      this.healthy = false;
      return;
    }
    if (this.metrics) {
      // As kubelet's PLEG: the time of the listing, and the gauges from what it found.
      this.metrics.relist((this.clock.now() - started) / 1000, interval);
      const counts = runtimeCounts(snapshot);
      this.metrics.runtimeCounts(counts.runningPods, counts.containers);
    }
    const recovered = this.healthy === false;
    this.healthy = true;
    if (recovered) this.log.info('Container runtime is responding again');
    const next = podFingerprints(snapshot);
    const changed = changedPods(this.fingerprints, next);
    this.fingerprints = next;
    this.observer.prune(snapshot);
    this.handler.onRelist(changed, snapshot);
    if (recovered) this.handler.onRuntimeRecovered();
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.relist(signal);
      await this.clock.sleep(this.periodMs, signal);
    }
  }
}
