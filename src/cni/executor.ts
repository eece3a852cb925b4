// Runs CNI plugin binaries for network configuration lists as the spec's runtime side (ADD/DEL/CHECK), like libcni.
import { access, constants, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DirectProgramRunner, type ProgramExit, type ProgramRunner } from '../host/program-runner.js';
import { logger as rootLogger, type Logger } from '../core/log.js';
import { DEFAULT_CNI_CACHE_DIR, ResultCache } from './cache.js';
import { compareVersions, convertResult, formatCniArgs, parseResult, podIdentity, validateRuntimeConf } from './protocol.js';
import {
  CniError,
  CniErrorCode,
  type CachedAttachment,
  type CniResult,
  type CniRuntimeConf,
  type CniVersionResult,
  type NetConfList,
  type PluginConf,
} from './types.js';

/** kubelet's --cni-bin-dir default on Debian's containernetworking-plugins plus the upstream location. */
export const DEFAULT_CNI_BIN_DIRS: readonly string[] = ['/usr/lib/cni', '/opt/cni/bin'];

/** Reference plugins finish in milliseconds; this only bounds a hung one. */
export const DEFAULT_PLUGIN_TIMEOUT_MS = 30_000;

/** Splits a plugin directory list: kubelet's --cni-bin-dir uses commas, CNI_PATH uses colons. */
export function parseBinDirs(spec: string): string[] {
  return spec
    .split(/[,:]/)
    .map((d) => d.trim())
    .filter((d) => d !== '');
}

export interface CniExecutorOptions {
  binDirs?: readonly string[];
  cacheDir?: string;
  pluginTimeoutMs?: number;
  /** How plugins are started; child_process by default. */
  programs?: ProgramRunner;
  /** Defaults to the agent's logger (looked up at each call, so a reconfigured logger is used). */
  log?: Logger;
}

export interface GarbageCollectReport {
  removed: { containerId: string; networkName: string; ifName: string }[];
  failed: { containerId: string; networkName: string; ifName: string; error: Error }[];
}

type Command = 'ADD' | 'DEL' | 'CHECK' | 'VERSION';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The execution configuration of one plugin (spec section 3): the plugin's object with the list's name and
 * cniVersion, runtimeConfig holding only capability args the plugin declares, prevResult when given, and
 * without `capabilities`.
 */
function execConfig(
  list: NetConfList,
  plugin: PluginConf,
  prevResult: CniResult | undefined,
  capabilityArgs: Record<string, unknown>,
): Record<string, unknown> {
  const { capabilities, ...rest } = plugin;
  const conf: Record<string, unknown> = { cniVersion: list.cniVersion, name: list.name, ...rest };
  conf.cniVersion = list.cniVersion;
  conf.name = list.name;
  const runtimeConfig: Record<string, unknown> = {};
  for (const [capability, supported] of Object.entries(capabilities ?? {})) {
    if (supported && capabilityArgs[capability] !== undefined) runtimeConfig[capability] = capabilityArgs[capability];
  }
  if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
  if (prevResult) conf.prevResult = convertResult(prevResult, list.cniVersion);
  return conf;
}

export class CniExecutor {
  readonly binDirs: readonly string[];
  readonly cache: ResultCache;
  readonly pluginTimeoutMs: number;
  readonly #log: Logger | undefined;
  readonly #programs: ProgramRunner;
  readonly #pluginPaths = new Map<string, string>();
  /** The agent's environment, which plugins inherit as libcni's do; copied once (reading process.env is not cheap). */
  readonly #baseEnv: Readonly<Record<string, string | undefined>> = { ...process.env };

  constructor(opts: CniExecutorOptions = {}) {
    this.#programs = opts.programs ?? new DirectProgramRunner();
    this.binDirs = opts.binDirs && opts.binDirs.length > 0 ? [...opts.binDirs] : DEFAULT_CNI_BIN_DIRS;
    this.cache = new ResultCache(opts.cacheDir ?? DEFAULT_CNI_CACHE_DIR);
    this.pluginTimeoutMs = opts.pluginTimeoutMs ?? DEFAULT_PLUGIN_TIMEOUT_MS;
    this.#log = opts.log;
  }

