// Builds the kubelet API server (port 10250) from the configuration: serving certificate, authentication and
// authorization as kubelet sets them up, secure by default; standalone (no API server) only x509 clients, AlwaysAllow.
import { readFile } from 'node:fs/promises';
import { hostname, uptime } from 'node:os';
import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { KubeClient } from '../kubeapi/client.js';
import { hostAddresses } from '../host/node.js';
import { Authenticator, tokenReviewWebhook, type ApiRequester } from '../server/authn.js';
import { alwaysAllow, WebhookAuthorizer, type Authorizer } from '../server/authz.js';
import { logCheck, pingCheck, syncLoopCheck } from '../server/healthz.js';
import { KubeletServer, type ServerRuntime } from '../server/kubelet-server.js';
import type { KubeletMetrics } from '../server/metrics.js';
import { StatsProvider, type RuntimeListing, type StatsRuntime } from '../server/stats-provider.js';
import { parseCgroupMounts } from '../host/cgroups.js';
import { CgroupUsageReader } from '../host/resource-usage.js';
import { readMachineInfo } from '../host/machine-info.js';
import { loadServingCertificate } from '../server/serving-cert.js';
import { AgentConfigError, type AgentConfig } from './agent-config.js';
import { tlsCipherSuiteNames, tlsVersions, type KubeletConfiguration } from './kubelet-config.js';

export interface KubeletApiDeps {
  config: AgentConfig;
  nodeName: string;
  nodeIP: string;
  /** The API server (cluster mode): TokenReview and SubjectAccessReview go there. */
  client?: KubeClient;
  pods: () => V1Pod[];
  runtime: ServerRuntime & StatsRuntime;
  metrics: KubeletMetrics;
  /** The latest relist's sandboxes and containers. */
  runtimeListing: () => RuntimeListing | undefined;
  /** When the sync loop (the relist) last ran. */
  syncLoopEntry: () => number | undefined;
  clock: Clock;
  log: Logger;
}

/** Go's duration form, as /configz shows durations ("1m0s", "20s", "2m0s"). */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  if (h === 0 && m === 0 && s < 1) return `${ms}ms`;
  return `${h > 0 ? `${h}h` : ''}${h > 0 || m > 0 ? `${m}m` : ''}${s}s`;
}

/** /configz: the KubeletConfiguration in effect, in kubelet.config.k8s.io/v1beta1 form. */
export function configz(k: KubeletConfiguration): object {
  return {
    kubeletconfig: {
      staticPodPath: k.staticPodPath,
      podLogsDir: k.podLogsDir,
      syncFrequency: formatGoDuration(k.syncFrequencyMs),
      fileCheckFrequency: formatGoDuration(k.fileCheckFrequencyMs),
      address: k.address,
      port: k.port,
      tlsCertFile: k.tlsCertFile,
      tlsPrivateKeyFile: k.tlsPrivateKeyFile,
      ...(k.tlsMinVersion ? { tlsMinVersion: k.tlsMinVersion } : {}),
      ...(k.tlsCipherSuites.length > 0 ? { tlsCipherSuites: k.tlsCipherSuites } : {}),
      authentication: {
        x509: k.authentication.x509.clientCAFile ? { clientCAFile: k.authentication.x509.clientCAFile } : {},
        webhook: { enabled: k.authentication.webhook.enabled, cacheTTL: formatGoDuration(k.authentication.webhook.cacheTTLMs) },
        anonymous: { enabled: k.authentication.anonymous.enabled },
      },
      authorization: {
        mode: k.authorization.mode,
        webhook: {
          cacheAuthorizedTTL: formatGoDuration(k.authorization.webhook.cacheAuthorizedTTLMs),
          cacheUnauthorizedTTL: formatGoDuration(k.authorization.webhook.cacheUnauthorizedTTLMs),
        },
      },
      runtimeRequestTimeout: formatGoDuration(k.runtimeRequestTimeoutMs),
      containerRuntimeEndpoint: k.containerRuntimeEndpoint,
      podCIDR: k.podCIDR,
      maxPods: k.maxPods,
      kubeAPIQPS: k.kubeAPIQPS,
      kubeAPIBurst: k.kubeAPIBurst,
      nodeStatusUpdateFrequency: formatGoDuration(k.nodeStatusUpdateFrequencyMs),
      nodeStatusReportFrequency: formatGoDuration(k.nodeStatusReportFrequencyMs),
      nodeLeaseDurationSeconds: k.nodeLeaseDurationSeconds,
      nodeStatusMaxImages: k.nodeStatusMaxImages,
      registerNode: k.registerNode,
      ...(k.providerID ? { providerID: k.providerID } : {}),
    },
  };
}

