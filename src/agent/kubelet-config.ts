// Reads `--config FILE`: a KubeletConfiguration (kubelet.config.k8s.io/v1beta1) limited to the settings nodelet honours.
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import type { V1Taint } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { InvalidQuantityError, parseQuantity, type Quantity } from '../core/quantity.js';
import { parseGoDuration } from '../core/duration.js';
import type { EvictionSignal, EvictionThreshold, ReservedResource } from '../host/allocatable.js';

export const kubeletConfigApiVersion = 'kubelet.config.k8s.io/v1beta1';
export const kubeletConfigKind = 'KubeletConfiguration';

/**
 * The settings nodelet takes from a KubeletConfiguration, with kubelet's names; durations are in
 * milliseconds (suffix Ms), the file writes them in Go's form ("10s", "1m0s").
 */
export interface KubeletConfiguration {
  staticPodPath: string;
  podLogsDir: string;
  syncFrequencyMs: number;
  fileCheckFrequencyMs: number;
  runtimeRequestTimeoutMs: number;
  containerRuntimeEndpoint: string;
  podCIDR: string;
  /** The kubelet API's address and port (the port is reported in Node.status.daemonEndpoints). */
  address: string;
  port: number;
  /** The kubelet API's serving certificate; both empty: a self-signed one in the cert dir. */
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  /** Go's names (VersionTLS12, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); empty: Go's defaults. */
  tlsMinVersion: string;
  tlsCipherSuites: string[];
  authentication: KubeletAuthentication;
  authorization: KubeletAuthorization;
  maxPods: number;
  kubeAPIQPS: number;
  kubeAPIBurst: number;
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  nodeLeaseDurationSeconds: number;
  nodeStatusMaxImages: number;
  systemReserved: Partial<Record<ReservedResource, Quantity>>;
  kubeReserved: Partial<Record<ReservedResource, Quantity>>;
  evictionHard: Partial<Record<EvictionSignal, EvictionThreshold>>;
  registerNode: boolean;
  registerWithTaints: V1Taint[];
  providerID: string;
  /** Rotate the client certificate before it expires (kubelet's default is false; kubeadm and kind write true, nodelet defaults to true). */
  rotateCertificates: boolean;
}

/** KubeletConfiguration `authentication`: who a request to the kubelet API comes from. */
export interface KubeletAuthentication {
  x509: { clientCAFile: string };
  webhook: { enabled: boolean; cacheTTLMs: number };
  anonymous: { enabled: boolean };
}

export type KubeletAuthorizationMode = 'AlwaysAllow' | 'Webhook';

/** KubeletConfiguration `authorization`: what a caller of the kubelet API may do. */
export interface KubeletAuthorization {
  mode: KubeletAuthorizationMode;
  webhook: { cacheAuthorizedTTLMs: number; cacheUnauthorizedTTLMs: number };
}

/** Go's crypto/tls version names, as kubelet's tlsMinVersion takes them, and Node's. */
export const tlsVersions: Readonly<Record<string, 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'>> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

/** Go's cipher suite names, as kubelet's tlsCipherSuites takes them, and OpenSSL's. */
export const tlsCipherSuiteNames: Readonly<Record<string, string>> = {
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  // TLS 1.3's suites: Go does not let them be chosen (always on), so naming them changes nothing.
  TLS_AES_128_GCM_SHA256: 'TLS_AES_128_GCM_SHA256',
  TLS_AES_256_GCM_SHA384: 'TLS_AES_256_GCM_SHA384',
  TLS_CHACHA20_POLY1305_SHA256: 'TLS_CHACHA20_POLY1305_SHA256',
};

/** The fields a configuration file set (the rest keep kubelet's defaults or come from flags). */
export type KubeletConfigFile = Partial<KubeletConfiguration> & { source: string };

/** A configuration file nodelet cannot use; the message names the file and the field. */
export class KubeletConfigError extends Error {}

