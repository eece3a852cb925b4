// A node of a REAL cluster for integration tests: the control plane of test/cluster/control-plane.ts (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler built from the upstream Go modules) in a temp dir on free
// loopback ports, nodelet joined to it as a node with a `system:node:<name>` client certificate, the built kubectl as the
// admin, the rig's containerd. And its clean-up, which proves the node and the host keep nothing of the test.
//
//   const cluster = await startRealCluster();            // in beforeAll (allow ~3 minutes)
//   afterAll(() => cluster.stop(), 300_000);             // throws, after cleaning all it can, when anything is left
//   await cluster.kubectl.run('create', 'deployment', ...);
//   await cluster.track(pod);                            // records what a running pod holds on the node
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { execa } from 'execa';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { cidrContains, parseCidr, parseIp } from '../../../src/cni/cidr.js';
import { CriClient } from '../../../src/cri/client.js';
import { down, ensureBinaries, nodeCredentials, runningPids, up, type ClusterSettings, type ControlPlane } from '../../cluster/control-plane.js';
import { AgentProcess, criEndpoint, ipReservations, podNetworkName, removeRuntimePods, runtimeObjects, testNode, waitFor } from './agent.js';
import { leftovers, podFootprint, type PodFootprint } from './cluster.js';
import { Kubectl } from './kubectl.js';

/** The pod bridge of the rig's CNI configuration (cni-conf/10-nodelet.conflist). */
export const podBridge = 'nodelet0';

/** The containerd instance nodelet runs on, and nodelet's pod network there (scripts/runtime.sh). */
export interface NodeRuntime {
  criEndpoint: string;
  /** The bridge nodelet's network gives the podCIDR's gateway. */
  podBridge: string;
  /** The name of nodelet's network: its host-local reservations are /var/lib/cni/networks/<name>. */
  podNetwork: string;
}

/** The rig's main instance: the one the integration tests share. */
export const mainRuntime: NodeRuntime = { criEndpoint, podBridge, podNetwork: podNetworkName };

export interface RealClusterOptions {
  /** The Node's name (--hostname-override); default testNode. */
  nodeName?: string;
  /** More nodelet flags; a function gets the control plane's directory (its CA is `<dir>/ca.crt`). */
  agentArgs?: string[] | ((dir: string) => string[]);
  /**
   * Leave kubeadm's CoreDNS Deployment and kube-proxy DaemonSet as `kubeadm init phase addon all` made them. By default
   * CoreDNS is scaled to 0 and kube-proxy gets a nodeSelector no node has before nodelet joins: their pods would land on
   * this node and pull images from registry.k8s.io (no traffic leaves this host in tests). With keepAddons, import
   * local ones first (`scripts/runtime.sh addon-images`) and keep CoreDNS off the internet (see addons.test.ts).
   */
  keepAddons?: boolean;
  /** Runs once the control plane is up and before nodelet joins (e.g. to change an addon before its pods can start). */
  beforeJoin?: (kubectl: Kubectl, plane: ControlPlane) => Promise<void>;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
  /** Return once the Node is registered with a podCIDR, Ready or not (e.g. no pod network yet); default: wait for Ready. */
  notReadyOk?: boolean;
  /**
   * Whether nodelet's pod network takes Node.spec.podCIDR, so the fixture waits until it does (default true). False
   * for an operator's --cni-conf-dir network, which keeps its own range.
   */
  networkTakesPodCIDR?: boolean;
  /** kube-apiserver's audit policy (YAML); default: defaultAuditPolicy. */
  auditPolicy?: string;
  /** Where nodelet runs (default mainRuntime); its agentArgs must then name that instance's CNI socket and network. */
  runtime?: NodeRuntime;
  /** Control-plane settings beyond the free ports it always gets (e.g. CIDRs that do not meet another cluster's). */
  settings?: Partial<ClusterSettings>;
  /** The Kubernetes minor the control plane emulates (--emulated-version of kube-apiserver, the controller-manager and the scheduler), e.g. '1.35'. */
  emulatedVersion?: string;
}

