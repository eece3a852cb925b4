// What the container runtime holds for one pod, as observed through CRI: the input to every sync decision.
import type { V1ContainerPort, V1LifecycleHandler } from '@kubernetes/client-node';

export type ObservedContainerState = 'created' | 'running' | 'exited' | 'unknown';

export interface SandboxObservation {
  id: string;
  attempt: number;
  ready: boolean;
  createdAt: number;
  /** Pod IPs (primary first); empty for host-network sandboxes and before networking is known. */
  ips: string[];
}

export interface ContainerObservation {
  id: string;
  sandboxId: string;
  name: string;
  attempt: number;
  /** kubelet's restart count, kept on the container as an annotation so it survives agent restarts. */
  restartCount: number;
  /** Hash of the container spec it was created from. */
  hash: string;
  state: ObservedContainerState;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  exitCode?: number;
  reason?: string;
  message?: string;
  image: string;
  imageRef: string;
  /** The uid, gid and supplemental groups its first process started with, as the runtime reports them. */
  user?: { uid: number; gid: number; supplementalGroups: number[] };
  /** The cgroup resources the runtime reports it last applied (CRI ContainerStatus.resources). */
  resources?: { cpuShares?: number; cpuQuota?: number; cpuPeriod?: number; memoryLimitInBytes?: number };
  /** The preStop hook and ports kept in annotations, for containers whose spec is gone. */
  preStop?: V1LifecycleHandler;
  ports?: V1ContainerPort[];
}

export interface PodRuntimeState {
  uid: string;
  /** Newest first. */
  sandboxes: SandboxObservation[];
  /** Newest first (by creation time, then attempt). */
  containers: ContainerObservation[];
}

/** The most recent instance of a container by name, as kubelet's FindContainerStatusByName. */
export function latestContainer(state: PodRuntimeState, name: string): ContainerObservation | undefined {
  return state.containers.find((c) => c.name === name);
}

/** The instance before the latest one, for lastState. */
export function previousContainer(state: PodRuntimeState, name: string): ContainerObservation | undefined {
  let seen = false;
  for (const c of state.containers) {
    if (c.name !== name) continue;
    if (seen) return c;
    seen = true;
  }
  return undefined;
}

export function sortNewestFirst<T extends { createdAt: number; attempt: number }>(items: T[]): T[] {
  return items.sort((a, b) => b.createdAt - a.createdAt || b.attempt - a.attempt);
}
