// The benchmark: nodelet's manifest-to-Running latency against the raw CRI floor of the same containerd build, in one run.
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
// Cluster mode (bench/cluster.ts): the pod startup latency SLI through the test API server and its watch, beside the floor.
//
// Usage: node dist/bench/bench.js [--only startup|probes|cluster] [--reps N] [--pods N] [--probe-pods N] [--probe-seconds N] [--json]
//          [--sa-token] [--agent-v N] [--agent-log FILE] [--agent-cpu-prof FILE] [--agent-heap-prof FILE]
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync, readFileSync, renameSync, writeFileSync, type WriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { cpus, release, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { fetchPods, watchPods } from '../src/agent/status-api.js';
import { CriClient } from '../src/cri/client.js';
import { hostDnsConfig } from '../src/host/node.js';
import { podNamespaceLabel } from '../src/execution/labels.js';
import { buildContainerConfig, buildSandboxConfig, type NodeRuntimeSettings } from '../src/execution/runtime-config.js';
import { clusterTable, runClusterPhase, type ClusterBenchHost, type ClusterResults } from './cluster.js';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const nodeBinary = join(repoRoot, 'node_modules/.bin/node');
const agentEntry = join(repoRoot, 'bin/nodelet.js');
const setpriv = '/usr/bin/setpriv';

const mainEndpoint = 'unix:///run/nodelet/containerd/containerd.sock';
const floorEndpoint = 'unix:///run/nodelet/containerd-floor/containerd.sock';
const cniSocket = '/run/nodelet/cni.sock';
/** The rig's pid file of the main containerd (its CPU during the probe-load window is printed beside the agent's). */
const mainPidFile = '/run/nodelet/containerd.pid';
/** Held by every test run that starts an agent (scripts/test.sh, the brief's flock rule): one agent per machine. */
const testsLock = '/run/nodelet/tests.lock';
const busybox = 'localhost/nodelet/busybox:1.35';
/** Node name given to the agent: static pods are named `<name>-nodelet-bench`. */
const benchNode = 'nodelet-bench';
/** Every bench pod (floor and nodelet) lives in this namespace, so cleanup finds exactly the bench's runtime objects. */
const benchNamespace = 'nodelet-bench';

const targets = { singleRatio: 1.25, parallelRatio: 1.15, peakRssMB: 100, probeAvgCores: 0.1, probeRssMB: 120 };
const singleTimeoutMs = 60_000;
const parallelTimeoutMs = 300_000;
const probeReadyTimeoutMs = 300_000;
/** Between all probe pods being Ready and the probe-load window: the start-up's after-effects die down. */
const probeSettleMs = 10_000;
const teardownTimeoutMs = 120_000;
const otherAgentPollMs = 20_000;
const otherAgentWaitMs = 15 * 60_000;

// ------------------------------------------------------------------------------------------------------------ options

type Phase = 'startup' | 'probes' | 'cluster';

interface Options {
  /** The phases to run: all by default. */
  phases: Set<Phase>;
  reps: number;
  pods: number;
  probePods: number;
  probeSeconds: number;
  /** Diagnosis: where to write a CPU profile of the agent over the probe-load window ('' for none). */
  agentCpuProf: string;
  /** Diagnosis: where to write a sampling heap profile (what the window's allocations left alive) ('' for none). */
  agentHeapProf: string;
  json: boolean;
  /** Cluster phase: the pods get the default service account token volume (as kube's admission gives any pod). */
  saToken: boolean;
  agentV: number;
  agentLog: string;
}

const usage = `usage: node dist/bench/bench.js [--only startup|probes|cluster] [--reps N] [--pods N] [--probe-pods N] [--probe-seconds N] [--json]
         [--sa-token] [--agent-v N] [--agent-log FILE] [--agent-cpu-prof FILE] [--agent-heap-prof FILE]
  --only P     run only one phase: startup (floor vs nodelet start-up latency, peak RSS), probes (the agent's CPU and
               RSS with probed pods running) or cluster (pod startup SLI through the test API server vs the floor, API
               requests per pod); all three by default, in that order
  --reps N     repetitions of each start-up measurement (default 5)
  --pods N     pods started at once in the parallel case (default 30)
  --probe-pods N     pods running during the probe-load window (default 30)
  --probe-seconds N  length of the probe-load window (default 120)
  --json       print the figures as JSON on stdout (the table then goes to stderr)
  --sa-token   cluster phase: let the API pods mount the default service account token (kube's default; the floor's pods
               and the other phases' have no volume), so the figures include the token and kube-root-ca.crt requests
  --agent-v N  the agent's log verbosity (-v), for diagnosis only (default 0)
  --agent-log FILE  also write the agent's log lines to FILE, for diagnosis
  --agent-cpu-prof FILE  diagnosis: start the agent with an inspector on a loopback port and write a V8 CPU profile of
               the probe-load window to FILE (a .cpuprofile, for Chrome DevTools); a summary is printed. The profiler's own
               cost is in the CPU figures of that run.
  --agent-heap-prof FILE  diagnosis: the same inspector; a V8 sampling heap profile of the window written to FILE (a
               .heapprofile: the allocations of the window still alive after a full GC at its end), with the agent's
               JS heap / native split every 10 s and its RSS after that GC. Either option adds those memory figures.
With -v 2 or more the agent logs every successful probe, and the bench counts the probe runs (the logging costs CPU).
Needs both containerds of the rig: bash scripts/runtime.sh up && NODELET_RUNTIME_INSTANCE=floor bash scripts/runtime.sh up`;

function parseOptions(argv: string[]): Options {
  const opts: Options = {
    phases: new Set(['startup', 'probes', 'cluster']), reps: 5, pods: 30, probePods: 30, probeSeconds: 120, agentCpuProf: '', agentHeapProf: '',
    json: false, saToken: false, agentV: 0, agentLog: '',
  };
  const int = (flag: string, value: string | undefined, min: number): number => {
    if (value === undefined || !/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`${flag} needs an integer >= ${min}`);
    return Number(value);
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split('=', 2) as [string, string | undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--reps': opts.reps = int(flag, value(), 1); break;
      case '--pods': opts.pods = int(flag, value(), 1); break;
      case '--probe-pods': opts.probePods = int(flag, value(), 1); break;
      case '--probe-seconds': opts.probeSeconds = int(flag, value(), 10); break;
      case '--only': {
        const phase = value();
        if (phase !== 'startup' && phase !== 'probes' && phase !== 'cluster') throw new UsageError('--only needs startup, probes or cluster');
        opts.phases = new Set([phase]);
        break;
      }
      case '--agent-cpu-prof': opts.agentCpuProf = value() ?? ''; if (!opts.agentCpuProf) throw new UsageError('--agent-cpu-prof needs a file'); break;
      case '--agent-heap-prof': opts.agentHeapProf = value() ?? ''; if (!opts.agentHeapProf) throw new UsageError('--agent-heap-prof needs a file'); break;
      case '--agent-v': opts.agentV = int(flag, value(), 0); break;
      case '--agent-log': opts.agentLog = value() ?? ''; if (!opts.agentLog) throw new UsageError('--agent-log needs a file'); break;
      case '--json': opts.json = true; break;
      case '--sa-token': opts.saToken = true; break;
      case '-h': case '--help': throw new UsageError('', 0);
      default: throw new UsageError(`unknown argument: ${argv[i]}`);
    }
  }
  // The agent's pod subnet is a /24: leave room for pods of someone else's tests on the same containerd.
  if (opts.pods > 200 || opts.probePods > 200) throw new UsageError('--pods and --probe-pods are limited to 200 (the pod subnets are /24)');
  return opts;
}

class UsageError extends Error {
  constructor(message: string, readonly exitCode = 2) {
    super(message);
  }
}

// ------------------------------------------------------------------------------------------------------------ helpers

const now = () => performance.now();
const toEpoch = (t: number) => performance.timeOrigin + t;

function progress(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}

function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const min = (xs: number[]) => (xs.length ? Math.min(...xs) : NaN);
const round1 = (x: number) => Math.round(x * 10) / 10;
const round2 = (x: number) => Math.round(x * 100) / 100;

function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`;
}

const clockTicksPerSecond = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time of a process in ms: its own (user+system) and that of children it has reaped (CNI plugins, for the agent). */
function processCpuMs(pid: number): { self: number; children: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name; utime is field 14 of the whole line.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  const tick = 1000 / clockTicksPerSecond;
  return { self: (f[11]! + f[12]!) * tick, children: (f[13]! + f[14]!) * tick };
}

/** A field of /proc/<pid>/status in MB (VmRSS, VmHWM; RssAnon and RssFile, the anonymous and file-backed parts of VmRSS). */
function memoryMB(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
}

/** Resets the process's VmHWM to its current RSS (Linux >= 4.0), so that VmHWM then tells the peak of a window. */
function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** The main containerd's pid (from the rig's pid file) and the pids of the shims of the given sandboxes. */
function runtimeProcesses(sandboxIds: Set<string>): { containerd?: number; shims: number[] } {
  let containerd: number | undefined;
  try {
    containerd = Number(readFileSync(mainPidFile, 'utf8').trim()) || undefined;
  } catch {
    containerd = undefined;
  }
  const shims: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!basename(argv[0] ?? '').startsWith('containerd-shim')) continue;
    const id = argv[argv.indexOf('-id') + 1];
    if (argv.includes('-id') && id && sandboxIds.has(id)) shims.push(Number(entry));
  }
  return { ...(containerd ? { containerd } : {}), shims };
}

/** Own + reaped children's CPU (ms) of each pid still alive (the ones gone have no entry). */
function cpuOf(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    try {
      const c = processCpuMs(pid);
      out.set(pid, c.self + c.children);
    } catch {
      // Gone (a pod's shim after a restart): counted only over the samples that have it at both ends.
    }
  }
  return out;
}

/** CPU between two cpuOf snapshots, over the pids present in both. */
function cpuBetween(a: Map<number, number>, b: Map<number, number>): number {
  let sum = 0;
  for (const [pid, t] of b) if (a.has(pid)) sum += t - a.get(pid)!;
  return sum;
}

/**
 * Processes (other than `exclude`) whose command line names bin/nodelet.js (as `pgrep -f` finds them; not the short-lived
 * `nodelet pods`) or Jest. Command lines containing `ownDir` are the bench's agent and its children between fork and exec.
 */
function otherAgentProcesses(exclude: Set<number>, ownDir?: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || exclude.has(Number(entry))) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    } catch {
      continue;
    }
    // Node processes only: a `flock ... jest` or `timeout ... node` wrapper may just be queued behind our tests lock.
    if (basename(cmdline.split(' ', 1)[0]!) !== 'node') continue;
    // A test run starts agents one after another (a gap between two is no time to start ours) and loads the CPUs.
    const testRun = /jest\/bin\/jest|\.bin\/jest/.test(cmdline);
    const agent = cmdline.includes('bin/nodelet.js') && !cmdline.includes('bin/nodelet.js pods');
    if ((agent || testRun) && !(ownDir && cmdline.includes(ownDir))) found.push(`${entry} ${cmdline.slice(0, 160)}`);
  }
  return found;
}

/** Whether something listens on the agent's CNI socket (only one agent can own it). */
function cniSocketInUse(): Promise<boolean> {
  if (!existsSync(cniSocket)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const probe = createConnection(cniSocket);
    const done = (inUse: boolean) => {
      probe.destroy();
      resolve(inUse);
    };
    probe.once('connect', () => done(true));
    probe.once('error', () => done(false));
    probe.setTimeout(2_000, () => done(false));
  });
}

const isReady = (p: V1Pod) => (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

const isRunning = (p: V1Pod) =>
  p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).length > 0 &&
  (p.status.containerStatuses ?? []).every((c) => c.state?.running) && !!p.status.podIP;

// ------------------------------------------------------------------------------------------------------------ workload

/** The same pod for the floor and for nodelet: busybox sleeping, leaving promptly on SIGTERM so teardown is quick. */
function podSpec(): V1PodSpec {
  return {
    terminationGracePeriodSeconds: 5,
    containers: [{
      name: 'main',
      image: busybox,
      command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"],
    }],
  };
}

function manifestText(name: string): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: benchNamespace, labels: { app: 'nodelet-bench' } }, spec: podSpec() }, null, 2) + '\n';
}

const probePeriods = { readiness: 2, liveness: 5 };

/**
 * A probe-load pod: busybox httpd serving /www (its shell leaves at once on SIGTERM), an exec readiness probe every 2 s
 * and an httpGet liveness probe every 5 s against it.
 */
function probeManifestText(name: string): string {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: benchNamespace, labels: { app: 'nodelet-bench-probes' } },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{
        name: 'web',
        image: busybox,
        command: ['sh', '-c', "mkdir -p /www && echo ok > /www/index.html || exit 1; trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"],
        ports: [{ containerPort: 8080 }],
        readinessProbe: { exec: { command: ['cat', '/www/index.html'] }, periodSeconds: probePeriods.readiness },
        livenessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: probePeriods.liveness },
      }],
    },
  };
  return JSON.stringify(pod, null, 2) + '\n';
}

/** The floor's pod object, named like the static pod nodelet would make of the same manifest. */
function floorPod(name: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${name}-${benchNode}`, namespace: benchNamespace, uid: randomUUID(), labels: { app: 'nodelet-bench' } },
    spec: { ...podSpec(), restartPolicy: 'Always', dnsPolicy: 'ClusterFirst' },
  };
}

