// The soak suite (`npm run soak`): nodelet through churn and crashes, counting what it leaves behind.
//
// Phases, in order (each may be left out with --only):
//   cycles            --cycles pod create/delete cycles (static pods, --parallel of them in flight at a time);
//   agent-kills       the agent SIGKILLed --agent-kills times at a random point of a --burst-pod burst: odd kills while
//                     the burst starts, even ones while it is removed; a new agent then finishes the job;
//   containerd-kills  the rig's containerd SIGKILLed --containerd-kills times under --burst running pods, and started
//                     again by the rig's script (scripts/runtime.sh up);
//   api-away          cluster mode on the real control plane (test/cluster/control-plane.ts): --burst API pods running,
//                     kube-apiserver stopped for --api-away-seconds, --api-deletions of the pods deleted from etcd meanwhile
//                     (the node cannot see it happen), then kube-apiserver started again.
// After each phase its pods are removed through nodelet and the host is compared with the host before the phase: network
// namespaces, veths, host-local reservations, mounts, cgroups under kubepods, CRI sandboxes and containers, and pod or
// pod-helper processes that are new are leaks. While a phase runs, CRI is polled twice a second for duplicate sandboxes
// (two ready sandboxes of one pod) and restarts of healthy containers (a running container replaced by another of the
// same pod and name). Every count must be 0; the exit status says whether they were. One table on stdout.
//
// Usage: node dist/bench/soak.js [--only P,...] [--cycles N] [--parallel N] [--agent-kills N] [--containerd-kills N]
//          [--burst N] [--api-away-seconds N] [--api-deletions N] [--seed N] [--agent-log FILE]
import { execFile } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { V1Pod, V1PodList } from '@kubernetes/client-node';
import { DEFAULT_GC_GRACE_PERIOD_MS } from '../src/cni/pod-network.js';
import type { CriClient } from '../src/cri/client.js';
import { orphanCollectionIntervalMs } from '../src/lifecycle/housekeeping.js';
import { startComponent, stopComponent } from '../test/cluster/control-plane.js';
import { describeRuntime, type RuntimeInstance } from '../test/cluster/runtime-instance.js';
import { BenchAgent, mainEndpoint } from './agent.js';
import { ClusterPhase } from './cluster.js';
import { countLeaks, hostSnapshot, killForgottenShims, leakKinds, leaksBetween, type HostSnapshot, type LeakCounts, type LeakKind } from './leaks.js';
import { eachFlag, intFlag, parseCommandLine, parseOptions, UsageError } from './options.js';
import { Bench, mainPidFile } from './session.js';
import { isRunning, listPods } from './status-client.js';
import { errorText, now, progress } from './util.js';
import { benchNamespace, benchNode, benchPods, manifestText } from './workload.js';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const run = promisify(execFile);
const podUidLabel = 'io.kubernetes.pod.uid';
const burstTimeoutMs = 300_000;
/** An agent-kills burst whose teardown takes longer is stuck (a 30-pod burst's takes about 2 s unkilled). */
const stuckTeardownMs = 120_000;
/** How long nodelet has, once kube-apiserver is back, to remove the pods deleted while it was away. */
const missedDeletionDeadlineMs = 120_000;
/** The latest a running agent's network garbage collection takes a record it found: its grace period, its period, 10 s to run. */
const reservationSettleMs = DEFAULT_GC_GRACE_PERIOD_MS + orphanCollectionIntervalMs + 10_000;
/** The latest a running agent ends a shim containerd forgot: it must see it in two collections a period apart, 10 s to run. */
const processSettleMs = 2 * orphanCollectionIntervalMs + 10_000;

const soakPhases = ['cycles', 'agent-kills', 'containerd-kills', 'api-away'] as const;
type SoakPhase = (typeof soakPhases)[number];

interface SoakOptions {
  phases: Set<SoakPhase>;
  cycles: number;
  parallel: number;
  agentKills: number;
  containerdKills: number;
  burst: number;
  apiAwaySeconds: number;
  apiDeletions: number;
  seed: number;
  agentLog: string;
}

