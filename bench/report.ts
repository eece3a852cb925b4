// The report: the figures of each phase against their targets, as the table on stdout (or on stderr beside --json).
import type { ClusterResults } from './cluster.js';
import { stepNames as clusterStepNames, targetFloorFactor } from './cluster.js';
import { densityTargets } from './density.js';
import type { FloorSample } from './floor.js';
import type { KubeletProbeLoad, ProbeLoad } from './probes.js';
import { pullTable, type PullResults } from './pull.js';
import type { TimeShare } from './profiles.js';
import type { KubeletSample } from './kubelet.js';
import { kubeletPollMs, stepNames, type NodeletSample, type StartupResults } from './startup.js';
import { fmtMs, median, min, round1, round3, stepMedians } from './util.js';

const startupTargets = { singleRatio: 1.25, parallelRatio: 1.15, peakRssMB: 100 };
const stepKeys = stepNames.map((s) => s.key);

export interface RunResults {
  machine: StartupResults['machine'];
  runtime: string;
  startup?: StartupResults;
  probes?: ProbeLoad;
  /** The same probe load on kubelet, when it is a peer. */
  kubeletProbes?: KubeletProbeLoad;
  cluster?: ClusterResults;
  pull?: PullResults;
}

function summary(samples: number[]) {
  return { medianMs: round1(median(samples)), minMs: round1(min(samples)), samplesMs: samples.map(round1) };
}

function figures(res: StartupResults) {
  const el = (xs: { elapsedMs: number }[]) => xs.map((s) => s.elapsedMs);
  const ratio = (a: number, b: number) => round3(a / b);
  const row = (c: 'single' | 'parallel' | 'big') => {
    const fl = el(res.floor[c]);
    const nl = el(res.nodelet[c]);
    const kl = res.kubelet ? el(res.kubelet[c]) : [];
    return {
      floor: summary(fl), nodelet: summary(nl), ratio: ratio(median(nl), median(fl)), ratioOfMins: ratio(min(nl), min(fl)),
      ...(res.kubelet ? {
        kubelet: { ...summary(kl), pollMs: kubeletPollMs[c] },
        // nodelet : kubelet, < 1 when nodelet is ahead.
        vsKubelet: ratio(median(nl), median(kl)), vsKubeletOfMins: ratio(min(nl), min(kl)),
        aheadOfKubelet: median(nl) < median(kl),
        // The runtime's moment (last CRI startedAt after the rename), both peers, medians.
        runtimeStarted: {
          kubeletMs: round1(median(res.kubelet[c].map((s) => s.runtimeStartedMs))),
          nodeletMs: round1(median(res.nodelet[c].map((s) => s.runtimeStartedMs ?? NaN))),
        },
      } : {}),
    };
  };
  const single = row('single');
  const parallel = row('parallel');
  const big = res.floor.big.length > 0 ? row('big') : undefined;
  const all = (xs: FloorSample[], f: (s: FloorSample) => number[]) => round1(median(xs.flatMap(f)));
  const perPodCpu = (xs: NodeletSample[], pods: number) => ({
    selfMs: round1(median(xs.map((s) => s.agentCpuMs / pods))),
    pluginsMs: round1(median(xs.map((s) => s.agentChildCpuMs / pods))),
  });
  const kubeletCpuPerPod = (xs: KubeletSample[], pods: number) => round1(median(xs.map((s) => s.kubeletCpuMs / pods)));
  return {
    ...(big ? { density: densityFigures(res, big.ratio) } : {}),
    machine: res.machine,
    runtime: res.runtime,
    reps: res.options.reps,
    pods: res.options.pods,
    bigPods: res.options.bigPods,
    bigReps: res.options.bigReps,
    single,
    parallel,
    ...(big ? { big } : {}),
    ...(res.kubelet ? {
      kubelet: {
        peakRssMB: round1(res.kubelet.peakRssMB), idleRssAfterRunMB: round1(res.kubelet.idleRssMB),
        cpuPerPodMs: {
          single: kubeletCpuPerPod(res.kubelet.single, 1), parallel: kubeletCpuPerPod(res.kubelet.parallel, res.options.pods),
          ...(big ? { big: kubeletCpuPerPod(res.kubelet.big, res.options.bigPods) } : {}),
        },
      },
    } : {}),
    targets: {
      single: { max: startupTargets.singleRatio, pass: single.ratio <= startupTargets.singleRatio },
      parallel: { max: startupTargets.parallelRatio, pass: parallel.ratio <= startupTargets.parallelRatio },
      peakRss: { maxMB: startupTargets.peakRssMB, pass: res.rss.peakMB < startupTargets.peakRssMB },
    },
    rss: { peakMB: round1(res.rss.peakMB), spawnHelperPeakMB: round1(res.rss.helperPeakMB), idleAfterStartMB: round1(res.rss.idleStartMB), idleAfterRunMB: round1(res.rss.idleEndMB) },
    floorSteps: {
      single: {
        runPodSandboxMs: all(res.floor.single, (s) => s.runPodSandboxMs),
        createContainerMs: all(res.floor.single, (s) => s.createContainerMs),
        startContainerMs: all(res.floor.single, (s) => s.startContainerMs),
      },
      parallelPerPod: {
        runPodSandboxMs: all(res.floor.parallel, (s) => s.runPodSandboxMs),
        createContainerMs: all(res.floor.parallel, (s) => s.createContainerMs),
        startContainerMs: all(res.floor.parallel, (s) => s.startContainerMs),
      },
    },
    nodeletSteps: { single: stepMedians(stepKeys, res.singleSteps), parallel: stepMedians(stepKeys, res.parallelSteps) },
    agentCpuPerPodMs: {
      single: perPodCpu(res.nodelet.single, 1), parallel: perPodCpu(res.nodelet.parallel, res.options.pods),
      ...(big ? { big: perPodCpu(res.nodelet.big, res.options.bigPods) } : {}),
    },
    benchCpuMs: {
      floorSingle: round1(median(res.floor.single.map((s) => s.benchCpuMs))),
      nodeletSingle: round1(median(res.nodelet.single.map((s) => s.benchCpuMs))),
      floorParallel: round1(median(res.floor.parallel.map((s) => s.benchCpuMs))),
      nodeletParallel: round1(median(res.nodelet.parallel.map((s) => s.benchCpuMs))),
    },
  };
}