/** kubelet's defaults (SetDefaults_KubeletConfiguration) for the settings nodelet honours. */
export function defaultKubeletConfiguration(): KubeletConfiguration {
  return {
    staticPodPath: '',
    podLogsDir: '/var/log/pods',
    syncFrequencyMs: 60_000,
    fileCheckFrequencyMs: 20_000,
    runtimeRequestTimeoutMs: 120_000,
    containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
    podCIDR: '',
    address: '0.0.0.0',
    port: 10250,
    tlsCertFile: '',
    tlsPrivateKeyFile: '',
    tlsMinVersion: '',
    tlsCipherSuites: [],
    // v1beta1's defaults (secure, unlike the bare flags'): no anonymous requests, tokens and authorization through the
    // API server (the agent falls back to x509 only and AlwaysAllow when it has none).
    authentication: { x509: { clientCAFile: '' }, webhook: { enabled: true, cacheTTLMs: 2 * 60_000 }, anonymous: { enabled: false } },
    authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTLMs: 5 * 60_000, cacheUnauthorizedTTLMs: 30_000 } },
    maxPods: 110,
    kubeAPIQPS: 50,
    kubeAPIBurst: 100,
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 5 * 60_000,
    nodeLeaseDurationSeconds: 40,
    nodeStatusMaxImages: 50,
    systemReserved: {},
    kubeReserved: {},
    // kubelet's default evictionHard, as its parser reads "100Mi" and "10%" (nodelet evicts nothing; both reduce allocatable).
    evictionHard: { 'memory.available': parseEvictionThreshold('100Mi'), 'nodefs.available': parseEvictionThreshold('10%') },
    registerNode: true,
    registerWithTaints: [],
    providerID: '',
    rotateCertificates: true,
  };
}