const usage = `usage: node dist/bench/soak.js [--only P,...] [--cycles N] [--parallel N] [--agent-kills N] [--containerd-kills N]
         [--burst N] [--api-away-seconds N] [--api-deletions N] [--seed N] [--agent-log FILE]
  --only P             phases, comma-separated: cycles, agent-kills, containerd-kills, api-away (default all, in that order)
  --cycles N           pod create/delete cycles (default 1000)
  --parallel N         cycles in flight at a time (default 10)
  --agent-kills N      SIGKILLs of the agent during ${'--burst'}-pod bursts (default 20)
  --containerd-kills N SIGKILLs of the rig's containerd under --burst running pods (default 6)
  --burst N            pods of a burst (default 30)
  --api-away-seconds N how long kube-apiserver is stopped (default 60)
  --api-deletions N    pods deleted from etcd while kube-apiserver is away (default 10; at most --burst)
  --seed N             seed of the random kill points (default: from the clock; printed)
  --agent-log FILE     write each agent's log to FILE.<n>, for diagnosis
The soak takes the machine's test lock (/run/nodelet/tests.lock) for its whole run; it needs the rig's containerd
(bash scripts/runtime.sh up) and, for api-away, the Kubernetes binaries (npm run kube:build).`;

function parseSoakOptions(argv: string[]): SoakOptions {
  const opts: SoakOptions = {
    phases: new Set(soakPhases), cycles: 1000, parallel: 10, agentKills: 20, containerdKills: 6, burst: 30, apiAwaySeconds: 60, apiDeletions: 10,
    seed: Date.now() % 1_000_000, agentLog: '',
  };
  const int = intFlag;
  eachFlag(argv, (flag, value, arg) => {
    switch (flag) {
      case '--only': {
        const phases = (value() ?? '').split(',');
        if (phases.some((p) => !(soakPhases as readonly string[]).includes(p))) throw new UsageError(`--only needs some of ${soakPhases.join(', ')}`);
        opts.phases = new Set(phases as SoakPhase[]);
        break;
      }
      case '--cycles': opts.cycles = int(flag, value(), 0); break;
      case '--parallel': opts.parallel = int(flag, value(), 1); break;
      case '--agent-kills': opts.agentKills = int(flag, value(), 0); break;
      case '--containerd-kills': opts.containerdKills = int(flag, value(), 0); break;
      case '--burst': opts.burst = int(flag, value(), 1); break;
      case '--api-away-seconds': opts.apiAwaySeconds = int(flag, value(), 1); break;
      case '--api-deletions': opts.apiDeletions = int(flag, value(), 0); break;
      case '--seed': opts.seed = int(flag, value(), 0); break;
      case '--agent-log': opts.agentLog = value() ?? ''; if (!opts.agentLog) throw new UsageError('--agent-log needs a file'); break;
      case '-h': case '--help': throw new UsageError('', 0);
      default: throw new UsageError(`unknown argument: ${arg}`);
    }
  });
  if (opts.burst > 200) throw new UsageError('--burst is limited to 200 (the pod subnet is a /24)');
  if (opts.apiDeletions > opts.burst) throw new UsageError('--api-deletions cannot exceed --burst');
  return opts;
}

/** mulberry32: the kill points are reproducible from the printed seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Polls the CRI twice a second for duplicate sandboxes (two ready sandboxes of one pod at once) and restarts of healthy
 * containers (a container seen running, then another of the same pod and name running in its place).
 */
class RuntimeMonitor {
  readonly duplicates = new Map<string, string>();
  readonly restarts = new Map<string, string>();
  private readonly running = new Map<string, { id: string; what: string }>();
  private timer?: NodeJS.Timeout;
  private polling?: Promise<void>;

  /** `podUids` gets the uid of every bench sandbox seen. */
  constructor(private readonly cri: CriClient, private readonly podUids: Set<string>) {}

  start(): void {
    this.timer = setInterval(() => {
      this.polling ??= this.poll().finally(() => (this.polling = undefined));
    }, 500);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.polling;
    await this.poll();
  }