type Figures = ReturnType<typeof figures>;

/** The density phase: the large case's start and removal beside the floor's, and the steady state with all pods running. */
function densityFigures(res: StartupResults, startRatio: number) {
  const t = densityTargets;
  const teardowns = (xs: { teardownMs?: number }[]) => xs.map((s) => s.teardownMs).filter((x): x is number => x !== undefined);
  const floor = teardowns(res.floor.big);
  const nodelet = teardowns(res.nodelet.big);
  const teardownRatio = round3(median(nodelet) / median(floor));
  const st = res.steady;
  const rssMB = st ? round1(st.agent.rssMB.max + st.agent.spawnHelperRssMB) : NaN;
  return {
    pods: res.options.bigPods,
    start: { ratio: startRatio, target: { max: t.startRatio, pass: startRatio <= t.startRatio } },
    teardown: { floor: summary(floor), nodelet: summary(nodelet), ratio: teardownRatio, target: { max: t.teardownRatio, pass: teardownRatio <= t.teardownRatio } },
    ...(st ? {
      steady: st,
      steadyTargets: {
        // The histogram's resolution is its buckets (kubelet's): p99 "at most 50 ms" is its bucket le=0.05.
        relistP99: { maxMs: t.relistP99Ms, pass: st.relist.p99AtMostMs <= t.relistP99Ms },
        cpu: { maxCores: t.cores, pass: st.agent.avgCores < t.cores },
        rss: { maxMB: t.rssMB, peakMB: rssMB, pass: rssMB < t.rssMB },
      },
    } : {}),
  };
}

function densityLines(d: NonNullable<Figures['density']>): string[] {
  const pf = (pass: boolean) => (pass ? 'PASS' : 'MISS');
  const lines = ['', `density: ${d.pods} pods (kubelet's maxPods) on one node`];
  lines.push(`  start of all ${d.pods} at once: nodelet ${d.start.ratio.toFixed(2)}x the floor (median; target <= ${d.start.target.max}x: ${pf(d.start.target.pass)})`);
  lines.push(`  removal of all ${d.pods} at once until nothing is left (nodelet: manifests removed -> no sandbox, container or status;` +
    ` floor: StopContainer with the grace period, StopPodSandbox, RemovePodSandbox): floor ${fmtMs(d.teardown.floor.medianMs)}, nodelet` +
    ` ${fmtMs(d.teardown.nodelet.medianMs)}, ${d.teardown.ratio.toFixed(2)}x (target <= ${d.teardown.target.max}x: ${pf(d.teardown.target.pass)});` +
    ` samples floor ${d.teardown.floor.samplesMs.join(', ')} / nodelet ${d.teardown.nodelet.samplesMs.join(', ')} ms`);
  if (d.steady && d.steadyTargets) {
    const st = d.steady;
    const tg = d.steadyTargets;
    lines.push(`  steady state, all ${st.pods} running, ${st.windowSeconds.toFixed(0)} s (after 10 s settling):`);
    lines.push(`    relist duration (kubelet_pleg_relist_duration_seconds, ${st.relist.count} relists): mean ${st.relist.meanMs.toFixed(1)} ms, p50 <= ${st.relist.p50AtMostMs} ms,` +
      ` p99 <= ${st.relist.p99AtMostMs} ms, max <= ${st.relist.maxAtMostMs} ms (bucket bounds; target p99 < ${tg.relistP99.maxMs} ms: ${pf(tg.relistP99.pass)})`);
    lines.push(`    agent CPU ${st.agent.avgCores.toFixed(3)} cores (target < ${tg.cpu.maxCores}: ${pf(tg.cpu.pass)})`);
    lines.push(`    RSS, agent + spawn helper, max of 1 s samples: ${tg.rss.peakMB.toFixed(1)} MB (agent average ${st.agent.rssMB.avg.toFixed(1)}, ${st.agent.rssMB.atStart.toFixed(1)} -> ${st.agent.rssMB.atEnd.toFixed(1)} MB;` +
      ` helper ${st.agent.spawnHelperRssMB.toFixed(1)} MB) (target < ${tg.rss.maxMB} MB: ${pf(tg.rss.pass)})`);
  }
  return lines;
}

