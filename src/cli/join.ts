// `nodelet join <host:port> --token ... --discovery-token-ca-cert-hash ...`: kubeadm join's node side. Discovers the
// cluster, writes the node's configuration and bootstrap kubeconfig under --root-dir, bootstraps the client certificate,
// and returns the agent's command line (the caller runs the agent with it).
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { BootstrapInputError, bearerToken, parseBootstrapToken } from '../bootstrap/bootstrap-token.js';
import { parseCaCertHash } from '../bootstrap/ca-pin.js';
import { discoverCluster } from '../bootstrap/discovery.js';
import { kubeconfigYaml, writeFileAtomic } from '../bootstrap/files.js';
import { fetchClusterKubeletConfig, nodeKubeletConfig } from '../bootstrap/kubelet-config-map.js';
import { kubeconfigProblem, loadClientCertificate } from '../bootstrap/tls-bootstrap.js';
import { parseKubeletConfiguration } from '../agent/kubelet-config.js';
import { systemClock } from '../core/clock.js';
import { parseGoDuration } from '../core/duration.js';
import type { Logger } from '../core/log.js';
import { nodeName as hostNodeName } from '../host/node.js';
import { KubeClient } from '../kubeapi/client.js';
import { agentFlags, FlagError, parseFlags } from './flags.js';
import { joinFlags, joinUsage } from './join-flags.js';

/** The files join writes under --root-dir (and --cert-dir). */
export function joinPaths(rootDir: string, certDir: string) {
  return {
    kubeconfig: join(rootDir, 'kubeconfig'),
    bootstrapKubeconfig: join(rootDir, 'bootstrap-kubeconfig'),
    config: join(rootDir, 'config.yaml'),
    caCert: join(certDir, 'ca.crt'),
  };
}

/**
 * Joins the cluster and returns the agent's arguments. Nothing is written before discovery and the cluster's
 * configuration have been checked; when a later step fails, the files written are removed again.
 */
export async function joinCluster(argv: string[], log: Logger, signal: AbortSignal): Promise<string[]> {
  const { values, positional, explicit } = parseFlags(argv, [...joinFlags, ...agentFlags]);
  if (positional.length !== 1) throw new FlagError(`expected one API server endpoint (host:port), got ${positional.length}: ${joinUsage}`);
  const get = (name: string) => values.get(name) ?? '';
  if (!get('token')) throw new FlagError('--token is required');
  for (const taken of ['kubeconfig', 'bootstrap-kubeconfig', 'config', 'hostname-override']) {
    if (explicit.has(taken)) throw new FlagError(`--${taken} is set by join (files under --root-dir${taken === 'hostname-override' ? '; use --node-name' : ''})`);
  }
  const token = parseBootstrapToken(get('token'));
  const pins = get('discovery-token-ca-cert-hash').split(',').map((h) => h.trim()).filter(Boolean).map(parseCaCertHash);
  const unsafe = get('discovery-token-unsafe-skip-ca-verification') === 'true';
  const rootDir = get('root-dir');
  const certDir = get('cert-dir') || join(rootDir, 'pki');
  const nodeName = hostNodeName(get('node-name'));
  const paths = joinPaths(rootDir, certDir);
  if (!(await kubeconfigProblem(paths.kubeconfig, systemClock.now()))) {
    throw new BootstrapInputError(`${paths.kubeconfig} already holds a valid client certificate: this node has joined; restart it with nodelet ${agentArgs([], paths, nodeName, get('cri-socket')).join(' ')}`);
  }

  const cluster = await discoverCluster({
    endpoint: positional[0]!,
    token,
    caCertHashes: pins,
    unsafeSkipCAVerification: unsafe,
    timeoutMs: parseGoDuration(get('discovery-timeout')),
    clock: systemClock,
    log,
    signal,
  });
  const bootstrapConn = { server: new URL(cluster.server), ca: Buffer.from(cluster.caPem), token: bearerToken(token), insecureSkipTLSVerify: false, source: 'the bootstrap token' };
  const client = new KubeClient(bootstrapConn, { userAgent: `nodelet/${nodeName} (join)` });
  let clusterConfig: string;
  try {
    clusterConfig = await fetchClusterKubeletConfig(client, signal);
  } catch (err) {
    throw new Error(`cannot read the cluster's kubelet configuration with the bootstrap token: ${(err as Error).message}`, { cause: err });
  } finally {
    client.close();
  }
  const config = nodeKubeletConfig(clusterConfig, { containerRuntimeEndpoint: get('cri-socket') || undefined, clientCAFile: paths.caCert });
  // Checked before anything is written: a field nodelet refuses fails the join here, naming it.
  parseKubeletConfiguration(config, `the cluster's KubeletConfiguration (kube-system/kubelet-config, to be ${paths.config})`);

  const written: string[] = [];
  const write = async (file: string, data: string) => {
    await writeFileAtomic(file, data);
    written.push(file);
  };
  try {
    await write(paths.caCert, cluster.caPem);
    await write(paths.bootstrapKubeconfig, kubeconfigYaml({ server: cluster.server, caPem: cluster.caPem, user: { token: bearerToken(token) }, userName: 'tls-bootstrap-token-user' }));
    await write(paths.config, config);
    written.push(join(certDir, 'kubelet-client.key.tmp'));
    await loadClientCertificate({
      kubeconfig: paths.kubeconfig,
      bootstrapKubeconfig: paths.bootstrapKubeconfig,
      certDir,
      nodeName,
      clock: systemClock,
      log,
      signal,
      timeoutMs: parseGoDuration(get('tls-bootstrap-timeout')),
    });
  } catch (err) {
    await Promise.all(written.map((f) => rm(f, { force: true })));
    throw err;
  }
  const passed = agentFlags.filter((f) => explicit.has(f.name)).map((f) => `--${f.name}=${get(f.name)}`);
  const args = agentArgs(passed, paths, nodeName, get('cri-socket'));
  log.info({ node: nodeName, server: cluster.server, kubeconfig: paths.kubeconfig }, `This node has joined the cluster; restart it with: nodelet ${args.join(' ')}`);
  return args;
}

/** A joined node's CNI configuration directory, kubelet's and containerd's default: the cluster's CNI DaemonSet writes there. */
export const joinedNodeCniConfDir = '/etc/cni/net.d';

/** The agent's command line: the agent flags given to join, and the files join wrote. */
function agentArgs(passed: string[], paths: ReturnType<typeof joinPaths>, nodeName: string, criSocket: string): string[] {
  return [
    ...passed,
    ...(passed.some((a) => a.startsWith('--cni-conf-dir=')) ? [] : ['--cni-conf-dir', joinedNodeCniConfDir]),
    '--config', paths.config,
    '--kubeconfig', paths.kubeconfig,
    '--bootstrap-kubeconfig', paths.bootstrapKubeconfig,
    '--hostname-override', nodeName,
    ...(criSocket ? ['--container-runtime-endpoint', criSocket] : []),
  ];
}
