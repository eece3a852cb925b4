// The benchmark's entry: runs the chosen phases against the rig, cleans up after them and prints the report.
//
// nodelet's manifest-to-Running latency against the raw CRI floor of the same containerd build, in one run.
//
// Floor: RunPodSandbox + CreateContainer + StartContainer issued straight over gRPC to the "floor" containerd, whose CNI
// config is the plain reference bridge chain containerd runs itself (what kubelet would get from this containerd).
// nodelet: a static pod manifest renamed into the agent's manifest directory, until the watch on the agent's status socket
// (opened before the rename) delivers the pod Running with its IP; the agent runs on the main containerd, whose CNI plugin
// is the shim back to the agent. The watch delivers each change as it happens, and costs the agent (on a 2-core machine
// busy starting pods) one serialisation of a pod per change of it, not one of every pod per look.
// Floor and nodelet repetitions alternate so machine noise hits both alike. Teardown between repetitions is not timed.
//
// Probe load (after the start-up measurements, with the same agent): --probe-pods pods serving httpd, each with an exec
// readiness probe every 2 s and an httpGet liveness probe every 5 s; once all are Ready and 10 s have passed, the agent's
// CPU (its own; its reaped children apart) and RSS over --probe-seconds. Exec probes run in containerd and the pods'
// shims, not in the agent: their CPU is printed beside it. The bench does not poll the agent during that window.
//
// Cluster mode (bench/cluster.ts): the pod startup latency SLI through the real control plane (test/cluster) and its watch, beside the floor.
//
// Usage: node dist/bench/bench.js [--only startup|probes|cluster] [--reps N] [--pods N] [--probe-pods N] [--probe-seconds N] [--json]
//          [--sa-token] [--agent-v N] [--agent-log FILE] [--agent-cpu-prof FILE] [--agent-heap-prof FILE]
import { setMaxListeners } from 'node:events';
import { cpus, release } from 'node:os';
import { agentNodeVersion } from './agent.js';
import { runClusterPhase } from './cluster.js';
import { runPullPhase } from './pull.js';
import { kubeletApiAccess } from './density.js';
import { kubeletApiTable, runKubeletApiPhase, type KubeletApiResults } from './kubelet-api.js';
import { BenchKubelet } from './kubelet.js';
import { parseCommandLine, parseOptions, usage, type Options } from './options.js';
import { runKubeletProbeLoad, runProbeLoad } from './probes.js';
import { memoryMB } from './procfs.js';
import { printReport, type RunResults } from './report.js';
import { Bench } from './session.js';
import { runStartup } from './startup.js';
import { errorText, progress } from './util.js';

async function run(bench: Bench, opts: Options): Promise<RunResults> {
  await bench.prepare();
  await bench.takeTestsLock();
  await bench.waitForOtherAgents({ socketOnly: opts.noWait });
  // Leftovers of an earlier bench run that died hard (no other bench runs: this one holds the tests lock).
  for (const problem of await BenchKubelet.restoreLeftovers()) bench.note(`restoring what an earlier run's kubelet left: ${problem}`);
  for (const [, cri] of bench.containerds()) await bench.removeBenchPods(cri, bench.signal);
  await bench.removeStaleTempDirs();
  const foreign = await bench.foreignPods();
  if (foreign.main + foreign.floor + foreign.kubelet > 0) bench.note(`other pods share the containerds at the start (main ${foreign.main}, floor ${foreign.floor}, kubelet ${foreign.kubelet}); figures may be disturbed`);
  const version = await bench.main.version();
  const out: RunResults = {
    machine: { cpus: cpus().length, kernel: release(), node: agentNodeVersion() },
    runtime: `${version.runtimeName} ${version.runtimeVersion}`,
  };
  if (opts.phases.has('startup') || opts.phases.has('probes')) {
    if (bench.usesKubelet()) await bench.startKubelet();
    // The density phase reads the agent's relist histogram from its /metrics (the kubelet API, on a loopback port).
    const kubeletApi = opts.phases.has('startup') && opts.bigPods > 0 && opts.densitySeconds > 0 ? await kubeletApiAccess(bench.base) : undefined;
    await bench.startAgent(kubeletApi?.flags);
    const idleStartMB = memoryMB(bench.agent!.pid!, 'VmRSS');
    progress(`agent idle; RSS ${idleStartMB.toFixed(1)} MB`);
    if (opts.phases.has('startup')) out.startup = await runStartup(bench, out, idleStartMB, kubeletApi);
    if (opts.phases.has('probes')) {
      // The probe load is about an agent that runs probed pods: a fresh agent keeps the heap the start-up bursts
      // grew out of its RSS figure.
      if (out.startup) {
        await bench.agent!.stop();
        await bench.startAgent();
        if (bench.kubelet) {
          progress('kubelet: restarting it too, for the same reason...');
          await bench.kubelet.stop();
          await bench.startKubelet();
        }
      }
      out.probes = await runProbeLoad(bench);
      if (bench.kubelet) out.kubeletProbes = await runKubeletProbeLoad(bench);
    }
  }
  if (opts.phases.has('cluster')) {
    // The standalone agent has torn its pods down; the cluster phase starts its own agent with --kubeconfig.
    await bench.agent?.stop();
    out.cluster = await runClusterPhase(bench);
  }
  if (opts.phases.has('api')) {
    await bench.agent?.stop();
    apiResults = await runKubeletApiPhase({ cpuProf: opts.agentCpuProf, heapProf: opts.agentHeapProf });
  }
  if (opts.phases.has('pull')) {
    await bench.agent?.stop();
    await bench.startAgent();
    out.pull = await runPullPhase(bench);
  }
  return out;
}

let apiResults: KubeletApiResults | undefined;

async function main(): Promise<number> {
  const parsed = parseCommandLine('bench', usage, parseOptions);
  if ('exitCode' in parsed) return parsed.exitCode;
  const opts = parsed.opts;

  const abort = new AbortController();
  // Every pod of a burst (up to --big-pods) waits on it: more than Node's default of 10 listeners, by design.
  setMaxListeners(0, abort.signal);
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals++;
    if (signals === 1) {
      progress(`${sig}: stopping and cleaning up (send it twice more to quit without cleanup)...`);
      abort.abort(new Error(`interrupted by ${sig}`));
    } else if (signals >= 3) {
      progress('quitting without finishing the cleanup; run the bench again to remove leftovers');
      process.exit(130);
    }
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, onSignal);

  const bench = new Bench(opts, abort.signal);
  let res: RunResults | undefined;
  let failure: unknown;
  let cleanupFailed = false;
  try {
    res = await run(bench, opts);
  } catch (err) {
    failure = err;
  } finally {
    const errors = await bench.cleanup();
    for (const e of errors) progress(`cleanup problem: ${e}`);
    cleanupFailed = errors.length > 0;
    if (cleanupFailed && !failure) failure = new Error('cleanup failed');
  }
  if (abort.signal.aborted) {
    progress(cleanupFailed ? 'interrupted; cleanup incomplete (see above)' : 'interrupted; bench pods, agent and temp files removed');
    return 130;
  }
  if (failure || !res) {
    progress(`FAILED: ${errorText(failure)}`);
    return 1;
  }
  printReport(res, bench.notes, opts.json);
  if (apiResults) (opts.json ? process.stderr : process.stdout).write(`\n${kubeletApiTable(apiResults)}\n`);
  return 0;
}

// Explicit exit: stdout is written synchronously (pipe or terminal), and nothing the bench started is left to wait for.
process.exit(await main());