  private async poll(): Promise<void> {
    const opts = { timeoutMs: 5_000 };
    // containerd may be down (the containerd phase): the next poll looks again.
    const listed = await Promise.all([this.cri.listPodSandbox(benchPods, opts), this.cri.listContainers(benchPods, opts)]).catch(() => undefined);
    if (!listed) return;
    const [sandboxes, containers] = listed;
    const ready = new Map<string, string[]>();
    for (const s of sandboxes) {
      const uid = s.labels[podUidLabel] ?? s.metadata.uid;
      this.podUids.add(uid);
      if (s.state !== 'SANDBOX_READY') continue;
      ready.set(uid, [...(ready.get(uid) ?? []), s.id.slice(0, 12)]);
    }
    for (const [uid, ids] of ready) {
      if (ids.length > 1) this.duplicates.set(uid, `pod ${sandboxes.find((s) => s.id.startsWith(ids[0]!))?.metadata.name} (uid ${uid}): ready sandboxes ${ids.join(', ')}`);
    }
    for (const c of containers) {
      if (c.state !== 'CONTAINER_RUNNING') continue;
      const key = `${c.labels[podUidLabel]}/${c.metadata.name}`;
      const what = `${c.labels['io.kubernetes.pod.name']}/${c.metadata.name}`;
      const prev = this.running.get(key);
      if (prev && prev.id !== c.id) this.restarts.set(prev.id, `${what}: running container ${prev.id.slice(0, 12)} replaced by ${c.id.slice(0, 12)} (attempt ${c.metadata.attempt})`);
      this.running.set(key, { id: c.id, what });
    }
  }
}

/** One column of the table. */
interface PhaseResult {
  phase: string;
  what: string;
  seconds: number;
  leaks: LeakCounts;
  duplicates: number;
  restarts: number;
  /** api-away only. */
  missedDeletions?: number;
  /** agent-kills: bursts whose teardown did not finish within stuckTeardownMs. */
  stuck?: number;
  /** The leaked objects, duplicates and restarts by name (printed under the table when there are any). */
  details: string[];
}

class Soak {
  private agentStarts = 0;
  readonly rand: () => number;
  readonly results: PhaseResult[] = [];

  constructor(readonly bench: Bench, readonly opts: SoakOptions, /** The rig's main instance: its pod bridge and networks. */ readonly runtime: RuntimeInstance) {
    this.rand = random(opts.seed);
  }

  get agent(): BenchAgent {
    return this.bench.agent!;
  }

  get signal(): AbortSignal {
    return this.bench.signal;
  }

  /** The live agent and its spawn helper: expected processes, not leaks. */
  private agentProcesses(): Set<number> {
    const agent = this.bench.agent;
    if (!agent?.running) return new Set();
    return new Set([agent.pid!, ...childrenOf(agent.pid!)]);
  }

  /** The pods the soak made, by uid (from the agent's status and the runtime): their cgroups and processes are its. */
  readonly podUids = new Set<string>();

