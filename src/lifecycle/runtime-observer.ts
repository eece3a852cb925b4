// Reads pods' runtime state through CRI (kubelet's GetPodStatus), caching what cannot change.
import type { Container, ContainerStatus, PodSandbox, RuntimeService } from '../cri/types.js';
import { isNotFound } from '../cri/errors.js';
import type { V1ContainerPort, V1LifecycleHandler } from '@kubernetes/client-node';
import {
  containerHashAnnotation,
  containerNameLabel,
  containerPortsAnnotation,
  containerPreStopHandlerAnnotation,
  containerRestartCountAnnotation,
  containerTerminationMessagePathAnnotation,
  containerTerminationMessagePolicyAnnotation,
  podUidLabel,
} from '../core/labels.js';
import { terminationMessage } from '../execution/termination-message.js';
import type { PodFilesystem } from '../host/filesystem.js';
import {
  sortNewestFirst,
  type ContainerObservation,
  type ObservedContainerState,
  type PodRuntimeState,
  type SandboxObservation,
} from '../core/runtime-state.js';

/** Where pod IPs come from first: the agent's own CNI results, keyed by sandbox id. */
export interface PodIPSource {
  podIPs(sandboxId: string): string[] | undefined;
}

/** A CRI container state as nodelet observes it (also kubelet's container_state metric label). */
export const stateNames: Record<Container['state'], ObservedContainerState> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

/** Sandboxes and containers of the whole node, grouped by pod UID (objects without the label are not pods). */
export interface NodeRuntimeSnapshot {
  sandboxes: PodSandbox[];
  containers: Container[];
}

export function podUidsOf(snapshot: NodeRuntimeSnapshot): Set<string> {
  const uids = new Set<string>();
  for (const s of snapshot.sandboxes) if (s.labels[podUidLabel]) uids.add(s.labels[podUidLabel]);
  for (const c of snapshot.containers) if (c.labels[podUidLabel]) uids.add(c.labels[podUidLabel]);
  return uids;
}

/** A JSON annotation as `{ [key]: value }`, or nothing when absent or unreadable (written by an older agent). */
function parseAnnotation<T>(key: string, text: string | undefined): Record<string, T> {
  if (!text) return {};
  try {
    return { [key]: JSON.parse(text) as T };
  } catch {
    return {};
  }
}

export class RuntimeObserver {
  /** ContainerStatus of containers whose state is final for the cached fields (running: startedAt; exited: all). */
  private readonly statusCache = new Map<string, ContainerStatus>();
  /** IPs once known per sandbox: they stay reported after the network is torn down. */
  private readonly sandboxIPs = new Map<string, string[]>();
  /** Pod UIDs with objects in the latest relist; undefined until one succeeded. */
  private relistedPods: Set<string> | undefined;

  constructor(
    private readonly runtime: RuntimeService,
    private readonly ipSource: PodIPSource,
    /** Where exited containers' termination messages and logs are read. */
    private readonly files: PodFilesystem,
  ) {}

  /**
   * Fresh state of one pod, from label-filtered lists plus container statuses not yet cached. The statuses of
   * `startedContainers` (just started by the caller, so not cached and surely listed) are asked for alongside the
   * lists rather than after them.
   */
  async observePod(uid: string, signal?: AbortSignal, startedContainers: readonly string[] = []): Promise<PodRuntimeState> {
    const selector = { labelSelector: { [podUidLabel]: uid } };
    const prefetched = new Map(
      startedContainers.map((id) => {
        const status = this.runtime.containerStatus(id, false, { signal });
        status.catch(() => undefined); // awaited only if listed; its error then surfaces there
        return [id, status] as const;
      }),
    );
    const [sandboxes, containers] = await Promise.all([
      this.runtime.listPodSandbox(selector, { signal }),
      this.runtime.listContainers(selector, { signal }),
    ]);
    return this.buildState(uid, sandboxes, containers, signal, prefetched);
  }

  /**
   * The state of a pod no worker of this agent has synced before. When the latest relist did not list it, that is no
   * sandbox and no container, without asking the runtime (as kubelet's first sync of a pod reads the PLEG cache): its
   * objects are made only by its worker, which starts now, and what an earlier agent left is in every relist. In a
   * burst of new pods this saves two list calls each, which would all reach the runtime before any sandbox is asked for.
   */
  async observeNewPod(uid: string, signal?: AbortSignal): Promise<PodRuntimeState> {
    if (this.relistedPods && !this.relistedPods.has(uid)) return { uid, sandboxes: [], containers: [] };
    return this.observePod(uid, signal);
  }

  /** All sandboxes and containers on the node (the relist). */
  async snapshot(signal?: AbortSignal): Promise<NodeRuntimeSnapshot> {
    const [sandboxes, containers] = await Promise.all([
      this.runtime.listPodSandbox(undefined, { signal }),
      this.runtime.listContainers(undefined, { signal }),
    ]);
    const snapshot = { sandboxes, containers };
    this.relistedPods = podUidsOf(snapshot);
    return snapshot;
  }

