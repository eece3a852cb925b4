// The start-up phase: nodelet's manifest-to-Running latency for 1 and --pods pods beside the floor, its steps and peak RSS.
import type { V1Pod } from '@kubernetes/client-node';
import type { LogLine } from './agent.js';
import { steadyState, type KubeletApiAccess, type SteadyState } from './density.js';
import type { FloorSample } from './floor.js';
import { lastContainerStartedMs, type KubeletSample } from './kubelet.js';
import { memoryMB } from './procfs.js';
import type { Options } from './options.js';
import type { Bench } from './session.js';
import { isRunning, watchPods } from './status-client.js';
import { errorText, fmtMs, now, progress, toEpoch } from './util.js';
import { benchNode, manifestText } from './workload.js';

const singleTimeoutMs = 60_000;
const parallelTimeoutMs = 300_000;

/** Agent log timestamps of one pod, in ms after the manifest rename. */
export interface PodSteps {
  loaded?: number;
  network?: number;
  sandbox?: number;
  created?: number;
  started?: number;
  running?: number;
  observed?: number;
}

export const stepNames: { key: keyof PodSteps; label: string }[] = [
  { key: 'loaded', label: "'static pod manifest loaded'" },
  { key: 'network', label: "'pod network set up' (CNI ADD via shim)" },
  { key: 'sandbox', label: "'Created pod sandbox' (RunPodSandbox back)" },
  { key: 'created', label: "'Created container'" },
  { key: 'started', label: "'Started container'" },
  { key: 'running', label: "'Pod phase changed' Running" },
  { key: 'observed', label: "seen Running+IP by the bench's watch" },
];

export interface NodeletSample {
  elapsedMs: number;
  t0Epoch: number;
  pods: string[];
  observedAt: Map<string, number>;
  agentCpuMs: number;
  agentChildCpuMs: number;
  benchCpuMs: number;
  /** The last bench container's start in the runtime (CRI startedAt), ms after the rename: read after the sample. */
  runtimeStartedMs?: number;
  /** The large case only: from the removal of every manifest at once until nothing of the pods is left. */
  teardownMs?: number;
}

async function nodeletRun(bench: Bench, names: string[], timeoutMs: number): Promise<NodeletSample> {
  const agent = bench.agent!;
  for (const name of names) await agent.writeManifestAside(name, manifestText(name));
  const staticNames = names.map((n) => `${n}-${benchNode}`);
  const wanted = new Set(staticNames);
  const observedAt = new Map<string, number>();
  /** Each bench pod as the watch last delivered it, for the timeout's message. */
  const lastSeen = new Map<string, V1Pod>();
  let t0 = NaN;
  // Settled by the watch: established (its initial events delivered), then every pod seen Running, or a failure.
  let established!: () => void;
  let allRunning!: (at: number) => void;
  let failed!: (err: Error) => void;
  const watchReady = new Promise<void>((resolve) => (established = resolve));
  const outcome = new Promise<number>((resolve, reject) => {
    allRunning = resolve;
    failed = reject;
  });
  // Awaited only once the manifests are in: a failure before that must not count as unhandled meanwhile.
  outcome.catch(() => undefined);
  const stopWatch = new AbortController();
  const stopOnAbort = () => stopWatch.abort();
  bench.signal.addEventListener('abort', stopOnAbort, { once: true });
  const watch = watchPods(agent.socket, stopWatch.signal, ({ type, object: p }) => {
    if (type === 'BOOKMARK') return established();
    const name = p.metadata?.name ?? '';
    if (!wanted.has(name) || observedAt.has(name)) return;
    lastSeen.set(name, p);
    if (type === 'DELETED') failed(new Error(`bench pod ${name} was removed before it ran: ${JSON.stringify(p.status)}`));
    else if (isRunning(p)) {
      observedAt.set(name, now() - t0);
      if (observedAt.size === wanted.size) allRunning(now());
    } else if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded') failed(new Error(`bench pod ${name} ended ${p.status.phase}: ${JSON.stringify(p.status)}`));
  });
  void watch.then(
    () => failed(stopWatch.signal.aborted
      ? new Error('the measurement was stopped', { cause: bench.signal.reason })
      : new Error(`nodelet ended the status watch during the measurement:\n${agent.recentOutput()}`)),
    (err: unknown) => failed(new Error(`the status watch failed: ${errorText(err)}\n${agent.recentOutput()}`, { cause: err })),
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([watchReady, outcome]);
    const cpu0 = agent.cpuMs();
    const benchCpu0 = process.cpuUsage();
    t0 = now();
    agent.renameManifestsIn(names);
    timer = setTimeout(() => {
      const pending = staticNames.filter((n) => !observedAt.has(n));
      const sample = lastSeen.get(pending[0]!);
      failed(new Error(`${pending.length} of ${names.length} pods not Running with an IP after ${timeoutMs / 1000} s; e.g. ${pending[0]}: ${JSON.stringify(sample?.status ?? 'not listed')}\n${agent.recentOutput()}`));
    }, timeoutMs);
    const endedAt = await outcome;
    const cpu1 = agent.cpuMs();
    const benchCpu = process.cpuUsage(benchCpu0);
    return {
      elapsedMs: endedAt - t0,
      t0Epoch: toEpoch(t0),
      pods: staticNames,
      observedAt,
      agentCpuMs: cpu1.self - cpu0.self,
      agentChildCpuMs: cpu1.children - cpu0.children,
      benchCpuMs: (benchCpu.user + benchCpu.system) / 1000,
    };
  } finally {
    clearTimeout(timer);
    bench.signal.removeEventListener('abort', stopOnAbort);
    stopWatch.abort();
    await watch.catch(() => undefined);
  }
}

