// Token discovery (kubeadm's discovery/token): fetch kube-public/cluster-info anonymously, check the bootstrap signer's
// detached JWS with the token, pin the CA it carries by its public key hash, and fetch it again over TLS verified with
// that CA. What it returns is what the node may trust: the API server's URL and its CA.
import { parse } from 'yaml';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { ApiError, KubeClient } from '../kubeapi/client.js';
import { BootstrapInputError, detachedSignatureProblem, type BootstrapToken } from './bootstrap-token.js';
import { parseCertificates, pinProblem } from './ca-pin.js';

/** Discovery found no cluster the token and the pins vouch for; the message says which check failed. */
export class DiscoveryError extends Error {}

export interface DiscoveryOptions {
  /** `host:port` of the API server, as `kubeadm join` takes it. */
  endpoint: string;
  token: BootstrapToken;
  /** Hex SHA-256 pins of the CA's public key (parseCaCertHash); empty only with unsafeSkipCAVerification. */
  caCertHashes: string[];
  unsafeSkipCAVerification: boolean;
  /** How long to wait for cluster-info to carry a signature for the token (kubeadm's discovery timeout, 5 minutes). */
  timeoutMs: number;
  /** Between attempts (kubeadm's DiscoveryRetryInterval, 5 s). */
  retryMs?: number;
  clock: Clock;
  log: Logger;
  signal: AbortSignal;
}

export interface DiscoveredCluster {
  /** The API server as cluster-info names it. */
  server: string;
  caPem: string;
  /** The cluster-info kubeconfig's text, verified. */
  kubeconfig: string;
}

interface ConfigMap {
  data?: Record<string, string>;
}

const clusterInfoPath = '/api/v1/namespaces/kube-public/configmaps/cluster-info';

export async function discoverCluster(opts: DiscoveryOptions): Promise<DiscoveredCluster> {
  if (opts.caCertHashes.length === 0 && !opts.unsafeSkipCAVerification) {
    throw new BootstrapInputError('give --discovery-token-ca-cert-hash sha256:<hex> to pin the cluster CA, or --discovery-token-unsafe-skip-ca-verification to trust any');
  }
  let server: URL;
  try {
    server = new URL(`https://${opts.endpoint}`);
    if (!server.hostname || !server.port || server.pathname !== '/' || server.search || server.username) throw new Error();
  } catch {
    throw new BootstrapInputError(`the API server endpoint "${opts.endpoint}" is not host:port`);
  }
  // No CA is known yet: the TLS connection proves nothing; the JWS and the pin do.
  const insecure = new KubeClient({ server, insecureSkipTLSVerify: true, source: `https://${opts.endpoint}` }, { userAgent: 'nodelet-join' });
  let kubeconfig: string;
  try {
    kubeconfig = await signedClusterInfo(insecure, opts);
  } finally {
    insecure.close();
  }
  const cluster = clusterOf(kubeconfig);
  if (!cluster) throw new DiscoveryError('the cluster-info ConfigMap\'s kubeconfig names no cluster with a server and certificate-authority-data');
  if (opts.caCertHashes.length === 0) {
    opts.log.warn({ server: cluster.server }, 'cluster-info is signed by the token; its CA is trusted without a pin (--discovery-token-unsafe-skip-ca-verification)');
    return { ...cluster, kubeconfig };
  }
  const problem = pinProblem(parseCertificates(cluster.caPem), opts.caCertHashes);
  if (problem) throw new DiscoveryError(`the cluster CA in the cluster-info ConfigMap is not trusted: ${problem}`);
  // Again, now verifying the server against the pinned CA: it must serve the same kubeconfig.
  const secure = new KubeClient({ server, ca: Buffer.from(cluster.caPem), insecureSkipTLSVerify: false, source: `https://${opts.endpoint}` }, { userAgent: 'nodelet-join' });
  try {
    const again = await secure.request<ConfigMap>({ method: 'GET', path: clusterInfoPath, signal: opts.signal });
    if (again.data?.kubeconfig !== kubeconfig) throw new DiscoveryError('the cluster-info ConfigMap fetched over TLS verified with the pinned CA differs from the first one');
  } catch (err) {
    if (err instanceof DiscoveryError) throw err;
    throw new DiscoveryError(`cannot fetch cluster-info again over TLS verified with the pinned CA: ${(err as Error).message}`, { cause: err });
  } finally {
    secure.close();
  }
  opts.log.info({ server: cluster.server }, 'cluster-info is signed by the token and its CA is pinned');
  return { ...cluster, kubeconfig };
}

/** Polls cluster-info until it carries a signature for the token (the bootstrap signer adds it shortly after the token is made). */
async function signedClusterInfo(client: KubeClient, opts: DiscoveryOptions): Promise<string> {
  const deadline = opts.clock.now() + opts.timeoutMs;
  const key = `jws-kubeconfig-${opts.token.id}`;
  let last = '';
  for (;;) {
    try {
      const cm = await client.request<ConfigMap>({ method: 'GET', path: clusterInfoPath, signal: opts.signal });
      const kubeconfig = cm.data?.kubeconfig;
      if (!kubeconfig) throw new DiscoveryError('the kube-public/cluster-info ConfigMap has no kubeconfig: this API server is not set up for token bootstrapping');
      const jws = cm.data?.[key];
      if (jws) {
        const problem = detachedSignatureProblem(jws, kubeconfig, opts.token);
        if (problem) throw new DiscoveryError(`the cluster-info ConfigMap's signature for token id "${opts.token.id}" does not verify (${problem}): this API server cannot be trusted with this token`);
        return kubeconfig;
      }
      last = `token id "${opts.token.id}" is invalid for this cluster or it has expired (cluster-info carries no ${key}); make a new one with "kubeadm token create" on the control plane`;
    } catch (err) {
      if (err instanceof DiscoveryError) throw err;
      last = `cannot read the kube-public/cluster-info ConfigMap: ${(err as Error).message}`;
      if (err instanceof ApiError && (err.code === 401 || err.code === 403)) last += ' (anonymous access to cluster-info is refused)';
    }
    if (opts.signal.aborted) throw new DiscoveryError(`discovery stopped: ${last}`);
    if (opts.clock.now() >= deadline) throw new DiscoveryError(last);
    opts.log.info({ endpoint: opts.endpoint }, `Discovery: retrying: ${last}`);
    await opts.clock.sleep(Math.min(opts.retryMs ?? 5_000, Math.max(0, deadline - opts.clock.now())), opts.signal);
  }
}

/** The current context's cluster of a kubeconfig, or its first one (kubeadm's GetClusterFromKubeConfig). */
function clusterOf(kubeconfig: string): { server: string; caPem: string } | undefined {
  let doc: { clusters?: { name?: string; cluster?: Record<string, unknown> }[]; contexts?: { name?: string; context?: { cluster?: string } }[]; 'current-context'?: string };
  try {
    doc = parse(kubeconfig) as typeof doc;
  } catch (err) {
    throw new DiscoveryError(`the cluster-info ConfigMap's kubeconfig is not YAML: ${(err as Error).message}`);
  }
  const clusters = doc?.clusters ?? [];
  const contextCluster = doc?.contexts?.find((c) => c.name === doc['current-context'])?.context?.cluster;
  const entry = clusters.find((c) => contextCluster !== undefined && c.name === contextCluster) ?? clusters[0];
  const server = entry?.cluster?.server;
  const ca = entry?.cluster?.['certificate-authority-data'];
  if (typeof server !== 'string' || typeof ca !== 'string') return undefined;
  return { server, caPem: Buffer.from(ca, 'base64').toString('utf8') };
}
