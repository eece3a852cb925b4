// The cluster phase: the pod startup latency SLI through the real API server beside the floor, and the API requests per pod.
//
// nodelet in cluster mode, the node of the real control plane (test/cluster/control-plane.ts: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler built from the upstream modules) in the bench's directory. It measures the pod startup latency SLI as sig-scalability defines
// it (from the pod's creation until all its containers are reported started, as observed through a watch; images already
// present) for 1 pod and for --pods pods created at once, beside the raw CRI floor of the same run; the latency of one pod
// status write on this API server; and, from the server's audit log, the API requests nodelet made per pod started and its
// status writes per pod from Pending to Running. With the kubelet peer (--peers floor,kubelet, the default), the real
// the real kubelet (npm run kube:build) is a second node of the same control plane in the same run (bench/kubelet.ts in cluster mode, on its
// containerd instance), measured with the same pods bound to it: the table shows floor, kubelet and nodelet.
//
// Start of a pod: the bench's high-resolution clock just before its create call (creationTimestamp has second precision).
// Each pod is created bound (spec.nodeName), so kube-scheduler's latency, which is not the node's, stays out of the figure.
// End: the arrival at the bench of the watch event in which every container of the pod has started=true and is running.
// The control plane's processes run beside the bench; the agent is the bin file, as in the other phases.
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { V1Node, V1Pod, V1PodList } from '@kubernetes/client-node';
import { isGone, isNotFound, KubeClient, strategicMergePatch, type WatchEvent } from '../src/kubeapi/client.js';
import { loadKubeconfig } from '../src/kubeapi/kubeconfig.js';
import { detectNodeIP } from '../src/host/node.js';
import { down, ensureBinaries, nodeCredentials, up, type ControlPlane } from '../test/cluster/control-plane.js';
import type { LogLine } from './agent.js';
import { BenchKubelet, freePort, kubeletNode } from './kubelet.js';
import type { FloorSample } from './floor.js';
import type { Bench } from './session.js';
import { cleanupSteps, errorText, fmtMs, median, now, percentile, progress, round1, round2, round3, stepMedians, type StepMedians } from './util.js';
import { benchNamespace, benchNode, benchPods, podSpec } from './workload.js';