/** The fixture's audit policy: the nodes' pod status writes with their bodies (level Request), every other request at level Metadata. */
export const defaultAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Request
  userGroups: ["system:nodes"]
  verbs: [patch]
  resources: [{group: "", resources: ["pods/status"]}]
- level: Metadata
`;

/** One line of kube-apiserver's audit log (audit.k8s.io/v1 Event at level Metadata). */
export interface AuditEvent {
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string; groups?: string[] };
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number; message?: string; reason?: string };
  requestReceivedTimestamp?: string;
  /** At level Request or RequestResponse. */
  requestObject?: unknown;
  annotations?: Record<string, string>;
}

export interface RealCluster {
  /** The control plane's directory (PKI, kubeconfigs, logs/, etcd data); removed by stop(). */
  dir: string;
  plane: ControlPlane;
  /** Where the built Kubernetes binaries are. */
  binDir: string;
  adminKubeconfig: string;
  /** The node's kubeconfig (system:node:<nodeName>, group system:nodes) nodelet runs with. */
  nodeKubeconfig: string;
  /** The built kubectl as the admin (kubeadm:cluster-admins), writing its files to dir/work. */
  kubectl: Kubectl;
  agent: AgentProcess;
  nodeName: string;
  runtime: NodeRuntime;
  cri: CriClient;
  /** Node.spec.podCIDR as the controller-manager allocated it (nodelet has taken it when startRealCluster returns). */
  podCIDR: string;
  /** The Node's InternalIP as nodelet reported it. */
  nodeIP: string;
  /** UIDs of pods that ran on the node: stop() makes sure the runtime keeps none of them. Tests may add to it. */
  uids: Set<string>;
  /** What running pods held on the node (track()): stop() proves each is gone. */
  footprints: PodFootprint[];
  /** Records the footprint of a pod running on the node (its sandbox, containers, netns, veth, IP, pod dir). */
  track(pod: V1Pod): Promise<PodFootprint>;
  /** The pods bound to the node, as the API server lists them (kubectl get pods -A --field-selector spec.nodeName=...). */
  nodePods(): Promise<V1Pod[]>;
  /** The Node as kubectl gets it. */
  node(): Promise<V1Node>;
  /** kube-apiserver's audit log so far (every request's ResponseComplete; see defaultAuditPolicy), e.g. the node's refused requests. */
  audit(): Promise<AuditEvent[]>;
  /** Everything torn down; throws (after cleaning up all it can) when anything was left. See cleanUpRealCluster. */
  stop(): Promise<void>;
}

/** Ports the kernel hands out now on 127.0.0.1: a test's control plane must not clash with one someone runs on the defaults. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise<Server>((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => res(s));
  })));
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

const nodeReady = (n: V1Node | undefined) => n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * kubeadm's CoreDNS scaled to 0 and its kube-proxy DaemonSet given a nodeSelector no node has, before any node joins:
 * their pods would pull images from registry.k8s.io (no traffic leaves this host in tests).
 */
export async function keepAddonsOffNodes(kubectl: Kubectl): Promise<void> {
  await kubectl.run('-n', 'kube-system', 'scale', 'deployment', 'coredns', '--replicas=0');
  await kubectl.run('-n', 'kube-system', 'patch', 'daemonset', 'kube-proxy', '--type=merge', '-p',
    JSON.stringify({ spec: { template: { spec: { nodeSelector: { 'nodelet.test/kube-proxy': 'never' } } } } }));
}

/**
 * Brings up the control plane in a fresh temp dir, writes the node's credentials, starts nodelet as that node against
 * the rig's containerd, and returns once the Node is Ready and nodelet allocates pod IPs from the Node's podCIDR.
 * On failure everything started is stopped again.
 */
export async function startRealCluster(opts: RealClusterOptions = {}): Promise<RealCluster> {
  const log = opts.log ?? (() => {});
  const nodeName = opts.nodeName ?? testNode;
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-real-'));
  const binDir = await ensureBinaries(log);
  const [apiServerPort, etcdClientPort, etcdPeerPort, etcdMetricsPort, controllerManagerPort, schedulerPort] = await freePorts(6);
  const runtime = opts.runtime ?? mainRuntime;
  const cri = new CriClient(runtime.criEndpoint);
  const uids = new Set<string>();
  const footprints: PodFootprint[] = [];
  let plane: ControlPlane | undefined;
  let agent: AgentProcess | undefined;
  let kubectl: Kubectl | undefined;
  let podCIDR = '';
  const cluster = (): RealCluster => ({
    dir, plane: plane!, binDir, adminKubeconfig: plane!.adminKubeconfig, nodeKubeconfig: agent!.kubeconfig!, kubectl: kubectl!, agent: agent!,
    nodeName, runtime, cri, podCIDR, nodeIP: '', uids, footprints,
    track: async (pod) => {
      const uid = pod.metadata!.uid!;
      uids.add(uid);
      const fp = await podFootprint(cri, agent!.rootDir, uid, pod.status!.podIP!);
      footprints.push(fp);
      return fp;
    },
    nodePods: async () => {
      const pods = (await kubectl!.get<{ items: V1Pod[] }>('pods', '-A', '--field-selector', `spec.nodeName=${nodeName}`)).items;
      for (const p of pods) uids.add(p.metadata!.uid!);
      return pods;
    },
    node: () => kubectl!.get<V1Node>('node', nodeName),
    audit: async () => (await readFile(join(dir, 'logs', 'audit.log'), 'utf8')).split('\n').filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as AuditEvent),
    stop: () => cleanUpRealCluster(cluster()),
  });
  try {
    await releasePodBridge(runtime);
    // Every request's outcome in DIR/logs/audit.log (Metadata level: who, what, response code), for audit().
    await writeFile(join(dir, 'audit-policy.yaml'), opts.auditPolicy ?? defaultAuditPolicy);
    const emulation = opts.emulatedVersion ? [`--emulated-version=${opts.emulatedVersion}`] : [];
    plane = await up({ ...opts.settings, dir, binDir, apiServerPort, etcdClientPort, etcdPeerPort, etcdMetricsPort, controllerManagerPort, schedulerPort, log,
      extraArgs: { 'kube-apiserver': [`--audit-policy-file=${join(dir, 'audit-policy.yaml')}`, `--audit-log-path=${join(dir, 'logs', 'audit.log')}`,
        '--audit-log-maxbackup=1', '--audit-log-maxsize=200', ...emulation], 'kube-controller-manager': emulation, 'kube-scheduler': emulation } });
    await rm(join(dir, 'work'), { recursive: true, force: true });
    await execa('mkdir', ['-p', join(dir, 'work')]);
    kubectl = new Kubectl(plane.adminKubeconfig, join(dir, 'kube-cache'), join(dir, 'work'), join(binDir, 'kubectl'));
    if (!opts.keepAddons) await keepAddonsOffNodes(kubectl);
    await opts.beforeJoin?.(kubectl, plane);
    const nodeKubeconfig = await nodeCredentials(dir, nodeName);
    agent = await AgentProcess.create({ kubeconfig: nodeKubeconfig, nodeName, criEndpoint: runtime.criEndpoint });
    await agent.start(typeof opts.agentArgs === 'function' ? opts.agentArgs(dir) : (opts.agentArgs ?? []));
    log(`real-cluster: nodelet started as ${nodeName}`);
    const node = await waitFor(`Node ${nodeName} ${opts.notReadyOk ? 'registered' : 'Ready'} with a podCIDR`, async () => {
      const n = await kubectl!.get<V1Node>('node', nodeName).catch(() => undefined);
      return (opts.notReadyOk || nodeReady(n)) && n?.spec?.podCIDR ? n : undefined;
    }, 120_000, 500).catch((err: Error) => {
      throw new Error(`${err.message}\nnodelet's log (end):\n${agent!.output.split('\n').slice(-30).join('\n')}`);
    });
    podCIDR = node.spec!.podCIDR!;
    if (opts.networkTakesPodCIDR ?? true) {
      await waitFor(`nodelet to allocate pod IPs from ${podCIDR}`, async () =>
        agent!.logLines().some((l) => l.podCIDR === podCIDR && String(l.msg).startsWith('Pod network now allocates')) ? true : undefined,
      60_000, 200);
    }
    const nodeIP = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? '';
    log(`real-cluster: node ${nodeName} Ready, podCIDR ${podCIDR}, InternalIP ${nodeIP}`);
    return { ...cluster(), nodeIP };
  } catch (err) {
    if (plane && kubectl && agent) {
      await cleanUpRealCluster(cluster()).catch(() => undefined);
    } else {
      await agent?.stop();
      await agent?.cleanupDirs();
      await down(dir);
      cri.close();
      await rm(dir, { recursive: true, force: true });
    }
    throw err;
  }
}

