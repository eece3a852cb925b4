// What the node reports as Kubernetes events, as an interface: the pod lifecycle records them, cluster mode writes them to the API server.
import type { V1Pod } from '@kubernetes/client-node';

export type EventType = 'Normal' | 'Warning';

/** What an event is about: a pod, or with `containerName` one of its containers. */
export interface PodEventRef {
  pod: V1Pod;
  containerName?: string;
}

/** Records events; it never blocks and never throws, whatever the API server does. */
export interface EventRecorder {
  event(ref: PodEventRef, type: EventType, reason: string, message: string): void;
  /** An event about this node (kubelet's nodeRef). */
  nodeEvent(type: EventType, reason: string, message: string): void;
}