// Fields of kubelet's v1beta1 KubeletConfiguration that nodelet knows but does not implement: naming one is an
// error that says so, rather than a setting silently ignored.
const unsupportedKubeletFields = new Set([
  'enableServer', 'httpCheckFrequency', 'staticPodURL', 'staticPodURLHeader', 'readOnlyPort',
  'serverTLSBootstrap', 'registryPullQPS', 'registryBurst', 'imagePullCredentialsVerificationPolicy',
  'preloadedImagesVerificationAllowlist', 'eventRecordQPS', 'eventBurst', 'enableDebuggingHandlers',
  'enableContentionProfiling', 'healthzPort', 'healthzBindAddress', 'oomScoreAdj', 'clusterDomain', 'clusterDNS',
  'streamingConnectionIdleTimeout', 'imageMinimumGCAge', 'imageMaximumGCAge', 'imageGCHighThresholdPercent',
  'imageGCLowThresholdPercent', 'volumeStatsAggPeriod', 'kubeletCgroups', 'systemCgroups', 'cgroupRoot', 'cgroupsPerQOS',
  'cgroupDriver', 'cpuManagerPolicy', 'singleProcessOOMKill', 'cpuManagerPolicyOptions', 'cpuManagerReconcilePeriod',
  'memoryManagerPolicy', 'topologyManagerPolicy', 'topologyManagerScope', 'topologyManagerPolicyOptions', 'qosReserved',
  'hairpinMode', 'podPidsLimit', 'resolvConf', 'runOnce', 'cpuCFSQuota', 'cpuCFSQuotaPeriod', 'maxOpenFiles',
  'contentType', 'serializeImagePulls', 'maxParallelImagePulls', 'evictionSoft', 'evictionSoftGracePeriod',
  'evictionPressureTransitionPeriod', 'evictionMaxPodGracePeriod', 'evictionMinimumReclaim',
  'mergeDefaultEvictionSettings', 'podsPerCore', 'enableControllerAttachDetach', 'protectKernelDefaults',
  'makeIPTablesUtilChains', 'iptablesMasqueradeBit', 'iptablesDropBit', 'featureGates', 'failSwapOn', 'memorySwap',
  'containerLogMaxSize', 'containerLogMaxFiles', 'containerLogMaxWorkers', 'containerLogMonitorInterval',
  'configMapAndSecretChangeDetectionStrategy', 'reservedSystemCPUs', 'showHiddenMetricsForVersion',
  'systemReservedCgroup', 'kubeReservedCgroup', 'enforceNodeAllocatable', 'allowedUnsafeSysctls', 'volumePluginDir',
  'kernelMemcgNotification', 'logging', 'enableSystemLogHandler', 'enableSystemLogQuery', 'shutdownGracePeriod',
  'shutdownGracePeriodCriticalPods', 'shutdownGracePeriodByPodPriority', 'crashLoopBackOff', 'reservedMemory',
  'enableProfilingHandler', 'enableDebugFlagsHandler', 'seccompDefault', 'memoryThrottlingFactor', 'tracing',
  'localStorageCapacityIsolation', 'imageServiceEndpoint', 'failCgroupV1', 'userNamespaces',
]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const reservedResources: readonly ReservedResource[] = ['cpu', 'memory', 'ephemeral-storage', 'pid'];
const evictionSignals: readonly EvictionSignal[] = ['memory.available', 'nodefs.available'];
const taintEffects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** Parses one eviction threshold value: "100Mi" or "10%" (kubelet's ParseThresholdConfig). */
export function parseEvictionThreshold(value: string): EvictionThreshold {
  if (value.endsWith('%')) {
    const number = Number(value.slice(0, -1));
    if (value.length < 2 || !Number.isFinite(number)) throw new Error(`invalid percentage "${value}"`);
    // kubelet parses the percentage as a float32 and divides it in float32.
    const fraction = Math.fround(Math.fround(number) / 100);
    if (fraction < 0 || fraction > 1) throw new Error(`percentage "${value}" must be between 0% and 100%`);
    return { percentage: fraction };
  }
  const quantity = parseQuantity(value);
  if (quantity.sign() < 0) throw new Error(`"${value}" must not be negative`);
  return { quantity };
}

/** Field readers: each names the file and the field in its error. */
class FieldReader {
  constructor(readonly source: string) {}

  fail(field: string, message: string): never {
    throw new KubeletConfigError(`${this.source}: ${field}: ${message}`);
  }

  string(field: string, value: unknown): string {
    if (typeof value !== 'string') this.fail(field, `must be a string, not ${JSON.stringify(value)}`);
    return value;
  }

  bool(field: string, value: unknown): boolean {
    if (typeof value !== 'boolean') this.fail(field, `must be true or false, not ${JSON.stringify(value)}`);
    return value;
  }

  int(field: string, value: unknown, min: number): number {
    if (typeof value !== 'number' || !Number.isInteger(value)) this.fail(field, `must be an integer, not ${JSON.stringify(value)}`);
    if (value < min) this.fail(field, `must be at least ${min}, not ${value}`);
    return value;
  }

  duration(field: string, value: unknown, positive: boolean): number {
    const text = this.string(field, value);
    let ms: number;
    try {
      ms = parseGoDuration(text);
    } catch (err) {
      return this.fail(field, (err as Error).message);
    }
    if (positive ? ms <= 0 : ms < 0) this.fail(field, `must be ${positive ? 'greater than 0' : 'at least 0'}, not "${text}"`);
    return ms;
  }

  reservation(field: string, value: unknown): Partial<Record<ReservedResource, Quantity>> {
    if (!isRecord(value)) return this.fail(field, 'must be a map of resource name to quantity');
    const out: Partial<Record<ReservedResource, Quantity>> = {};
    for (const [name, raw] of Object.entries(value)) {
      if (!(reservedResources as readonly string[]).includes(name)) {
        this.fail(`${field}.${name}`, `unsupported resource; use ${reservedResources.join(', ')}`);
      }
      const text = typeof raw === 'number' ? String(raw) : this.string(`${field}.${name}`, raw);
      try {
        const quantity = parseQuantity(text);
        if (quantity.sign() < 0) this.fail(`${field}.${name}`, `must not be negative, not "${text}"`);
        out[name as ReservedResource] = quantity;
      } catch (err) {
        if (!(err instanceof InvalidQuantityError)) throw err;
        this.fail(`${field}.${name}`, `"${text}": ${err.message}`);
      }
    }
    return out;
  }

  evictionHard(field: string, value: unknown): Partial<Record<EvictionSignal, EvictionThreshold>> {
    if (!isRecord(value)) return this.fail(field, 'must be a map of eviction signal to threshold');
    const out: Partial<Record<EvictionSignal, EvictionThreshold>> = {};
    for (const [signal, raw] of Object.entries(value)) {
      if (!(evictionSignals as readonly string[]).includes(signal)) {
        this.fail(
          `${field}.${signal}`,
          `not supported: nodelet does not evict pods; only ${evictionSignals.join(' and ')} (which kubelet subtracts from allocatable) are honoured`,
        );
      }
      const text = this.string(`${field}.${signal}`, raw);
      try {
        out[signal as EvictionSignal] = parseEvictionThreshold(text);
      } catch (err) {
        this.fail(`${field}.${signal}`, (err as Error).message);
      }
    }
    return out;
  }

  /** A mapping whose keys are all among `known`. */
  record(field: string, value: unknown, known: string[]): Record<string, unknown> {
    if (!isRecord(value)) return this.fail(field, 'must be a mapping');
    for (const key of Object.keys(value)) if (!known.includes(key)) this.fail(`${field}.${key}`, 'unknown field');
    return value;
  }

  authentication(field: string, value: unknown, base: KubeletAuthentication): KubeletAuthentication {
    const raw = this.record(field, value, ['x509', 'webhook', 'anonymous']);
    const out = structuredClone(base);
    if (raw.x509 !== undefined) {
      const x509 = this.record(`${field}.x509`, raw.x509, ['clientCAFile']);
      if (x509.clientCAFile !== undefined) out.x509.clientCAFile = this.string(`${field}.x509.clientCAFile`, x509.clientCAFile);
    }
    if (raw.webhook !== undefined) {
      const webhook = this.record(`${field}.webhook`, raw.webhook, ['enabled', 'cacheTTL']);
      if (webhook.enabled !== undefined) out.webhook.enabled = this.bool(`${field}.webhook.enabled`, webhook.enabled);
      if (webhook.cacheTTL !== undefined) out.webhook.cacheTTLMs = this.duration(`${field}.webhook.cacheTTL`, webhook.cacheTTL, false);
    }
    if (raw.anonymous !== undefined) {
      const anonymous = this.record(`${field}.anonymous`, raw.anonymous, ['enabled']);
      if (anonymous.enabled !== undefined) out.anonymous.enabled = this.bool(`${field}.anonymous.enabled`, anonymous.enabled);
    }
    return out;
  }

  authorization(field: string, value: unknown, base: KubeletAuthorization): KubeletAuthorization {
    const raw = this.record(field, value, ['mode', 'webhook']);
    const out = structuredClone(base);
    if (raw.mode !== undefined) out.mode = this.authorizationMode(`${field}.mode`, raw.mode);
    if (raw.webhook !== undefined) {
      const webhook = this.record(`${field}.webhook`, raw.webhook, ['cacheAuthorizedTTL', 'cacheUnauthorizedTTL']);
      if (webhook.cacheAuthorizedTTL !== undefined) {
        out.webhook.cacheAuthorizedTTLMs = this.duration(`${field}.webhook.cacheAuthorizedTTL`, webhook.cacheAuthorizedTTL, false);
      }
      if (webhook.cacheUnauthorizedTTL !== undefined) {
        out.webhook.cacheUnauthorizedTTLMs = this.duration(`${field}.webhook.cacheUnauthorizedTTL`, webhook.cacheUnauthorizedTTL, false);
      }
    }
    return out;
  }

  authorizationMode(field: string, value: unknown): KubeletAuthorizationMode {
    const mode = this.string(field, value);
    if (mode !== 'AlwaysAllow' && mode !== 'Webhook') this.fail(field, `must be AlwaysAllow or Webhook, not "${mode}"`);
    return mode;
  }

  tlsMinVersion(field: string, value: unknown): string {
    const version = this.string(field, value);
    if (version !== '' && !(version in tlsVersions)) this.fail(field, `must be one of ${Object.keys(tlsVersions).join(', ')}, not "${version}"`);
    return version;
  }

  tlsCipherSuites(field: string, value: unknown): string[] {
    const list = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',').filter(Boolean) : this.fail(field, 'must be a list of cipher suite names');
    return list.map((raw, i) => {
      const name = this.string(`${field}[${i}]`, raw).trim();
      if (!(name in tlsCipherSuiteNames)) this.fail(`${field}[${i}]`, `unknown or insecure cipher suite "${name}"`);
      return name;
    });
  }

  taints(field: string, value: unknown): V1Taint[] {
    if (!Array.isArray(value)) return this.fail(field, 'must be a list of taints');
    return value.map((raw, i) => {
      const at = `${field}[${i}]`;
      if (!isRecord(raw)) return this.fail(at, 'must be a taint (key, value, effect)');
      for (const key of Object.keys(raw)) if (!['key', 'value', 'effect'].includes(key)) this.fail(`${at}.${key}`, 'unknown field');
      const key = this.string(`${at}.key`, raw.key);
      if (!key) this.fail(`${at}.key`, 'must not be empty');
      const effect = this.string(`${at}.effect`, raw.effect);
      if (!taintEffects.includes(effect)) this.fail(`${at}.effect`, `must be one of ${taintEffects.join(', ')}, not "${effect}"`);
      const taint: V1Taint = { key, effect };
      if (raw.value !== undefined) taint.value = this.string(`${at}.value`, raw.value);
      return taint;
    });
  }
}

/** Parses a KubeletConfiguration document; returns only the fields it sets. Unknown and unsupported fields are errors. */
export function parseKubeletConfiguration(text: string, source: string): KubeletConfigFile {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new KubeletConfigError(`${source}: not valid YAML: ${(err as Error).message}`, { cause: err });
  }
  if (!isRecord(doc)) throw new KubeletConfigError(`${source}: not a KubeletConfiguration (expected a YAML mapping)`);
  const r = new FieldReader(source);
  if (doc.apiVersion !== kubeletConfigApiVersion) {
    r.fail('apiVersion', `must be ${kubeletConfigApiVersion}, not ${JSON.stringify(doc.apiVersion ?? null)}`);
  }
  if (doc.kind !== kubeletConfigKind) r.fail('kind', `must be ${kubeletConfigKind}, not ${JSON.stringify(doc.kind ?? null)}`);

  const out: KubeletConfigFile = { source };
  for (const [field, value] of Object.entries(doc)) {
    switch (field) {
      case 'apiVersion':
      case 'kind':
        break;
      case 'staticPodPath':
      case 'podLogsDir':
      case 'containerRuntimeEndpoint':
      case 'podCIDR':
      case 'providerID':
      case 'tlsCertFile':
      case 'tlsPrivateKeyFile':
        out[field] = r.string(field, value);
        break;
      case 'address':
        out.address = r.string(field, value);
        if (isIP(out.address) === 0) r.fail(field, `must be an IP address, not "${out.address}"`);
        break;
      case 'tlsMinVersion':
        out.tlsMinVersion = r.tlsMinVersion(field, value);
        break;
      case 'tlsCipherSuites':
        out.tlsCipherSuites = r.tlsCipherSuites(field, value);
        break;
      case 'authentication':
        out.authentication = r.authentication(field, value, defaultKubeletConfiguration().authentication);
        break;
      case 'authorization':
        out.authorization = r.authorization(field, value, defaultKubeletConfiguration().authorization);
        break;
      case 'syncFrequency':
      case 'fileCheckFrequency':
      case 'runtimeRequestTimeout':
      case 'nodeStatusUpdateFrequency':
      case 'nodeStatusReportFrequency':
        out[`${field}Ms`] = r.duration(field, value, true);
        break;
      case 'port':
        out.port = r.int(field, value, 1);
        if (out.port > 65535) r.fail(field, `must be a port number (1-65535), not ${out.port}`);
        break;
      case 'maxPods':
        out.maxPods = r.int(field, value, 0);
        break;
      case 'kubeAPIQPS':
        out.kubeAPIQPS = r.int(field, value, 1);
        break;
      case 'kubeAPIBurst':
        out.kubeAPIBurst = r.int(field, value, 1);
        break;
      case 'nodeLeaseDurationSeconds':
        out.nodeLeaseDurationSeconds = r.int(field, value, 1);
        break;
      case 'nodeStatusMaxImages':
        out.nodeStatusMaxImages = r.int(field, value, -1);
        break;
      case 'systemReserved':
      case 'kubeReserved':
        out[field] = r.reservation(field, value);
        break;
      case 'evictionHard':
        out.evictionHard = r.evictionHard(field, value);
        break;
      case 'registerNode':
        out.registerNode = r.bool(field, value);
        break;
      case 'rotateCertificates':
        out.rotateCertificates = r.bool(field, value);
        break;
      case 'registerWithTaints':
        out.registerWithTaints = r.taints(field, value);
        break;
      default:
        if (unsupportedKubeletFields.has(field)) r.fail(field, 'is a kubelet setting that nodelet does not support; remove it');
        r.fail(field, 'unknown field (not a KubeletConfiguration v1beta1 field)');
    }
  }
  return out;
}

