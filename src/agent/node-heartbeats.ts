// Cluster mode's node side: the Node's registration and status (NodeController) and its Lease (NodeLeaseController), built from the agent's parts.
import type { KubeClient } from '../kubeapi/client.js';
import { NodeController } from '../controllers/node-controller.js';
import { NodeLeaseController, nodeLeaseRenewIntervalFraction } from '../controllers/node-lease.js';
import type { ImageService, RuntimeService } from '../cri/types.js';
import { readMachineInfo } from '../host/machine-info.js';
import { chooseNodeIP, readNodeIPFacts } from '../host/node.js';
import type { Logger } from '../core/log.js';
import type { KubeletConfiguration } from './kubelet-config.js';
import type { PodNetworkConfig } from './pod-network-config.js';
import { kubeletVersion } from './version.js';
import type { KubeMinor } from '../core/kube-minor.js';

export interface NodeHeartbeatsOptions {
  client: KubeClient;
  runtime: Pick<RuntimeService, 'version' | 'status'> & Pick<ImageService, 'listImages'>;
  /** The pod network: its readiness is the runtime's NetworkReady; Node.spec.podCIDR is applied to it. */
  podNetwork: PodNetworkConfig;
  /** The agent's root dir: its filesystem is the node's ephemeral-storage. */
  rootDir: string;
  nodeName: string;
  /** The InternalIP found at start. */
  nodeIP: string;
  /** --node-ip ('' when not given): validated and used at every status update. */
  nodeIPFlag: string;
  /** Told the InternalIP each status update determines: pods' hostIP follows the Node's address, as kubelet's. */
  onNodeIP?: (ip: string) => void;
  kubelet: KubeletConfiguration;
  /** The Kubernetes minor the node serves: its kubeletVersion. */
  minor: KubeMinor;
  /** Node events (NodeReady, NodeHasSufficientMemory, ...), e.g. the cluster's event recorder. */
  recordNodeEvent?: (reason: string, message: string) => void;
  log: Logger;
}

/**
 * The deadline of a heartbeat request: kubelet bounds its heartbeat client by nodeStatusUpdateFrequency and the lease
 * duration; nodelet keeps it at 80% of the shorter of the status period and the lease renew interval, so a stalled
 * connection costs one heartbeat, never the next one.
 */
export function heartbeatTimeoutMs(kubelet: KubeletConfiguration): number {
  const renewIntervalMs = kubelet.nodeLeaseDurationSeconds * 1000 * nodeLeaseRenewIntervalFraction;
  return Math.max(1_000, Math.floor(0.8 * Math.min(kubelet.nodeStatusUpdateFrequencyMs, renewIntervalMs)));
}

/**
 * The runtime's status as kubelet would get it from containerd managing this network itself: containerd's CNI
 * configuration names nodelet's shim and is always there, so while nodelet has no network its NetworkReady is
 * containerd's "cni plugin not initialized" instead.
 */
export function withPodNetworkCondition(runtime: NodeHeartbeatsOptions['runtime'], podNetwork: PodNetworkConfig): NodeHeartbeatsOptions['runtime'] {
  return {
    version: (...args) => runtime.version(...args),
    listImages: (...args) => runtime.listImages(...args),
    status: async (...args) => {
      const answer = await runtime.status(...args);
      const notReady = podNetwork.network.notReadyCondition();
      if (!notReady) return answer;
      const own = answer.conditions.find((c) => c.type === notReady.type);
      // containerd's own failure (its shim configuration missing) stays the one reported.
      if (own && !own.status) return answer;
      return { ...answer, conditions: [...answer.conditions.filter((c) => c.type !== notReady.type), notReady] };
    },
  };
}

export class NodeHeartbeats {
  readonly node: NodeController;
  readonly lease: NodeLeaseController;

  /** Builds the controllers; nothing is read or sent before run. */
  constructor(opts: NodeHeartbeatsOptions) {
    const { kubelet, log } = opts;
    const requestTimeoutMs = heartbeatTimeoutMs(kubelet);
    this.node = new NodeController({
      client: opts.client,
      runtime: withPodNetworkCondition(opts.runtime, opts.podNetwork),
      settings: {
        nodeName: opts.nodeName,
        // Without a cloud provider kubelet's hostname is its node name.
        hostname: opts.nodeName,
        nodeIP: opts.nodeIP,
        kubeletVersion: kubeletVersion(opts.minor),
        kubeletPort: kubelet.port,
        maxPods: kubelet.maxPods,
        maxImages: kubelet.nodeStatusMaxImages,
        reservation: { systemReserved: kubelet.systemReserved, kubeReserved: kubelet.kubeReserved, evictionHard: kubelet.evictionHard },
        registerNode: kubelet.registerNode,
        registration: { taints: kubelet.registerWithTaints, providerID: kubelet.providerID },
        nodeStatusUpdateFrequencyMs: kubelet.nodeStatusUpdateFrequencyMs,
        nodeStatusReportFrequencyMs: kubelet.nodeStatusReportFrequencyMs,
        requestTimeoutMs,
        initialPodCIDR: opts.podNetwork.podCIDR,
      },
      machineInfo: () => readMachineInfo(opts.rootDir),
      nodeIP: async () => {
        const ip = chooseNodeIP(opts.nodeIPFlag, opts.nodeName, await readNodeIPFacts(opts.nodeIPFlag));
        opts.onNodeIP?.(ip);
        return ip;
      },
      ...(opts.podNetwork.takesPodCIDR ? { applyPodCIDR: (cidr: string, signal: AbortSignal) => opts.podNetwork.applyPodCIDR(cidr, signal) } : {}),
      ...(opts.recordNodeEvent ? { recordNodeEvent: opts.recordNodeEvent } : {}),
      log: log.child({ node: opts.nodeName }),
    });
    this.lease = new NodeLeaseController({
      client: opts.client,
      nodeName: opts.nodeName,
      leaseDurationSeconds: kubelet.nodeLeaseDurationSeconds,
      requestTimeoutMs,
      nodeUID: () => this.node.uid,
      log: log.child({ node: opts.nodeName, lease: `kube-node-lease/${opts.nodeName}` }),
    });
  }

  /** Registers the node and keeps its status and lease current until the signal aborts; never blocks the pods. */
  async run(signal: AbortSignal): Promise<void> {
    // The Lease is created once the Node exists (its owner): started then, it appears with the Node, not a renew
    // interval later.
    const aborted = new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    const lease = Promise.race([this.node.whenRegistered(), aborted]).then(() => (signal.aborted ? undefined : this.lease.run(signal)));
    await Promise.all([this.node.run(signal), lease]);
  }
}