function startupTable(f: Figures): string {
  const pf = (pass: boolean) => (pass ? 'PASS' : 'MISS');
  const row = (cols: string[], widths: number[]) => cols.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  const k = !!f.single.kubelet;
  const w = k ? [26, 10, 10, 10, 7, 8, 4, 7, 4] : [26, 10, 10, 8, 9, 4];
  const lines: string[] = [];
  lines.push(`nodelet benchmark: ${f.runtime}, ${f.machine.cpus} CPUs, kernel ${f.machine.kernel}, Node ${f.machine.node}`);
  lines.push(`${f.reps} repetitions each${f.big ? ` (${f.bigReps} of ${f.bigPods} pods)` : ''}, after 1 warm-up each, ${k ? 'floor, kubelet and nodelet' : 'floor and nodelet'} interleaved;`);
  lines.push(`  time = manifest rename / first CRI call until all pods run: floor StartContainer returned; nodelet its status watch says`);
  if (k) lines.push(`  Running with the pod IP; kubelet its /pods (status manager) says the same, polled every ${kubeletPollMs.single}/${kubeletPollMs.parallel}/${kubeletPollMs.big} ms (1/${f.pods}/${f.bigPods || '-'} pods)`);
  else lines.push('  Running with the pod IP');
  lines.push('');
  const x = (r: number | undefined) => (r === undefined || !Number.isFinite(r) ? '-' : `${r.toFixed(2)}x`);
  if (k) lines.push(row(['', 'floor', 'kubelet', 'nodelet', 'n/floor', 'target', '', 'n/kubelet', ''], w));
  else lines.push(row(['', 'floor', 'nodelet', 'ratio', 'target', ''], w));
  type Row = typeof f.single;
  const line = (label: string, r: Row, which: 'median' | 'min', floorTarget?: { max: number; pass: boolean }) => {
    const v = (s: { medianMs: number; minMs: number }) => fmtMs(which === 'median' ? s.medianMs : s.minMs);
    const floorRatio = which === 'median' ? r.ratio : r.ratioOfMins;
    const target = floorTarget && which === 'median' ? [`<= ${floorTarget.max}x`, pf(floorTarget.pass)] : ['', ''];
    if (!k) return row([label, v(r.floor), v(r.nodelet), x(floorRatio), ...target], w);
    const vsK = which === 'median' ? r.vsKubelet : r.vsKubeletOfMins;
    return row([label, v(r.floor), r.kubelet ? v(r.kubelet) : '-', v(r.nodelet), x(floorRatio), ...target, x(vsK), which === 'median' ? pf(!!r.aheadOfKubelet) : ''], w);
  };
  lines.push(line('1 pod, median', f.single, 'median', f.targets.single));
  lines.push(line('1 pod, min', f.single, 'min'));
  lines.push(line(`${f.pods} pods at once, median`, f.parallel, 'median', f.targets.parallel));
  lines.push(line(`${f.pods} pods at once, min`, f.parallel, 'min'));
  if (f.big) {
    lines.push(line(`${f.bigPods} pods at once, median`, f.big, 'median'));
    lines.push(line(`${f.bigPods} pods at once, min`, f.big, 'min'));
  }
  if (k) {
    lines.push(`  n/kubelet: nodelet's time over kubelet's; the target is nodelet ahead of kubelet (below 1.00x) on every median`);
    const rs = (r: Row) => (r.runtimeStarted ? `kubelet ${fmtMs(r.runtimeStarted.kubeletMs)} / nodelet ${fmtMs(r.runtimeStarted.nodeletMs)}` : '-');
    lines.push(`  last container started in the runtime (CRI startedAt, read after each sample), median: 1 pod ${rs(f.single)};`);
    lines.push(`    ${f.pods} pods ${rs(f.parallel)}${f.big ? `; ${f.bigPods} pods ${rs(f.big)}` : ''}`);
  }
  if (f.density) lines.push(...densityLines(f.density));
  lines.push('');
  const helperPart = f.rss.spawnHelperPeakMB > 0 ? `, of which the spawn helper ${f.rss.spawnHelperPeakMB.toFixed(1)} MB` : '';
  lines.push(`nodelet peak RSS (VmHWM): ${f.rss.peakMB.toFixed(1)} MB${helperPart}  (target < ${startupTargets.peakRssMB} MB: ${pf(f.targets.peakRss.pass)})`);
  lines.push(`nodelet idle RSS: ${f.rss.idleAfterStartMB.toFixed(1)} MB after start, ${f.rss.idleAfterRunMB.toFixed(1)} MB after the run`);
  if (f.kubelet) lines.push(`kubelet peak RSS (VmHWM) through the run: ${f.kubelet.peakRssMB.toFixed(1)} MB; idle after the run ${f.kubelet.idleRssAfterRunMB.toFixed(1)} MB`);
  lines.push('');
  lines.push('samples (ms):');
  const sampleLines = (label: string, r: Row) => {
    const l = label.padEnd(9);
    lines.push(`  ${l} floor   ${r.floor.samplesMs.join(', ')}`);
    if (r.kubelet) lines.push(`  ${l} kubelet ${r.kubelet.samplesMs.join(', ')}`);
    lines.push(`  ${l} nodelet ${r.nodelet.samplesMs.join(', ')}`);
  };
  sampleLines('1 pod', f.single);
  sampleLines(`${f.pods} pods`, f.parallel);
  if (f.big) sampleLines(`${f.bigPods} pods`, f.big);
  lines.push('');
  const fsx = f.floorSteps;
  lines.push(`floor per-call medians, 1 pod:  RunPodSandbox ${fmtMs(fsx.single.runPodSandboxMs)}, CreateContainer ${fmtMs(fsx.single.createContainerMs)}, StartContainer ${fmtMs(fsx.single.startContainerMs)}`);
  lines.push(`floor per-call medians, ${f.pods} pods: RunPodSandbox ${fmtMs(fsx.parallelPerPod.runPodSandboxMs)}, CreateContainer ${fmtMs(fsx.parallelPerPod.createContainerMs)}, StartContainer ${fmtMs(fsx.parallelPerPod.startContainerMs)}`);
  lines.push('');
  lines.push(`where nodelet's time goes (agent log timestamps, ms after the manifest rename; medians over reps):`);
  lines.push(row(['', '1 pod', `${f.pods} pods: median pod`, 'last pod'], [46, 10, 20, 10]));
  let prevSingle = 0;
  for (const { key, label } of stepNames) {
    const s = f.nodeletSteps.single[key];
    const p = f.nodeletSteps.parallel[key];
    const single = s ? `${s.lastMs.toFixed(0)} (+${(s.lastMs - prevSingle).toFixed(0)})` : '-';
    if (s) prevSingle = s.lastMs;
    lines.push(row([`  ${label}`, single, p ? p.medianPodMs.toFixed(0) : '-', p ? p.lastMs.toFixed(0) : '-'], [46, 10, 20, 10]));
  }
  const cpu = f.agentCpuPerPodMs;
  const bigCpu = cpu.big ? `, ${cpu.big.selfMs} + ${cpu.big.pluginsMs} ms (${f.bigPods} pods)` : '';
  lines.push(`agent CPU per pod, its own + the CNI plugins it ran: ${cpu.single.selfMs} + ${cpu.single.pluginsMs} ms (1 pod), ${cpu.parallel.selfMs} + ${cpu.parallel.pluginsMs} ms (${f.pods} pods)${bigCpu}`);
  if (f.kubelet) {
    const kc = f.kubelet.cpuPerPodMs;
    lines.push(`kubelet CPU per pod (its own; containerd runs the CNI plugins for it): ${kc.single} ms (1 pod), ${kc.parallel} ms (${f.pods} pods)${kc.big !== undefined ? `, ${kc.big} ms (${f.bigPods} pods)` : ''}; polls of /pods included`);
  }
  const bc = f.benchCpuMs;
  lines.push(`the bench's own CPU per measurement: 1 pod floor ${bc.floorSingle} ms / nodelet ${bc.nodeletSingle} ms; ${f.pods} pods floor ${bc.floorParallel} ms / nodelet ${bc.nodeletParallel} ms`);
  return lines.join('\n') + '\n';
}