/** Reads and parses `--config FILE`. */
export async function loadKubeletConfiguration(file: string): Promise<KubeletConfigFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new KubeletConfigError(`${file}: cannot read the kubelet configuration: ${(err as Error).message}`, { cause: err });
  }
  return parseKubeletConfiguration(text, file);
}

type StringField = 'staticPodPath' | 'podLogsDir' | 'containerRuntimeEndpoint' | 'podCIDR';
type DurationField = 'syncFrequencyMs' | 'fileCheckFrequencyMs' | 'runtimeRequestTimeoutMs';

/** nodelet's command-line flags that carry a KubeletConfiguration field (kubelet's flag names). */
export const configFlags: ReadonlyArray<{ flag: string; field: StringField } | { flag: string; field: DurationField; duration: true }> = [
  { flag: 'pod-manifest-path', field: 'staticPodPath' },
  { flag: 'pod-logs-dir', field: 'podLogsDir' },
  { flag: 'container-runtime-endpoint', field: 'containerRuntimeEndpoint' },
  { flag: 'pod-cidr', field: 'podCIDR' },
  { flag: 'sync-frequency', field: 'syncFrequencyMs', duration: true },
  { flag: 'file-check-frequency', field: 'fileCheckFrequencyMs', duration: true },
  { flag: 'runtime-request-timeout', field: 'runtimeRequestTimeoutMs', duration: true },
];

