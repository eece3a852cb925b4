// The pod network as the agent sees it: the network new sandboxes join (or none yet), each sandbox's own, and their IPs.
import { logger as rootLogger, type Logger } from '../core/log.js';
import type { RuntimeCondition } from '../cri/types.js';
import type { CniExecutor, GarbageCollectReport } from './executor.js';
import { podIdentity, resultPodIPs } from './protocol.js';
import { CniError, CniErrorCode, type CniResult, type CniRuntimeConf, type NetConfList } from './types.js';

export interface PodNetworkOptions {
  executor: CniExecutor;
  /** The network new sandboxes join; undefined while the configuration directory offers none. */
  main: NetConfList | undefined;
  /** Attachments younger than this are never garbage (default 2 minutes). */
  gcGracePeriodMs?: number;
  log?: Logger;
}

const LOOPBACK_IFNAME = 'lo';

/**
 * containerd's NetworkReady condition while it has no network configuration (its CRI Status: reason
 * networkNotReadyReason, "Network plugin returns error: %v" of go-cni's ErrCNINotInitialized).
 */
export const NETWORK_PLUGIN_NOT_READY: RuntimeCondition = {
  type: 'NetworkReady',
  status: false,
  reason: 'NetworkPluginNotReady',
  message: 'Network plugin returns error: cni plugin not initialized',
};

/**
 * containerd lists a sandbox only once RunPodSandbox is done, well after its CNI ADD; an attachment this young
 * may belong to a sandbox that is still being created (possibly by a previous agent process).
 */
export const DEFAULT_GC_GRACE_PERIOD_MS = 120_000;

export class PodNetwork {
  readonly executor: CniExecutor;
  #main: NetConfList | undefined;
  readonly #log: Logger | undefined;
  readonly #gcGracePeriodMs: number;
  /** Each sandbox's ADD result (of whichever network it joined) by sandbox id: the source of pod IPs. */
  readonly #results = new Map<string, CniResult>();
  /** The tail of each sandbox's queue of operations; the spec forbids parallel operations on one container. */
  readonly #queues = new Map<string, Promise<unknown>>();
  /** Sandboxes this process has networked: never garbage, whatever a (possibly older) live list says. */
  readonly #touched = new Set<string>();

  private constructor(opts: PodNetworkOptions) {
    this.executor = opts.executor;
    this.#main = opts.main;
    this.#log = opts.log;
    this.#gcGracePeriodMs = opts.gcGracePeriodMs ?? DEFAULT_GC_GRACE_PERIOD_MS;
  }

  /**
   * Creates the pod network and loads the cached results of every sandbox nodelet attached, whatever network it
   * joined (pod IPs survive agent restarts and network changes).
   */
  static async create(opts: PodNetworkOptions): Promise<PodNetwork> {
    const network = new PodNetwork(opts);
    for (const attachment of await opts.executor.cachedAttachments()) {
      if (attachment.managed && attachment.result && attachment.ifName !== LOOPBACK_IFNAME) network.#results.set(attachment.containerId, attachment.result);
    }
    return network;
  }

  /** The network new sandboxes are attached to; undefined while there is none. */
  get main(): NetConfList | undefined {
    return this.#main;
  }

  /**
   * Sets the network sandboxes set up from now on join (another file of the configuration directory, host-local
   * allocating from the node's new pod CIDR, or none). Existing sandboxes keep theirs: each is torn down with the
   * configuration its cached ADD result records.
   */
  setMain(list: NetConfList | undefined): void {
    this.#main = list;
  }

  /** The NetworkReady condition the container runtime would report for this network: undefined when ready. */
  notReadyCondition(): RuntimeCondition | undefined {
    return this.#main ? undefined : NETWORK_PLUGIN_NOT_READY;
  }

  #logger(rt: CniRuntimeConf): Logger {
    const pod = podIdentity(rt.args);
    return (this.#log ?? rootLogger).child({ ...(pod ? { pod } : {}), sandboxId: rt.containerId });
  }

  /** Runs `op` after every earlier operation on the same sandbox has finished. */
  async #serialized<T>(sandboxId: string, op: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(sandboxId) ?? Promise.resolve();
    const run = previous.then(op, op);
    const tail = run.catch(() => undefined);
    this.#queues.set(sandboxId, tail);
    try {
      return await run;
    } finally {
      if (this.#queues.get(sandboxId) === tail) this.#queues.delete(sandboxId);
    }
  }