  get cacheDir(): string {
    return this.cache.cacheDir;
  }

  #logger(list: NetConfList, rt: CniRuntimeConf, command: Command): Logger {
    const bindings: Record<string, string> = {
      network: list.name,
      containerId: rt.containerId,
      ifName: rt.ifName,
      command,
    };
    const pod = podIdentity(rt.args);
    if (pod) bindings.pod = pod;
    return (this.#log ?? rootLogger).child(bindings);
  }

  /** Adds the container to the network: every plugin in order, each getting the previous one's result. */
  async add(list: NetConfList, rt: CniRuntimeConf, signal?: AbortSignal): Promise<CniResult> {
    validateRuntimeConf(rt, true);
    const log = this.#logger(list, rt, 'ADD');
    const cache = async (result?: CniResult) => {
      try {
        await this.cache.write(list, rt, result);
      } catch (err) {
        throw new CniError({
          code: CniErrorCode.IoFailure,
          msg: `failed to cache the ${result ? 'result' : 'start'} of network ${list.name}: ${(err as Error).message}`,
          cause: err,
        });
      }
    };
    // First a record without a result: if the agent dies during the ADD, garbage collection still finds the attachment
    // and runs DEL, which releases what the plugins had allocated (nobody else would: containerd's DEL after the failed
    // ADD reaches a dead agent).
    await cache();
    let result: CniResult | undefined;
    for (const plugin of list.plugins) {
      const stdout = await this.#run('ADD', list, plugin, result, rt, log, signal);
      result = parseResult(stdout, plugin.type);
    }
    if (!result) throw new CniError({ code: CniErrorCode.InvalidNetworkConfig, msg: `network ${list.name} has no plugins` });
    await cache(result);
    log.debug({ ips: result.ips?.map((ip) => ip.address) }, 'CNI network added');
    return result;
  }

  /**
   * Removes the container from the network: plugins in reverse order with the cached ADD result as
   * prevResult. Without a cache entry the plugins still run (without prevResult) so leftovers are released;
   * capability and CNI args missing from `rt` come from the cache (portmap removes rules only when it sees
   * the port mappings again).
   */
  async del(list: NetConfList, rt: CniRuntimeConf, signal?: AbortSignal): Promise<void> {
    validateRuntimeConf(rt, false);
    const log = this.#logger(list, rt, 'DEL');
    let cached: CachedAttachment | undefined;
    try {
      cached = await this.cache.read(list.name, rt.containerId, rt.ifName);
    } catch (err) {
      log.warn({ err }, 'ignoring an unreadable CNI cache record; deleting without prevResult');
    }
    const effective: CniRuntimeConf = {
      ...rt,
      args: rt.args.length > 0 ? rt.args : (cached?.cniArgs ?? []),
      capabilityArgs:
        Object.keys(rt.capabilityArgs).length > 0 ? rt.capabilityArgs : (cached?.capabilityArgs ?? {}),
    };
    // Spec versions before 0.4.0 do not pass prevResult on DEL.
    const prev = compareVersions(list.cniVersion, '0.4.0') >= 0 ? cached?.result : undefined;
    await this.#delChain(list, effective, prev, log, signal);
    await this.cache.remove(list.name, rt.containerId, rt.ifName);
    log.debug('CNI network deleted');
  }