function probeTable(p: ProbeLoad): string {
  const pf = (pass: boolean) => (pass ? 'PASS' : 'MISS');
  const row = (cols: string[]) => cols.map((c, i) => c.padEnd([34, 14, 12, 4][i]!)).join('  ').trimEnd();
  const a = p.agent;
  const lines: string[] = [];
  lines.push(`probe load: ${p.pods} running pods, each an exec readiness probe every ${p.readinessExecPeriodSeconds} s and an httpGet liveness probe every ${p.livenessHttpGetPeriodSeconds} s`);
  lines.push(`  all Running and Ready ${fmtMs(p.allReadyAfterMs)} after the manifests appeared; ${p.settleSeconds} s settling; then a ${p.windowSeconds.toFixed(0)} s window`);
  lines.push('');
  lines.push(row(['', 'nodelet', 'target', '']));
  lines.push(row(['agent CPU, average over the window', `${a.avgCores.toFixed(3)} cores`, `< ${p.targets.avgCores.max} core`, pf(p.targets.avgCores.pass)]));
  const peakLabel = a.peakRssWindowOnly ? 'agent RSS, peak in the window' : 'agent RSS, peak (max sample)';
  const peak = a.peakRssWindowOnly ? a.peakRssInWindowMB : a.rssMB.max;
  lines.push(row([peakLabel, `${peak.toFixed(1)} MB`, `< ${p.targets.rss.maxMB} MB`, pf(p.targets.rss.pass)]));
  lines.push('');
  lines.push(`agent RSS sampled every second: average ${a.rssMB.avg.toFixed(1)} MB, max ${a.rssMB.max.toFixed(1)} MB (${a.rssMB.atStart.toFixed(1)} MB at the start, ${a.rssMB.atEnd.toFixed(1)} MB at the end); VmHWM since the agent started ${a.peakRssBeforeWindowMB.toFixed(1)} MB before the window`);
  lines.push(`agent CPU: ${a.cpuSeconds.toFixed(2)} s in ${p.windowSeconds.toFixed(1)} s; its reaped children ${a.childrenAvgCores.toFixed(3)} cores`);
  lines.push(`  per 10 s (cores): ${p.intervals.map((i) => i.avgCores.toFixed(3)).join(' ')}`);
  lines.push(`agent RSS per 10 s, anonymous + file-backed (MB): ${p.intervals.map((i) => `${i.rssAnonMB.toFixed(0)}+${i.rssFileMB.toFixed(0)}`).join(' ')}`);
  if (p.intervals.some((i) => i.js)) {
    lines.push(`  JS heap used/total (MB): ${p.intervals.map((i) => (i.js ? `${i.js.heapUsedMB.toFixed(0)}/${i.js.heapTotalMB.toFixed(0)}` : '-')).join(' ')}`);
    lines.push(`  of which new space + old space (MB): ${p.intervals.map((i) => (i.js ? `${i.js.newSpaceMB.toFixed(0)}+${i.js.oldSpaceMB.toFixed(0)}` : '-')).join(' ')}; external ${p.intervals.map((i) => i.js?.externalMB.toFixed(0) ?? '-').join(' ')}`);
  }
  if (p.afterWindow) {
    const { beforeGc: b, afterGc: g } = p.afterWindow;
    lines.push(`  after the window: JS heap ${b.heapUsedMB}/${b.heapTotalMB} MB used/total (new ${b.newSpaceMB}, old ${b.oldSpaceMB}) -> after a full GC ${g.heapUsedMB}/${g.heapTotalMB} MB (new ${g.newSpaceMB}, old ${g.oldSpaceMB}); external ${b.externalMB} -> ${g.externalMB} MB; RSS ${b.rssMB} -> ${p.afterWindow.rssAfterGcMB} MB`);
  }
  const rt = p.runtime;
  lines.push(`runtime beside it (exec probes run there): containerd ${rt.containerdAvgCores?.toFixed(3) ?? '-'} cores, ${rt.shims} pod shims with runc exec and the probe commands ${rt.shimsAvgCores.toFixed(3)} cores; the bench ${p.benchAvgCores.toFixed(3)} cores`);
  const r = p.probeRuns;
  const logged = r.succeededLogged ? `; logged as succeeded (agent -v >= 2): ${r.succeededLogged.readiness} readiness, ${r.succeededLogged.liveness} liveness` : '';
  lines.push(`probe runs in the window: expected ${r.expected.readiness} readiness + ${r.expected.liveness} liveness${logged}`);
  lines.push(`probe warnings logged: ${p.probeWarnings} (all agent warnings ${p.agentWarnings}); container restarts: ${p.restartsInWindow}; Ready after the window: ${p.readyAtEnd}/${p.pods}`);
  if (p.profile) {
    const pr = p.profile;
    const share = (xs: TimeShare[]) => xs.map((x) => `    ${x.pct.toFixed(1).padStart(5)}%  ${x.ms.toFixed(0).padStart(6)} ms  ${x.name}`);
    lines.push('');
    lines.push(`CPU profile of the agent over the window (profiler on): ${pr.file}; ${pr.busyMs.toFixed(0)} ms busy of ${pr.sampledMs.toFixed(0)} ms sampled (${pr.samples} samples)`);
    lines.push('  self time by module:');
    lines.push(...share(pr.selfByModule));
    lines.push('  self time by function:');
    lines.push(...share(pr.selfByFunction));
    lines.push("  nodelet's functions by inclusive time:");
    lines.push(...share(pr.nodeletInclusive));
  }
  if (p.heapProfile) {
    const h = p.heapProfile;
    const share = (xs: { name: string; kB: number; pct: number }[]) => xs.map((x) => `    ${x.pct.toFixed(1).padStart(5)}%  ${String(x.kB).padStart(7)} kB  ${x.name}`);
    lines.push('');
    lines.push(`sampling heap profile of the window (allocations still alive after the full GC): ${h.file}; ${h.liveMB} MB live`);
    lines.push('  by module:');
    lines.push(...share(h.byModule));
    lines.push('  by function:');
    lines.push(...share(h.byFunction));
    lines.push("  under nodelet's functions (inclusive):");
    lines.push(...share(h.nodeletInclusive));
  }
  return lines.join('\n') + '\n';
}

