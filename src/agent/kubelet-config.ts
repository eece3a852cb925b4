// Reads `--config FILE`: a KubeletConfiguration (kubelet.config.k8s.io/v1beta1) limited to the settings nodelet honours.
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import type { V1Taint } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { InvalidQuantityError, parseQuantity, type Quantity } from '../core/quantity.js';
import { formatGoDuration, parseGoDuration } from '../core/duration.js';
import type { EvictionSignal, EvictionThreshold, ReservedResource } from '../host/allocatable.js';
import type { CgroupDriver } from '../cri/runtime-info.js';

export type { CgroupDriver };

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
  /** userNamespaces.idsPerPod: the host IDs each pod with hostUsers false gets (kubelet's default 65536). */
  userNamespacesIdsPerPod: number;
  /** Every pod cgroup's pids.max when positive; -1 (the default) and 0 set none. */
  podPidsLimit: number;
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
  /** The cluster DNS servers' IPs: ClusterFirst pods get them as their nameservers (none: they fall back to Default). */
  clusterDNS: string[];
  /** The cluster's domain: ClusterFirst pods search <ns>.svc.<domain>, svc.<domain> and <domain> first. */
  clusterDomain: string;
  /** The resolver file Default pods copy and ClusterFirst pods take their search list from; '' for none. */
  resolvConf: string;
  /** How pod cgroups are made: cgroupfs, or systemd (cgroup v2 hosts); it must be the runtime's (see agent). */
  cgroupDriver: CgroupDriver;
  /** Where allocatable is enforced: "pods" limits the kubepods cgroup to it (system-reserved and kube-reserved are not implemented). */
  enforceNodeAllocatable: string[];
  /** The cgroup kubepods is created under; it must exist. */
  cgroupRoot: string;
  /** Refuse to start while swap is on (/proc/swaps). */
  failSwapOn: boolean;
  /**
   * Refuse to start on a cgroup v1 host (kubelet 1.37's default true); false starts there with kubelet's deprecation
   * warning (see agent's cgroupVersionCheck).
   */
  failCgroupV1: boolean;
  /** Pull one image at a time (kubelet's default true; false when maxParallelImagePulls of 2 or more is set and this is not). */
  serializeImagePulls: boolean;
  /** At most this many parallel pulls (only without serializeImagePulls); undefined: no limit. */
  maxParallelImagePulls?: number;
  /** Image GC: at the high threshold (percent of the image filesystem used) unused images are removed down to the low one. */
  imageGCHighThresholdPercent: number;
  imageGCLowThresholdPercent: number;
  /** Images detected less than this ago are not removed for space (kubelet's default 2m; 0 means the default). */
  imageMinimumGCAgeMs: number;
  /** Images unused for longer are removed whatever the disk; 0: off (kubelet's default). */
  imageMaximumGCAgeMs: number;
  /** kubelet's healthz HTTP server (GET /healthz: ok); port 0 disables it. */
  healthzBindAddress: string;
  healthzPort: number;
  /** Rotate the client certificate before it expires (kubelet's default is false; kubeadm and kind write true, nodelet defaults to true). */
  rotateCertificates: boolean;
  /** The kubelet API's serving certificate from a kubernetes.io/kubelet-serving CSR, rotated (kubelet's default false). */
  serverTLSBootstrap: boolean;
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
export type KubeletConfigFile = Partial<KubeletConfiguration> & {
  source: string;
  /** One line per field accepted but not honoured (unknown, or a kubelet feature nodelet does not have), naming it. */
  warnings: string[];
};

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
    userNamespacesIdsPerPod: 65536,
    podPidsLimit: -1,
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
    clusterDNS: [],
    clusterDomain: '',
    resolvConf: '/etc/resolv.conf',
    cgroupDriver: 'cgroupfs',
    enforceNodeAllocatable: ['pods'],
    cgroupRoot: '/',
    failSwapOn: true,
    // kubelet 1.37's v1beta1 default (SetDefaults_KubeletConfiguration: FailCgroupV1 nil -> true).
    failCgroupV1: true,
    serializeImagePulls: true,
    imageGCHighThresholdPercent: 85,
    imageGCLowThresholdPercent: 80,
    imageMinimumGCAgeMs: 120_000,
    imageMaximumGCAgeMs: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    rotateCertificates: true,
    serverTLSBootstrap: false,
  };
}

