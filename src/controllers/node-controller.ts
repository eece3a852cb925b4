// Registers the node with the API server and keeps its status current (kubelet's registerWithAPIServer and node status loop).
import type { V1Node } from '@kubernetes/client-node';
import type { Image, ImageService, RuntimeService } from '../cri/types.js';
import type { MachineInfo } from '../host/machine-info.js';
import type { Logger } from '../core/log.js';
import { isAlreadyExists, isNotFound, mergePatch, strategicMergePatch } from '../kubeapi/client.js';
import { systemClock, type Clock } from '../core/clock.js';
import type { NodeReservation } from '../host/allocatable.js';
import type { ApiRequester } from './node-lease.js';
import {
  initialNode,
  isNodeReady,
  nodeConditionEvents,
  nodeStatusHasChanged,
  nodeStatusPatch,
  reconcileOwnedLabels,
  RuntimeState,
  setNodeStatus,
  type NodeRegistration,
  type NodeStatusInputs,
} from './node-status.js';

/** kubelet's nodeStatusUpdateRetry: attempts per status update before waiting for the next period. */
const nodeStatusUpdateRetry = 5;
/** kubelet checks the runtime's status (updateRuntimeUp) every 5 s. */
export const runtimeCheckPeriodMs = 5_000;
/** Registration back-off as kubelet's registerWithAPIServer: 100 ms doubling up to 7 s. */
const registerInitialBackoffMs = 100;
const registerMaxBackoffMs = 7_000;
/** A refused Node.spec.podCIDR is tried again after 10 s, then twice as long each time, at most 5 minutes apart. */
const podCIDRFirstRetryMs = 10_000;
const podCIDRMaxRetryMs = 300_000;

export interface NodeControllerSettings {
  nodeName: string;
  hostname: string;
  nodeIP: string;
  kubeletVersion: string;
  kubeletPort: number;
  maxPods: number;
  maxImages: number;
  reservation: NodeReservation;
  /** kubelet's registerNode: false only updates an existing Node's status. */
  registerNode: boolean;
  registration: NodeRegistration;
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  /** Deadline of each request (heartbeats must not hang on a stalled connection). */
  requestTimeoutMs: number;
  /** The pod range the agent started with (--pod-cidr or the conflist's), to tell a new Node.spec.podCIDR from it. */
  initialPodCIDR?: string;
}

export interface NodeControllerOptions {
  client: ApiRequester;
  runtime: Pick<RuntimeService, 'version' | 'status'> & Pick<ImageService, 'listImages'>;
  settings: NodeControllerSettings;
  /** Reads the machine's facts (once, when run starts). */
  machineInfo: () => Promise<MachineInfo>;
  /**
   * The node's InternalIP now (kubelet's NodeAddress setter runs at every status update, so a host whose address
   * changes reports the new one); rejects with the reason when there is none. Without it settings.nodeIP stays.
   */
  nodeIP?: () => Promise<string>;
  /**
   * Points the pod network at Node.spec.podCIDR for new pods; rejects (with a message saying why) when the range
   * cannot be used, e.g. because it overlaps host routes.
   */
  applyPodCIDR?: (cidr: string, signal: AbortSignal) => Promise<void>;
  /** Records a Normal event about the Node (kubelet's recordNodeStatusEvent), e.g. the event recorder's nodeEvent. */
  recordNodeEvent?: (reason: string, message: string) => void;
  log: Logger;
  clock?: Pick<Clock, 'now' | 'sleep'>;
}

const nodePath = (name: string, sub = '') => `/api/v1/nodes/${encodeURIComponent(name)}${sub}`;

/** A set-once promise for "the node is registered". */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

export class NodeController {
  /** What the last container runtime status check said (Ready's reasons; the pod network's readiness for pod sync). */
  readonly runtimeState = new RuntimeState();
  private readonly clock: Pick<Clock, 'now' | 'sleep'>;
  private readonly registeredNode = deferred<V1Node>();
  private latestNode: V1Node | undefined;
  private machine: MachineInfo | undefined;
  private runtimeInfo: { name: string; version: string } | undefined;
  private images: Image[] | undefined;
  private lastReportAt: number | undefined;
  private appliedPodCIDR: string | undefined;
  private refusedPodCIDR: string | undefined;
  /** A refused range is tried again at this time (ms), the wait doubling per refusal up to 5 minutes. */
  private podCIDRRetryAt = 0;
  private podCIDRRetryDelayMs = 0;
  private wake: AbortController = new AbortController();
  private lastReadySummary: string | undefined;
  /** The InternalIP as last determined; undefined while it cannot be (the Node's addresses are left as they are). */
  private nodeIP: string | undefined;
  private nodeIPError: string | undefined;