/** kubelet beside nodelet under the same probe load: CPU and RSS, with the target nodelet below kubelet on memory. */
function probeComparison(p: ProbeLoad, k: KubeletProbeLoad) {
  const helper = p.agent.spawnHelperRssMB;
  const nodeletPeak = (p.agent.peakRssWindowOnly ? p.agent.peakRssInWindowMB : p.agent.rssMB.max) + helper;
  const kubeletPeak = k.kubelet.peakRssWindowOnly ? k.kubelet.peakRssInWindowMB : k.kubelet.rssMB.max;
  const rows = {
    cpuCores: { kubelet: k.kubelet.avgCores, nodelet: p.agent.avgCores },
    rssSteadyMB: { kubelet: k.kubelet.rssMB.avg, nodelet: round1(p.agent.rssMB.avg + helper) },
    rssPeakMB: { kubelet: kubeletPeak, nodelet: round1(nodeletPeak) },
  };
  return {
    rows,
    memoryAhead: rows.rssSteadyMB.nodelet < rows.rssSteadyMB.kubelet && rows.rssPeakMB.nodelet < rows.rssPeakMB.kubelet,
    cpuAhead: rows.cpuCores.nodelet < rows.cpuCores.kubelet,
  };
}

function probeComparisonTable(p: ProbeLoad, k: KubeletProbeLoad): string {
  const c = probeComparison(p, k);
  const pf = (pass: boolean) => (pass ? 'PASS' : 'MISS');
  const row = (cols: string[]) => cols.map((x, i) => x.padEnd([36, 12, 12, 10, 4][i]!)).join('  ').trimEnd();
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
  const lines: string[] = [];
  lines.push(`kubelet beside nodelet under the same probe load (${k.pods} pods, the same manifests; each measured alone, nodelet first;`);
  lines.push(`  the same settling and a ${k.windowSeconds.toFixed(0)} s window; kubelet's pods Running and Ready after ${fmtMs(k.allReadyAfterMs)})`);
  lines.push(row(['', 'kubelet', 'nodelet', 'n/kubelet', '']));
  lines.push(row(['CPU, average over the window', `${c.rows.cpuCores.kubelet.toFixed(3)} cores`, `${c.rows.cpuCores.nodelet.toFixed(3)} cores`, ratio(c.rows.cpuCores.nodelet, c.rows.cpuCores.kubelet), pf(c.cpuAhead)]));
  lines.push(row(['RSS, steady (average of 1 s samples)', `${c.rows.rssSteadyMB.kubelet.toFixed(1)} MB`, `${c.rows.rssSteadyMB.nodelet.toFixed(1)} MB`, ratio(c.rows.rssSteadyMB.nodelet, c.rows.rssSteadyMB.kubelet), pf(c.rows.rssSteadyMB.nodelet < c.rows.rssSteadyMB.kubelet)]));
  lines.push(row(['RSS, peak in the window (VmHWM)', `${c.rows.rssPeakMB.kubelet.toFixed(1)} MB`, `${c.rows.rssPeakMB.nodelet.toFixed(1)} MB`, ratio(c.rows.rssPeakMB.nodelet, c.rows.rssPeakMB.kubelet), pf(c.rows.rssPeakMB.nodelet < c.rows.rssPeakMB.kubelet)]));
  const split = (r: ProbeLoad['agent']['rssMB']) => `${r.anonAfter.toFixed(1)} + ${r.fileAfter.toFixed(1)} MB`;
  lines.push(`  RSS after the window, anonymous + file-backed (the program's own pages): kubelet ${split(k.kubelet.rssMB)}, nodelet's agent ${split(p.agent.rssMB)}`);
  lines.push(`  nodelet = the agent + its spawn helper (${p.agent.spawnHelperRssMB.toFixed(1)} MB); target: nodelet ahead of kubelet on memory (${pf(c.memoryAhead)})`);
  lines.push(`  kubelet RSS ${k.kubelet.rssMB.atStart.toFixed(1)} MB at the start, ${k.kubelet.rssMB.atEnd.toFixed(1)} MB at the end, max sample ${k.kubelet.rssMB.max.toFixed(1)} MB; VmHWM since its start ${k.kubelet.peakRssBeforeWindowMB.toFixed(1)} MB before the window`);
  lines.push(`  kubelet's children ${k.kubelet.childrenAvgCores.toFixed(3)} cores; its containerd ${k.runtime.containerdAvgCores?.toFixed(3) ?? '-'} cores, ${k.runtime.shims} shims ${k.runtime.shimsAvgCores.toFixed(3)} cores` +
    ` (nodelet's: ${p.runtime.containerdAvgCores?.toFixed(3) ?? '-'} and ${p.runtime.shimsAvgCores.toFixed(3)}); restarts ${k.restartsInWindow}; Ready after the window ${k.readyAtEnd}/${k.pods}`);
  return lines.join('\n') + '\n';
}