  snapshot(): Promise<HostSnapshot> {
    return hostSnapshot({
      cri: this.bench.main,
      containerdAddress: mainEndpoint.replace(/^unix:\/\//, ''),
      bridge: this.runtime.bridge,
      networks: this.runtime.networks,
      mountPrefixes: ['/run/nodelet/containerd/', '/var/lib/nodelet/containerd/', `${this.bench.base}/`],
      podUids: this.podUids,
      exclude: this.agentProcesses(),
    });
  }

  /**
   * What the host holds now that it did not hold `before`, once that stops shrinking: a shim or a plugin exits a moment
   * after the CRI call that ends it returned. Asked again every second, for up to 15 s; a host-local reservation for up
   * to the agent's own collection of it: an agent killed during a CNI ADD leaves its cache record for the next agent's
   * network garbage collection, which runs every minute and takes records older than its 2-minute grace period; a
   * process for up to the agent's collection of shims containerd forgot (an agent killed inside a sandbox's CRI call).
   */
  async settledLeaks(before: HostSnapshot): Promise<HostSnapshot> {
    const start = now();
    const settleMs: Partial<Record<LeakKind, number>> = { 'host-local reservations': reservationSettleMs, processes: processSettleMs };
    const within = (kind: LeakKind) => now() - start <= (settleMs[kind] ?? 15_000);
    for (;;) {
      const leaks = leaksBetween(before, await this.snapshot());
      if (leakKinds.every((k) => leaks[k].length === 0 || !within(k))) return leaks;
      await delay(1_000, undefined, { signal: this.signal });
    }
  }

  /** A standalone agent in the bench's directory (its manifests and root dir outlive it). */
  async startAgent(): Promise<void> {
    this.agentStarts++;
    const log = this.opts.agentLog ? `${this.opts.agentLog}.${this.agentStarts}` : '';
    const agent = new BenchAgent(this.bench.base, 0, log, false);
    this.bench.agent = agent;
    await agent.start(this.signal);
  }

  async killAgent(): Promise<void> {
    const agent = this.agent;
    process.kill(agent.pid!, 'SIGKILL');
    await waitUntil('the killed agent to exit', async () => !agent.running, 10_000, this.signal);
    await agent.stop(); // closes its log copy
  }

  /** Writes the manifests aside, then renames them in at once. */
  async createPods(names: string[]): Promise<void> {
    for (const name of names) await this.agent.writeManifestAside(name, manifestText(name));
    this.agent.renameManifestsIn(names);
  }

  async removeManifests(names: string[]): Promise<void> {
    await Promise.all(names.map((n) => rm(join(this.agent.manifestDir, `${n}.json`), { force: true })));
  }

  /** Until every one of these static pods is Running with its IP in the agent's status. */
  async waitRunning(names: string[], timeoutMs = burstTimeoutMs): Promise<void> {
    const wanted = names.map((n) => `${n}-${benchNode}`);
    let pending = wanted.length;
    await waitUntil(`${names.length} pods Running`, async () => {
      if (!this.agent.running) throw new Error(`nodelet exited:\n${this.agent.recentOutput()}`);
      const pods = await listPods(this.agent.socket).catch(() => [] as V1Pod[]);
      for (const p of pods) if (p.metadata?.uid) this.podUids.add(p.metadata.uid);
      const running = new Set(pods.filter(isRunning).map((p) => p.metadata?.name));
      pending = wanted.filter((n) => !running.has(n)).length;
      return pending === 0;
    }, timeoutMs, this.signal, () => `${pending} of ${wanted.length} not Running\n${this.agent.recentOutput()}`);
  }

  /** Until none of these static pods is in the agent's status. */
  async waitGone(names: string[], timeoutMs = burstTimeoutMs): Promise<void> {
    const wanted = new Set(names.map((n) => `${n}-${benchNode}`));
    await waitUntil(`${names.length} pods gone`, async () => {
      if (!this.agent.running) throw new Error(`nodelet exited:\n${this.agent.recentOutput()}`);
      const pods = await listPods(this.agent.socket);
      return !pods.some((p) => wanted.has(p.metadata?.name ?? ''));
    }, timeoutMs, this.signal);
  }

  /** Runs a phase between two host snapshots, with the runtime monitor on, and records its column. */
  async phase(phase: string, what: string, body: (monitor: RuntimeMonitor, result: PhaseResult) => Promise<void>): Promise<void> {
    progress(`soak: ${phase}: ${what}`);
    const before = await this.snapshot();
    const monitor = new RuntimeMonitor(this.bench.main, this.podUids);
    const result: PhaseResult = { phase, what, seconds: 0, leaks: countLeaks(leaksBetween(before, before)), duplicates: 0, restarts: 0, details: [] };
    const t0 = now();
    monitor.start();
    try {
      await body(monitor, result);
    } finally {
      await monitor.stop();
    }
    result.seconds = Math.round((now() - t0) / 1000);
    const leaks = await this.settledLeaks(before);
    result.leaks = countLeaks(leaks);
    result.duplicates = monitor.duplicates.size;
    result.restarts = monitor.restarts.size;
    for (const kind of leakKinds) for (const x of leaks[kind]) result.details.push(`${phase}: leaked ${kind}: ${kind === 'processes' ? describeProcess(x) : x}`);
    for (const d of monitor.duplicates.values()) result.details.push(`${phase}: duplicate sandboxes: ${d}`);
    for (const r of monitor.restarts.values()) result.details.push(`${phase}: restart of a healthy container: ${r}`);
    this.results.push(result);
    const bad = result.details.length;
    progress(`soak: ${phase} done in ${result.seconds} s: ${bad === 0 ? 'every count 0' : `${bad} findings`}`);
    for (const d of result.details.slice(0, 20)) progress(`  ${d}`);
  }

  // ---- the phases

  async cycles(): Promise<void> {
    const { cycles, parallel } = this.opts;
    await this.phase('cycles', `${cycles} pod create/delete cycles, ${parallel} at a time`, async () => {
      let next = 0;
      let done = 0;
      const worker = async () => {
        while (next < cycles) {
          const name = `soak-c${next++}`;
          await this.createPods([name]);
          await this.waitRunning([name], 120_000);
          await this.removeManifests([name]);
          await this.waitGone([name], 120_000);
          if (++done % 50 === 0) progress(`  ${done}/${cycles} cycles`);
        }
      };
      await Promise.all(Array.from({ length: Math.min(parallel, cycles) }, worker));
      await this.bench.nodeletTeardown(this.signal);
    });
  }

  async agentKills(): Promise<void> {
    const { agentKills, burst } = this.opts;
    const names = (prefix: string) => Array.from({ length: burst }, (_, i) => `${prefix}-${i + 1}`);
    // An unkilled burst first: how long starting and removing one takes, the range of the random kill points.
    progress(`soak: agent-kills: timing an unkilled burst of ${burst}...`);
    const warm = names('soak-kw');
    let t = now();
    await this.createPods(warm);
    await this.waitRunning(warm);
    const startMs = now() - t;
    t = now();
    await this.removeManifests(warm);
    await this.bench.nodeletTeardown(this.signal);
    const removeMs = now() - t;
    progress(`  a burst starts in ${(startMs / 1000).toFixed(1)} s and is removed in ${(removeMs / 1000).toFixed(1)} s`);
    await this.phase('agent-kills', `nodelet SIGKILLed ${agentKills} times at random points of ${burst}-pod bursts (start ${(startMs / 1000).toFixed(1)} s, removal ${(removeMs / 1000).toFixed(1)} s)`, async (_monitor, result) => {
      result.stuck = 0;
      for (let k = 1; k <= agentKills; k++) {
        const pods = names(`soak-k${k}`);
        const whileStarting = k % 2 === 1;
        const at = Math.round(this.rand() * (whileStarting ? startMs : removeMs));
        await this.createPods(pods);
        if (!whileStarting) {
          await this.waitRunning(pods);
          await this.removeManifests(pods);
        }
        await delay(at, undefined, { signal: this.signal });
        await this.killAgent();
        progress(`  kill ${k}/${agentKills}: ${at} ms into the burst's ${whileStarting ? 'start' : 'removal'}; starting a new agent...`);
        await this.startAgent();
        if (whileStarting) {
          await this.waitRunning(pods);
          await this.removeManifests(pods);
        }
        try {
          await this.bench.nodeletTeardown(this.signal, stuckTeardownMs);
        } catch (err) {
          // Counted, and the next kill goes on: what is left shows in the phase's leaks.
          result.stuck = (result.stuck ?? 0) + 1;
          result.details.push(`agent-kills: kill ${k}: teardown stuck: ${errorText(err).split('\n', 1)[0]}; ${await this.repairCreatedTasks()}`);
        }
      }
    });
  }

  /**
   * containerd 1.6 leaves the task of a container whose StartContainer was cut short (its client gone) in CREATED, while
   * CRI reports the container EXITED: neither StopContainer nor RemoveContainer can end it (containerd/containerd#11037).
   * The soak deletes such tasks through containerd's own API, then gives the agent time to finish the teardown.
   */
  async repairCreatedTasks(): Promise<string> {
    const containers = await this.bench.main.listContainers(benchPods, { timeoutMs: 10_000 });
    const stuck = containers.filter((c) => c.state === 'CONTAINER_EXITED');
    const address = mainEndpoint.replace(/^unix:\/\//, '');
    const repaired: string[] = [];
    for (const c of stuck) {
      const deleted = await run('ctr', ['-a', address, '-n', 'k8s.io', 'tasks', 'delete', '--force', c.id]).then(() => true, () => false);
      if (deleted) repaired.push(c.id.slice(0, 12));
    }
    await this.bench.nodeletTeardown(this.signal, stuckTeardownMs).catch(() => undefined);
    return repaired.length > 0 ? `the soak deleted the CREATED task of ${repaired.join(', ')} with ctr (containerd#11037)` : 'no exited container with a task found';
  }

  async containerdKills(): Promise<void> {
    const { containerdKills, burst } = this.opts;
    const pods = Array.from({ length: burst }, (_, i) => `soak-d-${i + 1}`);
    await this.phase('containerd-kills', `containerd SIGKILLed ${containerdKills} times under ${burst} running pods`, async () => {
      await this.createPods(pods);
      await this.waitRunning(pods);
      for (let k = 1; k <= containerdKills; k++) {
        await delay(1_000 + Math.round(this.rand() * 4_000), undefined, { signal: this.signal });
        const pid = Number((await readFile(mainPidFile, 'utf8')).trim());
        process.kill(pid, 'SIGKILL');
        await waitUntil('the killed containerd to exit', async () => !alive(pid), 10_000, this.signal);
        const down = Math.round(this.rand() * 3_000);
        await delay(down, undefined, { signal: this.signal });
        progress(`  kill ${k}/${containerdKills}: containerd ${pid} killed, down ${down} ms; starting it again...`);
        await run('bash', [join(repoRoot, 'scripts/runtime.sh'), 'up'], { cwd: repoRoot });
        await this.waitRunning(pods, 120_000);
        // The soak's own gRPC channel reconnects with a back-off: it may refuse calls for a while after the restart.
        await waitUntil('containerd to answer again', () => this.bench.main.version({ timeoutMs: 5_000 }).then(() => true, () => false), 60_000, this.signal);
        // Let the agent relist the runtime that came back before the next kill (relist runs every second).
        await delay(3_000, undefined, { signal: this.signal });
      }
      await this.removeManifests(pods);
      await this.bench.nodeletTeardown(this.signal);
    });
  }

  async apiAway(): Promise<void> {
    const { burst, apiAwaySeconds, apiDeletions } = this.opts;
    const cluster = new ClusterPhase(this.bench);
    let failure: unknown;
    let closed = false;
    try {
      await this.phase('api-away', `kube-apiserver stopped for ${apiAwaySeconds} s under ${burst} API pods, ${apiDeletions} of them deleted from etcd meanwhile`, async (_monitor, result) => {
        progress('soak: api-away: starting the control plane and nodelet with --kubeconfig...');
        await cluster.startControlPlane();
        await cluster.startWatch();
        await cluster.startAgent();
        const names = Array.from({ length: burst }, (_, i) => `soak-a-${i + 1}`);
        await cluster.sample(names, burstTimeoutMs);
        const plane = cluster.plane!;
        const deleted = names.slice(0, apiDeletions);
        progress(`  ${burst} pods started; stopping kube-apiserver for ${apiAwaySeconds} s...`);
        const awayAt = now();
        await stopComponent(plane.dir, 'kube-apiserver');
        for (const name of deleted) await etcdDeletePod(plane.dir, plane.settings.etcdClientPort, name);
        progress(`  deleted ${deleted.length} pods from etcd; waiting...`);
        await delay(Math.max(0, apiAwaySeconds * 1000 - (now() - awayAt)), undefined, { signal: this.signal });
        await startComponent(plane.dir, 'kube-apiserver', { binDir: plane.binDir });
        progress(`  kube-apiserver is back after ${((now() - awayAt) / 1000).toFixed(0)} s; waiting for nodelet to remove the ${deleted.length} deleted pods...`);
        const deadline = now() + missedDeletionDeadlineMs;
        let left: string[] = deleted;
        while (left.length > 0 && now() < deadline) {
          const sandboxes = await this.bench.main.listPodSandbox(benchPods, { timeoutMs: 10_000 });
          left = deleted.filter((n) => sandboxes.some((s) => s.metadata.name === n));
          if (left.length > 0) await delay(500, undefined, { signal: this.signal });
        }
        result.missedDeletions = left.length;
        for (const n of left) result.details.push(`api-away: deletion missed: ${n} still has a sandbox ${missedDeletionDeadlineMs / 1000} s after kube-apiserver came back`);
        const survivors = await cluster.admin!.request<V1PodList>({ method: 'GET', path: `/api/v1/namespaces/${benchNamespace}/pods` });
        const notRunning = survivors.items.filter((p) => p.status?.phase !== 'Running').map((p) => p.metadata?.name);
        if (notRunning.length > 0) result.details.push(`api-away: pods not Running in the API after the outage: ${notRunning.join(', ')}`);
        await cluster.deletePods(this.signal);
        // Before the phase's closing snapshot: the control plane and the cluster-mode agent are part of the phase.
        closed = true;
        const errors = await cluster.close();
        if (errors.length > 0) throw new Error(`cluster cleanup: ${errors.join('; ')}`);
      });
    } catch (err) {
      failure = err;
    } finally {
      const errors = closed ? [] : await cluster.close();
      if (errors.length > 0 && failure === undefined) failure = new Error(`cluster cleanup: ${errors.join('; ')}`);
    }
    if (failure !== undefined) throw failure;
  }
}

/** A pod's etcd key deleted straight through etcd's JSON gateway, as kube-apiserver's client (kube-apiserver is away). */
async function etcdDeletePod(dir: string, port: number, name: string): Promise<void> {
  const pki = join(dir, 'pki');
  const [cert, key, ca] = await Promise.all(['apiserver-etcd-client.crt', 'apiserver-etcd-client.key', 'etcd/ca.crt'].map((f) => readFile(join(pki, f))));
  const body = JSON.stringify({ key: Buffer.from(`/registry/pods/${benchNamespace}/${name}`).toString('base64') });
  const answer = await new Promise<string>((resolvePromise, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/v3/kv/deleterange', method: 'POST', cert, key, ca, timeout: 10_000, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d)).on('end', () => (res.statusCode === 200 ? resolvePromise(text) : reject(new Error(`etcd answered ${res.statusCode}: ${text}`))));
    });
    req.on('timeout', () => req.destroy(new Error('etcd did not answer within 10 s')));
    req.on('error', reject);
    req.end(body);
  });
  if ((JSON.parse(answer) as { deleted?: string }).deleted !== '1') throw new Error(`etcd deleted no key for pod ${name}: ${answer}`);
}

