// The start-up phase: nodelet's manifest-to-Running latency for 1 and --pods pods beside the floor, its steps and peak RSS.
import type { V1Pod } from '@kubernetes/client-node';
import type { LogLine } from './agent.js';
import type { FloorSample } from './floor.js';
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
  machine: { cpus: number; kernel: string; node: string };
  runtime: string;
  options: Options;
  floor: { single: FloorSample[]; parallel: FloorSample[] };
  nodelet: { single: NodeletSample[]; parallel: NodeletSample[] };
  singleSteps: Map<string, PodSteps>[];
  parallelSteps: Map<string, PodSteps>[];
  /** peakMB: the agent's and its spawn helper's (helperPeakMB) VmHWM. */
  rss: { idleStartMB: number; idleEndMB: number; peakMB: number; helperPeakMB: number };
}

/** Floor vs nodelet start-up, 1 pod and --pods at once, interleaved; the agent's peak RSS through it. */
export async function runStartup(bench: Bench, common: Pick<StartupResults, 'machine' | 'runtime'>, idleStartMB: number): Promise<StartupResults> {
  const agent = bench.agent!;
  const { opts } = bench;
  const startEpoch = Date.now();
  const res: StartupResults = {
    machine: common.machine,
    runtime: common.runtime,
    options: opts,
    floor: { single: [], parallel: [] },
    nodelet: { single: [], parallel: [] },
    singleSteps: [],
    parallelSteps: [],
    rss: { idleStartMB, idleEndMB: NaN, peakMB: NaN, helperPeakMB: 0 },
  };

  const nodeletOnce = async (names: string[], timeoutMs: number) => {
    const s = await nodeletRun(bench, names, timeoutMs);
    await bench.nodeletTeardown(bench.signal);
    return s;
  };
  const settle = () => bench.waitAgentIdle();
  bench.watchForOtherAgents();

  // Warm-up (not counted): the first pod pays for bridge creation, gRPC channels, and the agent's cold code paths.
  progress('warm-up: 1 floor pod, 1 nodelet pod, then 1 batch each of the parallel case (not counted)');
  await bench.floorOnce(['fw']);
  await settle();
  await nodeletOnce(['nw'], singleTimeoutMs);
  await settle();
  const batch = (prefix: string) => Array.from({ length: opts.pods }, (_, i) => `${prefix}-${i + 1}`);
  await bench.floorOnce(batch('fwp'));
  await settle();
  await nodeletOnce(batch('nwp'), parallelTimeoutMs);
  await settle();

  for (let k = 1; k <= opts.reps; k++) {
    // Alternate which goes first, so neither always follows the other's teardown.
    const order = k % 2 ? (['floor', 'nodelet'] as const) : (['nodelet', 'floor'] as const);
    for (const which of order) {
      if (which === 'floor') {
        progress(`1 pod, rep ${k}/${opts.reps}: floor...`);
        const s = await bench.floorOnce([`fs${k}`]);
        res.floor.single.push(s);
        progress(`  floor ${fmtMs(s.elapsedMs)}`);
      } else {
        progress(`1 pod, rep ${k}/${opts.reps}: nodelet...`);
        const s = await nodeletOnce([`ns${k}`], singleTimeoutMs);
        res.nodelet.single.push(s);
        progress(`  nodelet ${fmtMs(s.elapsedMs)}`);
      }
      await settle();
    }
  }
  for (let k = 1; k <= opts.reps; k++) {
    const order = k % 2 ? (['floor', 'nodelet'] as const) : (['nodelet', 'floor'] as const);
    for (const which of order) {
      if (which === 'floor') {
        progress(`${opts.pods} pods, rep ${k}/${opts.reps}: floor...`);
        const s = await bench.floorOnce(batch(`fp${k}`));
        res.floor.parallel.push(s);
        progress(`  floor ${fmtMs(s.elapsedMs)}`);
      } else {
        progress(`${opts.pods} pods, rep ${k}/${opts.reps}: nodelet...`);
        const s = await nodeletOnce(batch(`np${k}`), parallelTimeoutMs);
        res.nodelet.parallel.push(s);
        progress(`  nodelet ${fmtMs(s.elapsedMs)}`);
      }
      await settle();
    }
  }

  bench.stopWatching();
  res.rss.helperPeakMB = agent.spawnHelperPeakRssMB();
  res.rss.peakMB = memoryMB(agent.pid!, 'VmHWM') + res.rss.helperPeakMB;
  res.rss.idleEndMB = memoryMB(agent.pid!, 'VmRSS');
  res.singleSteps = res.nodelet.single.map((s) => stepsOf(s, agent.lines));
  res.parallelSteps = res.nodelet.parallel.map((s) => stepsOf(s, agent.lines));
  const problems = agent.problemsSince(startEpoch);
  if (problems.length > 0) bench.note(`the agent logged ${problems.length} warnings/errors during the run, e.g. "${problems[0]!.msg}"`);
  const foreignEnd = await bench.foreignPods();
  if (foreignEnd.main + foreignEnd.floor > 0) bench.note(`other pods share the containerds at the end (main ${foreignEnd.main}, floor ${foreignEnd.floor})`);
  return res;
}
