// The pod network as the agent sees it: the main network per sandbox, with the sandboxes' IPs.
import { logger as rootLogger, type Logger } from '../core/log.js';
import type { CniExecutor, GarbageCollectReport } from './executor.js';
import { podIdentity, resultPodIPs } from './protocol.js';
import type { CniResult, CniRuntimeConf, NetConfList } from './types.js';

export interface PodNetworkOptions {
  executor: CniExecutor;
  main: NetConfList;
  loopback: NetConfList;
  /** Attachments younger than this are never garbage (default 2 minutes). */
  gcGracePeriodMs?: number;
  log?: Logger;
}

const LOOPBACK_IFNAME = 'lo';

/**
 * containerd lists a sandbox only once RunPodSandbox is done, well after its CNI ADD; an attachment this young
 * may belong to a sandbox that is still being created (possibly by a previous agent process).
 */
export const DEFAULT_GC_GRACE_PERIOD_MS = 120_000;

export class PodNetwork {
  readonly executor: CniExecutor;
  #main: NetConfList;
  readonly loopback: NetConfList;
  readonly #log: Logger | undefined;
  readonly #gcGracePeriodMs: number;
  /** Main-network results by sandbox id: the source of pod IPs. */
  readonly #results = new Map<string, CniResult>();
  /** The tail of each sandbox's queue of operations; the spec forbids parallel operations on one container. */
  readonly #queues = new Map<string, Promise<unknown>>();
  /** Sandboxes this process has networked: never garbage, whatever a (possibly older) live list says. */
  readonly #touched = new Set<string>();

  private constructor(opts: PodNetworkOptions) {
    this.executor = opts.executor;
    this.#main = opts.main;
    this.loopback = opts.loopback;
    this.#log = opts.log;
    this.#gcGracePeriodMs = opts.gcGracePeriodMs ?? DEFAULT_GC_GRACE_PERIOD_MS;
  }

  /** Creates the pod network and loads the main network's cached results (pod IPs survive agent restarts). */
  static async create(opts: PodNetworkOptions): Promise<PodNetwork> {
    const network = new PodNetwork(opts);
    for (const attachment of await opts.executor.cachedAttachments()) {
      if (attachment.networkName === opts.main.name && attachment.ifName !== LOOPBACK_IFNAME) {
        network.#results.set(attachment.containerId, attachment.result);
      }
    }
    return network;
  }

  /** The main network new sandboxes are attached to. */
  get main(): NetConfList {
    return this.#main;
  }

  /**
   * Replaces the main network's configuration for sandboxes set up from now on (e.g. host-local allocating from the
   * node's new pod CIDR). It must keep the network's name: attachments, cached results and host-local reservations
   * are keyed by it, and existing sandboxes keep their IPs and are torn down with the same plugins.
   */
  setMain(list: NetConfList): void {
    if (list.name !== this.#main.name) {
      throw new Error(`the main pod network cannot change its name ("${this.#main.name}" -> "${list.name}") while pods use it`);
    }
    this.#main = list;
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
      try {
        const result = await this.executor.add(this.main, rt, signal);
        this.#results.set(rt.containerId, result);
        log.info({ ips: resultPodIPs(result), netns: rt.netns }, 'pod network set up');
        return result;
      } catch (err) {
        log.warn({ err }, 'pod network setup failed; undoing it');
        try {
          await this.#tearDown(rt);
        } catch (cleanupErr) {
          log.warn({ err: cleanupErr }, 'undoing a failed pod network setup failed');
        }
        throw err;
      }
    });
  }

  /** Detaches a sandbox (main network, then a loopback attachment of older agents). Idempotent: a second call finds nothing and succeeds. */
  async tearDown(rt: CniRuntimeConf, signal?: AbortSignal): Promise<void> {
    await this.#serialized(rt.containerId, async () => {
      this.#touched.add(rt.containerId);
      await this.#tearDown(rt, signal);
      // Nothing is cached for the sandbox any more, so garbage collection has nothing to take from it.
      this.#touched.delete(rt.containerId);
      this.#logger(rt).info({ netns: rt.netns }, 'pod network torn down');
    });
  }

  async #tearDown(rt: CniRuntimeConf, signal?: AbortSignal): Promise<void> {
    let mainError: unknown;
    try {
      await this.executor.del(this.main, rt, signal);
      this.#results.delete(rt.containerId);
    } catch (err) {
      mainError = err;
    }
    // Agents before containerd's own loopback was relied on attached "lo" too: such a record is deleted even when
    // the main network failed. Without one there is nothing of the agent's on "lo".
    if (await this.#hasLoopbackAttachment(rt)) await this.executor.del(this.loopback, loopbackConf(rt), signal);
    if (mainError !== undefined) throw mainError;
  }

  async #hasLoopbackAttachment(rt: CniRuntimeConf): Promise<boolean> {
    try {
      return (await this.executor.cache.read(this.loopback.name, rt.containerId, LOOPBACK_IFNAME)) !== undefined;
    } catch {
      return true; // unreadable: DEL copes with that and removes it
    }
  }

  /** Asks the plugins whether the sandbox's main network is still as set up. */
  async check(rt: CniRuntimeConf, signal?: AbortSignal): Promise<void> {
    await this.#serialized(rt.containerId, async () => {
      await this.executor.check(this.main, rt, signal);
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
    const report = await this.executor.garbageCollect(keep, {
      networks: new Set([this.main.name, this.loopback.name]),
      minAgeMs: this.#gcGracePeriodMs,
      ...(signal ? { signal } : {}),
    });
    for (const removed of report.removed) {
      if (removed.networkName === this.main.name) this.#results.delete(removed.containerId);
    }
    return report;
  }
}

function loopbackConf(rt: CniRuntimeConf): CniRuntimeConf {
  return { ...rt, ifName: LOOPBACK_IFNAME, capabilityArgs: {} };
}