/**
 * The host's netfilter rules, the user chains and the built-in chains' policies other than ACCEPT, per table and family,
 * without counters: what decides a packet's fate. (An empty table with only ACCEPT built-in chains, which iptables-nft
 * keeps once a chain was made in it, filters nothing.)
 */
export async function netfilterState(): Promise<string[]> {
  const lines: string[] = [];
  for (const save of ['iptables-save', 'ip6tables-save']) {
    const { stdout } = await execa(save, [], { reject: false });
    let table = '';
    for (const line of stdout.split('\n')) {
      if (line.startsWith('*')) table = line.slice(1);
      else if (line.startsWith('-A ')) lines.push(`${save} ${table} ${line}`);
      else if (line.startsWith(':')) {
        const [chain, policy] = line.slice(1).split(' ');
        if (policy !== 'ACCEPT') lines.push(`${save} ${table} chain ${chain} ${policy}`);
      }
    }
  }
  return lines;
}

/** Registers a test file's afterAll: the cluster stopped (see cleanUpRealCluster), then the file's own directories removed. */
export function stopAfterAll(cluster: () => RealCluster | undefined, ...dirs: string[]): void {
  afterAll(async () => {
    try {
      await cluster()?.stop();
    } finally {
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
}

/**
 * A real-cluster test file's clean-up, also after a failed test: nodelet running again if it was stopped, the Node
 * uncordoned, the API objects the test made deleted the way users delete them (workloads, services, pods, namespaces
 * other than the cluster's own), nodelet's teardown of every pod awaited (pods gone from the API server and the
 * runtime), nodelet stopped, whatever it failed to remove taken away through CRI, the control plane stopped and its dir
 * removed. Then it throws if anything was left: of a pod (sandbox, container, netns, veth, host-local reservation in the
 * podCIDR, pod dir) or of the control plane (a live process).
 */
export async function cleanUpRealCluster(c: RealCluster): Promise<void> {
  const left: string[] = [];
  const pids = Object.values(await runningPids(c.dir));
  try {
    await tearDownNode(c, left);
  } finally {
    // The bridge plugin gave the pod bridge the podCIDR's gateway: the host keeps nothing of the test, even when a step
    // of the teardown above threw.
    await releasePodBridge(c.runtime);
  }
  for (const pid of pids) {
    if (existsSync(`/proc/${pid}`) && !/\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) left.push(`control-plane process ${pid} still runs`);
  }
  await rm(c.dir, { recursive: true, force: true });
  if (left.length > 0) throw new Error(`the test left on the node:\n${left.join('\n')}`);
}

/**
 * Takes the podCIDR gateway off the rig's pod bridge. Tests run one at a time, so no pod uses it here: an address that an
 * earlier test (or a crashed run) left would be a host route inside the cluster CIDR, which the control plane's start
 * refuses, and would keep nodelet from switching the bridge to the podCIDR the controller-manager allocates.
 */
export async function releasePodBridge(runtime: NodeRuntime = mainRuntime): Promise<void> {
  await execa('ip', ['addr', 'flush', 'dev', runtime.podBridge, 'scope', 'global'], { reject: false });
}

/** cleanUpRealCluster's part on the node: pods, nodelet, the runtime's objects, the control plane's processes. */
async function tearDownNode(c: RealCluster, left: string[]): Promise<void> {
  try {
    if (!c.agent.running) await c.agent.start().catch(() => undefined);
    const k = (...args: string[]) => c.kubectl.tryRun(...args);
    await k('uncordon', c.nodeName);
    const namespaces = (await c.kubectl.get<{ items: { metadata: { name: string } }[] }>('namespaces').catch(() => ({ items: [] }))).items
      .map((n) => n.metadata.name).filter((n) => !['default', 'kube-system', 'kube-public', 'kube-node-lease'].includes(n));
    if (namespaces.length > 0) await k('delete', 'namespace', '--wait=false', ...namespaces);
    await k('delete', 'deployments,replicasets,statefulsets,daemonsets,jobs,cronjobs,poddisruptionbudgets', '--all', '-n', 'default', '--wait=false');
    await k('delete', 'services', '-n', 'default', '--field-selector', 'metadata.name!=kubernetes', '--wait=false');
    await c.nodePods().catch(() => []);
    await k('delete', 'pods', '--all', '-n', 'default', '--wait=false');
    for (const p of await c.agent.pods().catch(() => [] as V1Pod[])) c.uids.add(p.metadata!.uid!);
    // Static pods go with their manifests (their mirror pods with them).
    await rm(c.agent.manifestDir, { recursive: true, force: true });
    // nodelet stops each pod within its grace period, then deletes it (grace 0): gone from the API server and the runtime.
    // A pod's directory goes last in its teardown, after its sandbox: waited for too, so only one that stays is a leftover.
    const podDirs = async () => readdir(join(c.agent.rootDir, 'pods')).catch(() => [] as string[]);
    await waitFor('every pod of the node torn down by nodelet', async () => {
      const bound = await c.nodePods();
      const rt = await runtimeObjects(c.cri, [...c.uids]);
      return bound.length === 0 && rt.sandboxes.length + rt.containers.length === 0 && (await podDirs()).length === 0 ? true : undefined;
    }, 120_000, 500).catch((err: Error) => left.push(`nodelet did not tear every pod down: ${err.message}`));
    // Checked before any clean-up of ours: what nodelet's teardown left.
    for (const fp of c.footprints) left.push(...(await leftovers(c.cri, fp)).map((x) => `pod ${fp.uid}: ${x}`));
    left.push(...(await podDirs()).map((d) => `pod dir ${join(c.agent.rootDir, 'pods', d)}`));
    if (c.podCIDR) {
      const cidr = parseCidr(c.podCIDR);
      left.push(...(await ipReservations(c.runtime.podNetwork)).filter((ip) => cidrContains(cidr, parseIp(ip)!)).map((ip) => `host-local reservation ${ip}`));
    }
  } finally {
    await c.agent.stop();
    // Last resort: what nodelet left in the runtime, through CRI.
    await removeRuntimePods(c.cri, [...c.uids]);
    await c.agent.cleanupDirs();
    await down(c.dir);
    c.cri.close();
    await writeFile(join(c.dir, 'logs', 'nodelet.log'), c.agent.output).catch(() => undefined);
    // NODELET_TEST_LOGS=DIR keeps the components' and nodelet's logs of the run (DIR/<control plane dir's name>/).
    const keep = process.env['NODELET_TEST_LOGS'];
    if (keep) await cp(join(c.dir, 'logs'), join(keep, basename(c.dir)), { recursive: true }).catch(() => undefined);
  }
}