  /** Forgets a container's cached status (its resources changed in place): the next observation asks the runtime. */
  invalidate(containerId: string): void {
    this.statusCache.delete(containerId);
  }

  /** Drops cached entries of runtime objects that no longer exist. */
  prune(snapshot: NodeRuntimeSnapshot): void {
    const containerIds = new Set(snapshot.containers.map((c) => c.id));
    for (const id of this.statusCache.keys()) if (!containerIds.has(id)) this.statusCache.delete(id);
    const sandboxIds = new Set(snapshot.sandboxes.map((s) => s.id));
    for (const id of this.sandboxIPs.keys()) if (!sandboxIds.has(id)) this.sandboxIPs.delete(id);
  }

  private async buildState(
    uid: string,
    sandboxes: PodSandbox[],
    containers: Container[],
    signal?: AbortSignal,
    prefetched?: Map<string, Promise<ContainerStatus>>,
  ): Promise<PodRuntimeState> {
    const [sandboxObs, containerObs] = await Promise.all([
      Promise.all(sandboxes.map((s) => this.observeSandbox(s, signal))),
      Promise.all(containers.map((c) => this.observeContainer(c, signal, prefetched?.get(c.id)))),
    ]);
    return {
      uid,
      sandboxes: sortNewestFirst(sandboxObs),
      containers: sortNewestFirst(containerObs.filter((c): c is ContainerObservation => c !== undefined)),
    };
  }

  private async observeSandbox(s: PodSandbox, signal?: AbortSignal): Promise<SandboxObservation> {
    const ready = s.state === 'SANDBOX_READY';
    let ips = this.ipSource.podIPs(s.id) ?? this.sandboxIPs.get(s.id);
    if (!ips && ready) {
      // Not set up by this agent's CNI (e.g. host network): ask the runtime once; a sandbox's IPs never change,
      // so the answer is kept even when empty (a host-network pod would otherwise cost a call every sync).
      ips = (await this.runtime.podSandboxStatus(s.id, false, { signal })).ips;
    }
    if (ips) this.sandboxIPs.set(s.id, ips);
    return { id: s.id, attempt: s.metadata.attempt, ready, createdAt: s.createdAt, ips: ips ?? [] };
  }

  private async observeContainer(c: Container, signal?: AbortSignal, prefetched?: Promise<ContainerStatus>): Promise<ContainerObservation | undefined> {
    let status = this.statusCache.get(c.id);
    if (!status || status.state !== c.state) {
      try {
        status = prefetched ? await prefetched : undefined;
        // Asked before the list: if the list saw a later state, ask again.
        if (!status || status.state !== c.state) status = await this.runtime.containerStatus(c.id, false, { signal });
      } catch (err) {
        if (isNotFound(err)) return undefined; // removed between list and status
        throw err;
      }
      if (status.state === 'CONTAINER_EXITED') {
        // kubelet appends the container's own termination message to the runtime's.
        const own = await terminationMessage(
          this.files,
          status,
          c.annotations[containerTerminationMessagePathAnnotation],
          c.annotations[containerTerminationMessagePolicyAnnotation],
        );
        if (own) status = { ...status, message: status.message ? `${status.message}: ${own}` : own };
      }
      if (status.state === 'CONTAINER_RUNNING' || status.state === 'CONTAINER_EXITED') this.statusCache.set(c.id, status);
    }
    return {
      id: c.id,
      sandboxId: c.podSandboxId,
      name: c.labels[containerNameLabel] ?? c.metadata.name,
      attempt: c.metadata.attempt,
      restartCount: Number(c.annotations[containerRestartCountAnnotation] ?? c.metadata.attempt) || 0,
      hash: c.annotations[containerHashAnnotation] ?? '',
      state: stateNames[status.state],
      createdAt: c.createdAt,
      ...(status.startedAt ? { startedAt: status.startedAt } : {}),
      ...(status.finishedAt ? { finishedAt: status.finishedAt } : {}),
      ...(status.state === 'CONTAINER_EXITED' ? { exitCode: status.exitCode } : {}),
      ...(status.reason ? { reason: status.reason } : {}),
      ...(status.message ? { message: status.message } : {}),
      image: status.image.image || c.image.image,
      imageRef: status.imageRef || c.imageRef,
      ...(status.user ? { user: status.user } : {}),
      ...(status.resources ? { resources: status.resources } : {}),
      ...parseAnnotation<V1LifecycleHandler>('preStop', c.annotations[containerPreStopHandlerAnnotation]),
      ...parseAnnotation<V1ContainerPort[]>('ports', c.annotations[containerPortsAnnotation]),
    };
  }
}