  /**
   * Attaches a sandbox to the main network on `rt.ifName` and returns the result. Loopback is not the agent's:
   * containerd's CRI brings up "lo" itself (go-cni's built-in loopback network) before calling the CNI plugin
   * in its conf dir, which is the agent's shim. On failure what was set up is torn down before the error is
   * rethrown, so no IP stays reserved.
   */
  async setUp(rt: CniRuntimeConf, signal?: AbortSignal): Promise<CniResult> {
    return this.#serialized(rt.containerId, async () => {
      this.#touched.add(rt.containerId);
      const log = this.#logger(rt);
      // The network of this moment: a configuration change during the ADD is for the next sandbox.
      const list = this.#main;
      if (!list) throw new CniError({ code: CniErrorCode.TryAgainLater, msg: NETWORK_PLUGIN_NOT_READY.message });
      try {
        const result = await this.executor.add(list, rt, signal);
        this.#results.set(rt.containerId, result);
        log.info({ network: list.name, source: list.source, ips: resultPodIPs(result), netns: rt.netns }, 'pod network set up');
        return result;
      } catch (err) {
        log.warn({ err, network: list.name }, 'pod network setup failed; undoing it');
        try {
          await this.#tearDown(rt, list);
        } catch (cleanupErr) {
          log.warn({ err: cleanupErr }, 'undoing a failed pod network setup failed');
        }
        throw err;
      }
    });
  }

  /**
   * Detaches a sandbox from the network it joined (then a loopback attachment of older agents). Idempotent: a second
   * call finds nothing and succeeds.
   */
  async tearDown(rt: CniRuntimeConf, signal?: AbortSignal): Promise<void> {
    await this.#serialized(rt.containerId, async () => {
      this.#touched.add(rt.containerId);
      await this.#tearDown(rt, undefined, signal);
      // Nothing is cached for the sandbox any more, so garbage collection has nothing to take from it.
      this.#touched.delete(rt.containerId);
      this.#logger(rt).info({ netns: rt.netns }, 'pod network torn down');
    });
  }

  /**
   * The sandbox's network is the one its cached ADD record names (configuration included), whatever the directory says
   * now; a record the ADD left without a result (it failed or the agent died) is deleted without prevResult. Without a
   * record (it could not be written, or a DEL already removed it) the plugins of `list`, else of the current network,
   * run without prevResult: DEL releases what they may still hold.
   */
  async #tearDown(rt: CniRuntimeConf, list?: NetConfList, signal?: AbortSignal): Promise<void> {
    const attachments = (await this.executor.cachedAttachments({ containerId: rt.containerId })).filter((a) => a.managed);
    const opts = { netns: rt.netns, ...(signal ? { signal } : {}) };
    let mainError: unknown;
    try {
      const joined = attachments.filter((a) => a.ifName === rt.ifName);
      for (const attachment of joined) await this.executor.delCached(attachment, opts);
      const fallback = list ?? this.#main;
      if (joined.length === 0 && fallback) await this.executor.del(fallback, rt, signal);
      this.#results.delete(rt.containerId);
    } catch (err) {
      mainError = err;
    }
    // Agents before containerd's own loopback was relied on attached "lo" too: such a record is deleted even when
    // the main network failed.
    for (const attachment of attachments.filter((a) => a.ifName === LOOPBACK_IFNAME && rt.ifName !== LOOPBACK_IFNAME)) {
      await this.executor.delCached(attachment, opts);
    }
    if (mainError !== undefined) throw mainError;
  }

  /** Asks the plugins of the sandbox's own network whether it is still as set up. */
  async check(rt: CniRuntimeConf, signal?: AbortSignal): Promise<void> {
    await this.#serialized(rt.containerId, async () => {
      const attachment = (await this.executor.cachedAttachments({ containerId: rt.containerId })).find((a) => a.managed && a.ifName === rt.ifName);
      if (!attachment) {
        throw new CniError({ code: CniErrorCode.UnknownContainer, msg: `no cached ADD result for container ${rt.containerId} interface ${rt.ifName}` });
      }
      await this.executor.check(attachment.config, rt, signal);
    });
  }

  /** The sandbox's IPs (bare, IPv4 first), or undefined when the sandbox has no main-network attachment. */
  podIPs(sandboxId: string): string[] | undefined {
    const result = this.#results.get(sandboxId);
    return result ? resultPodIPs(result) : undefined;
  }

  /**
   * Removes the attachments of sandboxes that are gone (e.g. removed while the agent was down). Sandboxes
   * this process has set up and not torn down, or is working on, are kept even when missing from
   * `liveSandboxIds`, and so are attachments younger than the grace period: the list may predate them.
   */
  async garbageCollect(liveSandboxIds: Set<string>, signal?: AbortSignal): Promise<GarbageCollectReport> {
    const keep = new Set([...liveSandboxIds, ...this.#touched, ...this.#queues.keys()]);
    // Every network nodelet attached sandboxes to: a pod keeps its network across configuration changes.
    const report = await this.executor.garbageCollect(keep, { minAgeMs: this.#gcGracePeriodMs, ...(signal ? { signal } : {}) });
    for (const removed of report.removed) {
      if (removed.ifName !== LOOPBACK_IFNAME) this.#results.delete(removed.containerId);
    }
    return report;
  }
}