/** Agent log timestamps per pod of a sample, relative to the manifest rename. */
function stepsOf(sample: NodeletSample, lines: readonly LogLine[]): Map<string, PodSteps> {
  const steps = new Map<string, PodSteps>(sample.pods.map((n) => [n, {}]));
  const rel = (t: number) => t - sample.t0Epoch;
  const set = (name: string | undefined, key: keyof PodSteps, t: number) => {
    const s = name === undefined ? undefined : steps.get(name);
    if (s && s[key] === undefined) s[key] = rel(t);
  };
  const short = (pod: string | undefined) => pod?.slice(pod.indexOf('/') + 1);
  for (const l of lines) {
    if (l.time < sample.t0Epoch - 1) continue;
    switch (l.msg) {
      case 'static pod manifest loaded': for (const p of l.pods ?? []) set(short(p), 'loaded', l.time); break;
      case 'pod network set up': set(short(l.pod), 'network', l.time); break;
      case 'Created pod sandbox': set(short(l.pod), 'sandbox', l.time); break;
      case 'Created container': set(short(l.pod), 'created', l.time); break;
      case 'Started container': set(short(l.pod), 'started', l.time); break;
      case 'Pod phase changed': if (l.phase === 'Running') set(short(l.pod), 'running', l.time); break;
    }
  }
  for (const [name, t] of sample.observedAt) steps.get(name)!.observed = t;
  return steps;
}

export interface StartupResults {
  /** node: the agent's Node version. */
  machine: { cpus: number; kernel: string; node: string };
  runtime: string;
  options: Options;
  floor: { single: FloorSample[]; parallel: FloorSample[]; big: FloorSample[] };
  nodelet: { single: NodeletSample[]; parallel: NodeletSample[]; big: NodeletSample[] };
  /** With kubelet among the peers: its samples (same manifests, same repetitions). */
  kubelet?: { single: KubeletSample[]; parallel: KubeletSample[]; big: KubeletSample[]; peakRssMB: number; idleRssMB: number };
  singleSteps: Map<string, PodSteps>[];
  parallelSteps: Map<string, PodSteps>[];
  /** The density phase's steady state (after the last large case's start), when measured. */
  steady?: SteadyState;
  /** peakMB: the agent's and its spawn helper's (helperPeakMB) VmHWM. */
  rss: { idleStartMB: number; idleEndMB: number; peakMB: number; helperPeakMB: number };
}

type Case = 'single' | 'parallel' | 'big';
type Peer = 'floor' | 'kubelet' | 'nodelet';

/** kubelet's /pods poll interval per case: the resolution of its figures (each poll serialises all its pods). */
export const kubeletPollMs: Record<Case, number> = { single: 20, parallel: 50, big: 100 };

/**
 * Floor, kubelet and nodelet start-up, 1 pod, --pods and --big-pods at once, interleaved (the order rotates per
 * repetition); the agent's peak RSS through it.
 */