/** The kubelet API server, not yet listening. */
export async function createKubeletApi(deps: KubeletApiDeps): Promise<KubeletServer> {
  const { config, log, clock } = deps;
  const k = config.kubelet;
  const cert = await loadServingCertificate({
    certFile: k.tlsCertFile,
    keyFile: k.tlsPrivateKeyFile,
    certDir: config.certDir,
    hostNames: [...new Set([hostname(), deps.nodeName])],
    addresses: [deps.nodeIP, ...hostAddresses(), '127.0.0.1'],
    now: Math.floor(clock.now() / 1000),
  }).catch((err: Error) => {
    throw new AgentConfigError(err.message, { cause: err });
  });
  if (cert.generated) log.info({ cert: cert.certFile, key: cert.keyFile }, 'Generated a self-signed serving certificate for the kubelet API');
  const caFile = k.authentication.x509.clientCAFile;
  const clientCA = caFile
    ? await readFile(caFile, 'utf8').catch((err: Error) => {
        throw new AgentConfigError(`${caFile}: cannot read the client CA file: ${err.message}`, { cause: err });
      })
    : undefined;
  const client: ApiRequester | undefined = deps.client;
  const tokenWebhook = k.authentication.webhook.enabled && client !== undefined;
  const authenticator = new Authenticator({
    x509: clientCA !== undefined,
    ...(tokenWebhook ? { tokenReview: tokenReviewWebhook(client) } : {}),
    tokenCacheTtlMs: k.authentication.webhook.cacheTTLMs,
    anonymous: k.authentication.anonymous.enabled,
    clock,
  });
  let authorizer: Authorizer = alwaysAllow;
  if (k.authorization.mode === 'Webhook' && client) {
    authorizer = new WebhookAuthorizer({
      client,
      clock,
      authorizedTtlMs: k.authorization.webhook.cacheAuthorizedTTLMs,
      unauthorizedTtlMs: k.authorization.webhook.cacheUnauthorizedTTLMs,
    });
  }
  log.info(
    {
      address: k.address,
      port: k.port,
      clientCA: caFile || undefined,
      tokenWebhook,
      anonymous: k.authentication.anonymous.enabled,
      authorization: k.authorization.mode === 'Webhook' && !client ? 'AlwaysAllow (no API server)' : k.authorization.mode,
    },
    'Kubelet API configured',
  );
  if (!clientCA && !tokenWebhook && !k.authentication.anonymous.enabled) {
    log.warn('The kubelet API accepts no one: give --client-ca-file (or join an API server for tokens)');
  }
  const stats = new StatsProvider({
    nodeName: deps.nodeName,
    runtime: deps.runtime,
    listing: deps.runtimeListing,
    pods: deps.pods,
    cgroups: new CgroupUsageReader(parseCgroupMounts(await readFile('/proc/self/mountinfo', 'utf8'))),
    cgroupRoot: k.cgroupRoot,
    rootDir: config.rootDir,
    podLogsDir: config.podLogsDir,
    memoryCapacityBytes: Number((await readMachineInfo(config.rootDir)).memoryCapacityBytes),
    nodeStartTime: clock.now() - uptime() * 1000,
    now: clock.now,
    log,
  });
  return new KubeletServer({
    nodeName: deps.nodeName,
    address: k.address,
    port: k.port,
    tls: {
      cert: cert.cert,
      key: cert.key,
      ...(clientCA ? { clientCA } : {}),
      ...(k.tlsMinVersion ? { minVersion: tlsVersions[k.tlsMinVersion]! } : {}),
      ciphers: k.tlsCipherSuites.map((name) => tlsCipherSuiteNames[name]!),
    },
    authenticator,
    authorizer,
    pods: deps.pods,
    runtime: deps.runtime,
    configz: () => configz(k),
    metrics: deps.metrics,
    stats,
    healthChecks: [pingCheck, logCheck(process.stdout, clock.now), syncLoopCheck(deps.syncLoopEntry, config.syncFrequencyMs, clock.now)],
    clock,
    log,
  });
}
