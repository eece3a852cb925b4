// The report: the figures of each phase against their targets, as the table on stdout (or on stderr beside --json).
import type { ClusterResults } from './cluster.js';
import { stepNames as clusterStepNames, targetFloorFactor } from './cluster.js';
import type { FloorSample } from './floor.js';
import type { ProbeLoad } from './probes.js';
import type { TimeShare } from './profiles.js';
import { stepNames, type NodeletSample, type StartupResults } from './startup.js';
import { fmtMs, median, min, round1, round3, stepMedians } from './util.js';

const startupTargets = { singleRatio: 1.25, parallelRatio: 1.15, peakRssMB: 100 };
const stepKeys = stepNames.map((s) => s.key);

export interface RunResults {
  machine: StartupResults['machine'];
  runtime: string;
  startup?: StartupResults;
  probes?: ProbeLoad;
  cluster?: ClusterResults;
}

function summary(samples: number[]) {
  return { medianMs: round1(median(samples)), minMs: round1(min(samples)), samplesMs: samples.map(round1) };
}

function figures(res: StartupResults) {
  const fs = res.floor.single.map((s) => s.elapsedMs);
  const ns = res.nodelet.single.map((s) => s.elapsedMs);
  const fp = res.floor.parallel.map((s) => s.elapsedMs);
  const np = res.nodelet.parallel.map((s) => s.elapsedMs);
  const ratio = (a: number, b: number) => round3(a / b);
  const single = { floor: summary(fs), nodelet: summary(ns), ratio: ratio(median(ns), median(fs)), ratioOfMins: ratio(min(ns), min(fs)) };
  const parallel = { floor: summary(fp), nodelet: summary(np), ratio: ratio(median(np), median(fp)), ratioOfMins: ratio(min(np), min(fp)) };
  const all = (xs: FloorSample[], f: (s: FloorSample) => number[]) => round1(median(xs.flatMap(f)));
  const perPodCpu = (xs: NodeletSample[], pods: number) => ({
    selfMs: round1(median(xs.map((s) => s.agentCpuMs / pods))),
    pluginsMs: round1(median(xs.map((s) => s.agentChildCpuMs / pods))),
  });
  return {
    machine: res.machine,
    runtime: res.runtime,
    reps: res.options.reps,
    pods: res.options.pods,
    single,
    parallel,
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
    agentCpuPerPodMs: { single: perPodCpu(res.nodelet.single, 1), parallel: perPodCpu(res.nodelet.parallel, res.options.pods) },
    benchCpuMs: {
      floorSingle: round1(median(res.floor.single.map((s) => s.benchCpuMs))),
      nodeletSingle: round1(median(res.nodelet.single.map((s) => s.benchCpuMs))),
      floorParallel: round1(median(res.floor.parallel.map((s) => s.benchCpuMs))),
      nodeletParallel: round1(median(res.nodelet.parallel.map((s) => s.benchCpuMs))),
    },
  };
}

type Figures = ReturnType<typeof figures>;