  /**
   * Removes an attachment using only what its cache record holds (configuration, args, result): for
   * attachments whose network configuration the caller no longer has. `netns` overrides the cached path.
   */
  async delCached(attachment: CachedAttachment, opts: { netns?: string; signal?: AbortSignal } = {}): Promise<void> {
    const rt: CniRuntimeConf = {
      containerId: attachment.containerId,
      ifName: attachment.ifName,
      netns: opts.netns ?? attachment.netns,
      args: attachment.cniArgs,
      capabilityArgs: attachment.capabilityArgs,
    };
    validateRuntimeConf(rt, false);
    const list = attachment.config;
    const log = this.#logger(list, rt, 'DEL');
    const prev = compareVersions(list.cniVersion, '0.4.0') >= 0 ? attachment.result : undefined;
    await this.#delChain(list, rt, prev, log, opts.signal);
    await this.cache.remove(attachment.networkName, attachment.containerId, attachment.ifName);
    log.debug('CNI network deleted from its cache record');
  }

  async #delChain(
    list: NetConfList,
    rt: CniRuntimeConf,
    prev: CniResult | undefined,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    for (const plugin of [...list.plugins].reverse()) {
      try {
        await this.#run('DEL', list, plugin, prev, rt, log, signal);
      } catch (err) {
        // Code 3 means the container is already unknown to the plugin: nothing left to release.
        if (err instanceof CniError && err.code === CniErrorCode.UnknownContainer) {
          log.debug({ plugin: plugin.type, err }, 'plugin reports nothing to delete');
          continue;
        }
        throw err;
      }
    }
  }

  /** Asks every plugin whether the attachment is still as ADD left it (with the cached ADD result). */
  async check(list: NetConfList, rt: CniRuntimeConf, signal?: AbortSignal): Promise<void> {
    validateRuntimeConf(rt, true);
    if (compareVersions(list.cniVersion, '0.4.0') < 0) {
      throw new CniError({
        code: CniErrorCode.IncompatibleVersion,
        msg: `configuration version ${list.cniVersion} does not support the CHECK command`,
      });
    }
    if (list.disableCheck) return;
    const log = this.#logger(list, rt, 'CHECK');
    const cached = await this.cache.read(list.name, rt.containerId, rt.ifName);
    if (!cached?.result) {
      throw new CniError({
        code: CniErrorCode.UnknownContainer,
        msg: `no cached ADD result for container ${rt.containerId} interface ${rt.ifName} in network ${list.name}`,
      });
    }
    for (const plugin of list.plugins) {
      await this.#run('CHECK', list, plugin, cached.result, rt, log, signal);
    }
  }

  /**
   * Confirms every plugin of the list is installed and supports the list's CNI version (libcni's
   * ValidateNetworkList), so a broken installation shows at start rather than at the first pod.
   */
  async validate(list: NetConfList, signal?: AbortSignal): Promise<void> {
    for (const plugin of list.plugins) {
      const info = await this.version(plugin.type, list.cniVersion, signal);
      if (!info.supportedVersions.includes(list.cniVersion)) {
        throw new CniError({
          code: CniErrorCode.IncompatibleVersion,
          msg: `does not support CNI version ${list.cniVersion} of network ${list.name}`,
          details: `supported: ${info.supportedVersions.join(', ')}`,
          plugin: plugin.type,
        });
      }
    }
  }

  /** The plugin's VERSION answer. */
  async version(type: string, cniVersion = '1.0.0', signal?: AbortSignal): Promise<CniVersionResult> {
    const path = await this.findPlugin(type);
    const stdout = await this.#exec(path, type, 'VERSION', JSON.stringify({ cniVersion }), { CNI_COMMAND: 'VERSION' }, signal);
    let parsed: unknown;
    try {
      parsed = JSON.parse(stdout);
    } catch (err) {
      throw new CniError({ code: CniErrorCode.DecodingFailure, msg: 'VERSION output is not JSON', plugin: type, cause: err });
    }
    if (!isObject(parsed) || !Array.isArray(parsed.supportedVersions)) {
      throw new CniError({ code: CniErrorCode.DecodingFailure, msg: 'VERSION output lacks supportedVersions', plugin: type });
    }
    return {
      cniVersion: typeof parsed.cniVersion === 'string' ? parsed.cniVersion : cniVersion,
      supportedVersions: parsed.supportedVersions.filter((v): v is string => typeof v === 'string'),
    };
  }

  /** The cached ADD result of a container's interface: in `networkName`, or in any network when omitted. */
  async cachedResult(containerId: string, ifName: string, networkName?: string): Promise<CniResult | undefined> {
    if (networkName !== undefined) return (await this.cache.read(networkName, containerId, ifName))?.result;
    const matches = (await this.cachedAttachments({ containerId })).filter((a) => a.ifName === ifName);
    return (matches.find((a) => a.managed) ?? matches[0])?.result;
  }

  /** Decodable cache records, optionally of one container; undecodable files are logged and skipped. */
  async cachedAttachments(filter: { containerId?: string } = {}): Promise<CachedAttachment[]> {
    const log = this.#log ?? rootLogger;
    return this.cache.list(filter, (file, err) => log.debug({ file, err }, 'skipping a CNI cache file'));
  }

  /**
   * Deletes (from their cache records) the attachments nodelet made for containers that no longer exist,
   * e.g. after the agent crashed between a sandbox's end and its DEL. Records of other runtimes sharing the
   * cache directory are left alone; `networks` narrows to the given network names; records younger than
   * `minAgeMs` are kept (a runtime lists a sandbox only after its network is set up). Failures are reported,
   * not thrown, so one broken record does not block the rest.
   */
  async garbageCollect(
    liveContainerIds: Set<string>,
    opts: { networks?: Set<string>; minAgeMs?: number; signal?: AbortSignal } = {},
  ): Promise<GarbageCollectReport> {
    const log = this.#log ?? rootLogger;
    const writtenBefore = Date.now() - (opts.minAgeMs ?? 0);
    const stale = (await this.cachedAttachments()).filter(
      (a) =>
        a.managed &&
        !liveContainerIds.has(a.containerId) &&
        (!opts.networks || opts.networks.has(a.networkName)) &&
        a.writtenAt <= writtenBefore,
    );
    // The pod interface before loopback, as tearing a pod down does.
    stale.sort((a, b) => Number(a.ifName === 'lo') - Number(b.ifName === 'lo'));
    const report: GarbageCollectReport = { removed: [], failed: [] };
    for (const attachment of stale) {
      opts.signal?.throwIfAborted();
      const id = { containerId: attachment.containerId, networkName: attachment.networkName, ifName: attachment.ifName };
      // A netns that is gone must not be passed: plugins then release what they can without entering it.
      const netns = attachment.netns && (await pathExists(attachment.netns)) ? attachment.netns : '';
      try {
        await this.delCached(attachment, { netns, ...(opts.signal ? { signal: opts.signal } : {}) });
        report.removed.push(id);
        log.info(id, 'removed the network of a container that no longer exists');
      } catch (err) {
        report.failed.push({ ...id, error: err as Error });
        log.warn({ ...id, err }, 'failed to remove the network of a container that no longer exists');
      }
    }
    return report;
  }

  /** The first executable named `type` in the plugin directories (remembered until starting it fails). */
  async findPlugin(type: string): Promise<string> {
    const known = this.#pluginPaths.get(type);
    if (known) return known;
    for (const dir of this.binDirs) {
      const path = join(dir, type);
      try {
        await access(path, constants.X_OK);
        if ((await stat(path)).isFile()) {
          this.#pluginPaths.set(type, path);
          return path;
        }
      } catch {
        // not in this directory
      }
    }
    throw new CniError({
      code: CniErrorCode.InvalidNetworkConfig,
      msg: `failed to find plugin ${JSON.stringify(type)} in path [${this.binDirs.join(' ')}]`,
      plugin: type,
    });
  }

  async #run(
    command: Exclude<Command, 'VERSION'>,
    list: NetConfList,
    plugin: PluginConf,
    prev: CniResult | undefined,
    rt: CniRuntimeConf,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const path = await this.findPlugin(plugin.type);
    const input = JSON.stringify(execConfig(list, plugin, prev, rt.capabilityArgs));
    const env = {
      CNI_COMMAND: command,
      CNI_CONTAINERID: rt.containerId,
      CNI_NETNS: rt.netns,
      CNI_IFNAME: rt.ifName,
      CNI_ARGS: formatCniArgs(rt.args),
      CNI_PATH: this.binDirs.join(':'),
    };
    return this.#exec(path, plugin.type, command, input, env, signal, log);
  }

  async #exec(
    path: string,
    type: string,
    command: Command,
    input: string,
    env: Record<string, string>,
    signal: AbortSignal | undefined,
    log: Logger = this.#log ?? rootLogger,
  ): Promise<string> {
    if (signal?.aborted) {
      throw new CniError({ code: CniErrorCode.TryAgainLater, msg: `${command} canceled`, plugin: type, cause: signal.reason });
    }
    // The plugin gets its own session so a timeout or cancel kills what it started too: a grandchild holding stdout
    // open would otherwise keep the call waiting.
    const startedAt = performance.now();
    const stop = new AbortController();
    let stopped: 'timeout' | 'cancel' | undefined;
    const timer = setTimeout(() => stop.abort((stopped ??= 'timeout')), this.pluginTimeoutMs);
    const onAbort = (): void => stop.abort((stopped ??= 'cancel'));
    signal?.addEventListener('abort', onAbort, { once: true });
    let r: ProgramExit;
    try {
      r = await this.#programs.run({ path, env: { ...this.#baseEnv, ...env }, input, newSession: true, signal: stop.signal });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    const { stdout, stderr } = r;
    log.debug({ plugin: type, ms: Math.round(performance.now() - startedAt), exitCode: r.exitCode, ...(stderr ? { stderr } : {}) }, 'CNI plugin ran');
    if (stopped === 'cancel') {
      throw new CniError({ code: CniErrorCode.TryAgainLater, msg: `${command} canceled`, plugin: type, cause: signal?.reason });
    }
    if (stopped === 'timeout') {
      throw new CniError({
        code: CniErrorCode.TryAgainLater,
        msg: `${command} timed out after ${this.pluginTimeoutMs} ms`,
        plugin: type,
      });
    }
    // Not started (removed, no longer executable): the next call looks for it again.
    if (r.error) this.#pluginPaths.delete(type);
    if (r.exitCode !== 0) throw pluginFailure(type, command, r.exitCode, r.message, stdout, stderr, r.error);
    return stdout;
  }
}

