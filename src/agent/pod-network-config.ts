// The pod network's configuration as containerd keeps it: the CNI configuration directory, watched, and the node's pod
// CIDR, turned into the network new pods join (or none, the node's network then not ready).
import { execFile } from 'node:child_process';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../bootstrap/files.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { cidrContains, parseCidr, parseIp } from '../cni/cidr.js';
import {
  bridgeNames,
  hostLocalSubnets,
  readConfFiles,
  selectNetworkFromFiles,
  subnetCollisions,
  usesHostLocal,
  withPodCidr,
  type NetworkSelection,
} from '../cni/conflist.js';
import type { PodNetwork } from '../cni/pod-network.js';
import type { NetConfList } from '../cni/types.js';
import type { Logger } from '../core/log.js';
import { hostRoutes } from '../host/routes.js';

/** The IPv4 addresses ("10.99.0.1/24") of a host interface; none when it does not exist. */
async function interfaceIPv4Addresses(dev: string, signal: AbortSignal): Promise<string[]> {
  // A missing device makes `ip` fail: no addresses.
  const stdout = await promisify(execFile)('ip', ['-j', '-4', 'addr', 'show', 'dev', dev], { timeout: 10_000, signal }).then((r) => r.stdout, () => '');
  if (!stdout) return [];
  const links = JSON.parse(stdout) as Array<{ addr_info?: Array<{ local?: string; prefixlen?: number }> }>;
  return links.flatMap((l) => (l.addr_info ?? []).filter((a) => a.local).map((a) => `${a.local}/${a.prefixlen ?? 32}`));
}

/** The pod CIDR cannot be used on this host; the message says why. */
export class PodCIDRRefusedError extends Error {}

/** A network whose subnet overlaps a host route: refused, as at start. */
export class PodSubnetCollisionError extends Error {}

/**
 * The network a selection gives new pods: with a pod CIDR, a network allocating with host-local takes it (as containerd
 * fills its conf_template with it); any other is used as written.
 */
export function effectiveNetwork(selection: NetworkSelection, podCidr: string | undefined): NetConfList | undefined {
  const { main } = selection;
  if (!main || !podCidr || !usesHostLocal(main)) return main;
  return withPodCidr(main, podCidr);
}

/** containerd reloads its CNI configuration on an inotify event; the poll only catches what a lost watch missed. */
export const DEFAULT_CONF_DIR_POLL_MS = 5_000;
/** Writers create then fill a file: the directory is read once the burst of events has settled. */
const settleMs = 50;

export interface PodNetworkConfigOptions {
  network: PodNetwork;
  /** --cni-conf-dir. */
  dir: string;
  /** --pod-cidr, until the Node's spec.podCIDR replaces it. */
  podCidr?: string;
  /** Whether the pod CIDR goes into the directory's host-local networks (AgentConfig.podCidrInConfDir); default true. */
  applyPodCidr?: boolean;
  /**
   * The pod CIDR comes from Node.spec.podCIDR (cluster mode, nodelet's own network, no --pod-cidr): no network until it
   * arrives, as containerd writes its conf_template's configuration only once kubelet passes it the pod CIDR.
   */
  podCidrFromNode?: boolean;
  /**
   * Where the Node's pod CIDR is kept once applied: as the configuration containerd writes from its conf_template stays
   * on disk, a restart uses it at once instead of waiting for the Node again.
   */
  podCidrStateFile?: string;
  log: Logger;
  pollIntervalMs?: number;
}

export class PodNetworkConfig {
  readonly network: PodNetwork;
  readonly dir: string;
  readonly #log: Logger;
  readonly #pollIntervalMs: number;
  readonly #applyPodCidr: boolean;
  readonly #podCidrFromNode: boolean;
  readonly #podCidrStateFile: string | undefined;
  #podCidr: string | undefined;
  #selection: NetworkSelection | undefined;
  /** The directory's files as last read: an event that changes nothing changes nothing. */
  #filesKey: string | undefined;
  /** Called when the network appears (pods waiting for it may start). */
  #onReady: (() => void) | undefined;

  constructor(opts: PodNetworkConfigOptions) {
    this.network = opts.network;
    this.dir = opts.dir;
    this.#podCidr = opts.podCidr || undefined;
    this.#log = opts.log;
    this.#pollIntervalMs = opts.pollIntervalMs ?? DEFAULT_CONF_DIR_POLL_MS;
    this.#applyPodCidr = opts.applyPodCidr ?? true;
    this.#podCidrFromNode = (opts.podCidrFromNode ?? false) && this.#applyPodCidr && !this.#podCidr;
    this.#podCidrStateFile = opts.podCidrStateFile;
  }

  /**
   * Whether Node.spec.podCIDR goes into the network: not for a network of the operator's --cni-conf-dir (as containerd
   * leaves a conflist without a template alone).
   */
  get takesPodCIDR(): boolean {
    return this.#applyPodCidr;
  }

