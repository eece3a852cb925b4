// The probe-load phase: the agent's CPU and RSS while --probe-pods pods run exec and httpGet probes (optionally profiled).
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { agentMemoryUsage, InspectorSession, type JsMemory } from './agent.js';
import { cpuBetween, cpuOf, memoryMB, resetPeakRss, runtimeProcesses } from './procfs.js';
import { heapProfileSummary, profileSummary, type CpuProfile, type HeapProfileNode } from './profiles.js';
import { kubeletContainerdPidFile, kubeletNode } from './kubelet.js';
import { mainPidFile, type Bench } from './session.js';
import { isReady, isRunning, listPods } from './status-client.js';
import { fmtMs, now, progress, round1, round2, round3 } from './util.js';
import { benchNode, benchPods, probeManifestText, probePeriods } from './workload.js';

const targets = { avgCores: 0.1, rssMB: 120 };
const probeReadyTimeoutMs = 300_000;
/** Between all probe pods being Ready and the probe-load window: the start-up's after-effects die down. */
const probeSettleMs = 10_000;

/** Expected probe runs (kubelet's ticker) and, at -v 2 or more, the runs the agent logged as succeeded. */
interface ProbeRuns {
  expected: { readiness: number; liveness: number };
  succeededLogged?: { readiness: number; liveness: number };
}


const restarts = (pods: V1Pod[]) => pods.reduce((sum, p) => sum + (p.status?.containerStatuses ?? []).reduce((s, c) => s + (c.restartCount ?? 0), 0), 0);
const readyCount = (pods: V1Pod[]) => pods.filter((p) => isRunning(p) && isReady(p)).length;

