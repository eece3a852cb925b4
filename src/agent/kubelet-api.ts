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
import type { RuntimeListing } from '../server/stats-housekeeping.js';
import { StatsProvider, type StatsRuntime } from '../server/stats-provider.js';
import type { PodCgroupManager } from '../host/cgroups.js';
import { CgroupUsageReader } from '../host/resource-usage.js';
import { loadServingCertificate } from '../server/serving-cert.js';
import type { CertificateManager } from '../bootstrap/rotation.js';
import { AgentConfigError, type AgentConfig } from './agent-config.js';
import { tlsCipherSuiteNames, tlsVersions, type KubeletConfiguration } from './kubelet-config.js';
import { formatGoDuration } from '../core/duration.js';

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
  /** The manager that creates the pod cgroups: where they are, in the host's hierarchies. */
  podCgroups: Pick<PodCgroupManager, 'cgroupPath' | 'mounted'>;
  /** The machine's memory (MemTotal), read once at start. */
  memoryCapacityBytes: number;
  /** When the sync loop (the relist) last ran. */
  syncLoopEntry: () => number | undefined;
  /** A stats scrape (/stats/summary, /metrics/resource) starts. */
  onStatsScrape?: () => void;
  clock: Clock;
  log: Logger;
  /** Ends the serving certificate's manager (serverTLSBootstrap) and the stats housekeeping. */
  signal: AbortSignal;
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
  const bootstrapped = k.serverTLSBootstrap && deps.client ? await servingCertificateManager(deps) : undefined;
  if (k.serverTLSBootstrap && !deps.client) log.warn('serverTLSBootstrap: no API server to ask for a serving certificate; serving a self-signed or given one');
  const cert = bootstrapped?.initial ?? (await selfSignedOrGiven(deps));
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
    cgroups: new CgroupUsageReader(deps.podCgroups.mounted),
    cgroupPath: (name) => deps.podCgroups.cgroupPath(name),
    cgroupRoot: k.cgroupRoot,
    rootDir: config.rootDir,
    podLogsDir: config.podLogsDir,
    memoryCapacityBytes: deps.memoryCapacityBytes,
    nodeStartTime: clock.now() - uptime() * 1000,
    housekeepingIntervalMs: config.housekeepingIntervalMs,
    clock,
    log,
  });
  // As kubelet's cAdvisor: the pods are sampled from the start, so the first scrape (metrics-server's) has rates.
  void stats.run(deps.signal).catch((err: unknown) => log.error({ err }, 'Pod stats housekeeping stopped'));
  const server = new KubeletServer({
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
    listedContainers: () => deps.runtimeListing()?.containers,
    configz: () => configz(k),
    metrics: deps.metrics,
    stats: {
      summary: () => (deps.onStatsScrape?.(), stats.summary()),
      cpuAndMemory: () => (deps.onStatsScrape?.(), stats.cpuAndMemory()),
    },
    healthChecks: [pingCheck, logCheck(process.stdout, clock.now), syncLoopCheck(deps.syncLoopEntry, config.syncFrequencyMs, clock.now)],
    clock,
    log,
  });
  if (bootstrapped) {
    bootstrapped.manager.onRotated = (pair) => server.setServingCertificate({ cert: pair.cert.toString(), key: pair.key.toString() });
    void bootstrapped.manager.run(deps.client!, deps.signal).catch((err: unknown) => log.error({ err }, 'Serving certificate manager stopped'));
  }
  return server;
}

/** The serving certificate of tlsCertFile/tlsPrivateKeyFile, or kubelet's self-signed one in --cert-dir. */
async function selfSignedOrGiven(deps: KubeletApiDeps): Promise<{ cert: string; key: string }> {
  const k = deps.config.kubelet;
  const cert = await loadServingCertificate({
    certFile: k.tlsCertFile,
    keyFile: k.tlsPrivateKeyFile,
    certDir: deps.config.certDir,
    hostNames: [...new Set([hostname(), deps.nodeName])],
    addresses: [deps.nodeIP, ...hostAddresses(), '127.0.0.1'],
    now: Math.floor(deps.clock.now() / 1000),
  }).catch((err: Error) => {
    throw new AgentConfigError(err.message, { cause: err });
  });
  if (cert.generated) deps.log.info({ cert: cert.certFile, key: cert.keyFile }, 'Generated a self-signed serving certificate for the kubelet API');
  return cert;
}

/**
 * serverTLSBootstrap (kubelet's NewKubeletServerCertificateManager): the stored kubelet-server-current.pem, else
 * tlsCertFile/tlsPrivateKeyFile, while valid; with none, nothing is served until a kubernetes.io/kubelet-serving CSR for
 * the node's names and addresses is approved and issued (until then TLS handshakes fail, as kubelet's "no serving
 * certificate available"). A pair that does not carry the node's names and addresses is replaced at once; rotated as
 * the client certificate.
 */
async function servingCertificateManager(deps: KubeletApiDeps): Promise<{ manager: CertificateManager; initial: { cert: string; key: string } }> {
  const { CertificateManager } = await import('../bootstrap/rotation.js');
  const { servingCertificateTemplate } = await import('../bootstrap/csr.js');
  const { CertificateStore } = await import('../bootstrap/cert-store.js');
  const k = deps.config.kubelet;
  const store = new CertificateStore(deps.config.certDir, 'kubelet-server', { certFile: k.tlsCertFile, keyFile: k.tlsPrivateKeyFile });
  const stored = await store.current().catch((err: unknown) => {
    deps.log.warn({ err }, 'Ignoring an unusable serving certificate; requesting a new one');
    return undefined;
  });
  const now = deps.clock.now();
  // As client-go's manager: an expired pair is not served (Current() is nil), a not-yet-valid one is.
  const valid = stored && now < stored.notAfter ? stored : undefined;
  // kubelet's node addresses as its certificate template reads them: the Hostname (the node name without a cloud
  // provider) as DNS name, the InternalIP as IP address.
  const template = servingCertificateTemplate(deps.nodeName, { dnsNames: [deps.nodeName], ipAddresses: [deps.nodeIP] });
  const manager = new CertificateManager({
    store,
    ...(valid ? { initial: { cert: Buffer.from(valid.certPem), key: Buffer.from(valid.keyPem) } } : {}),
    template,
    clock: deps.clock,
    log: deps.log.child({ certificate: 'serving' }),
  });
  return { manager, initial: valid ? { cert: valid.certPem, key: valid.keyPem } : { cert: '', key: '' } };
}