function clusterTable(r: ClusterResults): string {
  const pf = (pass: boolean) => (pass ? 'PASS' : 'MISS');
  const row = (cols: string[], widths: number[]) => cols.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  const k = r.kubelet;
  // With the kubelet peer: its column, and nodelet's median over kubelet's.
  const kc = (v: string) => (k ? [v] : []);
  const w = k ? [30, 12, 12, 12, 8, 10, 24, 4] : [30, 12, 12, 8, 24, 4];
  const lines: string[] = [];
  lines.push(`cluster mode: pod startup latency SLI (creation -> all containers started, seen through a watch), ${r.reps} repetitions each`);
  lines.push(`  start = the bench's clock just before the create call (creationTimestamp has second precision); the pod is created bound`);
  lines.push(`  (spec.nodeName); end = arrival of the watch event with every container started. Floor: RunPodSandbox..StartContainer over CRI.`);
  lines.push(r.saToken ? '  the API pods mount the default service account token (kube-api-access volume); the floor\'s pods have no volume'
    : '  the API pods are the floor\'s pod (automountServiceAccountToken: false: no volume)');
  lines.push(`one status write (PATCH pods/status on this API server, ${r.statusWrite.samples} samples): median ${fmtMs(r.statusWrite.medianMs)}, min ${fmtMs(r.statusWrite.minMs)}, p90 ${fmtMs(r.statusWrite.p90Ms)}`);
  lines.push('');
  const vsKubelet = (x: number | undefined) => kc(x === undefined ? '' : `${x.toFixed(2)}x ${x <= 1 ? 'ahead' : 'behind'}`);
  lines.push(row(['', 'floor', ...kc('kubelet'), 'nodelet', 'vs floor', ...kc('vs kubelet'), `target (${targetFloorFactor}x floor + 1 write)`, ''], w));
  lines.push(row(['1 pod, median', fmtMs(r.single.floor.medianMs), ...kc(fmtMs(k?.single.medianMs ?? 0)), fmtMs(r.single.nodelet.medianMs), `${r.single.ratio.toFixed(2)}x`,
    ...vsKubelet(k?.nodeletRatio.single), `<= ${fmtMs(r.single.target.maxMs)}`, pf(r.single.target.pass)], w));
  lines.push(row([`${r.pods} pods, last pod, median`, fmtMs(r.burst.floor.lastMedianMs), ...kc(fmtMs(k?.burst.lastMedianMs ?? 0)), fmtMs(r.burst.nodelet.lastMedianMs),
    `${r.burst.ratio.toFixed(2)}x`, ...vsKubelet(k?.nodeletRatio.burst), `<= ${fmtMs(r.burst.target.maxMs)}`, pf(r.burst.target.pass)], w));
  lines.push(row([`${r.pods} pods, per pod p50`, fmtMs(r.burst.floor.podP50Ms), ...kc(fmtMs(k?.burst.podP50Ms ?? 0)), fmtMs(r.burst.nodelet.podP50Ms)], w));
  lines.push(row([`${r.pods} pods, per pod p99 (rank)`, fmtMs(r.burst.floor.podP99Ms), ...kc(fmtMs(k?.burst.podP99Ms ?? 0)), fmtMs(r.burst.nodelet.podP99Ms)], w));
  if (k) lines.push(`  kubelet = the real kubelet (npm run kube:build) as node ${k.node} of the same control plane (its own containerd), the same pods bound to it`);
  lines.push('');
  lines.push('samples (ms):');
  lines.push(`  1 pod    floor   ${r.single.floor.samplesMs.join(', ')}`);
  if (k) lines.push(`  1 pod    kubelet ${k.single.samplesMs.join(', ')}`);
  lines.push(`  1 pod    nodelet ${r.single.nodelet.samplesMs.join(', ')}`);
  lines.push(`  ${`${r.pods} pods`.padEnd(8)} floor   ${r.burst.floor.samplesMs.join(', ')}`);
  if (k) lines.push(`  ${`${r.pods} pods`.padEnd(8)} kubelet ${k.burst.samplesMs.join(', ')}`);
  lines.push(`  ${`${r.pods} pods`.padEnd(8)} nodelet ${r.burst.nodelet.samplesMs.join(', ')}`);
  lines.push(`the bench's create of the bound pod (inside nodelet's figures): 1 pod median ${fmtMs(r.single.nodelet.createAndBindMedianMs)}; ${r.pods} pods, last created at ${fmtMs(r.burst.nodelet.createAndBindLastMedianMs)} (median)`);
  lines.push('');
  lines.push(`where the time goes (agent log and watch, ms after the pod's create call; medians over reps):`);
  const sw = [46, 10, 20, 10];
  lines.push(row(['', '1 pod', `${r.pods} pods: median pod`, 'last pod'], sw));
  for (const { key, label } of clusterStepNames) {
    const s = r.steps.single[key];
    const b = r.steps.burst[key];
    lines.push(row([`  ${label}`, s ? s.lastMs.toFixed(0) : '-', b ? b.medianPodMs.toFixed(0) : '-', b ? b.lastMs.toFixed(0) : '-'], sw));
  }
  lines.push('');
  lines.push(`API requests by system:node:${r.node} per pod started (from the audit log, between the first create and the last pod seen started;`);
  lines.push(`  mean over the reps; the node's own heartbeats (leases, nodes) in that window included):`);
  const keys = [...new Set([...Object.keys(r.requests.single.perPod), ...Object.keys(r.requests.burst.perPod)])];
  const rw = [34, 8, 10];
  lines.push(row(['', '1 pod', `${r.pods} pods`], rw));
  for (const k of keys) lines.push(row([`  ${k}`, String(r.requests.single.perPod[k] ?? 0), String(r.requests.burst.perPod[k] ?? 0)], rw));
  lines.push(row(['  total', String(r.requests.single.totalPerPod), String(r.requests.burst.totalPerPod)], rw));
  const failed = { ...r.requests.single.failed, ...r.requests.burst.failed };
  if (Object.keys(failed).length > 0) lines.push(`  answered with an error: ${Object.entries(failed).map(([k, n]) => `${k}: ${n}`).join(', ')}`);
  const sr = r.requests.single.statusWritesToRunning;
  const br = r.requests.burst.statusWritesToRunning;
  lines.push(`status writes per pod, creation -> started (median / max): 1 pod ${sr.median} / ${sr.max}; ${r.pods} pods ${br.median} / ${br.max}` +
    `  (target <= ${r.statusWritesTarget.maxPerPod}: ${pf(r.statusWritesTarget.pass)})`);
  const sd = r.requests.single.statusWritesBeforeDelete;
  const bd = r.requests.burst.statusWritesBeforeDelete;
  if (k) {
    const ks = k.statusWritesToRunning;
    lines.push(`  kubelet's (system:node:${k.node}): status writes per pod, creation -> started: 1 pod ${ks.single.median} / ${ks.single.max}; ${r.pods} pods ${ks.burst.median} / ${ks.burst.max};` +
      ` requests per pod started: 1 pod ${k.requestsPerPod.single}, ${r.pods} pods ${k.requestsPerPod.burst}`);
  }
  lines.push(`status writes per pod until its deletion began (median / max): 1 pod ${sd.median} / ${sd.max}; ${r.pods} pods ${bd.median} / ${bd.max}`);
  const del = (x: Record<string, number>) => Object.entries(x).map(([k, n]) => `${k} ${n}`).join(', ') || '-';
  lines.push(`the node's requests per pod while the pods were deleted (API DELETE -> gone from API and runtime):`);
  lines.push(`  1 pod: ${del(r.deletionRequests.single)}`);
  lines.push(`  ${r.pods} pods: ${del(r.deletionRequests.burst)}`);
  return lines.join('\n') + '\n';
}