  /** Whether the network waits for Node.spec.podCIDR (its subnet comes from it, and it has not arrived yet). */
  get awaitingPodCIDR(): boolean {
    return this.#podCidrFromNode && !this.#podCidr && !this.#keepConfiguredRange;
  }

  /**
   * Set when Node.spec.podCIDR was refused while no range was in use (the pod bridge still carries the configured one,
   * as on a node that ran pods before it joined): new pods get the configured range until the node's can be applied.
   */
  #keepConfiguredRange = false;

  #effective(selection: NetworkSelection, podCidr: string | undefined): NetConfList | undefined {
    if (this.#podCidrFromNode && !podCidr && !this.#keepConfiguredRange) return undefined;
    return effectiveNetwork(selection, this.#applyPodCidr ? podCidr : undefined);
  }

  /** The node's pod CIDR as applied, or the subnet the configured network allocates from. */
  get podCIDR(): string {
    const main = this.network.main;
    return this.#podCidr ?? (main ? (hostLocalSubnets(main)[0] ?? '') : '');
  }

  /**
   * Reads the directory once (at start). A network whose subnet overlaps a host route is refused with
   * PodSubnetCollisionError; no network at all is not an error: the node's network is not ready until one is written.
   */
  async load(signal: AbortSignal): Promise<void> {
    const changed = await this.#read();
    if (!changed) return;
    if (this.awaitingPodCIDR && (await this.#restorePodCidr(signal))) return;
    const main = this.#effective(this.#selection!, this.#podCidr);
    if (main) await this.#checkSubnets(main, signal);
    this.#use(main);
  }

  /** The pod CIDR an earlier run applied, used again when it still passes the checks; true when it was. */
  async #restorePodCidr(signal: AbortSignal): Promise<boolean> {
    const saved = this.#podCidrStateFile ? (await readFile(this.#podCidrStateFile, 'utf8').catch(() => '')).trim() : '';
    if (!saved) return false;
    try {
      const main = this.#effective(this.#selection!, saved);
      if (main) await this.#checkSubnets(main, signal);
      this.#podCidr = saved;
      this.#log.info({ podCIDR: saved, file: this.#podCidrStateFile }, 'Pod network uses the node pod CIDR applied before the restart');
      this.#use(main);
      return true;
    } catch (err) {
      this.#log.warn({ err, podCIDR: saved, file: this.#podCidrStateFile }, 'Ignoring the saved node pod CIDR; waiting for Node.spec.podCIDR');
      return false;
    }
  }

  /**
   * Applies Node.spec.podCIDR (NodeController calls it when the CIDR appears or changes): the network is derived again
   * with it, after the same host-route check as at start, and refused when the pod bridge still carries the previous
   * range's gateway. Running pods keep their IPs.
   */
  async applyPodCIDR(cidr: string, signal: AbortSignal): Promise<void> {
    let main;
    try {
      main = this.#selection ? this.#effective(this.#selection, cidr) : undefined;
    } catch (err) {
      throw new PodCIDRRefusedError(`pod CIDR ${cidr}: ${(err as Error).message}`, { cause: err });
    }
    if (main && this.#applyPodCidr) {
      await this.#checkSubnets(main, signal).catch((err: Error) => {
        throw new PodCIDRRefusedError(`pod CIDR ${cidr} (Node.spec.podCIDR): ${err.message}`, { cause: err });
      });
      await this.#checkBridges(main, cidr, signal).catch(async (err: Error) => {
        if (!this.network.main && this.#selection) await this.#useConfiguredRange(this.#selection, signal);
        throw err;
      });
    }
    this.#podCidr = cidr;
    this.#keepConfiguredRange = false;
    this.#use(main);
    if (this.#podCidrFromNode && this.#podCidrStateFile) {
      const file = this.#podCidrStateFile;
      await writeFileAtomic(file, `${cidr}\n`, 0o644).catch((err: unknown) => this.#log.warn({ err, file }, 'Could not save the node pod CIDR; a restart waits for Node.spec.podCIDR again'));
    }
  }