  constructor(private readonly opts: NodeControllerOptions) {
    this.clock = opts.clock ?? systemClock;
    this.appliedPodCIDR = opts.settings.initialPodCIDR || undefined;
    this.nodeIP = opts.settings.nodeIP;
  }

  /** Whether the Node exists in the API server (registered or adopted). */
  get registered(): boolean {
    return this.latestNode?.metadata?.uid !== undefined;
  }

  /** The Node's UID, once registered. */
  get uid(): string | undefined {
    return this.latestNode?.metadata?.uid;
  }

  /** Node.spec.podCIDR as last read (set by a controller manager), if any. */
  get podCIDR(): string | undefined {
    return this.latestNode?.spec?.podCIDR || undefined;
  }

  /** The Node as last read or written. */
  get node(): V1Node | undefined {
    return this.latestNode;
  }

  /**
   * The Node as a watch saw it: a new Node.spec.podCIDR is applied by a status update now rather than at the next period
   * (kubelet's fastStatusUpdateOnce reads its node lister every 100 ms until the node is ready).
   */
  nodeObserved(node: V1Node): void {
    const cidr = node.spec?.podCIDR;
    if (cidr && cidr !== this.appliedPodCIDR && cidr !== this.refusedPodCIDR && this.opts.applyPodCIDR) this.wake.abort();
  }

  /** Resolves with the Node once it exists in the API server. */
  whenRegistered(): Promise<V1Node> {
    return this.registeredNode.promise;
  }