export const targetFloorFactor = 1.3;
const targetStatusWritesPerPod = 3;
const singleTimeoutMs = 60_000;
const burstTimeoutMs = 300_000;
const teardownTimeoutMs = 120_000;
const nodeReadyTimeoutMs = 60_000;
const statusWriteWarmups = 5;
const statusWriteSamples = 20;
const scratchPod = 'status-write-probe';
/** The scratch pod's node: none runs it (an unbound pod would be scheduled to the bench's node). */
const nowhereNode = 'nodelet-bench-nowhere';
/** The rig's pod bridge: nodelet gives it the gateway of the podCIDR the controller-manager allocates; flushed after. */
const podBridge = 'nodelet0';
/** kube-apiserver's audit policy: every request's outcome (who, what, response code), for the requests per pod. */
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`;
const run = promisify(execFile);

/** All the pod's containers reported started (started=true, state running): the SLI's end. */
function allContainersStarted(pod: V1Pod): boolean {
  const statuses = pod.status?.containerStatuses ?? [];
  return statuses.length === (pod.spec?.containers.length ?? 0) && statuses.every((c) => c.started === true && !!c.state?.running);
}

// ------------------------------------------------------------------------------------------------------------ samples

interface PodTrack {
  name: string;
  /** ms after the sample's t0: just before the create call, after the binding's answer, at the watch event's arrival. */
  startMs: number;
  boundMs?: number;
  observedMs?: number;
  /** Wall clock of the watch event's arrival (for the audit log and the agent's log). */
  observedEpoch?: number;
}

interface ClusterSample {
  pods: number;
  t0Epoch: number;
  /** Wall clock when the last pod was seen started, when their deletion began, and when they were gone (API and runtime). */
  endEpoch: number;
  deleteEpoch: number;
  goneEpoch: number;
  tracks: PodTrack[];
}

/** Per pod: from just before its create call to its watch event. The sample's time: from t0 to the last watch event. */
const podLatencies = (s: ClusterSample) => s.tracks.map((t) => t.observedMs! - t.startMs);
const lastPodMs = (s: ClusterSample) => Math.max(...s.tracks.map((t) => t.observedMs!));

// ------------------------------------------------------------------------------------------------------------ audit log

interface AuditEvent {
  stage?: string;
  verb?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp?: string;
}

interface AuditEntry {
  key: string;
  verb: string;
  resource: string;
  subresource: string;
  name: string;
  code: number;
  at: number;
}

/** The node user's requests from the audit log (one entry per request: watches at their start, others complete). */
async function nodeRequests(file: string, username: string): Promise<AuditEntry[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const out: AuditEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    let e: AuditEvent;
    try {
      e = JSON.parse(line) as AuditEvent;
    } catch {
      continue;
    }
    if (e.user?.username !== username) continue;
    if (!(e.stage === 'ResponseComplete' || (e.verb === 'watch' && e.stage === 'ResponseStarted'))) continue;
    const resource = e.objectRef?.resource ?? '(non-resource)';
    const subresource = e.objectRef?.subresource ?? '';
    const verb = e.verb ?? '';
    out.push({
      key: `${verb} ${resource}${subresource ? `/${subresource}` : ''}`,
      verb,
      resource,
      subresource,
      name: e.objectRef?.name ?? '',
      code: e.responseStatus?.code ?? 0,
      at: Date.parse(e.requestReceivedTimestamp ?? ''),
    });
  }
  return out;
}

const isStatusWrite = (e: AuditEntry) => e.resource === 'pods' && e.subresource === 'status' && (e.verb === 'patch' || e.verb === 'update');

interface RequestTable {
  /** verb resource[/subresource] -> requests per pod started (mean over the reps' windows). */
  perPod: Record<string, number>;
  totalPerPod: number;
  /** Requests answered with a code >= 400, by key and code. */
  failed: Record<string, number>;
  /** Status writes per pod from its creation until the watch showed it started: median and max over all pods. */
  statusWritesToRunning: { median: number; max: number };
  /** Status writes per pod from its creation until the bench began deleting it (settled; after the window). */
  statusWritesBeforeDelete: { median: number; max: number };
}

/** The node's requests per pod in each sample's window (by default from the first create to the last pod seen started). */
function requestTable(samples: ClusterSample[], entries: AuditEntry[], window = (s: ClusterSample) => [s.t0Epoch, s.endEpoch] as const): RequestTable {
  const counts = new Map<string, number>();
  const failed = new Map<string, number>();
  let pods = 0;
  const toRunning: number[] = [];
  const beforeDelete: number[] = [];
  for (const s of samples) {
    pods += s.pods;
    const [from, to] = window(s);
    for (const e of entries) {
      if (e.at < from || e.at > to) continue;
      counts.set(e.key, (counts.get(e.key) ?? 0) + 1);
      if (e.code >= 400) failed.set(`${e.key} ${e.code}`, (failed.get(`${e.key} ${e.code}`) ?? 0) + 1);
    }
    for (const t of s.tracks) {
      const writes = entries.filter((e) => isStatusWrite(e) && e.name === t.name && e.at >= s.t0Epoch);
      toRunning.push(writes.filter((e) => e.at <= t.observedEpoch!).length);
      beforeDelete.push(writes.filter((e) => e.at < s.deleteEpoch).length);
    }
  }
  const perPod: Record<string, number> = {};
  for (const [k, n] of [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))) perPod[k] = round2(n / pods);
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  return {
    perPod,
    totalPerPod: round2(total / pods),
    failed: Object.fromEntries(failed),
    statusWritesToRunning: { median: median(toRunning), max: Math.max(...toRunning) },
    statusWritesBeforeDelete: { median: median(beforeDelete), max: Math.max(...beforeDelete) },
  };
}

// ------------------------------------------------------------------------------------------------------------ agent steps

export const stepNames = [
  { key: 'sandbox', label: "'Created pod sandbox' (RunPodSandbox back)" },
  { key: 'started', label: "'Started container'" },
  { key: 'running', label: "'Pod phase changed' Running" },
  { key: 'observed', label: 'watch event: all containers started' },
] as const;
type StepKey = (typeof stepNames)[number]['key'];
const stepKeys = stepNames.map((s) => s.key);

/** Agent log timestamps per pod, in ms after the pod's create call. */
function podSteps(s: ClusterSample, lines: readonly LogLine[]): Map<string, Partial<Record<StepKey, number>>> {
  const steps = new Map<string, Partial<Record<StepKey, number>>>();
  const startEpoch = new Map<string, number>();
  for (const t of s.tracks) {
    startEpoch.set(`${benchNamespace}/${t.name}`, s.t0Epoch + t.startMs);
    steps.set(`${benchNamespace}/${t.name}`, { observed: t.observedMs! - t.startMs });
  }
  for (const l of lines) {
    if (l.time < s.t0Epoch - 1 || l.time > s.deleteEpoch || !l.pod) continue;
    const st = steps.get(l.pod);
    if (!st) continue;
    const rel = l.time - startEpoch.get(l.pod)!;
    const set = (k: StepKey) => st[k] ??= rel;
    if (l.msg === 'Created pod sandbox') set('sandbox');
    else if (l.msg === 'Started container') set('started');
    else if (l.msg === 'Pod phase changed' && l.phase === 'Running') set('running');
  }
  return steps;
}

// ------------------------------------------------------------------------------------------------------------ the phase

/** The real kubelet's figures, measured as nodelet's (same pods, same watch), when it is a peer of the run. */
export interface KubeletClusterResults {
  node: string;
  single: { medianMs: number; minMs: number; samplesMs: number[] };
  burst: { lastMedianMs: number; lastMinMs: number; samplesMs: number[]; podP50Ms: number; podP99Ms: number };
  /** nodelet's median over kubelet's: below 1 is nodelet ahead. */
  nodeletRatio: { single: number; burst: number };
  /** kubelet's status writes per pod, creation -> started (median / max), from the same audit log. */
  statusWritesToRunning: { single: { median: number; max: number }; burst: { median: number; max: number } };
  requestsPerPod: { single: number; burst: number };
}

export interface ClusterResults {
  reps: number;
  pods: number;
  statusWrite: { medianMs: number; minMs: number; p90Ms: number; samples: number; by: string };
  single: {
    floor: { medianMs: number; samplesMs: number[] };
    nodelet: { medianMs: number; minMs: number; samplesMs: number[]; createAndBindMedianMs: number };
    ratio: number;
    target: { maxMs: number; pass: boolean };
  };
  burst: {
    floor: { lastMedianMs: number; samplesMs: number[]; podP50Ms: number; podP99Ms: number };
    nodelet: { lastMedianMs: number; lastMinMs: number; samplesMs: number[]; podP50Ms: number; podP99Ms: number; createAndBindLastMedianMs: number };
    ratio: number;
    target: { maxMs: number; pass: boolean };
  };
  steps: { single: StepMedians<StepKey>; burst: StepMedians<StepKey> };
  requests: { single: RequestTable; burst: RequestTable };
  /** The node's requests per pod from the start of the pods' deletion until they were gone from the API and the runtime. */
  deletionRequests: { single: Record<string, number>; burst: Record<string, number> };
  statusWritesTarget: { maxPerPod: number; pass: boolean };
  node: string;
  saToken: boolean;
  kubelet?: KubeletClusterResults;
}

export class ClusterPhase {
  plane?: ControlPlane;
  admin?: KubeClient;
  nodeKubeconfig = '';
  /** The real kubelet as a second node of the control plane (the kubelet peer). */
  kubelet?: BenchKubelet;
  private readonly watchStop = new AbortController();
  private watching?: Promise<void>;
  private resourceVersion = '';
  /** The pods of the running sample, by name. */
  private current = new Map<string, PodTrack>();
  private sampleT0 = 0;
  private allStarted?: () => void;
  private podFailed?: (err: Error) => void;
  /** The phase's own directory (the API server's state and audit log, the agent's root); removed with the bench's. */
  readonly dir: string;
  readonly auditLog: string;

  constructor(readonly bench: Bench) {
    this.dir = join(bench.base, 'cluster');
    this.auditLog = join(this.dir, 'audit.log');
  }

  private get podsPath(): string {
    return `/api/v1/namespaces/${benchNamespace}/pods`;
  }

  async startControlPlane(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const policy = join(this.dir, 'audit-policy.yaml');
    await writeFile(policy, auditPolicy);
    const ports: number[] = [];
    while (ports.length < 6) {
      const p = await freePort();
      if (!ports.includes(p)) ports.push(p);
    }
    const [apiServerPort, etcdClientPort, etcdPeerPort, etcdMetricsPort, controllerManagerPort, schedulerPort] = ports as [number, number, number, number, number, number];
    this.plane = await up({
      dir: join(this.dir, 'control-plane'), binDir: await ensureBinaries(progress), log: progress,
      apiServerPort, etcdClientPort, etcdPeerPort, etcdMetricsPort, controllerManagerPort, schedulerPort,
      extraArgs: { 'kube-apiserver': [`--audit-policy-file=${policy}`, `--audit-log-path=${this.auditLog}`, '--audit-log-maxsize=500'] },
    });
    // The bench's own client: kept-alive connections, no client-side rate limit to speak of.
    this.admin = new KubeClient(await loadKubeconfig(this.plane.adminKubeconfig), { qps: 10_000, burst: 10_000, userAgent: 'nodelet-bench' });
    // kubeadm's addons would put CoreDNS and kube-proxy pods on the node, pulling images from registry.k8s.io.
    await this.admin.request({ method: 'PATCH', path: '/apis/apps/v1/namespaces/kube-system/deployments/coredns/scale', contentType: strategicMergePatch, body: { spec: { replicas: 0 } } });
    await this.admin.request({ method: 'PATCH', path: '/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy', contentType: strategicMergePatch,
      body: { spec: { template: { spec: { nodeSelector: { 'nodelet.bench/kube-proxy': 'never' } } } } } });
    await this.admin.request({ method: 'POST', path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: benchNamespace } } });
    // Pods are admitted once the namespace's ServiceAccount exists (the ServiceAccount admission plugin).
    const deadline = now() + 60_000;
    while (!(await this.admin.request({ method: 'GET', path: `/api/v1/namespaces/${benchNamespace}/serviceaccounts/default` }).then(() => true, (err: unknown) => {
      if (isNotFound(err) && now() < deadline) return false;
      throw err;
    }))) await delay(200);
    this.nodeKubeconfig = await nodeCredentials(this.plane.dir, benchNode);
    await run('ip', ['addr', 'flush', 'dev', podBridge, 'scope', 'global']).catch(() => undefined);
    progress(`cluster: control plane at ${this.plane.server} (audit log ${this.auditLog})`);
  }

  /** Watches the namespace's pods for the whole phase; the handler marks pods whose containers all started. */
  async startWatch(): Promise<void> {
    const list = await this.admin!.request<V1PodList>({ method: 'GET', path: this.podsPath });
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    const signal = this.watchStop.signal;
    this.watching = (async () => {
      while (!signal.aborted) {
        try {
          await this.admin!.watch<V1Pod>({
            path: this.podsPath,
            query: { resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 1800 },
            signal,
            idleTimeoutMs: 150_000,
            onEvent: (ev) => this.onEvent(ev),
          });
        } catch (err) {
          if (signal.aborted) return;
          if (isGone(err)) {
            // Events were missed: the list stands in for them.
            const again = await this.admin!.request<V1PodList>({ method: 'GET', path: this.podsPath }).catch(() => undefined);
            if (again) {
              this.resourceVersion = again.metadata?.resourceVersion ?? '';
              for (const p of again.items) this.onEvent({ type: 'MODIFIED', object: p });
            }
          }
          this.bench.note(`the bench's pod watch broke (${errorText(err)}); watching again`);
          await delay(200, undefined, { signal }).catch(() => undefined);
        }
      }
    })();
  }

  private onEvent(ev: WatchEvent<V1Pod>): void {
    const at = now();
    const atEpoch = Date.now();
    const rv = ev.object.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    if (ev.type === 'BOOKMARK') return;
    const track = this.current.get(ev.object.metadata?.name ?? '');
    if (!track || track.observedMs !== undefined || ev.type === 'DELETED') return;
    if (allContainersStarted(ev.object)) {
      track.observedMs = at - this.sampleT0;
      track.observedEpoch = atEpoch;
      if ([...this.current.values()].every((t) => t.observedMs !== undefined)) this.allStarted?.();
    } else if (ev.object.status?.phase === 'Failed' || ev.object.status?.phase === 'Succeeded') {
      this.podFailed?.(new Error(`pod ${track.name} ended ${ev.object.status.phase}: ${JSON.stringify(ev.object.status)}`));
    }
  }

  async startAgent(): Promise<void> {
    const { bench } = this;
    await bench.startAgent(['--kubeconfig', this.nodeKubeconfig], this.dir);
    await this.waitNodeReady(benchNode, () => !!bench.agent?.running, () => bench.agent!.recentOutput());
    progress(`cluster: node ${benchNode} is Ready; waiting until the agent is idle...`);
    await bench.waitAgentIdle();
  }

  /**
   * The real kubelet as the node `kubelet-bench` of the same control plane, on its own containerd (the standalone one of
   * the start-up phase, if any, is stopped and its host changes put back first: both use the same cgroup root and record).
   */
  async startKubelet(): Promise<void> {
    const { bench } = this;
    if (bench.kubelet) {
      progress('cluster: stopping the standalone kubelet of the earlier phases...');
      const problems = await bench.kubelet.cleanup();
      for (const p of problems) bench.note(`standalone kubelet cleanup: ${p}`);
      bench.kubelet = undefined;
    }
    const kubeconfig = await nodeCredentials(this.plane!.dir, kubeletNode);
    this.kubelet = new BenchKubelet(this.dir, { kubeconfig, nodeIP: await detectNodeIP(), maxPods: bench.opts.pods, ...(bench.opts.kubeletLog ? { logFile: bench.opts.kubeletLog } : {}) });
    progress('cluster: starting kubelet with --kubeconfig (its own containerd)...');
    await this.kubelet.start(bench.signal);
    await this.waitNodeReady(kubeletNode, () => this.kubelet!.running, () => this.kubelet!.recentOutput());
    progress(`cluster: node ${kubeletNode} (kubelet, pid ${this.kubelet.pid}) is Ready; waiting until it is idle...`);
    await this.kubelet.waitIdle(bench.signal);
  }

  /** Waits until the Node reports Ready, while its agent runs. */
  private async waitNodeReady(name: string, running: () => boolean, output: () => string): Promise<void> {
    const deadline = now() + nodeReadyTimeoutMs;
    for (;;) {
      const node = await this.admin!.request<V1Node>({ method: 'GET', path: `/api/v1/nodes/${name}` }).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return;
      if (!running()) throw new Error(`the agent of node ${name} exited before it was Ready:\n${output()}`);
      if (now() > deadline) throw new Error(`node ${name} not Ready within ${nodeReadyTimeoutMs / 1000} s: ${JSON.stringify(node?.status?.conditions ?? 'not registered')}\n${output()}`);
      await delay(100, undefined, { signal: this.bench.signal });
    }
  }

  /** Median latency of PATCH pods/<name>/status by the admin over a kept-alive connection, on an unbound scratch pod. */
  async measureStatusWrite(): Promise<ClusterResults['statusWrite']> {
    const { bench } = this;
    const admin = this.admin!;
    await admin.request({ method: 'POST', path: this.podsPath, body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: scratchPod }, spec: { ...podSpec(), nodeName: nowhereNode, automountServiceAccountToken: false } } });
    const times: number[] = [];
    for (let i = 0; i < statusWriteWarmups + statusWriteSamples; i++) {
      // A condition whose message changes every time: each patch is a real write (a new resourceVersion, a watch event).
      const patch = { status: { conditions: [{ type: 'nodelet.dev/BenchProbe', status: 'True', message: `write ${i}`, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] } };
      const t = now();
      await admin.request({ method: 'PATCH', path: `${this.podsPath}/${scratchPod}/status`, body: patch, contentType: strategicMergePatch, signal: bench.signal });
      if (i >= statusWriteWarmups) times.push(now() - t);
    }
    // No node runs it: deleted at once with grace 0.
    await admin.request({ method: 'DELETE', path: `${this.podsPath}/${scratchPod}`, body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0 } });
    return {
      medianMs: round2(median(times)),
      minMs: round2(Math.min(...times)),
      p90Ms: round2(percentile(times, 90)),
      samples: times.length,
      by: 'kubernetes-admin, strategic merge patch, kept-alive TLS connection, agent idle',
    };
  }

  private podObject(name: string, nodeName: string): V1Pod {
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: benchNamespace, labels: { app: 'nodelet-bench' } },
      // By default the same pod as the floor's: no service account token volume (the floor mounts none). Created bound.
      spec: { ...podSpec(), nodeName, ...(this.bench.opts.saToken ? {} : { automountServiceAccountToken: false }) },
    };
  }

  /** The running agent of a node, for the checks during a sample. */
  private agentOf(nodeName: string): { running: boolean; recentOutput(): string; what: string } {
    const agent = nodeName === kubeletNode ? this.kubelet : this.bench.agent;
    return { running: !!agent?.running, recentOutput: () => agent?.recentOutput() ?? '', what: nodeName === kubeletNode ? 'kubelet' : 'nodelet' };
  }

  /** Creates the pods bound to the node at once; resolves when the watch showed all their containers started. */
  async sample(names: string[], timeoutMs: number, nodeName = benchNode): Promise<ClusterSample> {
    const { bench } = this;
    const admin = this.admin!;
    this.current = new Map(names.map((name) => [name, { name, startMs: NaN }]));
    const done = new Promise<void>((resolve, reject) => {
      this.allStarted = resolve;
      this.podFailed = reject;
    });
    done.catch(() => undefined);
    this.sampleT0 = now();
    const t0Epoch = Date.now();
    const creations = names.map(async (name) => {
      const track = this.current.get(name)!;
      track.startMs = now() - this.sampleT0;
      await admin.request<V1Pod>({ method: 'POST', path: this.podsPath, body: this.podObject(name, nodeName), signal: bench.signal });
      track.boundMs = now() - this.sampleT0;
    });
    await Promise.all(creations);
    const deadline = this.sampleT0 + timeoutMs;
    try {
      for (;;) {
        const finished = await Promise.race([done.then(() => true), delay(500, false, { signal: bench.signal })]);
        if (finished) break;
        const agent = this.agentOf(nodeName);
        if (!agent.running) throw new Error(`${agent.what} exited during the measurement:\n${agent.recentOutput()}`);
        if (now() > deadline) {
          const pending = [...this.current.values()].filter((t) => t.observedMs === undefined);
          const pod = await admin.request<V1Pod>({ method: 'GET', path: `${this.podsPath}/${pending[0]!.name}` }).catch(() => undefined);
          throw new Error(`${pending.length} of ${names.length} pods not started after ${timeoutMs / 1000} s; e.g. ${pending[0]!.name}: ${JSON.stringify(pod?.status ?? 'not found')}\n${agent.recentOutput()}`);
        }
      }
    } finally {
      this.allStarted = undefined;
      this.podFailed = undefined;
    }
    const tracks = [...this.current.values()];
    this.current = new Map();
    const endEpoch = Math.max(...tracks.map((t) => t.observedEpoch!));
    return { pods: names.length, t0Epoch, endEpoch, deleteEpoch: NaN, goneEpoch: NaN, tracks };
  }

  /** Deletes the phase's pods through the API and waits until they are gone there and from the runtime (untimed). */
  async deletePods(signal?: AbortSignal): Promise<void> {
    const { bench } = this;
    const admin = this.admin!;
    const opts = signal ? { signal } : {};
    const listed = await admin.request<V1PodList>({ method: 'GET', path: this.podsPath, ...opts });
    await Promise.all(listed.items.filter((p) => !p.metadata?.deletionTimestamp).map((p) =>
      admin.request({ method: 'DELETE', path: `${this.podsPath}/${p.metadata!.name}`, ...opts }).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      })));
    const deadline = now() + teardownTimeoutMs;
    for (;;) {
      const left = (await admin.request<V1PodList>({ method: 'GET', path: this.podsPath, ...opts })).items.length;
      const cri = { timeoutMs: 30_000, ...opts };
      const [sandboxes, containers] = await Promise.all([bench.main.listPodSandbox(benchPods, cri), bench.main.listContainers(benchPods, cri)]);
      if (left + sandboxes.length + containers.length === 0) {
        // kubelet removes a deleted pod's stopped sandbox only at its container GC, a minute later: removed now, as the
        // standalone bench does, so the next sample starts from the same empty runtime.
        if (this.kubelet?.running) await this.kubelet.teardown(signal);
        return;
      }
      if (!bench.agent?.running) throw new Error(`nodelet exited while its pods were deleted:\n${bench.agent!.recentOutput()}`);
      if (now() > deadline) throw new Error(`the pods were not gone ${teardownTimeoutMs / 1000} s after their deletion (${left} in the API, ${sandboxes.length} sandboxes, ${containers.length} containers)`);
      await delay(100, undefined, opts);
    }
  }

  async close(): Promise<string[]> {
    const { errors, step } = cleanupSteps();
    const { bench } = this;
    if (this.admin && this.plane && bench.agent?.running) {
      progress('cluster: deleting the pods through the API and waiting until nodelet removed them...');
      await step('deleting the cluster pods', () => this.deletePods());
    }
    const kubelet = this.kubelet;
    if (kubelet) {
      progress('cluster: stopping kubelet, removing its pods, putting the host back...');
      await step('kubelet', () => kubelet.cleanupOrThrow());
    }
    progress('cluster: stopping the agent...');
    await step('stopping the agent', async () => bench.agent?.stop());
    this.watchStop.abort();
    await this.watching;
    this.admin?.close();
    if (this.plane) {
      progress('cluster: stopping the control plane...');
      await step('stopping the control plane', async () => {
        await down(this.plane!.dir);
        await rm(this.plane!.dir, { recursive: true, force: true });
      });
      await step('flushing the pod bridge', () => run('ip', ['addr', 'flush', 'dev', podBridge, 'scope', 'global']).then(() => undefined));
    }
    return errors;
  }
}