function startupTable(f: Figures): string {
  const pf = (pass: boolean) => (pass ? 'PASS' : 'MISS');
  const row = (cols: string[], widths: number[]) => cols.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  const w = [25, 12, 12, 8, 9, 4];
  const lines: string[] = [];
  lines.push(`nodelet benchmark: ${f.runtime}, ${f.machine.cpus} CPUs, kernel ${f.machine.kernel}, Node ${f.machine.node}`);
  lines.push(`${f.reps} repetitions each (after 1 warm-up each), floor and nodelet interleaved; time = manifest rename / first CRI call until all pods run`);
  lines.push('');
  lines.push(row(['', 'floor', 'nodelet', 'ratio', 'target', ''], w));
  lines.push(row(['1 pod, median', fmtMs(f.single.floor.medianMs), fmtMs(f.single.nodelet.medianMs), `${f.single.ratio.toFixed(2)}x`, `<= ${startupTargets.singleRatio}x`, pf(f.targets.single.pass)], w));
  lines.push(row(['1 pod, min', fmtMs(f.single.floor.minMs), fmtMs(f.single.nodelet.minMs), `${f.single.ratioOfMins.toFixed(2)}x`], w));
  lines.push(row([`${f.pods} pods at once, median`, fmtMs(f.parallel.floor.medianMs), fmtMs(f.parallel.nodelet.medianMs), `${f.parallel.ratio.toFixed(2)}x`, `<= ${startupTargets.parallelRatio}x`, pf(f.targets.parallel.pass)], w));
  lines.push(row([`${f.pods} pods at once, min`, fmtMs(f.parallel.floor.minMs), fmtMs(f.parallel.nodelet.minMs), `${f.parallel.ratioOfMins.toFixed(2)}x`], w));
  lines.push('');
  const helperPart = f.rss.spawnHelperPeakMB > 0 ? `, of which the spawn helper ${f.rss.spawnHelperPeakMB.toFixed(1)} MB` : '';
  lines.push(`nodelet peak RSS (VmHWM): ${f.rss.peakMB.toFixed(1)} MB${helperPart}  (target < ${startupTargets.peakRssMB} MB: ${pf(f.targets.peakRss.pass)})`);
  lines.push(`nodelet idle RSS: ${f.rss.idleAfterStartMB.toFixed(1)} MB after start, ${f.rss.idleAfterRunMB.toFixed(1)} MB after the run`);
  lines.push('');
  lines.push('samples (ms):');
  const many = `${f.pods} pods`.padEnd(8);
  lines.push(`  ${'1 pod'.padEnd(8)} floor   ${f.single.floor.samplesMs.join(', ')}`);
  lines.push(`  ${'1 pod'.padEnd(8)} nodelet ${f.single.nodelet.samplesMs.join(', ')}`);
  lines.push(`  ${many} floor   ${f.parallel.floor.samplesMs.join(', ')}`);
  lines.push(`  ${many} nodelet ${f.parallel.nodelet.samplesMs.join(', ')}`);
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
  lines.push(`agent CPU per pod, its own + the CNI plugins it ran: ${cpu.single.selfMs} + ${cpu.single.pluginsMs} ms (1 pod), ${cpu.parallel.selfMs} + ${cpu.parallel.pluginsMs} ms (${f.pods} pods)`);
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

function clusterTable(r: ClusterResults): string {
  const pf = (pass: boolean) => (pass ? 'PASS' : 'MISS');
  const row = (cols: string[], widths: number[]) => cols.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  const w = [30, 12, 12, 8, 24, 4];
  const lines: string[] = [];
  lines.push(`cluster mode: pod startup latency SLI (creation -> all containers started, seen through a watch), ${r.reps} repetitions each`);
  lines.push(`  start = the bench's clock just before the create call (creationTimestamp has second precision); the pod is bound right after`);
  lines.push(`  its create returns; end = arrival of the watch event with every container started. Floor: RunPodSandbox..StartContainer over CRI.`);
  lines.push(r.saToken ? '  the API pods mount the default service account token (kube-api-access volume); the floor\'s pods have no volume'
    : '  the API pods are the floor\'s pod (automountServiceAccountToken: false: no volume)');
  lines.push(`one status write (PATCH pods/status on this API server, ${r.statusWrite.samples} samples): median ${fmtMs(r.statusWrite.medianMs)}, min ${fmtMs(r.statusWrite.minMs)}, p90 ${fmtMs(r.statusWrite.p90Ms)}`);
  lines.push('');
  lines.push(row(['', 'floor', 'nodelet', 'ratio', `target (${targetFloorFactor}x floor + 1 write)`, ''], w));
  lines.push(row(['1 pod, median', fmtMs(r.single.floor.medianMs), fmtMs(r.single.nodelet.medianMs), `${r.single.ratio.toFixed(2)}x`, `<= ${fmtMs(r.single.target.maxMs)}`, pf(r.single.target.pass)], w));
  lines.push(row([`${r.pods} pods, last pod, median`, fmtMs(r.burst.floor.lastMedianMs), fmtMs(r.burst.nodelet.lastMedianMs), `${r.burst.ratio.toFixed(2)}x`, `<= ${fmtMs(r.burst.target.maxMs)}`, pf(r.burst.target.pass)], w));
  lines.push(row([`${r.pods} pods, per pod p50`, fmtMs(r.burst.floor.podP50Ms), fmtMs(r.burst.nodelet.podP50Ms)], w));
  lines.push(row([`${r.pods} pods, per pod p99 (rank)`, fmtMs(r.burst.floor.podP99Ms), fmtMs(r.burst.nodelet.podP99Ms)], w));
  lines.push('');
  lines.push('samples (ms):');
  lines.push(`  1 pod    floor   ${r.single.floor.samplesMs.join(', ')}`);
  lines.push(`  1 pod    nodelet ${r.single.nodelet.samplesMs.join(', ')}`);
  lines.push(`  ${`${r.pods} pods`.padEnd(8)} floor   ${r.burst.floor.samplesMs.join(', ')}`);
  lines.push(`  ${`${r.pods} pods`.padEnd(8)} nodelet ${r.burst.nodelet.samplesMs.join(', ')}`);
  lines.push(`create + bind by the bench (inside nodelet's figures): 1 pod median ${fmtMs(r.single.nodelet.createAndBindMedianMs)}; ${r.pods} pods, last bound at ${fmtMs(r.burst.nodelet.createAndBindLastMedianMs)} (median)`);
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
  if (res.cluster) text += `\n${clusterTable(res.cluster)}`;
  if (notes.length > 0) text += `\n${notes.map((n) => `NOTE: ${n}\n`).join('')}`;
  if (json) {
    process.stderr.write(text);
    const common = f ?? { machine: res.machine, runtime: res.runtime };
    process.stdout.write(JSON.stringify({ ...common, ...(res.probes ? { probeLoad: res.probes } : {}), ...(res.cluster ? { cluster: res.cluster } : {}), notes }, null, 2) + '\n');
  } else {
    process.stdout.write(text);
  }
}