// ------------------------------------------------------------------------------------------------------------ agent

interface LogLine {
  time: number;
  msg: string;
  pod?: string;
  pods?: string[];
  phase?: string;
  level?: number;
}

class BenchAgent {
  private child?: ChildProcess;
  private exited?: Promise<void>;
  private stderrRest = '';
  private readonly tail: string[] = [];
  readonly lines: LogLine[] = [];
  readonly manifestDir: string;
  readonly rootDir: string;
  readonly podLogsDir: string;

  private logCopy?: WriteStream;
  /** The inspector's WebSocket URL, once the agent printed it (only when started with `inspect`). */
  inspectorUrl?: string;

  constructor(base: string, private readonly verbosity: number, private readonly logFile: string, private readonly inspect = false,
    /** More flags (cluster mode's --kubeconfig). */
    private readonly extraFlags: string[] = []) {
    this.manifestDir = join(base, 'manifests');
    this.rootDir = join(base, 'root');
    this.podLogsDir = join(base, 'pod-logs');
  }

  get socket(): string {
    return join(this.rootDir, 'nodelet.sock');
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The last lines the agent printed, for error messages. */
  recentOutput(): string {
    return this.tail.slice(-15).join('\n');
  }

  async start(signal: AbortSignal): Promise<void> {
    await mkdir(this.manifestDir, { recursive: true });
    const args = [
      '--pod-manifest-path', this.manifestDir,
      '--container-runtime-endpoint', mainEndpoint,
      '--root-dir', this.rootDir,
      '--pod-logs-dir', this.podLogsDir,
      '--hostname-override', benchNode,
      '--logging-format', 'json',
      '-v', String(this.verbosity),
      ...this.extraFlags,
    ];
    // Own process group: a terminal's Ctrl-C reaches only the bench, which then has the agent tear its pods down.
    // setpriv (util-linux) execs the agent with SIGTERM as its parent-death signal, so even a SIGKILLed bench leaves no
    // agent behind once it drops the tests lock.
    if (this.logFile) this.logCopy = createWriteStream(this.logFile);
    // Port 0: the kernel picks a free loopback port, which the agent prints on stderr ('Debugger listening on ws://...').
    // The bin file runs itself, as a user's `npx nodelet` does, so its interpreter line (node and its V8 flags) applies.
    const env = {
      ...process.env,
      PATH: `${dirname(nodeBinary)}:${process.env.PATH ?? ''}`,
      ...(this.inspect ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --inspect=127.0.0.1:0`.trim() } : {}),
    };
    const [command, ...argv] = existsSync(setpriv) ? [setpriv, '--pdeathsig', 'TERM', agentEntry, ...args] : [agentEntry, ...args];
    const child = spawn(command!, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd: repoRoot, detached: true, env });
    this.child = child;
    this.exited = new Promise((r) => child.once('exit', () => r()));
    // Last resort if the bench dies past its cleanup (an uncaught error): never leave an agent owning the CNI socket.
    const killOnExit = () => {
      if (this.running) child.kill('SIGTERM');
    };
    process.once('exit', killOnExit);
    child.once('exit', () => process.off('exit', killOnExit));
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      this.logCopy?.write(d);
      this.remember(d);
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => this.onStderr(d));
    const deadline = now() + 30_000;
    while (!this.lines.some((l) => l.msg === 'nodelet started')) {
      if (!this.running) throw new Error(`nodelet exited during start-up:\n${this.recentOutput()}`);
      if (now() > deadline) throw new Error(`nodelet did not start within 30 s:\n${this.recentOutput()}`);
      await delay(20, undefined, { signal });
    }
    while (!this.lines.some((l) => l.msg === 'Container runtime connected')) {
      if (!this.running) throw new Error(`nodelet exited during start-up:\n${this.recentOutput()}`);
      if (now() > deadline) throw new Error(`nodelet did not connect to ${mainEndpoint} within 30 s:\n${this.recentOutput()}`);
      await delay(20, undefined, { signal });
    }
  }

  private remember(text: string): void {
    for (const line of text.split('\n')) if (line.trim()) this.tail.push(line.slice(0, 500));
    if (this.tail.length > 200) this.tail.splice(0, this.tail.length - 100);
  }

  private onStderr(chunk: string): void {
    this.logCopy?.write(chunk);
    this.stderrRest += chunk;
    let nl: number;
    while ((nl = this.stderrRest.indexOf('\n')) >= 0) {
      const line = this.stderrRest.slice(0, nl);
      this.stderrRest = this.stderrRest.slice(nl + 1);
      this.remember(line);
      const inspector = /^Debugger listening on (ws:\/\/\S+)/.exec(line);
      if (inspector) this.inspectorUrl = inspector[1];
      if (!line.startsWith('{')) continue;
      try {
        const rec = JSON.parse(line) as Record<string, unknown>;
        if (typeof rec.time !== 'number' || typeof rec.msg !== 'string') continue;
        this.lines.push({
          time: rec.time,
          msg: rec.msg,
          ...(typeof rec.pod === 'string' ? { pod: rec.pod } : {}),
          ...(Array.isArray(rec.pods) ? { pods: rec.pods as string[] } : {}),
          ...(typeof rec.phase === 'string' ? { phase: rec.phase } : {}),
          ...(typeof rec.level === 'number' ? { level: rec.level } : {}),
        });
      } catch {
        // A line that merely starts with '{' is kept in the tail only.
      }
    }
  }

  /** Warnings and errors the agent logged after `sinceEpochMs` (a healthy run has none about bench pods). */
  problemsSince(sinceEpochMs: number): LogLine[] {
    return this.lines.filter((l) => l.time >= sinceEpochMs && (l.level ?? 0) >= 40);
  }

  /** The agent's and its spawn helper's CPU: the CNI plugins are the helper's children, reaped (and counted) by it. */
  cpuMs(): { self: number; children: number } {
    const agent = processCpuMs(this.pid!);
    const helper = this.spawnHelperPid();
    if (helper === undefined) return agent;
    try {
      const h = processCpuMs(helper);
      return { self: agent.self + h.self, children: agent.children + h.children };
    } catch {
      this.helperPid = undefined; // restarted meanwhile: found again next time
      return agent;
    }
  }

  /** The spawn helper's peak RSS (0 without one): part of nodelet's memory. */
  spawnHelperPeakRssMB(): number {
    const helper = this.spawnHelperPid();
    return helper === undefined ? 0 : memoryMB(helper, 'VmHWM');
  }

  private helperPid: number | undefined;

  /** The agent's nodelet-spawn child, if it runs one (this kernel has no /proc/<pid>/task/<tid>/children). */
  private spawnHelperPid(): number | undefined {
    if (this.helperPid !== undefined && existsSync(`/proc/${this.helperPid}`)) return this.helperPid;
    this.helperPid = undefined;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === this.pid && comm === 'nodelet-spawn') return (this.helperPid = Number(entry));
      } catch {
        // exited while listed
      }
    }
    return undefined;
  }

  /** SIGTERM, then SIGKILL after 15 s. The agent leaves pods running: the caller removes them first. */
  async stop(): Promise<void> {
    if (!this.child || !this.running) {
      this.logCopy?.end();
      return;
    }
    this.child.kill('SIGTERM');
    const stopped = await Promise.race([this.exited!.then(() => true), delay(15_000).then(() => false)]);
    if (!stopped) {
      progress('agent ignored SIGTERM for 15 s; killing it');
      this.child.kill('SIGKILL');
      await this.exited;
    }
    this.logCopy?.end();
  }
}

// ------------------------------------------------------------------------------------------------------------ measurements

/** Agent log timestamps of one pod, in ms after the manifest rename. */
interface PodSteps {
  loaded?: number;
  network?: number;
  sandbox?: number;
  created?: number;
  started?: number;
  running?: number;
  observed?: number;
}

const stepNames: { key: keyof PodSteps; label: string }[] = [
  { key: 'loaded', label: "'static pod manifest loaded'" },
  { key: 'network', label: "'pod network set up' (CNI ADD via shim)" },
  { key: 'sandbox', label: "'Created pod sandbox' (RunPodSandbox back)" },
  { key: 'created', label: "'Created container'" },
  { key: 'started', label: "'Started container'" },
  { key: 'running', label: "'Pod phase changed' Running" },
  { key: 'observed', label: "seen Running+IP by the bench's watch" },
];

interface NodeletSample {
  elapsedMs: number;
  t0Epoch: number;
  pods: string[];
  observedAt: Map<string, number>;
  agentCpuMs: number;
  agentChildCpuMs: number;
  benchCpuMs: number;
}

interface FloorSample {
  elapsedMs: number;
  benchCpuMs: number;
  runPodSandboxMs: number[];
  createContainerMs: number[];
  startContainerMs: number[];
}

class Bench {
  readonly main = new CriClient(mainEndpoint);
  readonly floor = new CriClient(floorEndpoint);
  base = '';
  agent?: BenchAgent;
  private settings?: NodeRuntimeSettings;
  private floorLogsDir = '';
  /** Warnings worth printing with the results (other agents appearing, foreign pods, agent warnings). */
  readonly notes: string[] = [];

  constructor(readonly opts: Options, readonly signal: AbortSignal) {}

  /** The containerds the chosen phases use: the floor only for the start-up and cluster measurements. */
  containerds(): (readonly ['main' | 'floor', CriClient])[] {
    return this.usesFloor() ? [['main', this.main], ['floor', this.floor]] : [['main', this.main]];
  }

  usesFloor(): boolean {
    return this.opts.phases.has('startup') || this.opts.phases.has('cluster');
  }

  async prepare(): Promise<void> {
    const signal = this.signal;
    for (const [name, cri] of this.containerds()) {
      try {
        const v = await cri.version({ signal, timeoutMs: 5_000 });
        progress(`${name} containerd: ${v.runtimeName} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion}) at ${cri.target}`);
      } catch (err) {
        throw new Error(`${name} containerd is not answering at ${cri.target} (start it with ${name === 'floor' ? 'NODELET_RUNTIME_INSTANCE=floor ' : ''}bash scripts/runtime.sh up)`, { cause: err });
      }
      if (!(await cri.imageStatus(busybox, { signal, timeoutMs: 10_000 }))) {
        throw new Error(`${busybox} is not in the ${name} containerd (run the rig's up again)`);
      }
    }
    this.base = await mkdtemp(join(tmpdir(), 'nodelet-bench-'));
    this.floorLogsDir = join(this.base, 'floor-pod-logs');
    this.settings = { podLogsDir: this.floorLogsDir, hostDns: await hostDnsConfig() };
  }

