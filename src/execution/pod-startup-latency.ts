// kubelet's pod startup latency tracker: the pod startup SLI of sig-scalability is the time from the pod's creation to
// all its containers started, without the time its images were being pulled (first pull started to last pull finished).
import type { V1Pod } from '@kubernetes/client-node';

export class PodStartupLatencyTracker {
  private readonly pulls = new Map<string, { first: number; last?: number }>();
  private networkPodStarted = false;

  startedPulling(podUid: string, now: number): void {
    if (!this.pulls.has(podUid)) this.pulls.set(podUid, { first: now });
  }

  finishedPulling(podUid: string, now: number): void {
    const window = this.pulls.get(podUid);
    if (window) window.last = now;
  }

  /**
   * The pod's containers have all started (at `now`, ms): its SLI in seconds and whether it is the node's first pod with
   * a pod network (kubelet's first_with_network, which also measures the network's readiness). Forgets the pod.
   */
  podStarted(pod: V1Pod, now: number): { seconds: number; firstWithNetwork: boolean } | undefined {
    const uid = pod.metadata?.uid ?? '';
    const window = this.pulls.get(uid);
    this.pulls.delete(uid);
    const created = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : NaN;
    if (!Number.isFinite(created)) return undefined;
    const pulling = window?.last !== undefined ? window.last - window.first : 0;
    const firstWithNetwork = !pod.spec?.hostNetwork && !this.networkPodStarted;
    if (!pod.spec?.hostNetwork) this.networkPodStarted = true;
    return { seconds: Math.max(0, now - created - pulling) / 1000, firstWithNetwork };
  }

  forget(podUid: string): void {
    this.pulls.delete(podUid);
  }
}