/**
 * The effective configuration, with kubelet's precedence: a flag given on the command line wins over the file,
 * the file over the defaults. `flags` are the parsed flag values, `explicit` the names given on the command line.
 */
export function resolveKubeletConfiguration(
  file: KubeletConfigFile | undefined,
  flags: ReadonlyMap<string, string> = new Map(),
  explicit: ReadonlySet<string> = new Set(),
): KubeletConfiguration {
  const config = defaultKubeletConfiguration();
  if (file) {
    const { source: _source, ...fields } = file;
    Object.assign(config, fields);
    // kubelet: nodeStatusReportFrequency defaults to nodeStatusUpdateFrequency when only the latter is set.
    if (file.nodeStatusUpdateFrequencyMs !== undefined && file.nodeStatusReportFrequencyMs === undefined) {
      config.nodeStatusReportFrequencyMs = file.nodeStatusUpdateFrequencyMs;
    }
  }
  for (const entry of configFlags) {
    const value = flags.get(entry.flag);
    if (value === undefined || !explicit.has(entry.flag)) continue;
    if ('duration' in entry) config[entry.field] = parseGoDuration(value);
    else config[entry.field] = value;
  }
  applyServerFlags(config, flags, explicit);
  return config;
}

/** The kubelet API's flags (kubelet's names), given on the command line, over the file: each checked as its field is. */
function applyServerFlags(config: KubeletConfiguration, flags: ReadonlyMap<string, string>, explicit: ReadonlySet<string>): void {
  const given = (flag: string) => (explicit.has(flag) ? flags.get(flag) : undefined);
  const r = new FieldReader('command line');
  const bool = (flag: string, value: string) => {
    if (value !== 'true' && value !== 'false') r.fail(`--${flag}`, `must be true or false, not "${value}"`);
    return value === 'true';
  };
  let value: string | undefined;
  if ((value = given('address')) !== undefined) {
    if (isIP(value) === 0) r.fail('--address', `must be an IP address, not "${value}"`);
    config.address = value;
  }
  if ((value = given('port')) !== undefined) {
    const port = Number(value);
    if (!Number.isInteger(port) || port < 1 || port > 65535) r.fail('--port', `must be a port number (1-65535), not ${value}`);
    config.port = port;
  }
  if ((value = given('tls-cert-file')) !== undefined) config.tlsCertFile = value;
  if ((value = given('tls-private-key-file')) !== undefined) config.tlsPrivateKeyFile = value;
  if ((value = given('tls-min-version')) !== undefined) config.tlsMinVersion = r.tlsMinVersion('--tls-min-version', value);
  if ((value = given('tls-cipher-suites')) !== undefined) config.tlsCipherSuites = r.tlsCipherSuites('--tls-cipher-suites', value);
  if ((value = given('client-ca-file')) !== undefined) config.authentication.x509.clientCAFile = value;
  if ((value = given('anonymous-auth')) !== undefined) config.authentication.anonymous.enabled = bool('anonymous-auth', value);
  if ((value = given('authentication-token-webhook')) !== undefined) config.authentication.webhook.enabled = bool('authentication-token-webhook', value);
  if ((value = given('authentication-token-webhook-cache-ttl')) !== undefined) config.authentication.webhook.cacheTTLMs = parseGoDuration(value);
  if ((value = given('authorization-mode')) !== undefined) config.authorization.mode = r.authorizationMode('--authorization-mode', value);
  if ((value = given('authorization-webhook-cache-authorized-ttl')) !== undefined) {
    config.authorization.webhook.cacheAuthorizedTTLMs = parseGoDuration(value);
  }
  if ((value = given('authorization-webhook-cache-unauthorized-ttl')) !== undefined) {
    config.authorization.webhook.cacheUnauthorizedTTLMs = parseGoDuration(value);
  }
}