  private lockHolder?: ChildProcess;
  private lockHeld = false;

  /**
   * Takes the machine's test lock (waiting up to 15 minutes), held by a `flock` child until releaseTestsLock or the
   * bench's death: its `cat` reads the bench's pipe, so the lock goes with the last end of that pipe.
   */
  async takeTestsLock(): Promise<void> {
    await mkdir(dirname(testsLock), { recursive: true });
    const holder = spawn('flock', ['-w', String(otherAgentWaitMs / 1000), testsLock, 'sh', '-c', 'echo locked; exec cat >/dev/null'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.lockHolder = holder;
    const locked = new Promise<void>((resolve, reject) => {
      holder.stdout!.setEncoding('utf8').on('data', (d: string) => d.includes('locked') && resolve());
      holder.once('exit', (code) => reject(new Error(`could not take ${testsLock} within 15 minutes (flock exited ${code})`)));
      holder.once('error', reject);
    });
    // Whichever loses the race below settles later with nobody waiting: keep that from being an unhandled rejection.
    locked.catch(() => undefined);
    const aborted = new Promise<never>((_, reject) => this.signal.addEventListener('abort', () => reject(this.signal.reason), { once: true }));
    aborted.catch(() => undefined);
    const waiting = setTimeout(() => progress(`waiting for ${testsLock} (a test run holds it; up to 15 min)...`), 1_000);
    try {
      await Promise.race([locked, aborted]);
    } finally {
      clearTimeout(waiting);
    }
    this.lockHeld = true;
    progress(`holding ${testsLock}`);
  }

  async releaseTestsLock(): Promise<void> {
    const holder = this.lockHolder;
    if (!holder) return;
    this.lockHolder = undefined;
    if (holder.exitCode !== null || holder.signalCode !== null) return;
    const exited = new Promise((r) => holder.once('exit', r));
    // Held: ending the pipe ends `cat`, then flock. Still waiting for it: flock itself has to go.
    if (this.lockHeld) holder.stdin!.end();
    else holder.kill('SIGTERM');
    this.lockHeld = false;
    await Promise.race([exited, delay(5_000).then(() => holder.kill('SIGKILL'))]);
  }

  async removeStaleTempDirs(): Promise<void> {
    for (const name of await readdir(tmpdir())) {
      const path = join(tmpdir(), name);
      if (!name.startsWith('nodelet-bench-') || path === this.base) continue;
      progress(`removing ${path}, left by an earlier bench run`);
      await rm(path, { recursive: true, force: true });
    }
  }

  /** Waits (polling every 20 s, up to 15 minutes) until no other nodelet agent runs and the CNI socket is free. */
  async waitForOtherAgents(): Promise<void> {
    const deadline = now() + otherAgentWaitMs;
    for (;;) {
      const others = otherAgentProcesses(new Set([process.pid]), this.base);
      const socketBusy = await cniSocketInUse();
      if (others.length === 0 && !socketBusy) return;
      if (now() > deadline) throw new Error(`another nodelet agent still runs after 15 minutes: ${others.join('; ') || cniSocket + ' in use'}`);
      progress(`another nodelet agent or test run is active (${others.join('; ') || `${cniSocket} in use`}); waiting (checking every 20 s, up to 15 min)...`);
      await delay(otherAgentPollMs, undefined, { signal: this.signal });
    }
  }

  /** Counts runtime pods that are not the bench's (someone else's tests share the containerd: noise to report). */
  async foreignPods(): Promise<{ main: number; floor: number }> {
    const count = async (cri: CriClient) =>
      (await cri.listPodSandbox({ state: 'SANDBOX_READY' }, { signal: this.signal, timeoutMs: 10_000 })).filter(
        (s) => s.labels[podNamespaceLabel] !== benchNamespace,
      ).length;
    return { main: await count(this.main), floor: this.usesFloor() ? await count(this.floor) : 0 };
  }

  /** Starts the agent (standalone, or with `flags` in a directory of its own under the bench's). */
  async startAgent(flags: string[] = [], dir = this.base): Promise<void> {
    this.agent = new BenchAgent(dir, this.opts.agentV, this.opts.agentLog, this.opts.agentCpuProf !== '' || this.opts.agentHeapProf !== '', flags);
    await this.agent.start(this.signal);
    progress(`agent started (pid ${this.agent.pid}); waiting until it is idle...`);
    await this.waitAgentIdle();
  }

  /** Idle: the agent used at most 2% of a core over a second (its relist runs every second). */
  async waitAgentIdle(timeoutMs = 20_000): Promise<void> {
    const agent = this.agent!;
    const deadline = now() + timeoutMs;
    for (;;) {
      const before = agent.cpuMs().self;
      await delay(1_000, undefined, { signal: this.signal });
      if (!agent.running) throw new Error(`nodelet exited:\n${agent.recentOutput()}`);
      const used = agent.cpuMs().self - before;
      if (used <= 20) return;
      if (now() > deadline) {
        this.note(`agent did not go idle within ${timeoutMs / 1000} s (${used.toFixed(0)} ms CPU in the last second)`);
        return;
      }
    }
  }

  note(message: string): void {
    if (!this.notes.includes(message)) this.notes.push(message);
    progress(`NOTE: ${message}`);
  }

  /** Other agents or test runs seen while measuring, by pid (checked every second: they load the CPUs). */
  private readonly disturbers = new Map<number, string>();
  private watcher?: NodeJS.Timeout;

  watchForOtherAgents(): void {
    this.watcher = setInterval(() => {
      for (const p of otherAgentProcesses(new Set([process.pid, this.agent?.pid ?? -1]), this.base)) {
        const pid = Number(p.split(' ', 1)[0]);
        if (this.disturbers.has(pid)) continue;
        this.disturbers.set(pid, p);
        progress(`NOTE: another nodelet agent or test run is active: ${p}`);
      }
    }, 1_000);
    this.watcher.unref();
  }

  stopWatching(): void {
    if (!this.watcher) return;
    clearInterval(this.watcher);
    this.watcher = undefined;
    if (this.disturbers.size === 0) return;
    const some = [...this.disturbers.values()].slice(0, 2).map((p) => p.slice(0, 100));
    this.note(`${this.disturbers.size} other nodelet agent(s) or test run(s) were active during the measurements (e.g. ${some.join('; ')}); figures may be disturbed`);
  }

  // ---- floor

  private async floorStartPod(pod: V1Pod): Promise<{ run: number; create: number; start: number }> {
    const signal = this.signal;
    const t0 = now();
    const sandboxConfig = buildSandboxConfig(pod, 0, this.settings!);
    // kubelet creates the pod's log directory before RunPodSandbox and the container's before CreateContainer.
    await mkdir(sandboxConfig.logDirectory, { recursive: true, mode: 0o755 });
    const sandboxId = await this.floor.runPodSandbox(sandboxConfig, '', { signal });
    const t1 = now();
    const spec = pod.spec!.containers[0]!;
    await mkdir(join(sandboxConfig.logDirectory, spec.name), { recursive: true, mode: 0o755 });
    const containerId = await this.floor.createContainer(sandboxId, buildContainerConfig(pod, spec, 0, new Map()), sandboxConfig, { signal });
    const t2 = now();
    await this.floor.startContainer(containerId, { signal });
    const t3 = now();
    return { run: t1 - t0, create: t2 - t1, start: t3 - t2 };
  }

  async floorRun(names: string[]): Promise<FloorSample> {
    const pods = names.map(floorPod);
    const cpu0 = process.cpuUsage();
    const t0 = now();
    const results = await Promise.allSettled(pods.map((p) => this.floorStartPod(p)));
    const elapsedMs = now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw new Error(`floor pod failed to start: ${errorText(failed.reason)}`, { cause: failed.reason });
    const ok = results.map((r) => (r as PromiseFulfilledResult<{ run: number; create: number; start: number }>).value);
    return {
      elapsedMs,
      benchCpuMs: (cpu.user + cpu.system) / 1000,
      runPodSandboxMs: ok.map((r) => r.run),
      createContainerMs: ok.map((r) => r.create),
      startContainerMs: ok.map((r) => r.start),
    };
  }

  /** StopPodSandbox + RemovePodSandbox for every bench sandbox on a containerd, until none is left. */
  async removeBenchPods(cri: CriClient, signal?: AbortSignal): Promise<void> {
    const selector = { labelSelector: { [podNamespaceLabel]: benchNamespace } };
    const deadline = now() + teardownTimeoutMs;
    for (;;) {
      const sandboxes = await cri.listPodSandbox(selector, { timeoutMs: 30_000, ...(signal ? { signal } : {}) });
      const containers = await cri.listContainers(selector, { timeoutMs: 30_000, ...(signal ? { signal } : {}) });
      if (sandboxes.length === 0 && containers.length === 0) return;
      if (now() > deadline) throw new Error(`${sandboxes.length} bench sandboxes and ${containers.length} containers still in ${cri.target}`);
      const opts = { timeoutMs: 60_000, ...(signal ? { signal } : {}) };
      await Promise.allSettled(sandboxes.map(async (s) => {
        await cri.stopPodSandbox(s.id, opts);
        await cri.removePodSandbox(s.id, opts);
      }));
      // Containers whose sandbox is already gone (RemovePodSandbox takes a sandbox's containers with it).
      const orphans = containers.filter((c) => !sandboxes.some((s) => s.id === c.podSandboxId));
      await Promise.allSettled(orphans.map((c) => cri.removeContainer(c.id, opts)));
    }
  }

  // ---- nodelet

  async nodeletRun(names: string[], timeoutMs: number): Promise<NodeletSample> {
    const agent = this.agent!;
    // Written aside as dotfiles (which the agent ignores), then renamed in: the agent never sees a half file.
    for (const name of names) await writeFile(join(agent.manifestDir, `.${name}.json.tmp`), manifestText(name));
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
    this.signal.addEventListener('abort', stopOnAbort, { once: true });
    const watch = watchPods(agent.socket, { signal: stopWatch.signal, sendInitialEvents: true }, ({ type, object: p }) => {
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
        ? new Error('the measurement was stopped', { cause: this.signal.reason })
        : new Error(`nodelet ended the status watch during the measurement:\n${agent.recentOutput()}`)),
      (err: unknown) => failed(new Error(`the status watch failed: ${errorText(err)}\n${agent.recentOutput()}`, { cause: err })),
    );
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([watchReady, outcome]);
      const cpu0 = agent.cpuMs();
      const benchCpu0 = process.cpuUsage();
      t0 = now();
      for (const name of names) renameSync(join(agent.manifestDir, `.${name}.json.tmp`), join(agent.manifestDir, `${name}.json`));
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
      this.signal.removeEventListener('abort', stopOnAbort);
      stopWatch.abort();
      await watch.catch(() => undefined);
    }
  }

  /** Removes the bench manifests and waits until the agent has torn their pods down in the runtime and its status. */
  async nodeletTeardown(signal?: AbortSignal): Promise<void> {
    const agent = this.agent!;
    for (const f of await readdir(agent.manifestDir).catch(() => [] as string[])) await rm(join(agent.manifestDir, f), { force: true });
    const selector = { labelSelector: { [podNamespaceLabel]: benchNamespace } };
    const deadline = now() + teardownTimeoutMs;
    for (;;) {
      const opts = { timeoutMs: 30_000, ...(signal ? { signal } : {}) };
      const [sandboxes, containers] = await Promise.all([this.main.listPodSandbox(selector, opts), this.main.listContainers(selector, opts)]);
      const listed = agent.running ? (await fetchPods(agent.socket, 5_000)).filter((p) => p.metadata?.namespace === benchNamespace).length : 0;
      if (sandboxes.length + containers.length + listed === 0) return;
      if (!agent.running) throw new Error(`nodelet exited during teardown:\n${agent.recentOutput()}`);
      if (now() > deadline) throw new Error(`nodelet did not tear down the bench pods within ${teardownTimeoutMs / 1000} s (${sandboxes.length} sandboxes, ${containers.length} containers, ${listed} pods in its status)`);
      await delay(100, undefined, signal ? { signal } : undefined);
    }
  }

  /** Agent log timestamps per pod of a sample, relative to the manifest rename. */
  stepsOf(sample: NodeletSample): Map<string, PodSteps> {
    const steps = new Map<string, PodSteps>(sample.pods.map((n) => [n, {}]));
    const rel = (t: number) => t - sample.t0Epoch;
    const set = (name: string | undefined, key: keyof PodSteps, t: number) => {
      const s = name === undefined ? undefined : steps.get(name);
      if (s && s[key] === undefined) s[key] = rel(t);
    };
    const short = (pod: string | undefined) => pod?.slice(pod.indexOf('/') + 1);
    for (const l of this.agent!.lines) {
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
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause ? `${err.message} (${errorText(err.cause)})` : err.message;
}

// ------------------------------------------------------------------------------------------------------------ probe load

/** A minimal Chrome DevTools Protocol client over the agent's inspector WebSocket (diagnosis only). */
class InspectorSession {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener('message', (ev) => {
      const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string } };
      const waiter = msg.id === undefined ? undefined : this.pending.get(msg.id);
      if (!waiter) return;
      this.pending.delete(msg.id!);
      if (msg.error) waiter.reject(new Error(`inspector: ${msg.error.message}`));
      else waiter.resolve(msg.result);
    });
    ws.addEventListener('close', () => {
      for (const w of this.pending.values()) w.reject(new Error('the inspector connection closed'));
      this.pending.clear();
    });
  }

