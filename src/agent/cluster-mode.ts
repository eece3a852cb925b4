// Cluster mode (--kubeconfig): the API server connection, the API pod source and the controllers that work with it,
// beside the pod workers. The pod config's node admission, status manager and mirror pods come from here; controllers
// that talk to the API server start in ClusterMode.run.
import type { V1Node } from '@kubernetes/client-node';
import type { RuntimeHandler } from '../cri/types.js';
import type { AgentConfig } from './agent-config.js';
import type { PodNetworkConfig } from './pod-network-config.js';
import type { CriClient } from '../cri/client.js';
import { NodeHeartbeats } from './node-heartbeats.js';
import { KubeClient } from '../kubeapi/client.js';
import { ApiEventRecorder } from '../controllers/event-recorder.js';
import { loadKubeconfig, type ApiServerConnection } from '../kubeapi/kubeconfig.js';
import type { ClientCertificateRotation } from '../bootstrap/rotation.js';
import { systemClock } from '../core/clock.js';
import { MirrorPodManager } from '../controllers/mirror-pods.js';
import { ClusterObjectSource } from '../controllers/object-managers.js';
import { Reflector } from '../kubeapi/reflector.js';
import { StatusManager } from '../controllers/status-manager.js';
import { ServiceInformer } from '../controllers/service-informer.js';
import { formatResourceList, type NodeResources } from '../host/allocatable.js';
import { goArch } from '../host/machine-info.js';
import type { Logger } from '../core/log.js';
import type { PodWorkers } from '../lifecycle/pod-workers.js';
import { ApiPodSource } from '../sources/api-source.js';
import type { PodConfig } from '../podconfig/pod-config.js';
import type { KubeMinor } from '../core/kube-minor.js';
import { readApiServerMinor } from './api-server-version.js';

export interface ClusterModeOptions {
  kubeconfig: string;
  nodeName: string;
  log: Logger;
  /** kubelet's kubeAPIQPS / kubeAPIBurst. */
  kubeAPIQPS?: number;
  kubeAPIBurst?: number;
}

/** What the agent hands cluster mode: its configuration and the parts the Node's status is read from. */
export interface ClusterModeDeps {
  config: AgentConfig;
  nodeName: string;
  nodeIP: string;
  /** Told the node's InternalIP as each status update determines it. */
  onNodeIP?: (ip: string) => void;
  runtime: CriClient;
  podNetwork: PodNetworkConfig;
  /** This machine's allocatable under the configured reservations. */
  allocatable: () => Promise<NodeResources>;
  log: Logger;
  /** Ends a TLS bootstrap that waits for its certificate. */
  signal?: AbortSignal;
}

/** Cluster mode's settings from the agent's configuration. */
function clusterModeOptions(config: AgentConfig, nodeName: string, log: Logger): ClusterModeOptions {
  return {
    kubeconfig: config.kubeconfig,
    nodeName,
    log,
    kubeAPIQPS: config.kubelet.kubeAPIQPS,
    kubeAPIBurst: config.kubelet.kubeAPIBurst,
  };
}