  /** Registers (with back-off, not blocking anything else), then updates the status every period until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    this.machine = await this.opts.machineInfo();
    const runtimeLoop = this.runRuntimeChecks(signal);
    try {
      // One runtime check first, so that the Node is not registered NotReady only for lack of asking.
      await this.checkRuntime(signal);
      if (this.opts.settings.registerNode) await this.registerWithAPIServer(signal);
      await this.runStatusLoop(signal);
    } finally {
      await runtimeLoop;
    }
  }

  private inputs(): NodeStatusInputs {
    const s = this.opts.settings;
    return {
      nodeName: s.nodeName,
      hostname: s.hostname,
      nodeIP: this.nodeIP,
      machine: this.machine!,
      kubeletVersion: s.kubeletVersion,
      kubeletPort: s.kubeletPort,
      maxPods: s.maxPods,
      reservation: s.reservation,
      runtime: this.runtimeInfo,
      readyErrors: this.runtimeState.readyErrors(this.clock.now()),
      images: this.images,
      maxImages: s.maxImages,
      runtimeHandlers: this.runtimeState.handlers,
    };
  }

  /** Determines the InternalIP again, as kubelet's NodeAddress setter; a failure is logged once per reason. */
  private async refreshNodeIP(): Promise<void> {
    if (!this.opts.nodeIP) return;
    const { log, settings } = this.opts;
    try {
      const ip = await this.opts.nodeIP();
      if (ip !== this.nodeIP) log.info({ node: settings.nodeName, nodeIP: ip, previous: this.nodeIP }, 'Node InternalIP changed');
      this.nodeIP = ip;
      this.nodeIPError = undefined;
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.nodeIPError) log.error({ err, node: settings.nodeName }, 'Failed to set some node status fields');
      this.nodeIPError = message;
      this.nodeIP = undefined;
    }
  }

  private recordConditionEvents(before: V1Node | undefined, after: V1Node): void {
    const name = this.opts.settings.nodeName;
    for (const reason of nodeConditionEvents(before, after)) this.opts.recordNodeEvent?.(reason, `Node ${name} status is now: ${reason}`);
  }

  private adopt(node: V1Node): void {
    this.latestNode = node;
    if (node.metadata?.uid) this.registeredNode.resolve(node);
  }

  // ---- the container runtime's status (kubelet's updateRuntimeUp) ----

  private async runRuntimeChecks(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.clock.sleep(runtimeCheckPeriodMs, signal);
      if (!signal.aborted) await this.checkRuntime(signal);
    }
  }

  private async checkRuntime(signal: AbortSignal): Promise<void> {
    const timeoutMs = Math.min(this.opts.settings.requestTimeoutMs, runtimeCheckPeriodMs);
    try {
      if (!this.runtimeInfo) {
        const v = await this.opts.runtime.version({ signal, timeoutMs });
        this.runtimeInfo = { name: v.runtimeName, version: v.runtimeVersion };
      }
      this.runtimeState.update(await this.opts.runtime.status({ signal, timeoutMs }), this.clock.now());
    } catch (err) {
      if (signal.aborted) return;
      // Nothing recorded: once the last good answer is 30 s old, Ready says "container runtime is down".
      this.opts.log.warn({ err }, 'Container runtime status check failed');
    }
    // A change of readiness is reported at once rather than at the next period.
    const summary = this.runtimeState.readyErrors(this.clock.now()).join('\n');
    if (this.lastReadySummary !== undefined && summary !== this.lastReadySummary) this.wake.abort();
    this.lastReadySummary = summary;
  }

  // ---- registration ----

  private async registerWithAPIServer(signal: AbortSignal): Promise<void> {
    let stepMs = registerInitialBackoffMs;
    const name = this.opts.settings.nodeName;
    for (let attempt = 0; !signal.aborted; attempt++) {
      if (attempt > 0) {
        await this.clock.sleep(stepMs, signal);
        stepMs = Math.min(stepMs * 2, registerMaxBackoffMs);
        if (signal.aborted) return;
      }
      this.opts.log.info({ node: name }, 'Attempting to register node');
      try {
        await this.tryRegister(signal);
        this.opts.log.info({ node: name, uid: this.uid }, 'Successfully registered node');
        return;
      } catch (err) {
        if (signal.aborted) return;
        this.opts.log.error({ err, node: name, retryInMs: stepMs }, 'Unable to register node with API server');
      }
    }
  }

  /** POST the Node; if it exists, adopt it: the labels kubelet owns are reconciled, everything else is kept. */
  private async tryRegister(signal: AbortSignal): Promise<void> {
    const { client, settings } = this.opts;
    await this.refreshNodeIP();
    const wanted = initialNode(this.inputs(), settings.registration, new Date(this.clock.now()));
    const timeoutMs = settings.requestTimeoutMs;
    try {
      this.adopt(await client.request<V1Node>({ method: 'POST', path: '/api/v1/nodes', body: wanted, timeoutMs, signal }));
      this.recordConditionEvents(undefined, wanted);
      // The new Node carries a full status: that is a report.
      this.lastReportAt = this.clock.now();
      return;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    const existing = await client.request<V1Node>({ method: 'GET', path: nodePath(settings.nodeName), timeoutMs, signal });
    this.opts.log.info({ node: settings.nodeName, uid: existing.metadata?.uid }, 'Node was previously registered');
    const labels = reconcileOwnedLabels(existing, wanted);
    if (!labels) {
      this.adopt(existing);
      return;
    }
    this.opts.log.info({ node: settings.nodeName, labels }, 'Reconciling the labels kubelet owns on the existing node');
    this.adopt(
      await client.request<V1Node>({
        method: 'PATCH',
        path: nodePath(settings.nodeName),
        contentType: mergePatch,
        body: { metadata: { labels } },
        timeoutMs,
        signal,
      }),
    );
  }

  // ---- status updates ----

  private async runStatusLoop(signal: AbortSignal): Promise<void> {
    const { settings, log } = this.opts;
    while (!signal.aborted) {
      let lastError: unknown;
      for (let attempt = 0; attempt < nodeStatusUpdateRetry && !signal.aborted; attempt++) {
        try {
          await this.tryUpdateNodeStatus(attempt, signal);
          lastError = undefined;
          break;
        } catch (err) {
          lastError = err;
          if (!signal.aborted) log.warn({ err, node: settings.nodeName, attempt: attempt + 1 }, 'Error updating node status, will retry');
        }
      }
      if (lastError !== undefined && !signal.aborted) log.error({ node: settings.nodeName }, 'Unable to update node status: update node status exceeds retry count');
      // Sleep until the next period, or until the runtime's readiness changes (also while this update ran).
      if (!this.wake.signal.aborted) await this.clock.sleep(settings.nodeStatusUpdateFrequencyMs, AbortSignal.any([signal, this.wake.signal]));
      this.wake = new AbortController();
    }
  }

  private async refreshImages(signal: AbortSignal): Promise<void> {
    try {
      this.images = await this.opts.runtime.listImages({ signal, timeoutMs: Math.min(this.opts.settings.requestTimeoutMs, runtimeCheckPeriodMs) });
    } catch (err) {
      if (!signal.aborted) this.opts.log.debug({ err }, 'Could not list images for the node status; keeping the last list');
    }
  }

  /** One status update: read the Node, apply the pod CIDR, compute the status, patch it if changed or due. */
  private async tryUpdateNodeStatus(attempt: number, signal: AbortSignal): Promise<void> {
    const { client, settings } = this.opts;
    let node: V1Node;
    try {
      node = await client.request<V1Node>({
        method: 'GET',
        path: nodePath(settings.nodeName),
        // kubelet's first try reads from the API server's cache (resourceVersion 0); retries read the latest.
        ...(attempt === 0 ? { query: { resourceVersion: '0' } } : {}),
        timeoutMs: settings.requestTimeoutMs,
        signal,
      });
    } catch (err) {
      if (isNotFound(err)) {
        throw new Error(`node "${settings.nodeName}" not found${settings.registerNode ? ' (deleted after registration; kubelet registers again only when restarted)' : ' (registerNode is false)'}`, { cause: err });
      }
      throw err;
    }
    this.adopt(node);
    const podCIDRChanged = await this.updatePodCIDR(node.spec?.podCIDR, signal);
    // As kubelet's fast status update after updatePodCIDR: the runtime's network may be ready now, and this update says so.
    if (podCIDRChanged) await this.checkRuntime(signal);
    await this.refreshImages(signal);
    await this.refreshNodeIP();

    const now = new Date(this.clock.now());
    const updated = setNodeStatus(node, this.inputs(), now);
    const due = this.lastReportAt === undefined || now.getTime() >= this.lastReportAt + settings.nodeStatusReportFrequencyMs;
    const readyChanged = isNodeReady(node) !== isNodeReady(updated);
    if (!due && !podCIDRChanged && !nodeStatusHasChanged(node.status, updated.status)) return;

    const patched = await client.request<V1Node>({
      method: 'PATCH',
      path: nodePath(settings.nodeName, '/status'),
      contentType: strategicMergePatch,
      body: nodeStatusPatch(node.status, updated.status!),
      timeoutMs: settings.requestTimeoutMs,
      signal,
    });
    this.lastReportAt = now.getTime();
    this.recordConditionEvents(node, updated);
    if (readyChanged) {
      this.opts.log.info({ node: settings.nodeName, ready: isNodeReady(patched) }, isNodeReady(patched) ? 'Node became ready' : 'Node became not ready');
    }
    this.adopt(patched);
  }

  /** kubelet's updatePodCIDR: a new Node.spec.podCIDR reconfigures the pod network (new pods only). Returns whether it changed. */
  private async updatePodCIDR(cidr: string | undefined, signal: AbortSignal): Promise<boolean> {
    if (!cidr || cidr === this.appliedPodCIDR || !this.opts.applyPodCIDR) return false;
    const now = this.clock.now();
    if (cidr === this.refusedPodCIDR && now < this.podCIDRRetryAt) return false;
    try {
      await this.opts.applyPodCIDR(cidr, signal);
    } catch (err) {
      if (signal.aborted) return false;
      // Logged once per refused range; it is tried again later (host routes and the bridge may change), backing off
      // as each try runs `ip` on the host.
      if (this.refusedPodCIDR !== cidr) {
        this.opts.log.error({ err, podCIDR: cidr }, 'Cannot use the node pod CIDR; new pods keep the previous range');
        this.podCIDRRetryDelayMs = 0;
      }
      this.refusedPodCIDR = cidr;
      this.podCIDRRetryDelayMs = Math.min(Math.max(2 * this.podCIDRRetryDelayMs, podCIDRFirstRetryMs), podCIDRMaxRetryMs);
      this.podCIDRRetryAt = now + this.podCIDRRetryDelayMs;
      return false;
    }
    this.opts.log.info({ podCIDR: cidr, previous: this.appliedPodCIDR }, 'Pod network now allocates from the node pod CIDR (running pods keep their IPs)');
    this.appliedPodCIDR = cidr;
    this.refusedPodCIDR = undefined;
    return true;
  }
}