  static open(url: string, timeoutMs = 10_000): Promise<InspectorSession> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const timer = setTimeout(() => {
        ws.close();
        reject(new Error(`no connection to the agent's inspector at ${url} within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      ws.addEventListener('open', () => {
        clearTimeout(timer);
        resolve(new InspectorSession(ws));
      }, { once: true });
      ws.addEventListener('error', () => {
        clearTimeout(timer);
        reject(new Error(`cannot connect to the agent's inspector at ${url}`));
      }, { once: true });
    });
  }

  post<T>(method: string, params: object = {}, timeoutMs = 60_000): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`inspector: no answer to ${method} within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  close(): void {
    this.ws.close();
  }
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

interface TimeShare {
  name: string;
  ms: number;
  /** Of the profile's busy (non-idle) time. */
  pct: number;
}

/** Where a script belongs: an npm package, a folder of nodelet's code, a part of Node's own library. */
function profileModule(url: string, functionName: string): string {
  if (!url) return functionName || '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return `npm ${parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  const src = url.indexOf('/dist/src/');
  if (src >= 0) return `nodelet src/${url.slice(src + '/dist/src/'.length)}`;
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  return basename(url);
}

/** Self time by module and by function, and nodelet functions by inclusive time (each counted once per stack). */
function profileSummary(profile: CpuProfile, top = 15) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const selfUs = new Map<number, number>();
  // A sample stands for the time until the next one.
  for (let i = 0; i < samples.length; i++) selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + Math.max(0, deltas[i + 1] ?? 0));
  const fnKey = (id: number) => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (!url) return functionName || '(anonymous)';
    const at = url.indexOf('/dist/src/') >= 0 ? url.slice(url.indexOf('/dist/src/') + '/dist/'.length) : url.replace(/^.*\/node_modules\//, '');
    return `${functionName || '(anonymous)'} ${at}:${lineNumber + 1}`;
  };
  let idleUs = 0;
  let totalUs = 0;
  const modules = new Map<string, number>();
  const fns = new Map<string, number>();
  for (const [id, us] of selfUs) {
    totalUs += us;
    const { functionName, url } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const m = profileModule(url, functionName);
    modules.set(m, (modules.get(m) ?? 0) + us);
    fns.set(fnKey(id), (fns.get(fnKey(id)) ?? 0) + us);
  }
  // Inclusive time of nodelet's own functions: which of its code paths the busy time is spent under.
  const inclusive = new Map<string, number>();
  const walk = (id: number, onStack: Set<string>): number => {
    const node = byId.get(id)!;
    const key = fnKey(id);
    const ours = node.callFrame.url.includes('/dist/src/') && !onStack.has(key);
    if (ours) onStack.add(key);
    let us = node.callFrame.functionName === '(idle)' ? 0 : (selfUs.get(id) ?? 0);
    for (const c of node.children ?? []) us += walk(c, onStack);
    if (ours) {
      onStack.delete(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
    return us;
  };
  const root = profile.nodes[0];
  if (root) walk(root.id, new Set());
  const busyUs = totalUs - idleUs;
  const list = (m: Map<string, number>): TimeShare[] =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([name, us]) => ({ name, ms: round1(us / 1000), pct: round1((us / Math.max(busyUs, 1)) * 100) }));
  return {
    sampledMs: round1(totalUs / 1000),
    busyMs: round1(busyUs / 1000),
    samples: samples.length,
    selfByModule: list(modules),
    selfByFunction: list(fns),
    nodeletInclusive: list(inclusive),
  };
}

