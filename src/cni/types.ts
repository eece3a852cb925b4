// CNI shapes as nodelet uses them (spec 1.0.0): network configuration lists, attachment parameters, results, errors.

/** One plugin's configuration object inside a list; unknown keys are passed to the plugin unchanged. */
export interface PluginConf {
  type: string;
  /** Capabilities the plugin declares; only these receive matching capability args as runtimeConfig. */
  capabilities?: Record<string, boolean>;
  ipam?: { type: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** A network configuration list (a network): plugins run in order on ADD, reverse order on DEL. */
export interface NetConfList {
  cniVersion: string;
  name: string;
  disableCheck: boolean;
  plugins: PluginConf[];
  /** Where the list was read from, for messages ("/etc/cni/net.d/10-x.conflist", "cache", ...). */
  source: string;
}

/** The per-attachment parameters (libcni's RuntimeConf). */
export interface CniRuntimeConf {
  containerId: string;
  /** Path of the network namespace; empty on a DEL after the namespace is gone. */
  netns: string;
  ifName: string;
  /** CNI_ARGS as key/value pairs, in order. */
  args: [string, string][];
  /** Capability args (e.g. portMappings); a plugin sees only those it declares in `capabilities`. */
  capabilityArgs: Record<string, unknown>;
}

export interface CniInterface {
  name: string;
  mac?: string;
  /** Netns path for interfaces inside the container; absent for host interfaces. */
  sandbox?: string;
  [key: string]: unknown;
}

export interface CniIpConfig {
  /** Address in CIDR notation, e.g. "10.99.0.5/24". */
  address: string;
  gateway?: string;
  /** Index into `interfaces`. */
  interface?: number;
  [key: string]: unknown;
}

export interface CniRoute {
  dst: string;
  gw?: string;
  [key: string]: unknown;
}

export interface CniDns {
  nameservers?: string[];
  domain?: string;
  search?: string[];
  options?: string[];
}

/** A plugin's success result in 1.0.0 shape (0.3.x/0.4.0 results add `version` to each ip). */
export interface CniResult {
  cniVersion: string;
  interfaces?: CniInterface[];
  ips?: CniIpConfig[];
  routes?: CniRoute[];
  dns?: CniDns;
  [key: string]: unknown;
}

export interface CniVersionResult {
  cniVersion: string;
  supportedVersions: string[];
}

/** The spec's well-known error codes, plus nodelet's own (100+ are plugin-specific). */
export const CniErrorCode = {
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnvironment: 4,
  IoFailure: 5,
  DecodingFailure: 6,
  InvalidNetworkConfig: 7,
  TryAgainLater: 11,
  /** A failure inside nodelet that fits no well-known code. */
  Internal: 100,
} as const;

export interface CniErrorInit {
  code: number;
  msg: string;
  details?: string;
  /** The plugin type that reported the error, when a plugin did. */
  plugin?: string;
  cause?: unknown;
}

/** The CNI error JSON a plugin prints (and the shim prints to containerd). */
export interface CniErrorJson {
  cniVersion: string;
  code: number;
  msg: string;
  details?: string;
}

/**
 * An error in CNI terms: from a plugin (its own code/msg/details) or from nodelet itself while running one.
 * `temporary` tells the caller a retry may succeed.
 */
export class CniError extends Error {
  override readonly name = 'CniError';
  readonly code: number;
  readonly msg: string;
  readonly details: string;
  readonly plugin: string | undefined;

  constructor(init: CniErrorInit) {
    const where = init.plugin ? `plugin ${init.plugin}: ` : '';
    super(`${where}${init.msg}${init.details ? ` (${init.details})` : ''}`, { cause: init.cause });
    this.code = init.code;
    this.msg = init.msg;
    this.details = init.details ?? '';
    this.plugin = init.plugin;
  }

  get temporary(): boolean {
    return this.code === CniErrorCode.TryAgainLater;
  }

  toCniJson(cniVersion = '1.0.0'): CniErrorJson {
    const json: CniErrorJson = {
      cniVersion,
      code: this.code,
      msg: this.plugin ? `${this.plugin}: ${this.msg}` : this.msg,
    };
    if (this.details) json.details = this.details;
    return json;
  }
}

/** A network configuration that cannot be used; names the file and the field at fault. */
export class NetConfError extends Error {
  override readonly name = 'NetConfError';
  constructor(
    readonly source: string,
    readonly field: string,
    problem: string,
    options?: { cause?: unknown },
  ) {
    super(`${source}: ${field ? `${field}: ` : ''}${problem}`, options);
  }
}

/** libcni's result cache record (kind cniCacheV1), one file per (network, container, interface). */
export interface CniCacheRecord {
  kind: 'cniCacheV1';
  containerId: string;
  ifName: string;
  networkName: string;
  /** The network configuration list JSON, base64 (libcni marshals its []byte this way). */
  config: string;
  netns?: string;
  cniArgs?: [string, string][];
  capabilityArgs?: Record<string, unknown>;
  /** Absent on nodelet's record of an ADD under way (see CachedAttachment.result). */
  result?: CniResult;
  /** Set on records nodelet wrote; records of other runtimes sharing the directory are never touched. */
  managedBy?: string;
}

/** A cached attachment, decoded: what DEL needs without the original configuration files. */
export interface CachedAttachment {
  path: string;
  containerId: string;
  ifName: string;
  networkName: string;
  netns: string;
  config: NetConfList;
  cniArgs: [string, string][];
  capabilityArgs: Record<string, unknown>;
  /**
   * The ADD's result. Absent: an ADD nodelet began and never finished (it was killed during it), so a plugin may hold
   * what it allocated (host-local's IP); a DEL without prevResult releases it.
   */
  result?: CniResult;
  managed: boolean;
  /** When the record was written (file mtime, ms since the epoch). */
  writtenAt: number;
}