export async function runStartup(bench: Bench, common: Pick<StartupResults, 'machine' | 'runtime'>, idleStartMB: number, kubeletApi?: KubeletApiAccess): Promise<StartupResults> {
  const agent = bench.agent!;
  const kubelet = bench.kubelet;
  const { opts } = bench;
  const startEpoch = Date.now();
  const res: StartupResults = {
    machine: common.machine,
    runtime: common.runtime,
    options: opts,
    floor: { single: [], parallel: [], big: [] },
    nodelet: { single: [], parallel: [], big: [] },
    ...(kubelet ? { kubelet: { single: [], parallel: [], big: [], peakRssMB: NaN, idleRssMB: NaN } } : {}),
    singleSteps: [],
    parallelSteps: [],
    rss: { idleStartMB, idleEndMB: NaN, peakMB: NaN, helperPeakMB: 0 },
  };

  const timeoutOf = (n: number) => (n === 1 ? singleTimeoutMs : parallelTimeoutMs);
  const settle = async () => {
    await bench.waitAgentIdle();
    await kubelet?.waitIdle(bench.signal);
  };
  const names = (prefix: string, n: number) => (n === 1 ? [prefix] : Array.from({ length: n }, (_, i) => `${prefix}-${i + 1}`));
  /**
   * One measurement of a peer (timed), then its teardown (timed in the large case, for the floor and nodelet). With
   * `steady`, nodelet's steady state with the pods running comes between.
   */
  const once = async (peer: Peer, prefix: string, n: number, c: Case, steady = false): Promise<FloorSample | NodeletSample | KubeletSample> => {
    const pods = names(prefix, n);
    if (peer === 'floor') return bench.floorOnce(pods, c === 'big');
    if (peer === 'nodelet') {
      const s = await nodeletRun(bench, pods, timeoutOf(n));
      s.runtimeStartedMs = await lastContainerStartedMs(bench.main, s.t0Epoch, bench.signal);
      if (steady && kubeletApi) res.steady = await steadyState(bench, kubeletApi, n, opts.densitySeconds);
      const t = now();
      await bench.nodeletTeardown(bench.signal);
      if (c === 'big') s.teardownMs = now() - t;
      return s;
    }
    const s = await kubelet!.run(pods, manifestText, timeoutOf(n), kubeletPollMs[c], bench.signal);
    await kubelet!.teardown(bench.signal);
    return s;
  };
  const peers: Peer[] = kubelet ? ['floor', 'kubelet', 'nodelet'] : ['floor', 'nodelet'];
  const letter: Record<Peer, string> = { floor: 'f', kubelet: 'k', nodelet: 'n' };
  bench.watchForOtherAgents();

  // Warm-up (not counted): the first pod pays for bridge creation, gRPC channels, and the agent's cold code paths.
  progress(`warm-up: 1 pod, then 1 batch of ${opts.pods}, of each of ${peers.join(', ')} (not counted)`);
  for (const n of [1, opts.pods]) {
    for (const peer of peers) {
      const s = await once(peer, `${letter[peer]}w${n === 1 ? '' : 'p'}`, n, n === 1 ? 'single' : 'parallel');
      progress(`  warm-up ${n === 1 ? '1 pod' : `${n} pods`}: ${peer} ${fmtMs(s.elapsedMs)}`);
      await settle();
    }
  }

  const cases: { c: Case; n: number; reps: number; label: string }[] = [
    { c: 'single', n: 1, reps: opts.reps, label: '1 pod' },
    { c: 'parallel', n: opts.pods, reps: opts.reps, label: `${opts.pods} pods` },
    ...(opts.bigPods > 0 ? [{ c: 'big' as const, n: opts.bigPods, reps: opts.bigReps, label: `${opts.bigPods} pods` }] : []),
  ];
  for (const { c, n, reps, label } of cases) {
    for (let k = 1; k <= reps; k++) {
      // Rotate which goes first, so none always follows another's teardown.
      const order = peers.map((_, i) => peers[(i + k - 1) % peers.length]!);
      for (const peer of order) {
        progress(`${label}, rep ${k}/${reps}: ${peer}...`);
        const steady = c === 'big' && k === reps && opts.densitySeconds > 0;
        const s = await once(peer, `${letter[peer]}${c[0]}${k}`, n, c, steady);
        if (peer === 'floor') res.floor[c].push(s as FloorSample);
        else if (peer === 'nodelet') res.nodelet[c].push(s as NodeletSample);
        else res.kubelet![c].push(s as KubeletSample);
        const teardown = 'teardownMs' in s && s.teardownMs !== undefined ? `; all removed in ${fmtMs(s.teardownMs)}` : '';
        progress(`  ${peer} ${fmtMs(s.elapsedMs)}${teardown}`);
        await settle();
      }
    }
  }

  bench.stopWatching();
  res.rss.helperPeakMB = agent.spawnHelperPeakRssMB();
  res.rss.peakMB = memoryMB(agent.pid!, 'VmHWM') + res.rss.helperPeakMB;
  res.rss.idleEndMB = memoryMB(agent.pid!, 'VmRSS');
  if (kubelet && res.kubelet) {
    res.kubelet.peakRssMB = kubelet.rssMB('VmHWM');
    res.kubelet.idleRssMB = kubelet.rssMB('VmRSS');
  }
  res.singleSteps = res.nodelet.single.map((s) => stepsOf(s, agent.lines));
  res.parallelSteps = res.nodelet.parallel.map((s) => stepsOf(s, agent.lines));
  const problems = agent.problemsSince(startEpoch);
  if (problems.length > 0) bench.note(`the agent logged ${problems.length} warnings/errors during the run, e.g. "${problems[0]!.msg}"`);
  const foreignEnd = await bench.foreignPods();
  if (foreignEnd.main + foreignEnd.floor + foreignEnd.kubelet > 0) bench.note(`other pods share the containerds at the end (main ${foreignEnd.main}, floor ${foreignEnd.floor}, kubelet ${foreignEnd.kubelet})`);
  return res;
}