/** "pid comm" with its parent and command line, while it still runs (for the report). */
function describeProcess(entry: string): string {
  const pid = Number(entry.split(' ', 1)[0]);
  try {
    const ppid = processTable().find((p) => p.pid === pid)?.ppid;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim().slice(0, 200);
    return `${entry} (parent ${ppid}: ${ppid ? readFileSync(`/proc/${ppid}/comm`, 'utf8').trim() : '?'}; ${cmdline})`;
  } catch {
    return `${entry} (gone by now)`;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Direct children of a process (from /proc/<pid>/stat of every process: this kernel has no children file). */
function childrenOf(parent: number): number[] {
  const out: number[] = [];
  for (const { pid, ppid } of processTable()) if (ppid === parent) out.push(pid);
  return out;
}

function processTable(): { pid: number; ppid: number }[] {
  const out: { pid: number; ppid: number }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      out.push({ pid: Number(entry), ppid: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) });
    } catch {
      // exited while listed
    }
  }
  return out;
}

async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs: number, signal: AbortSignal, detail?: () => string): Promise<void> {
  const deadline = now() + timeoutMs;
  while (!(await probe())) {
    if (now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${detail ? `: ${detail()}` : ''}`);
    await delay(200, undefined, { signal });
  }
}

function table(results: PhaseResult[]): string {
  const rows: [string, (r: PhaseResult) => string][] = [
    ['duration (s)', (r) => String(r.seconds)],
    ...leakKinds.map((k) => [`leaked ${k}`, (r: PhaseResult) => String(r.leaks[k])] as [string, (r: PhaseResult) => string]),
    ['duplicate sandboxes', (r) => String(r.duplicates)],
    ['restarts of healthy containers', (r) => String(r.restarts)],
    ['deletions missed (API server away)', (r) => (r.missedDeletions === undefined ? '-' : String(r.missedDeletions))],
    ['teardowns stuck', (r) => (r.stuck === undefined ? '-' : String(r.stuck))],
  ];
  const head = `| count | ${results.map((r) => r.phase).join(' | ')} |`;
  const rule = `| --- | ${results.map(() => '---').join(' | ')} |`;
  return [head, rule, ...rows.map(([label, cell]) => `| ${label} | ${results.map(cell).join(' | ')} |`)].join('\n');
}

function findings(r: PhaseResult): number {
  return leakKinds.reduce((n, k) => n + r.leaks[k], 0) + r.duplicates + r.restarts + (r.missedDeletions ?? 0) + (r.stuck ?? 0);
}

async function soak(bench: Bench, opts: SoakOptions): Promise<Soak> {
  await bench.prepare();
  await bench.takeTestsLock();
  // Only the CNI socket is a conflict: the soak counts what is its own, whatever else runs (another containerd's agent).
  await bench.waitForOtherAgents({ socketOnly: true });
  await bench.removeBenchPods(bench.main, bench.signal);
  await bench.removeStaleTempDirs();
  const s = new Soak(bench, opts, await describeRuntime('main'));
  const t0 = now();
  const baseline = await s.snapshot();
  progress(`soak: seed ${opts.seed} (--seed ${opts.seed} repeats the kill points)`);
  const standalone = (['cycles', 'agent-kills', 'containerd-kills'] as const).filter((p) => opts.phases.has(p));
  if (standalone.length > 0) {
    await s.startAgent();
    await bench.waitAgentIdle();
    if (opts.phases.has('cycles')) await s.cycles();
    if (opts.phases.has('agent-kills')) await s.agentKills();
    if (opts.phases.has('containerd-kills')) await s.containerdKills();
    await s.agent.stop();
  }
  if (opts.phases.has('api-away')) await s.apiAway();
  // The machine as the soak found it: the whole run's leaks, with every agent stopped.
  const leaks = await s.settledLeaks(baseline);
  s.results.push({
    phase: 'whole run', what: 'the host before the soak against the host after it', seconds: Math.round((now() - t0) / 1000),
    leaks: countLeaks(leaks),
    duplicates: s.results.reduce((n, r) => n + r.duplicates, 0),
    restarts: s.results.reduce((n, r) => n + r.restarts, 0),
    ...(opts.phases.has('api-away') ? { missedDeletions: s.results.reduce((n, r) => n + (r.missedDeletions ?? 0), 0) } : {}),
    ...(opts.phases.has('agent-kills') ? { stuck: s.results.reduce((n, r) => n + (r.stuck ?? 0), 0) } : {}),
    details: leakKinds.flatMap((k) => leaks[k].map((x) => `whole run: left ${k}: ${x}`)),
  });
  // Counted above; then ended, so that the soak leaves the machine as it found it.
  const killed = killForgottenShims(leaks.processes);
  if (killed.length > 0) progress(`soak: killed ${killed.length} shims containerd had forgotten (their bundle removed): ${killed.join(', ')}`);
  return s;
}

async function main(): Promise<number> {
  const parsed = parseCommandLine('soak', usage, parseSoakOptions);
  if ('exitCode' in parsed) return parsed.exitCode;
  const opts = parsed.opts;
  const abort = new AbortController();
  // Every cycle in flight and the CRI monitor wait on it: more than Node's default of 10 listeners, by design.
  setMaxListeners(0, abort.signal);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      if (abort.signal.aborted) process.exit(130);
      progress(`${sig}: stopping and cleaning up (again to quit without cleanup)...`);
      abort.abort(new Error(`interrupted by ${sig}`));
    });
  }
  // The bench's session: its containerd client, test lock, agent teardown and cleanup; no floor, no kubelet.
  const bench = new Bench({ ...parseOptions([]), phases: new Set(), peers: new Set(['floor']) }, abort.signal);
  let s: Soak | undefined;
  let failure: unknown;
  try {
    s = await soak(bench, opts);
  } catch (err) {
    failure = err;
  }
  const errors = await bench.cleanup();
  for (const e of errors) progress(`cleanup problem: ${e}`);
  if (failure !== undefined || !s) {
    progress(`FAILED: ${errorText(failure)}`);
    return abort.signal.aborted ? 130 : 1;
  }
  const phases = s.results.filter((r) => r.phase !== 'whole run');
  process.stdout.write(`\n${phases.map((r) => `${r.phase}: ${r.what}`).join('\n')}\n\n${table(s.results)}\n`);
  for (const r of s.results) for (const d of r.details) process.stdout.write(`${d}\n`);
  const bad = s.results.reduce((n, r) => n + findings(r), 0);
  return bad === 0 && errors.length === 0 ? 0 : 1;
}

process.exit(await main());