/** Lists the probe pods until all n are Running and Ready (progress every 10 s), failing when the agent exits or time runs out. */
async function waitAllReady(o: {
  who: string;
  process: { running: boolean; recentOutput(): string };
  n: number;
  t0: number;
  list: () => Promise<V1Pod[]>;
  signal: AbortSignal;
  /** A probe pod that ended (Failed, Succeeded) can never become Ready: fail at once. */
  checkEnded: boolean;
}): Promise<V1Pod[]> {
  const { n, t0 } = o;
  let lastReport = t0;
  for (;;) {
    if (!o.process.running) throw new Error(`${o.who} exited while the probe pods started:\n${o.process.recentOutput()}`);
    const pods = await o.list();
    const ended = o.checkEnded && pods.find((p) => p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded');
    if (ended) throw new Error(`probe pod ${ended.metadata?.name} ended ${ended.status?.phase}: ${JSON.stringify(ended.status)}`);
    const ready = readyCount(pods);
    if (ready === n) return pods;
    if (now() - t0 > probeReadyTimeoutMs) {
      const pending = pods.find((p) => !(isRunning(p) && isReady(p)));
      throw new Error(`${n - ready} of ${n} ${o.who} probe pods not Running and Ready after ${probeReadyTimeoutMs / 1000} s; e.g. ${pending?.metadata?.name ?? 'one not listed'}: ${JSON.stringify(pending?.status ?? 'not listed')}\n${o.process.recentOutput()}`);
    }
    if (now() - lastReport >= 10_000) {
      progress(`  ${ready}/${n} Running and Ready after ${fmtMs(now() - t0)}`);
      lastReport = now();
    }
    await delay(500, undefined, { signal: o.signal });
  }
}

/** One agent's CPU and memory over the probe window. */
export interface AgentLoad {
  avgCores: number;
  cpuSeconds: number;
  /** The CPU of the agent's children it reaped in the window (exec probes do not run there: containerd runs them). */
  childrenAvgCores: number;
  /** The 1 s samples' figures, and the anonymous and file-backed parts of the RSS once the window is over. */
  rssMB: { avg: number; max: number; atStart: number; atEnd: number; samples: number; anonAfter: number; fileAfter: number };
  /** VmHWM over the window (reset at its start), or since the agent started when the reset was refused. */
  peakRssInWindowMB: number;
  peakRssWindowOnly: boolean;
  /** VmHWM since the agent started, read just before the window (includes the pods' start-up). */
  peakRssBeforeWindowMB: number;
}

export interface ProbeLoad {
  pods: number;
  readinessExecPeriodSeconds: number;
  livenessHttpGetPeriodSeconds: number;
  /** From the manifests' rename until the status socket showed every pod Running and Ready. */
  allReadyAfterMs: number;
  settleSeconds: number;
  windowSeconds: number;
  agent: AgentLoad & {
    /** The spawn helper's RSS at the end of the window (part of nodelet's memory beside kubelet's). */
    spawnHelperRssMB: number;
  };
  runtime: {
    /** The main containerd, with the children it reaped. */
    containerdAvgCores?: number;
    /** The probe pods' shims, with what they reaped: runc exec and the exec probes' commands. */
    shimsAvgCores: number;
    shims: number;
  };
  benchAvgCores: number;
  /** Per progress interval (10 s): the agent's cores in that interval, its RSS at its end (anonymous and file-backed), and
   * with an inspector its JS heap and native figures. */
  intervals: { atSeconds: number; avgCores: number; rssMB: number; rssAnonMB: number; rssFileMB: number; js?: JsMemory }[];
  probeRuns: ProbeRuns;
  /** Agent warnings/errors in the window, and those of them about probes (failed or errored runs). */
  agentWarnings: number;
  probeWarnings: number;
  restartsInWindow: number;
  readyAtEnd: number;
  targets: { avgCores: { max: number; pass: boolean }; rss: { maxMB: number; pass: boolean } };
  profile?: { file: string; profilerOn: true } & ReturnType<typeof profileSummary>;
  /** With an inspector: the agent's memory right after the window, and after a full GC then (what is garbage). */
  afterWindow?: { beforeGc: JsMemory; afterGc: JsMemory; rssAfterGcMB: number };
  heapProfile?: { file: string } & ReturnType<typeof heapProfileSummary>;
}

/**
 * Starts --probe-pods probed pods, waits until all are Running and Ready plus a settling time, then samples the agent's
 * CPU and RSS every second over --probe-seconds without asking the agent anything; tears the pods down after (not timed).
 */
export async function runProbeLoad(bench: Bench): Promise<ProbeLoad> {
  const { opts, signal } = bench;
  const agent = bench.agent!;
  const pid = agent.pid!;
  const n = opts.probePods;
  await bench.waitAgentIdle();
  bench.watchForOtherAgents();
  const names = Array.from({ length: n }, (_, i) => `probe-${i + 1}`);
  const wanted = new Set(names.map((name) => `${name}-${benchNode}`));
  progress(`probe load: starting ${n} pods (exec readiness probe every ${probePeriods.readiness} s, httpGet liveness probe every ${probePeriods.liveness} s)...`);
  for (const name of names) await agent.writeManifestAside(name, probeManifestText(name));
  const t0 = now();
  agent.renameManifestsIn(names);

  const ours = async () => (await listPods(agent.socket)).filter((p) => wanted.has(p.metadata?.name ?? ''));
  let pods = await waitAllReady({ who: 'nodelet', process: agent, n, t0, list: ours, signal, checkEnded: true });
  const allReadyAfterMs = now() - t0;
  const restartsBefore = restarts(pods);
  progress(`probe load: all ${n} pods Running and Ready after ${fmtMs(allReadyAfterMs)}; settling ${probeSettleMs / 1000} s...`);
  await delay(probeSettleMs, undefined, { signal });

  const sandboxes = await bench.main.listPodSandbox({ ...benchPods, state: 'SANDBOX_READY' }, { signal, timeoutMs: 10_000 });
  const runtimeProcs = runtimeProcesses(mainPidFile, new Set(sandboxes.map((s) => s.id)));
  if (runtimeProcs.shims.length !== n) bench.note(`found ${runtimeProcs.shims.length} shims for the ${n} probe pods; the shims' CPU covers those`);
  if (!runtimeProcs.containerd) bench.note(`no main containerd pid in ${mainPidFile}: its CPU is not shown`);

  let inspector: InspectorSession | undefined;
  try {
    if (opts.agentCpuProf || opts.agentHeapProf) {
      if (!agent.inspectorUrl) throw new Error(`the agent printed no inspector URL:\n${agent.recentOutput()}`);
      inspector = await InspectorSession.open(agent.inspectorUrl);
    }
    if (inspector && opts.agentHeapProf) {
      await inspector.post('HeapProfiler.enable');
      await inspector.post('HeapProfiler.startSampling');
      progress(`probe load: sampling the agent's heap allocations over the window`);
    }
    if (inspector && opts.agentCpuProf) {
      await inspector.post('Profiler.enable');
      await inspector.post('Profiler.start');
      progress(`probe load: profiling the agent's CPU over the window (the profiler's own cost is in the figures)`);
    }
    const peakRssBeforeWindowMB = memoryMB(pid, 'VmHWM');
    const peakRssWindowOnly = resetPeakRss(pid);
    if (!peakRssWindowOnly) bench.note(`could not reset the agent's VmHWM (/proc/${pid}/clear_refs): its peak in the window is its peak since start`);
    const lineFrom = agent.lines.length;
    const windowStartEpoch = Date.now();
    const rssAtStart = memoryMB(pid, 'VmRSS');
    const rss: number[] = [];
    const intervals: ProbeLoad['intervals'] = [];
    const containerdPids = runtimeProcs.containerd ? [runtimeProcs.containerd] : [];
    const containerd0 = cpuOf(containerdPids);
    const shims0 = cpuOf(runtimeProcs.shims);
    const bench0 = process.cpuUsage();
    const cpu0 = agent.cpuMs();
    const w0 = now();
    let last = { cpu: cpu0.self, t: w0 };
    progress(`probe load: measuring for ${opts.probeSeconds} s (RSS ${rssAtStart.toFixed(1)} MB at the start)...`);
    for (let k = 1; k <= opts.probeSeconds; k++) {
      await delay(Math.max(0, w0 + k * 1000 - now()), undefined, { signal });
      if (!agent.running) throw new Error(`nodelet exited during the probe-load window:\n${agent.recentOutput()}`);
      rss.push(memoryMB(pid, 'VmRSS'));
      if (k % 10 === 0 || k === opts.probeSeconds) {
        const t = now();
        const cpu = agent.cpuMs().self;
        const sinceStart = (cpu - cpu0.self) / (t - w0);
        const interval = (cpu - last.cpu) / (t - last.t);
        const js = inspector ? await agentMemoryUsage(inspector) : undefined;
        intervals.push({
          atSeconds: round1((t - w0) / 1000), avgCores: round3(interval), rssMB: round1(rss.at(-1)!),
          rssAnonMB: round1(memoryMB(pid, 'RssAnon')), rssFileMB: round1(memoryMB(pid, 'RssFile')), ...(js ? { js } : {}),
        });
        const jsText = js ? `; JS heap ${js.heapUsedMB}/${js.heapTotalMB} MB used/total (new space ${js.newSpaceMB}, old space ${js.oldSpaceMB}), external ${js.externalMB} MB` : '';
        progress(`  ${k}/${opts.probeSeconds} s: agent ${sinceStart.toFixed(3)} cores so far (${interval.toFixed(3)} in the last ${((t - last.t) / 1000).toFixed(0)} s), RSS ${rss.at(-1)!.toFixed(1)} MB (anon ${intervals.at(-1)!.rssAnonMB}, file ${intervals.at(-1)!.rssFileMB})${jsText}`);
        last = { cpu, t };
      }
    }
    const cpu1 = agent.cpuMs();
    const wallMs = now() - w0;
    const windowEndEpoch = Date.now();
    const benchCpu = process.cpuUsage(bench0);
    const containerdMs = cpuBetween(containerd0, cpuOf(containerdPids));
    const shimsMs = cpuBetween(shims0, cpuOf(runtimeProcs.shims));
    const peakRssInWindowMB = memoryMB(pid, 'VmHWM');

    let profile: ProbeLoad['profile'];
    let afterWindow: ProbeLoad['afterWindow'];
    let heapProfile: ProbeLoad['heapProfile'];
    if (inspector && opts.agentCpuProf) {
      const { profile: raw } = await inspector.post<{ profile: CpuProfile }>('Profiler.stop');
      await writeFile(opts.agentCpuProf, JSON.stringify(raw));
      profile = { file: resolve(opts.agentCpuProf), profilerOn: true, ...profileSummary(raw) };
    }
    if (inspector) {
      const beforeGc = await agentMemoryUsage(inspector);
      await inspector.post('HeapProfiler.collectGarbage');
      await delay(1_000, undefined, { signal });
      afterWindow = { beforeGc, afterGc: await agentMemoryUsage(inspector), rssAfterGcMB: round1(memoryMB(pid, 'VmRSS')) };
      progress(`probe load: after the window ${JSON.stringify(afterWindow)}`);
    }
    if (inspector && opts.agentHeapProf) {
      const { profile: raw } = await inspector.post<{ profile: { head: HeapProfileNode } }>('HeapProfiler.stopSampling');
      await writeFile(opts.agentHeapProf, JSON.stringify(raw));
      heapProfile = { file: resolve(opts.agentHeapProf), ...heapProfileSummary(raw.head) };
    }
    inspector?.close();
    inspector = undefined;

    // After the window (not measured): the pods' state, and what the agent logged in the window.
    pods = await ours();
    const lines = agent.lines.slice(lineFrom).filter((l) => l.time >= windowStartEpoch && l.time <= windowEndEpoch);
    const warnings = lines.filter((l) => (l.level ?? 0) >= 40);
    const probeWarnings = warnings.filter((l) => /probe/i.test(l.msg));
    if (probeWarnings.length > 0) bench.note(`the agent logged ${probeWarnings.length} probe warnings in the window, e.g. "${probeWarnings[0]!.msg}"`);
    else if (warnings.length > 0) bench.note(`the agent logged ${warnings.length} warnings/errors in the window, e.g. "${warnings[0]!.msg}"`);
    const seconds = wallMs / 1000;
    const probeRuns: ProbeRuns = {
      // The window's end timer may fire a little before its whole seconds.
      expected: { readiness: Math.floor(Math.round(seconds) / probePeriods.readiness) * n, liveness: Math.floor(Math.round(seconds) / probePeriods.liveness) * n },
      ...(opts.agentV >= 2 ? {
        succeededLogged: {
          readiness: lines.filter((l) => l.msg === 'Readiness probe succeeded').length,
          liveness: lines.filter((l) => l.msg === 'Liveness probe succeeded').length,
        },
      } : {}),
    };
    const avgCores = (cpu1.self - cpu0.self) / wallMs;
    const peakForTarget = peakRssWindowOnly ? peakRssInWindowMB : Math.max(...rss);
    const result: ProbeLoad = {
      pods: n,
      readinessExecPeriodSeconds: probePeriods.readiness,
      livenessHttpGetPeriodSeconds: probePeriods.liveness,
      allReadyAfterMs: round1(allReadyAfterMs),
      settleSeconds: probeSettleMs / 1000,
      windowSeconds: round1(seconds),
      agent: {
        avgCores: round3(avgCores),
        cpuSeconds: round2((cpu1.self - cpu0.self) / 1000),
        childrenAvgCores: round3((cpu1.children - cpu0.children) / wallMs),
        rssMB: rssFigures(pid, rss, rssAtStart),
        peakRssInWindowMB: round1(peakRssInWindowMB),
        peakRssWindowOnly,
        peakRssBeforeWindowMB: round1(peakRssBeforeWindowMB),
        spawnHelperRssMB: round1(agent.spawnHelperRssMB()),
      },
      runtime: {
        ...(runtimeProcs.containerd ? { containerdAvgCores: round3(containerdMs / wallMs) } : {}),
        shimsAvgCores: round3(shimsMs / wallMs),
        shims: runtimeProcs.shims.length,
      },
      benchAvgCores: round3((benchCpu.user + benchCpu.system) / 1000 / wallMs),
      intervals,
      probeRuns,
      agentWarnings: warnings.length,
      probeWarnings: probeWarnings.length,
      restartsInWindow: restarts(pods) - restartsBefore,
      readyAtEnd: readyCount(pods),
      targets: {
        avgCores: { max: targets.avgCores, pass: avgCores < targets.avgCores },
        rss: { maxMB: targets.rssMB, pass: peakForTarget < targets.rssMB },
      },
      ...(profile ? { profile } : {}),
      ...(afterWindow ? { afterWindow } : {}),
      ...(heapProfile ? { heapProfile } : {}),
    };
    if (result.readyAtEnd !== n) bench.note(`only ${result.readyAtEnd} of ${n} probe pods were Running and Ready after the window`);
    if (result.restartsInWindow > 0) bench.note(`${result.restartsInWindow} container restarts in the probe-load window (liveness failures?)`);
    bench.stopWatching();
    progress('probe load: tearing the pods down (not timed)...');
    await bench.nodeletTeardown(signal);
    return result;
  } finally {
    inspector?.close();
  }
}

function rssFigures(pid: number, rss: number[], atStart: number): AgentLoad['rssMB'] {
  return {
    avg: round1(rss.reduce((a, b) => a + b, 0) / rss.length), max: round1(Math.max(...rss)), atStart: round1(atStart), atEnd: round1(rss.at(-1)!),
    samples: rss.length, anonAfter: round1(memoryMB(pid, 'RssAnon')), fileAfter: round1(memoryMB(pid, 'RssFile')),
  };
}

/** kubelet under the same probe load, measured the same way (its own process; exec probes run in its containerd). */
export interface KubeletProbeLoad {
  pods: number;
  allReadyAfterMs: number;
  settleSeconds: number;
  windowSeconds: number;
  kubelet: AgentLoad;
  runtime: { containerdAvgCores?: number; shimsAvgCores: number; shims: number };
  restartsInWindow: number;
  readyAtEnd: number;
}

/**
 * The probe load on kubelet (after nodelet's, with nodelet's pods gone): the same manifests as static pods, Running and
 * Ready in kubelet's /pods (polled every 500 ms, as nodelet's list), the same settling time, then kubelet's CPU and RSS
 * sampled every second over --probe-seconds without asking kubelet anything.
 */
export async function runKubeletProbeLoad(bench: Bench): Promise<KubeletProbeLoad> {
  const { opts, signal } = bench;
  const kubelet = bench.kubelet!;
  const n = opts.probePods;
  await kubelet.waitIdle(signal);
  const names = Array.from({ length: n }, (_, i) => `probe-${i + 1}`);
  const wanted = new Set(names.map((name) => `${name}-${kubeletNode}`));
  progress(`kubelet probe load: starting ${n} pods (the same manifests)...`);
  for (const name of names) await kubelet.writeManifestAside(name, probeManifestText(name));
  const t0 = now();
  kubelet.renameManifestsIn(names);
  const ours = async () => (await kubelet.pods()).filter((p) => wanted.has(p.metadata?.name ?? ''));
  let pods = await waitAllReady({ who: 'kubelet', process: kubelet, n, t0, list: ours, signal, checkEnded: false });
  const allReadyAfterMs = now() - t0;
  const restartsBefore = restarts(pods);
  progress(`kubelet probe load: all ${n} pods Running and Ready after ${fmtMs(allReadyAfterMs)}; settling ${probeSettleMs / 1000} s...`);
  await delay(probeSettleMs, undefined, { signal });

  const pid = kubelet.pid!;
  const sandboxes = await kubelet.cri.listPodSandbox({ ...benchPods, state: 'SANDBOX_READY' }, { signal, timeoutMs: 10_000 });
  const runtimeProcs = runtimeProcesses(kubeletContainerdPidFile, new Set(sandboxes.map((s) => s.id)));
  const peakRssBeforeWindowMB = memoryMB(pid, 'VmHWM');
  const peakRssWindowOnly = resetPeakRss(pid);
  const rssAtStart = memoryMB(pid, 'VmRSS');
  const rss: number[] = [];
  const containerdPids = runtimeProcs.containerd ? [runtimeProcs.containerd] : [];
  const containerd0 = cpuOf(containerdPids);
  const shims0 = cpuOf(runtimeProcs.shims);
  const cpu0 = kubelet.cpuMs();
  const w0 = now();
  let last = { cpu: cpu0.self, t: w0 };
  progress(`kubelet probe load: measuring for ${opts.probeSeconds} s (RSS ${rssAtStart.toFixed(1)} MB at the start)...`);
  for (let k = 1; k <= opts.probeSeconds; k++) {
    await delay(Math.max(0, w0 + k * 1000 - now()), undefined, { signal });
    if (!kubelet.running) throw new Error(`kubelet exited during the probe-load window:\n${kubelet.recentOutput()}`);
    rss.push(memoryMB(pid, 'VmRSS'));
    if (k % 10 === 0 || k === opts.probeSeconds) {
      const t = now();
      const cpu = kubelet.cpuMs().self;
      progress(`  ${k}/${opts.probeSeconds} s: kubelet ${((cpu - cpu0.self) / (t - w0)).toFixed(3)} cores so far (${((cpu - last.cpu) / (t - last.t)).toFixed(3)} in the last ${((t - last.t) / 1000).toFixed(0)} s), RSS ${rss.at(-1)!.toFixed(1)} MB`);
      last = { cpu, t };
    }
  }
  const cpu1 = kubelet.cpuMs();
  const wallMs = now() - w0;
  const containerdMs = cpuBetween(containerd0, cpuOf(containerdPids));
  const shimsMs = cpuBetween(shims0, cpuOf(runtimeProcs.shims));
  const peakRssInWindowMB = memoryMB(pid, 'VmHWM');
  pods = await ours();
  const result: KubeletProbeLoad = {
    pods: n,
    allReadyAfterMs: round1(allReadyAfterMs),
    settleSeconds: probeSettleMs / 1000,
    windowSeconds: round1(wallMs / 1000),
    kubelet: {
      avgCores: round3((cpu1.self - cpu0.self) / wallMs),
      cpuSeconds: round2((cpu1.self - cpu0.self) / 1000),
      childrenAvgCores: round3((cpu1.children - cpu0.children) / wallMs),
      rssMB: rssFigures(pid, rss, rssAtStart),
      peakRssInWindowMB: round1(peakRssInWindowMB),
      peakRssWindowOnly,
      peakRssBeforeWindowMB: round1(peakRssBeforeWindowMB),
    },
    runtime: {
      ...(runtimeProcs.containerd ? { containerdAvgCores: round3(containerdMs / wallMs) } : {}),
      shimsAvgCores: round3(shimsMs / wallMs),
      shims: runtimeProcs.shims.length,
    },
    restartsInWindow: restarts(pods) - restartsBefore,
    readyAtEnd: readyCount(pods),
  };
  if (result.readyAtEnd !== n) bench.note(`only ${result.readyAtEnd} of ${n} kubelet probe pods were Running and Ready after the window`);
  progress('kubelet probe load: tearing the pods down (not timed)...');
  await kubelet.teardown(signal);
  return result;
}