/** How a field nodelet does not implement is type-checked, and which values ask for nothing nodelet does not do. */
type IgnoredField =
  | { kind: 'string'; inert?: string[] }
  | { kind: 'bool'; default: boolean }
  | { kind: 'int'; inert?: number[] }
  | { kind: 'number'; inert: number[] }
  | { kind: 'duration'; defaultMs?: number }
  | { kind: 'strings' | 'stringMap' | 'boolMap' | 'object' | 'list' };

/**
 * Fields of kubelet's v1beta1 KubeletConfiguration that nodelet does not implement. As kubelet's lenient decoding of
 * v1beta1 takes a file with fields it cannot use, nodelet accepts them: a value of the wrong type is an error naming
 * the field, a value that asks for something (not kubelet's default, nor the zero value kubelet replaces by its
 * default, nor "off") is one warning naming the field, and the setting is ignored.
 */
const ignoredFields: Record<string, IgnoredField> = {
  enableServer: { kind: 'bool', default: true },
  httpCheckFrequency: { kind: 'duration', defaultMs: 20_000 },
  staticPodURL: { kind: 'string' },
  staticPodURLHeader: { kind: 'object' },
  readOnlyPort: { kind: 'int' },
  registryPullQPS: { kind: 'int', inert: [5] },
  registryBurst: { kind: 'int', inert: [0, 10] },
  imagePullCredentialsVerificationPolicy: { kind: 'string' },
  preloadedImagesVerificationAllowlist: { kind: 'strings' },
  eventRecordQPS: { kind: 'int', inert: [50] },
  eventBurst: { kind: 'int', inert: [0, 100] },
  enableDebuggingHandlers: { kind: 'bool', default: true },
  enableContentionProfiling: { kind: 'bool', default: false },
  oomScoreAdj: { kind: 'int', inert: [-999] },
  streamingConnectionIdleTimeout: { kind: 'duration', defaultMs: 4 * 3600_000 },
  volumeStatsAggPeriod: { kind: 'duration', defaultMs: 60_000 },
  kubeletCgroups: { kind: 'string' },
  systemCgroups: { kind: 'string' },
  cgroupsPerQOS: { kind: 'bool', default: true },
  cpuManagerPolicy: { kind: 'string', inert: ['', 'none'] },
  // Read only on cgroup v2 hosts (memory.oom.group); nodelet runs pods on cgroup v1.
  singleProcessOOMKill: { kind: 'bool', default: false },
  cpuManagerPolicyOptions: { kind: 'stringMap' },
  cpuManagerReconcilePeriod: { kind: 'duration', defaultMs: 10_000 },
  memoryManagerPolicy: { kind: 'string', inert: ['', 'None'] },
  topologyManagerPolicy: { kind: 'string', inert: ['', 'none'] },
  topologyManagerScope: { kind: 'string', inert: ['', 'container'] },
  topologyManagerPolicyOptions: { kind: 'stringMap' },
  qosReserved: { kind: 'stringMap' },
  hairpinMode: { kind: 'string', inert: ['', 'promiscuous-bridge'] },
  cpuCFSQuota: { kind: 'bool', default: true },
  cpuCFSQuotaPeriod: { kind: 'duration', defaultMs: 100 },
  maxOpenFiles: { kind: 'int', inert: [0, 1_000_000] },
  // nodelet speaks JSON to the API server.
  contentType: { kind: 'string', inert: ['', 'application/vnd.kubernetes.protobuf', 'application/json'] },
  evictionSoft: { kind: 'stringMap' },
  evictionSoftGracePeriod: { kind: 'stringMap' },
  evictionPressureTransitionPeriod: { kind: 'duration', defaultMs: 300_000 },
  evictionMaxPodGracePeriod: { kind: 'int' },
  evictionMinimumReclaim: { kind: 'stringMap' },
  mergeDefaultEvictionSettings: { kind: 'bool', default: false },
  podsPerCore: { kind: 'int' },
  enableControllerAttachDetach: { kind: 'bool', default: true },
  protectKernelDefaults: { kind: 'bool', default: false },
  makeIPTablesUtilChains: { kind: 'bool', default: true },
  iptablesMasqueradeBit: { kind: 'int', inert: [14] },
  iptablesDropBit: { kind: 'int', inert: [15] },
  featureGates: { kind: 'boolMap' },
  memorySwap: { kind: 'object' },
  containerLogMaxSize: { kind: 'string', inert: ['', '10Mi'] },
  containerLogMaxFiles: { kind: 'int', inert: [5] },
  containerLogMaxWorkers: { kind: 'int', inert: [1] },
  containerLogMonitorInterval: { kind: 'duration', defaultMs: 10_000 },
  // nodelet's object managers watch (kubelet's default strategy).
  configMapAndSecretChangeDetectionStrategy: { kind: 'string', inert: ['', 'Watch'] },
  reservedSystemCPUs: { kind: 'string' },
  showHiddenMetricsForVersion: { kind: 'string' },
  systemReservedCgroup: { kind: 'string' },
  kubeReservedCgroup: { kind: 'string' },
  allowedUnsafeSysctls: { kind: 'strings' },
  // kubelet 1.37 (alpha, gate DefaultPodSysctls): sysctls every pod gets unless its securityContext sets them.
  defaultPodSysctls: { kind: 'stringMap' },
  volumePluginDir: { kind: 'string', inert: ['', '/usr/libexec/kubernetes/kubelet-plugins/volume/exec/'] },
  kernelMemcgNotification: { kind: 'bool', default: false },
  logging: { kind: 'object' },
  enableSystemLogHandler: { kind: 'bool', default: true },
  enableSystemLogQuery: { kind: 'bool', default: false },
  shutdownGracePeriod: { kind: 'duration' },
  shutdownGracePeriodCriticalPods: { kind: 'duration' },
  shutdownGracePeriodByPodPriority: { kind: 'list' },
  crashLoopBackOff: { kind: 'object' },
  reservedMemory: { kind: 'list' },
  enableProfilingHandler: { kind: 'bool', default: true },
  enableDebugFlagsHandler: { kind: 'bool', default: true },
  seccompDefault: { kind: 'bool', default: false },
  // MemoryQoS (cgroup v2 only).
  memoryThrottlingFactor: { kind: 'number', inert: [0, 0.9] },
  // MemoryQoS's memory.min/memory.low (cgroup v2 only); None is kubelet's default.
  memoryReservationPolicy: { kind: 'string', inert: ['', 'None'] },
  // The kubelet API's key exchange curves (Go's numeric CurveIDs); nodelet's server keeps Node's.
  tlsCurvePreferences: { kind: 'list' },
  tracing: { kind: 'object' },
  localStorageCapacityIsolation: { kind: 'bool', default: true },
  imageServiceEndpoint: { kind: 'string' },
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const reservedResources: readonly ReservedResource[] = ['cpu', 'memory', 'ephemeral-storage', 'pid'];
/** The signals that reduce allocatable (kubelet subtracts their hard thresholds); nodelet evicts no pods. */
const allocatableSignals: readonly EvictionSignal[] = ['memory.available', 'nodefs.available'];
/** kubelet's other eviction signals (eviction/api): accepted; a threshold above 0 asks for evictions nodelet does not do. */
const otherEvictionSignals = [
  'allocatableMemory.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'containerfs.available',
  'containerfs.inodesFree', 'pid.available',
];
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

  int(field: string, value: unknown, min: number, max = Infinity): number {
    if (typeof value !== 'number' || !Number.isInteger(value)) this.fail(field, `must be an integer, not ${JSON.stringify(value)}`);
    if (value < min) this.fail(field, `must be at least ${min}, not ${value}`);
    if (value > max) this.fail(field, `must be at most ${max}, not ${value}`);
    return value;
  }

  /** A duration where 0 means kubelet's default (undefined here), as kubelet's defaulting replaces a zero duration. */
  durationOrDefault(field: string, value: unknown): number | undefined {
    const ms = this.duration(field, value, false);
    return ms === 0 ? undefined : ms;
  }

  strings(field: string, value: unknown): string[] {
    if (!Array.isArray(value)) return this.fail(field, `must be a list of strings, not ${JSON.stringify(value)}`);
    return value.map((v, i) => this.string(`${field}[${i}]`, v));
  }

  map(field: string, value: unknown, what: string): Record<string, unknown> {
    if (!isRecord(value)) return this.fail(field, `must be a map of ${what}, not ${JSON.stringify(value)}`);
    return value;
  }

  ip(field: string, value: unknown): string {
    const text = this.string(field, value);
    if (isIP(text) === 0) this.fail(field, `must be an IP address, not "${text}"`);
    return text;
  }

  /** Type-checks a field nodelet does not implement; true when its value asks for nothing nodelet does not do. */
  ignored(field: string, value: unknown, spec: IgnoredField): boolean {
    switch (spec.kind) {
      case 'string':
        return (spec.inert ?? ['']).includes(this.string(field, value));
      case 'bool':
        return this.bool(field, value) === spec.default;
      case 'int':
        return (spec.inert ?? [0]).includes(this.int(field, value, -Infinity));
      case 'number':
        if (typeof value !== 'number') this.fail(field, `must be a number, not ${JSON.stringify(value)}`);
        return spec.inert.includes(value);
      case 'duration': {
        const ms = this.duration(field, value, false);
        return ms === 0 || ms === spec.defaultMs;
      }
      case 'strings':
        return this.strings(field, value).length === 0;
      case 'stringMap': {
        const map = this.map(field, value, 'strings');
        for (const [k, v] of Object.entries(map)) this.string(`${field}.${k}`, v);
        return Object.keys(map).length === 0;
      }
      case 'boolMap': {
        const map = this.map(field, value, 'names to true or false');
        for (const [k, v] of Object.entries(map)) this.bool(`${field}.${k}`, v);
        return Object.keys(map).length === 0;
      }
      case 'object':
        if (value !== null) this.map(field, value, 'settings');
        return isZero(value);
      case 'list':
        if (!Array.isArray(value)) this.fail(field, `must be a list, not ${JSON.stringify(value)}`);
        return value.length === 0;
    }
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

  /**
   * kubelet's hard eviction thresholds. memory.available and nodefs.available reduce allocatable, as in kubelet; the other
   * signals are accepted, and a threshold above 0 on one of them is a warning (nodelet evicts no pods).
   */
  evictionHard(field: string, value: unknown, warn: (field: string, message: string) => void): Partial<Record<EvictionSignal, EvictionThreshold>> {
    if (!isRecord(value)) return this.fail(field, 'must be a map of eviction signal to threshold');
    const out: Partial<Record<EvictionSignal, EvictionThreshold>> = {};
    for (const [signal, raw] of Object.entries(value)) {
      const at = `${field}.${signal}`;
      const known = (allocatableSignals as readonly string[]).includes(signal);
      if (!known && !otherEvictionSignals.includes(signal)) {
        this.fail(at, `unknown eviction signal; kubelet's are ${[...allocatableSignals, ...otherEvictionSignals].join(', ')}`);
      }
      const text = this.string(at, raw);
      let threshold: EvictionThreshold;
      try {
        threshold = parseEvictionThreshold(text);
      } catch (err) {
        return this.fail(at, (err as Error).message);
      }
      if (known) out[signal as EvictionSignal] = threshold;
      else if (!isZeroThreshold(threshold)) warn(at, `${JSON.stringify(text)} is not honoured: nodelet does not evict pods; ignored`);
    }
    return out;
  }

  /** kubelet's validation of userNamespaces.idsPerPod (validation_linux.go), its messages. */
  idsPerPod(field: string, value: unknown): number {
    if (typeof value !== 'number' || !Number.isInteger(value)) this.fail(field, `must be an integer, not ${JSON.stringify(value)}`);
    if (value < 65536) this.fail(field, 'invalid configuration: userNamespaces.idsPerPod must not be less than 65536');
    if (value % 65536 !== 0) this.fail(field, 'invalid configuration: userNamespaces.idsPerPod must be a multiple of 65536');
    if (value > 0xffffffff) this.fail(field, `invalid configuration: userNamespaces.idsPerPod must not be more than ${0xffffffff}`);
    return value;
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

/** A value that sets nothing: null, false, 0, "", a zero duration, "0", and lists and maps of only such values. */
function isZero(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '' || value === '0') return true;
  if (typeof value === 'string') {
    try {
      return parseGoDuration(value) === 0;
    } catch {
      return false;
    }
  }
  if (Array.isArray(value)) return value.every(isZero);
  if (isRecord(value)) return Object.values(value).every(isZero);
  return false;
}

function isZeroThreshold(t: EvictionThreshold): boolean {
  return 'percentage' in t ? t.percentage === 0 : t.quantity.sign() === 0;
}

const cgroupDrivers: readonly CgroupDriver[] = ['cgroupfs', 'systemd'];

/**
 * Parses a KubeletConfiguration document; returns only the fields it sets, and a warning per field it accepts without
 * honouring. As kubelet decodes v1beta1: an unknown field is a warning (kubelet's lenient decoding), a value of the
 * wrong type an error; nodelet also refuses a value kubelet's validation refuses, naming the field. Duplicate keys are
 * an error (YAML). Zero durations and an empty containerRuntimeEndpoint mean kubelet's default, as its defaulting does.
 */
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

  const out: KubeletConfigFile = { source, warnings: [] };
  const warn = (field: string, message: string) => out.warnings.push(`${source}: ${field}: ${message}`);
  for (const [field, value] of Object.entries(doc)) {
    switch (field) {
      case 'apiVersion':
      case 'kind':
        break;
      case 'staticPodPath':
      case 'podLogsDir':
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
      case 'clusterDomain':
        out[field] = r.string(field, value);
        break;
      case 'containerRuntimeEndpoint': {
        const endpoint = r.string(field, value);
        if (endpoint) out.containerRuntimeEndpoint = endpoint;
        break;
      }
      case 'syncFrequency':
      case 'fileCheckFrequency':
      case 'runtimeRequestTimeout':
      case 'nodeStatusUpdateFrequency':
      case 'nodeStatusReportFrequency': {
        const ms = r.durationOrDefault(field, value);
        if (ms !== undefined) out[`${field}Ms`] = ms;
        break;
      }
      case 'port':
        out.port = r.int(field, value, 1, 65535);
        break;
      case 'maxPods':
        out.maxPods = r.int(field, value, 0);
        break;
      case 'podPidsLimit':
        out.podPidsLimit = r.int(field, value, -1);
        break;
      case 'userNamespaces': {
        const idsPerPod = r.record(field, value, ['idsPerPod']).idsPerPod;
        // Left out or 0: kubelet's default.
        if (idsPerPod !== undefined && idsPerPod !== 0) out.userNamespacesIdsPerPod = r.idsPerPod(`${field}.idsPerPod`, idsPerPod);
        break;
      }
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
        out.evictionHard = r.evictionHard(field, value, warn);
        break;
      case 'registerNode':
      case 'failSwapOn':
      case 'failCgroupV1':
        out[field] = r.bool(field, value);
        break;
      case 'rotateCertificates':
        out.rotateCertificates = r.bool(field, value);
        break;
      case 'serverTLSBootstrap':
        out.serverTLSBootstrap = r.bool(field, value);
        break;
      case 'registerWithTaints':
        out.registerWithTaints = r.taints(field, value);
        break;
      case 'clusterDNS':
        if (!Array.isArray(value)) return r.fail(field, `must be a list of IP addresses, not ${JSON.stringify(value)}`);
        out.clusterDNS = value.map((ip: unknown, i) => r.ip(`${field}[${i}]`, ip));
        break;
      case 'resolvConf':
        // kubelet: "" means no resolver file (pods with dnsPolicy Default get 127.0.0.1 and search ".").
        out.resolvConf = r.string(field, value);
        break;
      case 'cgroupDriver': {
        const driver = r.string(field, value);
        if (!(cgroupDrivers as readonly string[]).includes(driver)) r.fail(field, `must be one of ${cgroupDrivers.join(', ')}, not "${driver}"`);
        out.cgroupDriver = driver as CgroupDriver;
        break;
      }
      case 'enforceNodeAllocatable': {
        if (!Array.isArray(value)) return r.fail(field, `must be a list, not ${JSON.stringify(value)}`);
        const keys = value.map((v: unknown, i) => r.string(`${field}[${i}]`, v));
        for (const key of keys) {
          if (!['pods', 'system-reserved', 'kube-reserved', 'none'].includes(key)) r.fail(field, `invalid option "${key}": must be pods, system-reserved, kube-reserved or none`);
        }
        if (keys.includes('none') && keys.length > 1) r.fail(field, '"none" cannot be combined with other options');
        const unimplemented = keys.filter((k) => k === 'system-reserved' || k === 'kube-reserved');
        if (unimplemented.length > 0) warn(field, `${unimplemented.join(', ')} is not honoured: nodelet enforces allocatable on the pods' cgroup only`);
        out.enforceNodeAllocatable = keys.filter((k) => k === 'pods');
        break;
      }
      case 'cgroupRoot': {
        const root = r.string(field, value);
        if (root && !root.startsWith('/')) r.fail(field, `must be an absolute cgroup path, not "${root}"`);
        // kubelet's default: "" is the root cgroup.
        out.cgroupRoot = root || '/';
        break;
      }
      case 'imageGCHighThresholdPercent':
      case 'imageGCLowThresholdPercent':
        out[field] = r.int(field, value, 0, 100);
        break;
      case 'imageMinimumGCAge': {
        const ms = r.durationOrDefault(field, value);
        if (ms !== undefined) out.imageMinimumGCAgeMs = ms;
        break;
      }
      case 'imageMaximumGCAge':
        out.imageMaximumGCAgeMs = r.duration(field, value, false);
        break;
      case 'serializeImagePulls':
        out.serializeImagePulls = r.bool(field, value);
        break;
      case 'maxParallelImagePulls':
        // kubelet's validation: "must be a positive number".
        if (value !== null) out.maxParallelImagePulls = r.int(field, value, 1);
        break;
      case 'healthzBindAddress':
        out.healthzBindAddress = r.ip(field, value);
        break;
      case 'healthzPort':
        out.healthzPort = r.int(field, value, 0, 65535);
        break;
      case 'runOnce':
        // kubelet 1.37's validation refuses true ("Runonce mode has been deprecated and should not be set").
        if (r.bool(field, value)) r.fail(field, 'true is refused, as kubelet refuses it: run-once mode has been deprecated and should not be set');
        break;
      default: {
        const spec = ignoredFields[field];
        if (!spec) {
          warn(field, "unknown field (not a KubeletConfiguration v1beta1 field); ignored, as kubelet's lenient decoding of v1beta1 ignores it");
        } else if (!r.ignored(field, value, spec)) {
          warn(field, `${JSON.stringify(value)} is not honoured: nodelet does not implement this kubelet setting; ignored`);
        }
      }
    }
  }
  // kubelet validates the thresholds after defaulting: the one the file leaves out keeps kubelet's default.
  const defaults = defaultKubeletConfiguration();
  const high = out.imageGCHighThresholdPercent ?? defaults.imageGCHighThresholdPercent;
  const low = out.imageGCLowThresholdPercent ?? defaults.imageGCLowThresholdPercent;
  if (low >= high) r.fail('imageGCLowThresholdPercent', `${low} must be less than imageGCHighThresholdPercent ${high}`);
  const minAge = out.imageMinimumGCAgeMs ?? defaults.imageMinimumGCAgeMs;
  if (out.imageMaximumGCAgeMs !== undefined && out.imageMaximumGCAgeMs > 0 && out.imageMaximumGCAgeMs <= minAge) {
    r.fail('imageMaximumGCAge', `${formatGoDuration(out.imageMaximumGCAgeMs)} must be greater than imageMinimumGCAge ${formatGoDuration(minAge)}`);
  }
  // kubelet's defaulting: serializeImagePulls left out is true unless maxParallelImagePulls is 2 or more.
  if (out.serializeImagePulls === undefined && out.maxParallelImagePulls !== undefined) out.serializeImagePulls = out.maxParallelImagePulls < 2;
  if (out.serializeImagePulls === true && (out.maxParallelImagePulls ?? 1) > 1) {
    r.fail('maxParallelImagePulls', `cannot be larger than 1 unless serializeImagePulls is set to false (it is ${out.maxParallelImagePulls})`);
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
    const { source: _source, warnings: _warnings, ...fields } = file;
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

/**
 * The kubelet API's flags and --fail-cgroupv1 (kubelet's names), given on the command line, over the file: each checked
 * as its field is.
 */
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
  // kubelet 1.37 keeps this flag undeprecated (cmd/kubelet/app/options: notDeprecated), unlike its other config flags.
  if ((value = given('fail-cgroupv1')) !== undefined) config.failCgroupV1 = bool('fail-cgroupv1', value);
}
