// Housekeeping after each relist (kubelet's HandlePodCleanups): what pods nodelet no longer knows left on the host is
// removed on a schedule. Their directories (and then their user namespace ranges) every 2 s; their cgroups, once the pod sources have spoken, and the pod
// network's attachments of vanished sandboxes and the shims containerd forgot every minute. A collection never starts
// while its previous run goes on.
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { PodNetwork } from '../cni/pod-network.js';
import type { PodCgroupManager } from '../host/cgroups.js';
import type { ForgottenShimCollector } from '../host/runtime-shims.js';
import type { UserNamespaceManager } from '../host/user-namespaces.js';
import type { PodVolumeManager } from '../volume/pod-volumes.js';
import type { PodWorkers } from './pod-workers.js';
import type { NodeRuntimeSnapshot } from './runtime-observer.js';

/** kubelet's housekeeping period: orphaned pod directories are looked for this often. */
export const podDirSweepIntervalMs = 2_000;
/** Orphaned pod cgroups, network attachments and forgotten shims are looked for this often. */
export const orphanCollectionIntervalMs = 60_000;

export interface HousekeepingDeps {
  clock: Pick<Clock, 'now'>;
  log: Logger;
  /** Which UIDs are desired or have a worker (every UID counts as known until the pod sources have spoken). */
  pods: Pick<PodWorkers, 'isKnown' | 'desiredPodsKnown'>;
  volumes: Pick<PodVolumeManager, 'removeOrphanedPodDirs'>;
  userNamespaces: Pick<UserNamespaceManager, 'releaseOrphans'>;
  podCgroups: Pick<PodCgroupManager, 'garbageCollect'>;
  podNetwork: Pick<PodNetwork, 'garbageCollect'>;
  /** The runtime's forgotten shims (containerd's; with another runtime there are none to find). */
  shims: Pick<ForgottenShimCollector, 'collect'>;
}

/** One collection: started at most once per interval, never beside its own previous run. */
class Collection {
  private lastStart = -Infinity;
  private running = false;

  constructor(private readonly intervalMs: number) {}

  /** Starts `run` when it is due at `now`; failures are the caller's to log. */
  startIfDue(now: number, run: () => Promise<void>): void {
    if (this.running || now - this.lastStart < this.intervalMs) return;
    this.lastStart = now;
    this.running = true;
    void run().finally(() => (this.running = false));
  }
}

export class Housekeeping {
  private readonly podDirs = new Collection(podDirSweepIntervalMs);
  private readonly podCgroups = new Collection(orphanCollectionIntervalMs);
  private readonly podNetwork = new Collection(orphanCollectionIntervalMs);
  private readonly shims = new Collection(orphanCollectionIntervalMs);

  constructor(private readonly deps: HousekeepingDeps) {}

  /** After each relist, once the workers have seen it: starts the collections that are due, in the background. */
  afterRelist(snapshot: NodeRuntimeSnapshot, signal: AbortSignal): void {
    const { clock, log, pods, volumes, userNamespaces, podCgroups, podNetwork, shims } = this.deps;
    const now = clock.now();
    const isKnown = (uid: string) => pods.isKnown(uid);
    // <root-dir>/pods/<uid> of pods neither desired nor in the runtime (e.g. removed while nodelet was down).
    this.podDirs.startIfDue(now, () =>
      volumes
        .removeOrphanedPodDirs(isKnown, log, signal)
        .then((removed) => void (removed.length > 0 && log.info({ podUids: removed }, 'Removed the directories of orphaned pods')))
        .catch((err: unknown) => log.warn({ err }, 'Cleaning up orphaned pod directories failed'))
        // kubelet's CleanupOrphanedPodUsernsAllocations: ranges of pods neither known nor with a directory.
        .then(() => userNamespaces.releaseOrphans(isKnown))
        .then((released) => void (released.length > 0 && log.info({ podUids: released }, 'Released the user namespaces of orphaned pods')))
        .catch((err: unknown) => log.warn({ err }, 'Failed cleaning up orphaned pod user namespaces allocations')),
    );
    // Pod cgroups of pods neither desired nor in the runtime: only once the desired pods are known.
    if (pods.desiredPodsKnown) {
      this.podCgroups.startIfDue(now, () =>
        podCgroups
          .garbageCollect(isKnown)
          .then((r) => {
            if (r.removed.length) log.info({ podUids: r.removed }, 'Removed the cgroups of orphaned pods');
            if (r.failed.length) log.warn({ failed: r.failed }, 'Could not remove the cgroups of orphaned pods');
          })
          .catch((err: unknown) => log.warn({ err }, 'Pod cgroup garbage collection failed')),
      );
    }
    // Attachments of sandboxes that no longer exist (e.g. removed while nodelet was down) are released.
    this.podNetwork.startIfDue(now, () =>
      podNetwork
        .garbageCollect(new Set(snapshot.sandboxes.map((s) => s.id)), signal)
        .then((r) => void (r.removed.length && log.info({ removed: r.removed }, 'Released pod network attachments of vanished sandboxes')))
        .catch((err: unknown) => log.warn({ err }, 'Pod network garbage collection failed')),
    );
    // Shims of tasks the runtime no longer has (see host/runtime-shims.ts).
    this.shims.startIfDue(now, () =>
      shims
        .collect(new Set([...snapshot.sandboxes.map((s) => s.id), ...snapshot.containers.map((c) => c.id)]))
        .then((ended) => {
          for (const shim of ended) {
            log.warn({ pid: shim.pid, taskId: shim.id }, 'Ended a containerd shim containerd had forgotten (its task and bundle removed, containerd#7496)');
          }
        })
        .catch((err: unknown) => log.warn({ err }, 'Collecting forgotten containerd shims failed')),
    );
  }
}