interface HeapProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapProfileNode[];
}

/** Live bytes of a sampling heap profile by module and function where allocated, and under nodelet's functions. */
function heapProfileSummary(head: HeapProfileNode, top = 15) {
  const key = (n: HeapProfileNode) => {
    const { functionName, url, lineNumber } = n.callFrame;
    if (!url) return functionName || '(anonymous)';
    const at = url.indexOf('/dist/src/') >= 0 ? url.slice(url.indexOf('/dist/src/') + '/dist/'.length) : url.replace(/^.*\/node_modules\//, '');
    return `${functionName || '(anonymous)'} ${at}:${lineNumber + 1}`;
  };
  const modules = new Map<string, number>();
  const fns = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  const walk = (n: HeapProfileNode, onStack: Set<string>): number => {
    const k = key(n);
    total += n.selfSize;
    if (n.selfSize > 0) {
      const m = profileModule(n.callFrame.url, n.callFrame.functionName);
      modules.set(m, (modules.get(m) ?? 0) + n.selfSize);
      fns.set(k, (fns.get(k) ?? 0) + n.selfSize);
    }
    const ours = n.callFrame.url.includes('/dist/src/') && !onStack.has(k);
    if (ours) onStack.add(k);
    let bytes = n.selfSize;
    for (const c of n.children) bytes += walk(c, onStack);
    if (ours) {
      onStack.delete(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + bytes);
    }
    return bytes;
  };
  walk(head, new Set());
  const list = (m: Map<string, number>) =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([name, bytes]) => ({ name, kB: Math.round(bytes / 1024), pct: round1((bytes / Math.max(total, 1)) * 100) }));
  return { liveMB: round2(total / 1048576), byModule: list(modules), byFunction: list(fns), nodeletInclusive: list(inclusive) };
}