/** The cluster phase: API server, agent in cluster mode, floor and nodelet interleaved; cleans up after itself. */
export async function runClusterPhase(bench: Bench): Promise<ClusterResults> {
  const phase = new ClusterPhase(bench);
  let failure: unknown;
  try {
    return await measure(phase);
  } catch (err) {
    failure = err;
    throw err;
  } finally {
    const errors = await phase.close();
    if (errors.length > 0) {
      for (const e of errors) progress(`cluster cleanup problem: ${e}`);
      // A failed measurement is the error to report; a clean run with a failed cleanup is a failure too.
      if (failure === undefined) throw new Error(`cluster phase cleanup failed: ${errors.join('; ')}`);
    }
  }
}

async function measure(phase: ClusterPhase): Promise<ClusterResults> {
  const { bench } = phase;
  progress('cluster: starting the control plane...');
  await phase.startControlPlane();
  await phase.startWatch();
  progress('cluster: starting nodelet with --kubeconfig...');
  await phase.startAgent();
  if (bench.opts.peers.has('kubelet')) await phase.startKubelet();
  progress(`cluster: measuring one status write (${statusWriteSamples} PATCH pods/status after ${statusWriteWarmups} warm-ups)...`);
  const statusWrite = await phase.measureStatusWrite();
  progress(`  status write: median ${fmtMs(statusWrite.medianMs)} (min ${fmtMs(statusWrite.minMs)}, p90 ${fmtMs(statusWrite.p90Ms)})`);

  const floorSingle: FloorSample[] = [];
  const floorBurst: FloorSample[] = [];
  const single: ClusterSample[] = [];
  const burst: ClusterSample[] = [];
  const kubeletSingle: ClusterSample[] = [];
  const kubeletBurst: ClusterSample[] = [];
  const onNode = (nodeName: string) => async (names: string[], timeoutMs: number) => {
    const s = await phase.sample(names, timeoutMs, nodeName);
    s.deleteEpoch = Date.now();
    await phase.deletePods(bench.signal);
    s.goneEpoch = Date.now();
    return s;
  };
  const nodeletOnce = onNode(benchNode);
  const kubeletOnce = onNode(kubeletNode);
  const settle = async () => {
    await bench.waitAgentIdle();
    if (phase.kubelet) await phase.kubelet.waitIdle(bench.signal);
  };
  const batch = (prefix: string) => Array.from({ length: bench.opts.pods }, (_, i) => `${prefix}-${i + 1}`);
  bench.watchForOtherAgents();

  progress('cluster warm-up: 1 floor pod, 1 API pod, then 1 batch each (not counted)');
  await bench.floorOnce(['cfw']);
  await nodeletOnce(['cw'], singleTimeoutMs);
  await settle();
  await bench.floorOnce(batch('cfwb'));
  await nodeletOnce(batch('cwb'), burstTimeoutMs);
  await settle();
  if (phase.kubelet) {
    progress('cluster warm-up: 1 kubelet pod, then 1 batch (not counted)');
    await kubeletOnce(['kw'], singleTimeoutMs);
    await settle();
    await kubeletOnce(batch('kwb'), burstTimeoutMs);
    await settle();
  }

  for (const [what, n] of [['1 pod', 1], [`${bench.opts.pods} pods`, bench.opts.pods]] as const) {
    for (let k = 1; k <= bench.opts.reps; k++) {
      // Rotate which goes first, so none always follows another's teardown.
      const order = phase.kubelet
        ? ([['floor', 'kubelet', 'nodelet'], ['nodelet', 'floor', 'kubelet'], ['kubelet', 'nodelet', 'floor']] as const)[(k - 1) % 3]!
        : k % 2 ? (['floor', 'nodelet'] as const) : (['nodelet', 'floor'] as const);
      for (const which of order) {
        progress(`cluster, ${what}, rep ${k}/${bench.opts.reps}: ${which === 'floor' ? 'floor' : `${which} (API pods)`}...`);
        if (which === 'kubelet') {
          const s = await kubeletOnce(n === 1 ? [`ks${k}`] : batch(`kb${k}`), n === 1 ? singleTimeoutMs : burstTimeoutMs);
          (n === 1 ? kubeletSingle : kubeletBurst).push(s);
          const lat = podLatencies(s);
          progress(n === 1 ? `  kubelet ${fmtMs(lat[0]!)}` : `  kubelet last pod ${fmtMs(lastPodMs(s))}, per pod p50 ${fmtMs(percentile(lat, 50))} p99 ${fmtMs(percentile(lat, 99))}`);
        } else if (which === 'floor') {
          const f = await bench.floorOnce(n === 1 ? [`cfs${k}`] : batch(`cfb${k}`));
          (n === 1 ? floorSingle : floorBurst).push(f);
          progress(`  floor ${fmtMs(f.elapsedMs)}`);
        } else {
          const s = await nodeletOnce(n === 1 ? [`cs${k}`] : batch(`cb${k}`), n === 1 ? singleTimeoutMs : burstTimeoutMs);
          (n === 1 ? single : burst).push(s);
          const lat = podLatencies(s);
          progress(n === 1 ? `  nodelet ${fmtMs(lat[0]!)} (create ${fmtMs(s.tracks[0]!.boundMs! - s.tracks[0]!.startMs)})`
            : `  nodelet last pod ${fmtMs(lastPodMs(s))}, per pod p50 ${fmtMs(percentile(lat, 50))} p99 ${fmtMs(percentile(lat, 99))}`);
        }
        await settle();
      }
    }
  }
  bench.stopWatching();

  // Audit records are written as requests complete: the last ones are in by now (teardown took longer).
  const entries = await nodeRequests(phase.auditLog, `system:node:${benchNode}`);
  const lines = bench.agent!.lines;
  const ratio = (a: number, b: number) => round3(a / b);
  const fs = floorSingle.map((f) => f.elapsedMs);
  const ns = single.map((s) => podLatencies(s)[0]!);
  const fb = floorBurst.map((f) => f.elapsedMs);
  const nb = burst.map(lastPodMs);
  const nbPods = burst.flatMap(podLatencies);
  const fbPods = floorBurst.flatMap((f) => f.runPodSandboxMs.map((run, i) => run + f.createContainerMs[i]! + f.startContainerMs[i]!));
  const singleTarget = median(fs) * targetFloorFactor + statusWrite.medianMs;
  const burstTarget = median(fb) * targetFloorFactor + statusWrite.medianMs;
  const requests = { single: requestTable(single, entries), burst: requestTable(burst, entries) };
  const deletion = (xs: ClusterSample[]) => requestTable(xs, entries, (s) => [s.deleteEpoch, s.goneEpoch] as const).perPod;
  const worstWrites = Math.max(requests.single.statusWritesToRunning.max, requests.burst.statusWritesToRunning.max);
  let kubelet: KubeletClusterResults | undefined;
  if (phase.kubelet) {
    const kEntries = await nodeRequests(phase.auditLog, `system:node:${kubeletNode}`);
    const kRequests = { single: requestTable(kubeletSingle, kEntries), burst: requestTable(kubeletBurst, kEntries) };
    const ks = kubeletSingle.map((s) => podLatencies(s)[0]!);
    const kb = kubeletBurst.map(lastPodMs);
    const kbPods = kubeletBurst.flatMap(podLatencies);
    kubelet = {
      node: kubeletNode,
      single: { medianMs: round1(median(ks)), minMs: round1(Math.min(...ks)), samplesMs: ks.map(round1) },
      burst: { lastMedianMs: round1(median(kb)), lastMinMs: round1(Math.min(...kb)), samplesMs: kb.map(round1), podP50Ms: round1(percentile(kbPods, 50)), podP99Ms: round1(percentile(kbPods, 99)) },
      nodeletRatio: { single: ratio(median(ns), median(ks)), burst: ratio(median(nb), median(kb)) },
      statusWritesToRunning: { single: kRequests.single.statusWritesToRunning, burst: kRequests.burst.statusWritesToRunning },
      requestsPerPod: { single: kRequests.single.totalPerPod, burst: kRequests.burst.totalPerPod },
    };
  }
  return {
    reps: bench.opts.reps,
    pods: bench.opts.pods,
    node: benchNode,
    saToken: bench.opts.saToken,
    statusWrite,
    single: {
      floor: { medianMs: round1(median(fs)), samplesMs: fs.map(round1) },
      nodelet: {
        medianMs: round1(median(ns)),
        minMs: round1(Math.min(...ns)),
        samplesMs: ns.map(round1),
        createAndBindMedianMs: round1(median(single.map((s) => s.tracks[0]!.boundMs! - s.tracks[0]!.startMs))),
      },
      ratio: ratio(median(ns), median(fs)),
      target: { maxMs: round1(singleTarget), pass: median(ns) <= singleTarget },
    },
    burst: {
      floor: { lastMedianMs: round1(median(fb)), samplesMs: fb.map(round1), podP50Ms: round1(percentile(fbPods, 50)), podP99Ms: round1(percentile(fbPods, 99)) },
      nodelet: {
        lastMedianMs: round1(median(nb)),
        lastMinMs: round1(Math.min(...nb)),
        samplesMs: nb.map(round1),
        podP50Ms: round1(percentile(nbPods, 50)),
        podP99Ms: round1(percentile(nbPods, 99)),
        createAndBindLastMedianMs: round1(median(burst.map((s) => Math.max(...s.tracks.map((t) => t.boundMs!))))),
      },
      ratio: ratio(median(nb), median(fb)),
      target: { maxMs: round1(burstTarget), pass: median(nb) <= burstTarget },
    },
    steps: {
      single: stepMedians(stepKeys, single.map((s) => podSteps(s, lines))),
      burst: stepMedians(stepKeys, burst.map((s) => podSteps(s, lines))),
    },
    requests,
    deletionRequests: { single: deletion(single), burst: deletion(burst) },
    statusWritesTarget: { maxPerPod: targetStatusWritesPerPod, pass: worstWrites <= targetStatusWritesPerPod },
    ...(kubelet ? { kubelet } : {}),
  };
}