/** The plugin's own error (CNI error JSON on stdout) or, failing that, what its stderr or exit said. */
function pluginFailure(
  type: string,
  command: Command,
  exitCode: number | undefined,
  spawnMessage: string,
  stdout: string,
  stderr: string,
  cause: unknown,
): CniError {
  if (exitCode === undefined) {
    return new CniError({ code: CniErrorCode.Internal, msg: `cannot run the plugin for ${command}: ${spawnMessage}`, plugin: type, cause });
  }
  const trimmed = stdout.trim();
  if (trimmed !== '') {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (isObject(parsed) && typeof parsed.code === 'number' && typeof parsed.msg === 'string') {
        return new CniError({
          code: parsed.code,
          msg: parsed.msg,
          details: typeof parsed.details === 'string' ? parsed.details : '',
          plugin: type,
          cause,
        });
      }
    } catch {
      // not an error object; reported below
    }
    return new CniError({
      code: CniErrorCode.DecodingFailure,
      msg: `${command} failed (exit ${exitCode}) and its output is not a CNI error: ${trimmed.slice(0, 300)}`,
      details: stderr.trim().slice(0, 1000),
      plugin: type,
      cause,
    });
  }
  return new CniError({
    code: CniErrorCode.Internal,
    msg: stderr.trim() ? `${command} failed: ${stderr.trim().slice(0, 1000)}` : `${command} failed with exit code ${exitCode} and no message`,
    plugin: type,
    cause,
  });
}

async function pathExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