/** The node as admission sees it before it is registered (kubelet's initial node): local allocatable and labels. */
async function localNode(opts: ClusterModeOptions, allocatable: NodeResources): Promise<V1Node> {
  return {
    metadata: {
      name: opts.nodeName,
      labels: { 'kubernetes.io/hostname': opts.nodeName, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': goArch() },
    },
    status: { allocatable: formatResourceList(allocatable) },
  };
}

export class ClusterMode {
  readonly status: StatusManager;
  readonly mirrors: MirrorPodManager;
  /** kubelet's events, written to the API server. */
  readonly events: ApiEventRecorder;
  /** The configMaps, secrets and service account tokens the pods' volumes and env read (kubelet's object and token managers). */
  readonly objects: ClusterObjectSource;
  /** Every Service of the cluster, for the pods' service environment variables (kubelet's serviceLister). */
  readonly services: ServiceInformer;
  /** This node's Node object as the API server has it (list + watch by name); undefined until registered. */
  private registeredNode?: V1Node;
  private readonly nodeReflector: Reflector<V1Node>;
  /** The pod config the API's pods go to; set when run starts. */
  private podConfig?: PodConfig;
  /** The Node's registration and status, and its Lease. */
  private readonly heartbeats: NodeHeartbeats;
  /** rotateCertificates: renews the kubeconfig's client certificate while the agent runs. */
  private rotation?: ClientCertificateRotation;

  private constructor(
    readonly client: KubeClient,
    /** kubelet writes events through a client of their own, so a burst of them cannot delay status writes. */
    private readonly eventClient: KubeClient,
    private readonly opts: ClusterModeOptions,
    private readonly fallbackNode: V1Node,
    /** The API server's Kubernetes minor, which this node serves (its kubeletVersion and feature gates). */
    readonly minor: KubeMinor,
    deps: ClusterModeDeps,
  ) {
    const { log, nodeName } = opts;
    // The Node and its Lease: registered and renewed beside the pods, which never wait for them (static pods run first).
    this.heartbeats = new NodeHeartbeats({
      client,
      runtime: deps.runtime,
      podNetwork: deps.podNetwork,
      rootDir: deps.config.rootDir,
      nodeName,
      nodeIP: deps.nodeIP,
      nodeIPFlag: deps.config.nodeIP,
      ...(deps.onNodeIP ? { onNodeIP: deps.onNodeIP } : {}),
      kubelet: deps.config.kubelet,
      minor,
      recordNodeEvent: (reason, message) => this.events.nodeEvent('Normal', reason, message),
      log,
    });
    this.status = new StatusManager({ client, log });
    this.events = new ApiEventRecorder({ client: eventClient, nodeName, log });
    this.objects = new ClusterObjectSource({ client, log, nodeName, nodeUid: () => this.registeredNode?.metadata?.uid, events: this.events });
    this.services = new ServiceInformer({ client, log });
    this.mirrors = new MirrorPodManager({ client, nodeName, log, nodeUid: async () => this.registeredNode?.metadata?.uid });
    this.nodeReflector = new Reflector<V1Node>({
      client,
      path: '/api/v1/nodes',
      fieldSelector: `metadata.name=${nodeName}`,
      what: `node ${nodeName}`,
      log,
      onChange: (nodes) => {
        const wasRegistered = !!this.registeredNode;
        this.registeredNode = nodes.find((n) => n.metadata?.name === nodeName);
        if (this.registeredNode) this.heartbeats.node.nodeObserved(this.registeredNode);
        // Mirror pods wait for the node's UID (their owner reference).
        if (!wasRegistered && this.registeredNode) this.podConfig?.resyncMirrors();
      },
    });
  }

  /**
   * Connects to the API server named by the kubeconfig and reads its version, refusing an unsupported one; the
   * controllers' requests are made in run. A TLS bootstrap asks the version with the bootstrap kubeconfig, before its
   * certificate signing request.
   */
  static async create(deps: ClusterModeDeps): Promise<ClusterMode> {
    const { config, nodeName, log } = deps;
    const signal = deps.signal ?? new AbortController().signal;
    const opts = clusterModeOptions(config, nodeName, log);
    let minor: KubeMinor | undefined;
    if (config.bootstrapKubeconfig) {
      const { loadClientCertificate, kubeconfigProblem } = await import('../bootstrap/tls-bootstrap.js');
      if (await kubeconfigProblem(config.kubeconfig, systemClock.now())) {
        const bootstrapClient = new KubeClient(await loadKubeconfig(config.bootstrapKubeconfig), { userAgent: `nodelet/${opts.nodeName} (bootstrap)` });
        try {
          minor = await readApiServerMinor(bootstrapClient, log, signal);
        } finally {
          bootstrapClient.close();
        }
      }
      await loadClientCertificate({
        kubeconfig: config.kubeconfig,
        bootstrapKubeconfig: config.bootstrapKubeconfig,
        certDir: config.certDir,
        nodeName,
        clock: systemClock,
        log,
        signal,
      });
    }
    const conn = await loadKubeconfig(opts.kubeconfig);
    const rotation = config.kubelet.rotateCertificates ? await clientCertificateRotation(conn, config, nodeName, log) : undefined;
    const clientCertificate = rotation ? { clientCertificate: rotation } : {};
    const client = new KubeClient(conn, { qps: opts.kubeAPIQPS ?? 50, burst: opts.kubeAPIBurst ?? 100, userAgent: `nodelet/${opts.nodeName}`, ...clientCertificate });
    try {
      minor ??= await readApiServerMinor(client, log, signal);
    } catch (err) {
      client.close();
      throw err;
    }
    // kubelet's eventRecordQPS and eventBurst defaults.
    const eventClient = new KubeClient(conn, { qps: 50, burst: 100, userAgent: `nodelet/${opts.nodeName}`, ...clientCertificate });
    const mode = new ClusterMode(client, eventClient, opts, await localNode(opts, await deps.allocatable()), minor, deps);
    mode.rotation = rotation;
    return mode;
  }

  /** The node as admission sees it: the registered Node; one registered without allocatable yet (its status comes with the first status update) counts the local one. */
  admissionNode(): V1Node {
    return this.registeredNode?.status?.allocatable
      ? this.registeredNode
      : { ...this.fallbackNode, ...this.registeredNode, status: { ...this.registeredNode?.status, allocatable: this.fallbackNode.status!.allocatable! } };
  }

  /** The runtime's handlers as the node status's last runtime check listed them; undefined before the first. */
  runtimeHandlers(): RuntimeHandler[] | undefined {
    return this.heartbeats.node.runtimeState.handlers();
  }

  /** Runs the API pod source, feeding `podConfig`, and the API controllers until the signal aborts. */
  async run(podConfig: PodConfig, workers: PodWorkers, signal: AbortSignal): Promise<void> {
    this.podConfig = podConfig;
    // A changed configMap or secret is rewritten into the volumes of the pods that read it at their next sync: now.
    this.objects.onPodsChanged = (uids) => workers.wakePods(uids);
    const { log, nodeName } = this.opts;
    const api = new ApiPodSource({ client: this.client, nodeName, log, onPods: (pods, mirrorPods) => podConfig.setApiPods(pods, mirrorPods) });
    const tasks = [api.run(signal), this.nodeReflector.run(signal), this.heartbeats.run(signal), this.services.run(signal), this.rotation?.run(this.client, signal)];
    log.info({ server: this.client.server, node: nodeName }, 'Cluster mode: watching the pods bound to this node');
    this.events.nodeEvent('Normal', 'Starting', 'Starting kubelet.');
    try {
      await Promise.all(tasks);
    } finally {
      this.status.stop();
      this.objects.stop();
      this.mirrors.stop();
      this.events.stop();
      this.client.close();
      this.eventClient.close();
    }
  }
}

/**
 * The rotation of the kubeconfig's client certificate into --cert-dir (kubelet's client certificate manager), or
 * undefined when the kubeconfig authenticates otherwise (a token) or its certificate cannot be read.
 */
async function clientCertificateRotation(conn: ApiServerConnection, config: AgentConfig, nodeName: string, log: Logger): Promise<ClientCertificateRotation | undefined> {
  if (!conn.cert || !conn.key) return undefined;
  const { ClientCertificateRotation } = await import('../bootstrap/rotation.js');
  const { CertificateStore } = await import('../bootstrap/cert-store.js');
  const store = new CertificateStore(config.certDir);
  // As client-go's file store: the store's current pair, when valid, wins over the kubeconfig's (a kubeconfig that names
  // other files keeps naming the pair rotation replaced).
  const stored = await store.current().catch(() => undefined);
  const now = systemClock.now();
  const initial = stored && stored.notBefore <= now && now < stored.notAfter ? { cert: Buffer.from(stored.certPem), key: Buffer.from(stored.keyPem) } : { cert: conn.cert, key: conn.key };
  try {
    return new ClientCertificateRotation({ store, initial, nodeName, clock: systemClock, log });
  } catch (err) {
    log.warn({ err, kubeconfig: conn.source }, 'Client certificate rotation is off: the kubeconfig\'s client certificate cannot be read');
    return undefined;
  }
}