/** The agent's process.memoryUsage() in MB, through the inspector. */
async function agentMemoryUsage(inspector: InspectorSession) {
  const expression = `JSON.stringify({ ...process.memoryUsage(), ...Object.fromEntries(process.getBuiltinModule('v8').getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size])) })`;
  const r = await inspector.post<{ result: { value?: string } }>('Runtime.evaluate', { expression, returnByValue: true });
  const m = JSON.parse(r.result.value ?? '{}') as Record<string, number>;
  const mb = (k: string) => round1((m[k] ?? NaN) / 1048576);
  return {
    rssMB: mb('rss'), heapTotalMB: mb('heapTotal'), heapUsedMB: mb('heapUsed'), externalMB: mb('external'), arrayBuffersMB: mb('arrayBuffers'),
    /** V8's young generation and old generation as reserved (committed) now. */
    newSpaceMB: mb('new_space'), oldSpaceMB: mb('old_space'),
  };
}

type JsMemory = Awaited<ReturnType<typeof agentMemoryUsage>>;

/** Expected probe runs (kubelet's ticker) and, at -v 2 or more, the runs the agent logged as succeeded. */
interface ProbeRuns {
  expected: { readiness: number; liveness: number };
  succeededLogged?: { readiness: number; liveness: number };
}

interface ProbeLoad {
  pods: number;
  readinessExecPeriodSeconds: number;
  livenessHttpGetPeriodSeconds: number;
  /** From the manifests' rename until the status socket showed every pod Running and Ready. */
  allReadyAfterMs: number;
  settleSeconds: number;
  windowSeconds: number;
  agent: {
    avgCores: number;
    cpuSeconds: number;
    /** The CPU of the agent's children it reaped in the window (exec probes do not run there: containerd runs them). */
    childrenAvgCores: number;
    rssMB: { avg: number; max: number; atStart: number; atEnd: number; samples: number };
    /** VmHWM over the window (reset at its start), or since the agent started when the reset was refused. */
    peakRssInWindowMB: number;
    peakRssWindowOnly: boolean;
    /** VmHWM since the agent started, read just before the window (includes the pods' start-up). */
    peakRssBeforeWindowMB: number;
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

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/**
 * Starts --probe-pods probed pods, waits until all are Running and Ready plus a settling time, then samples the agent's
 * CPU and RSS every second over --probe-seconds without asking the agent anything; tears the pods down after (not timed).
 */
async function runProbeLoad(bench: Bench): Promise<ProbeLoad> {
  const { opts, signal } = bench;
  const agent = bench.agent!;
  const pid = agent.pid!;
  const n = opts.probePods;
  await bench.waitAgentIdle();
  bench.watchForOtherAgents();
  const names = Array.from({ length: n }, (_, i) => `probe-${i + 1}`);
  const wanted = new Set(names.map((name) => `${name}-${benchNode}`));
  progress(`probe load: starting ${n} pods (exec readiness probe every ${probePeriods.readiness} s, httpGet liveness probe every ${probePeriods.liveness} s)...`);
  for (const name of names) await writeFile(join(agent.manifestDir, `.${name}.json.tmp`), probeManifestText(name));
  const t0 = now();
  for (const name of names) renameSync(join(agent.manifestDir, `.${name}.json.tmp`), join(agent.manifestDir, `${name}.json`));

  const ours = async () => (await fetchPods(agent.socket, 5_000)).filter((p) => wanted.has(p.metadata?.name ?? ''));
  const restarts = (pods: V1Pod[]) => pods.reduce((sum, p) => sum + (p.status?.containerStatuses ?? []).reduce((s, c) => s + (c.restartCount ?? 0), 0), 0);
  const readyCount = (pods: V1Pod[]) => pods.filter((p) => isRunning(p) && isReady(p)).length;
  let pods: V1Pod[];
  let lastReport = t0;
  for (;;) {
    if (!agent.running) throw new Error(`nodelet exited while the probe pods started:\n${agent.recentOutput()}`);
    pods = await ours();
    const ended = pods.find((p) => p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded');
    if (ended) throw new Error(`probe pod ${ended.metadata?.name} ended ${ended.status?.phase}: ${JSON.stringify(ended.status)}`);
    const ready = readyCount(pods);
    if (ready === n) break;
    if (now() - t0 > probeReadyTimeoutMs) {
      const pending = pods.find((p) => !(isRunning(p) && isReady(p)));
      throw new Error(`${n - ready} of ${n} probe pods not Running and Ready after ${probeReadyTimeoutMs / 1000} s; e.g. ${pending?.metadata?.name ?? 'one not listed'}: ${JSON.stringify(pending?.status ?? 'not listed')}\n${agent.recentOutput()}`);
    }
    if (now() - lastReport >= 10_000) {
      progress(`  ${ready}/${n} Running and Ready after ${fmtMs(now() - t0)}`);
      lastReport = now();
    }
    await delay(500, undefined, { signal });
  }
  const allReadyAfterMs = now() - t0;
  const restartsBefore = restarts(pods);
  progress(`probe load: all ${n} pods Running and Ready after ${fmtMs(allReadyAfterMs)}; settling ${probeSettleMs / 1000} s...`);
  await delay(probeSettleMs, undefined, { signal });

  const sandboxes = await bench.main.listPodSandbox({ state: 'SANDBOX_READY', labelSelector: { [podNamespaceLabel]: benchNamespace } }, { signal, timeoutMs: 10_000 });
  const runtimeProcs = runtimeProcesses(new Set(sandboxes.map((s) => s.id)));
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
        rssMB: { avg: round1(rss.reduce((a, b) => a + b, 0) / rss.length), max: round1(Math.max(...rss)), atStart: round1(rssAtStart), atEnd: round1(rss.at(-1)!), samples: rss.length },
        peakRssInWindowMB: round1(peakRssInWindowMB),
        peakRssWindowOnly,
        peakRssBeforeWindowMB: round1(peakRssBeforeWindowMB),
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
        avgCores: { max: targets.probeAvgCores, pass: avgCores < targets.probeAvgCores },
        rss: { maxMB: targets.probeRssMB, pass: peakForTarget < targets.probeRssMB },
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

// ------------------------------------------------------------------------------------------------------------ the run

interface Results {
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

interface RunResults {
  machine: Results['machine'];
  runtime: string;
  startup?: Results;
  probes?: ProbeLoad;
  cluster?: ClusterResults;
}

async function run(bench: Bench, opts: Options): Promise<RunResults> {
  await bench.prepare();
  await bench.takeTestsLock();
  await bench.waitForOtherAgents();
  // Leftovers of an earlier bench run that died hard (no other bench runs: this one holds the tests lock).
  for (const [, cri] of bench.containerds()) await bench.removeBenchPods(cri, bench.signal);
  await bench.removeStaleTempDirs();
  const foreign = await bench.foreignPods();
  if (foreign.main + foreign.floor > 0) bench.note(`other pods share the containerds at the start (main ${foreign.main}, floor ${foreign.floor}); figures may be disturbed`);
  const version = await bench.main.version();
  const out: RunResults = {
    machine: { cpus: cpus().length, kernel: release(), node: process.version },
    runtime: `${version.runtimeName} ${version.runtimeVersion}`,
  };
  if (opts.phases.has('startup') || opts.phases.has('probes')) {
    await bench.startAgent();
    const idleStartMB = memoryMB(bench.agent!.pid!, 'VmRSS');
    progress(`agent idle; RSS ${idleStartMB.toFixed(1)} MB`);
    if (opts.phases.has('startup')) out.startup = await runStartup(bench, opts, out, idleStartMB);
    if (opts.phases.has('probes')) {
      // The probe load is about an agent that runs probed pods: a fresh agent keeps the heap the start-up bursts
      // grew out of its RSS figure.
      if (out.startup) {
        await bench.agent!.stop();
        await bench.startAgent();
      }
      out.probes = await runProbeLoad(bench);
    }
  }
  if (opts.phases.has('cluster')) {
    // The standalone agent has torn its pods down; the cluster phase starts its own agent with --kubeconfig.
    await bench.agent?.stop();
    out.cluster = await runClusterPhase(clusterHost(bench));
  }
  return out;
}

/** What the cluster phase (bench/cluster.ts) uses of the bench: the floor, the agent's process, progress and notes. */
function clusterHost(bench: Bench): ClusterBenchHost {
  return {
    signal: bench.signal,
    reps: bench.opts.reps,
    pods: bench.opts.pods,
    saToken: bench.opts.saToken,
    nodeName: benchNode,
    namespace: benchNamespace,
    podSpec,
    dir: join(bench.base, 'cluster'),
    main: bench.main,
    progress,
    note: (message) => bench.note(message),
    startAgent: (flags) => bench.startAgent(flags, join(bench.base, 'cluster')),
    stopAgent: async () => bench.agent?.stop(),
    agentRunning: () => !!bench.agent?.running,
    agentOutput: () => bench.agent?.recentOutput() ?? '',
    agentLines: () => bench.agent?.lines ?? [],
    waitAgentIdle: () => bench.waitAgentIdle(),
    floorRun: async (names) => {
      const s = await bench.floorRun(names);
      await bench.removeBenchPods(bench.floor, bench.signal);
      return { elapsedMs: s.elapsedMs, perPodMs: s.runPodSandboxMs.map((run, i) => run + s.createContainerMs[i]! + s.startContainerMs[i]!) };
    },
    watchForOtherAgents: () => bench.watchForOtherAgents(),
    stopWatching: () => bench.stopWatching(),
  };
}

/** Floor vs nodelet start-up, 1 pod and --pods at once, interleaved; the agent's peak RSS through it. */
async function runStartup(bench: Bench, opts: Options, common: RunResults, idleStartMB: number): Promise<Results> {
  const agent = bench.agent!;
  const startEpoch = Date.now();
  const res: Results = {
    machine: common.machine,
    runtime: common.runtime,
    options: opts,
    floor: { single: [], parallel: [] },
    nodelet: { single: [], parallel: [] },
    singleSteps: [],
    parallelSteps: [],
    rss: { idleStartMB, idleEndMB: NaN, peakMB: NaN, helperPeakMB: 0 },
  };

  const floorOnce = async (names: string[]) => {
    const s = await bench.floorRun(names);
    await bench.removeBenchPods(bench.floor, bench.signal);
    return s;
  };
  const nodeletOnce = async (names: string[], timeoutMs: number) => {
    const s = await bench.nodeletRun(names, timeoutMs);
    await bench.nodeletTeardown(bench.signal);
    return s;
  };
  const settle = () => bench.waitAgentIdle();
  bench.watchForOtherAgents();

  // Warm-up (not counted): the first pod pays for bridge creation, gRPC channels, and the agent's cold code paths.
  progress('warm-up: 1 floor pod, 1 nodelet pod, then 1 batch each of the parallel case (not counted)');
  await floorOnce(['fw']);
  await settle();
  await nodeletOnce(['nw'], singleTimeoutMs);
  await settle();
  const batch = (prefix: string) => Array.from({ length: opts.pods }, (_, i) => `${prefix}-${i + 1}`);
  await floorOnce(batch('fwp'));
  await settle();
  await nodeletOnce(batch('nwp'), parallelTimeoutMs);
  await settle();

  for (let k = 1; k <= opts.reps; k++) {
    // Alternate which goes first, so neither always follows the other's teardown.
    const order = k % 2 ? (['floor', 'nodelet'] as const) : (['nodelet', 'floor'] as const);
    for (const which of order) {
      if (which === 'floor') {
        progress(`1 pod, rep ${k}/${opts.reps}: floor...`);
        const s = await floorOnce([`fs${k}`]);
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
        const s = await floorOnce(batch(`fp${k}`));
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
  res.singleSteps = res.nodelet.single.map((s) => bench.stepsOf(s));
  res.parallelSteps = res.nodelet.parallel.map((s) => bench.stepsOf(s));
  const problems = agent.problemsSince(startEpoch);
  if (problems.length > 0) bench.note(`the agent logged ${problems.length} warnings/errors during the run, e.g. "${problems[0]!.msg}"`);
  const foreignEnd = await bench.foreignPods();
  if (foreignEnd.main + foreignEnd.floor > 0) bench.note(`other pods share the containerds at the end (main ${foreignEnd.main}, floor ${foreignEnd.floor})`);
  return res;
}

// ------------------------------------------------------------------------------------------------------------ reporting

function summary(samples: number[]) {
  return { medianMs: round1(median(samples)), minMs: round1(min(samples)), samplesMs: samples.map(round1) };
}

/** Per step: the median over reps of (single) the pod's time, or (parallel) the last pod's and the median pod's time. */
function stepTable(reps: Map<string, PodSteps>[]) {
  const out: Record<string, { lastMs: number; medianPodMs: number } | undefined> = {};
  for (const { key } of stepNames) {
    const last: number[] = [];
    const mid: number[] = [];
    for (const steps of reps) {
      const ts = [...steps.values()].map((s) => s[key]).filter((t): t is number => t !== undefined);
      if (ts.length !== steps.size) continue;
      last.push(Math.max(...ts));
      mid.push(median(ts));
    }
    out[key] = last.length ? { lastMs: round1(median(last)), medianPodMs: round1(median(mid)) } : undefined;
  }
  return out;
}

function figures(res: Results) {
  const fs = res.floor.single.map((s) => s.elapsedMs);
  const ns = res.nodelet.single.map((s) => s.elapsedMs);
  const fp = res.floor.parallel.map((s) => s.elapsedMs);
  const np = res.nodelet.parallel.map((s) => s.elapsedMs);
  const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;
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
      single: { max: targets.singleRatio, pass: single.ratio <= targets.singleRatio },
      parallel: { max: targets.parallelRatio, pass: parallel.ratio <= targets.parallelRatio },
      peakRss: { maxMB: targets.peakRssMB, pass: res.rss.peakMB < targets.peakRssMB },
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
    nodeletSteps: { single: stepTable(res.singleSteps), parallel: stepTable(res.parallelSteps) },
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

function table(f: Figures, notes: string[]): string {
  const pf = (pass: boolean) => (pass ? 'PASS' : 'MISS');
  const row = (cols: string[], widths: number[]) => cols.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  const w = [25, 12, 12, 8, 9, 4];
  const lines: string[] = [];
  lines.push(`nodelet benchmark: ${f.runtime}, ${f.machine.cpus} CPUs, kernel ${f.machine.kernel}, Node ${f.machine.node}`);
  lines.push(`${f.reps} repetitions each (after 1 warm-up each), floor and nodelet interleaved; time = manifest rename / first CRI call until all pods run`);
  lines.push('');
  lines.push(row(['', 'floor', 'nodelet', 'ratio', 'target', ''], w));
  lines.push(row(['1 pod, median', fmtMs(f.single.floor.medianMs), fmtMs(f.single.nodelet.medianMs), `${f.single.ratio.toFixed(2)}x`, `<= ${targets.singleRatio}x`, pf(f.targets.single.pass)], w));
  lines.push(row(['1 pod, min', fmtMs(f.single.floor.minMs), fmtMs(f.single.nodelet.minMs), `${f.single.ratioOfMins.toFixed(2)}x`], w));
  lines.push(row([`${f.pods} pods at once, median`, fmtMs(f.parallel.floor.medianMs), fmtMs(f.parallel.nodelet.medianMs), `${f.parallel.ratio.toFixed(2)}x`, `<= ${targets.parallelRatio}x`, pf(f.targets.parallel.pass)], w));
  lines.push(row([`${f.pods} pods at once, min`, fmtMs(f.parallel.floor.minMs), fmtMs(f.parallel.nodelet.minMs), `${f.parallel.ratioOfMins.toFixed(2)}x`], w));
  lines.push('');
  const helperPart = f.rss.spawnHelperPeakMB > 0 ? `, of which the spawn helper ${f.rss.spawnHelperPeakMB.toFixed(1)} MB` : '';
  lines.push(`nodelet peak RSS (VmHWM): ${f.rss.peakMB.toFixed(1)} MB${helperPart}  (target < ${targets.peakRssMB} MB: ${pf(f.targets.peakRss.pass)})`);
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
  if (notes.length > 0) {
    lines.push('');
    for (const n of notes) lines.push(`NOTE: ${n}`);
  }
  return lines.join('\n') + '\n';
}

// ------------------------------------------------------------------------------------------------------------ main

async function cleanup(bench: Bench): Promise<string[]> {
  const errors: string[] = [];
  const step = async (what: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      errors.push(`${what}: ${errorText(err)}`);
    }
  };
  bench.stopWatching();
  const agent = bench.agent;
  if (agent?.running) {
    progress('cleanup: removing manifests and waiting for the agent to tear the bench pods down...');
    // Not a cleanup failure yet: what the agent leaves is removed through CRI below.
    await bench.nodeletTeardown().catch((err: unknown) => progress(`cleanup: the agent did not tear down its pods (${errorText(err)}); removing them through CRI`));
  }
  if (agent) {
    progress('cleanup: stopping the agent...');
    await step('stopping the agent', () => agent.stop());
  }
  progress('cleanup: removing bench pods left in either containerd...');
  for (const [name, cri] of bench.containerds()) await step(`${name} containerd`, () => bench.removeBenchPods(cri));
  if (bench.base) await step('temp dir', () => rm(bench.base, { recursive: true, force: true }));
  await step('releasing the tests lock', () => bench.releaseTestsLock());
  bench.main.close();
  bench.floor.close();
  return errors;
}

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message) process.stderr.write(`bench: ${err.message}\n`);
    (err.exitCode === 0 ? process.stdout : process.stderr).write(`${usage}\n`);
    return err.exitCode;
  }

  const abort = new AbortController();
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
    const errors = await cleanup(bench);
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
  const f = res.startup ? figures(res.startup) : undefined;
  let text = f ? table(f, []) : `nodelet benchmark: ${res.runtime}, ${res.machine.cpus} CPUs, kernel ${res.machine.kernel}, Node ${res.machine.node}\n`;
  if (res.probes) text += `\n${probeTable(res.probes)}`;
  if (res.cluster) text += `\n${clusterTable(res.cluster)}`;
  if (bench.notes.length > 0) text += `\n${bench.notes.map((n) => `NOTE: ${n}\n`).join('')}`;
  if (opts.json) {
    process.stderr.write(text);
    const common = f ?? { machine: res.machine, runtime: res.runtime };
    process.stdout.write(JSON.stringify({ ...common, ...(res.probes ? { probeLoad: res.probes } : {}), ...(res.cluster ? { cluster: res.cluster } : {}), notes: bench.notes }, null, 2) + '\n');
  } else {
    process.stdout.write(text);
  }
  return 0;
}

// Explicit exit: stdout is written synchronously (pipe or terminal), and nothing the bench started is left to wait for.
process.exit(await main());