/** Prints the figures: the tables on stdout, or with `json` the tables on stderr and the figures as JSON on stdout. */
export function printReport(res: RunResults, notes: string[], json: boolean): void {
  const f = res.startup ? figures(res.startup) : undefined;
  let text = f ? startupTable(f) : `nodelet benchmark: ${res.runtime}, ${res.machine.cpus} CPUs, kernel ${res.machine.kernel}, Node ${res.machine.node}\n`;
  if (res.probes) text += `\n${probeTable(res.probes)}`;
  if (res.probes && res.kubeletProbes) text += `\n${probeComparisonTable(res.probes, res.kubeletProbes)}`;
  if (res.cluster) text += `\n${clusterTable(res.cluster)}`;
  if (res.pull) text += `\n${pullTable(res.pull)}`;
  if (notes.length > 0) text += `\n${notes.map((n) => `NOTE: ${n}\n`).join('')}`;
  if (json) {
    process.stderr.write(text);
    const common = f ?? { machine: res.machine, runtime: res.runtime };
    process.stdout.write(JSON.stringify({ ...common, ...(res.probes ? { probeLoad: res.probes } : {}),
      ...(res.kubeletProbes ? { kubeletProbeLoad: res.kubeletProbes, ...(res.probes ? { probeComparison: probeComparison(res.probes, res.kubeletProbes) } : {}) } : {}), ...(res.cluster ? { cluster: res.cluster } : {}), ...(res.pull ? { pull: res.pull } : {}), notes }, null, 2) + '\n');
  } else {
    process.stdout.write(text);
  }
}