  /** What the refusal of the node's range promises: new pods keep the range the bridge carries, the configured one. */
  async #useConfiguredRange(selection: NetworkSelection, signal: AbortSignal): Promise<void> {
    this.#keepConfiguredRange = true;
    const configured = this.#effective(selection, undefined);
    try {
      if (configured) await this.#checkSubnets(configured, signal);
    } catch (err) {
      this.#keepConfiguredRange = false;
      this.#log.warn({ err }, 'The configured pod range cannot be used either; pods wait for the pod network');
      return;
    }
    this.#use(configured);
  }

  /**
   * Watches the directory until the signal aborts, as containerd's CNI configuration syncer: every change is read
   * within moments, and the first usable file becomes the network of new pods. `onReady` is called when a network
   * appears where there was none.
   */
  async watch(signal: AbortSignal, onReady: () => void): Promise<void> {
    this.#onReady = onReady;
    let watcher: FSWatcher | undefined;
    let wake: (() => void) | undefined;
    // An event while the directory is being read is not lost: the next read follows at once.
    let dirty = false;
    const poke = (): void => {
      dirty = true;
      wake?.();
    };
    const startWatching = async (): Promise<void> => {
      if (watcher) return;
      try {
        await mkdir(this.dir, { recursive: true, mode: 0o755 });
        watcher = watch(this.dir, { persistent: false }, poke);
        watcher.on('error', () => {
          watcher?.close();
          watcher = undefined;
        });
      } catch (err) {
        this.#log.debug({ err, dir: this.dir }, 'Cannot watch the CNI configuration directory; polling it');
      }
    };
    try {
      while (!signal.aborted) {
        await startWatching();
        dirty = false;
        await this.#reload(signal).catch((err: unknown) => {
          if (!signal.aborted) this.#log.warn({ err, dir: this.dir }, 'Failed to reload the CNI network configuration');
        });
        if (!dirty) {
          const woken = new Promise<void>((resolve) => (wake = resolve));
          await Promise.race([woken, sleep(this.#pollIntervalMs, undefined, { signal })]).catch(() => undefined);
          wake = undefined;
        }
        if (!signal.aborted) await sleep(settleMs, undefined, { signal }).catch(() => undefined);
      }
    } finally {
      watcher?.close();
    }
  }

  async #reload(signal: AbortSignal): Promise<void> {
    if (!(await this.#read())) return;
    let main = this.#effective(this.#selection!, this.#podCidr);
    if (main) {
      try {
        await this.#checkSubnets(main, signal);
      } catch (err) {
        this.#log.error({ err, network: main.name, source: main.source }, 'Refusing the pod network configuration');
        main = undefined;
      }
    }
    this.#use(main);
  }

  /** Reads the directory; true when its files changed since the last read. */
  async #read(): Promise<boolean> {
    const files = await readConfFiles(this.dir);
    const key = JSON.stringify(files);
    if (key === this.#filesKey) return false;
    this.#filesKey = key;
    this.#selection = selectNetworkFromFiles(files, this.dir);
    return true;
  }

  #use(main: NetConfList | undefined): void {
    const before = this.network.main;
    this.network.setMain(main);
    if (main) {
      if (before?.source !== main.source || before.name !== main.name) {
        this.#log.info({ network: main.name, source: main.source, subnets: hostLocalSubnets(main) }, 'Pod network configuration loaded: new pods join it');
      }
      if (!before) this.#onReady?.();
    } else if (this.awaitingPodCIDR) {
      this.#log.info({ dir: this.dir }, 'Waiting for the node pod CIDR (Node.spec.podCIDR): pods other than host-network ones wait for the pod network');
    } else {
      this.#log.warn({ dir: this.dir, problem: this.#selection?.problem }, 'No pod network configuration: pods other than host-network ones wait for one');
    }
  }

  /** A pod subnet must not shadow a network the host already reaches (the pod bridge's own route aside). */
  async #checkSubnets(main: NetConfList, signal: AbortSignal): Promise<void> {
    const routes = await hostRoutes({ signal });
    for (const subnet of hostLocalSubnets(main)) {
      const clash = subnetCollisions(subnet, routes, bridgeNames(main));
      if (clash.length > 0) {
        throw new PodSubnetCollisionError(
          `pod subnet ${subnet} (network "${main.name}" in ${main.source}${this.#podCidr ? `, pod CIDR ${this.#podCidr}` : ''}) ` +
            `overlaps host routes: ${clash.map((r) => `${r.dst}${r.dev ? ` dev ${r.dev}` : ''}`).join(', ')}; choose another subnet with --pod-cidr`,
        );
      }
    }
  }

  /**
   * The bridge plugin keeps one IPv4 gateway per bridge and refuses to add another ("already has an IP address
   * different from ..."): while the bridge carries the previous range's gateway (its pods may still use it),
   * switching would make every new sandbox fail, so the previous range stays.
   */
  async #checkBridges(main: NetConfList, cidr: string, signal: AbortSignal): Promise<void> {
    const cidrNet = parseCidr(cidr);
    for (const bridge of bridgeNames(main)) {
      const foreign = (await interfaceIPv4Addresses(bridge, signal)).filter((a) => !cidrContains(cidrNet, parseIp(a.split('/')[0]!)!));
      if (foreign.length > 0) {
        throw new PodCIDRRefusedError(
          `pod CIDR ${cidr} (Node.spec.podCIDR) cannot be used while bridge ${bridge} carries ${foreign.join(', ')} of the previous pod range ` +
            `(the bridge plugin allows one IPv4 subnet per bridge); start nodelet with --pod-cidr ${cidr} to use it`,
        );
      }
    }
  }
}
