// The benchmark: nodelet's manifest-to-Running latency against the raw CRI floor of the same containerd build, in one run.
//
// Floor: RunPodSandbox + CreateContainer + StartContainer issued straight over gRPC to the "floor" containerd, whose CNI
// config is the plain reference bridge chain containerd runs itself (what kubelet would get from this containerd).
// nodelet: a static pod manifest renamed into the agent's manifest directory, until the agent's status socket reports
// the pod Running with its IP; the agent runs on the main containerd, whose CNI plugin is the shim back to the agent.
// Floor and nodelet repetitions alternate so machine noise hits both alike. Teardown between repetitions is not timed.
// Each status poll costs the agent CPU (serialising every pod), on a 2-core machine that is busy starting pods: so the
// bench polls every 100 ms until the agent has logged 'Created container' for every pod, then every --poll-ms (5 ms).
// The end is still what the status socket says; the poll's cost is measured and printed.
//
// Usage: node dist/bench/bench.js [--reps N] [--pods N] [--json] [--poll-ms N] [--eager-poll] [--agent-v N] [--agent-log FILE]
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync, readFileSync, renameSync, type WriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { cpus, release, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { fetchPods } from '../src/agent/status-api.js';
import { CriClient } from '../src/cri/client.js';
import { hostDnsConfig } from '../src/host/node.js';
import { podNamespaceLabel } from '../src/pod/labels.js';
import { buildContainerConfig, buildSandboxConfig, type NodeRuntimeSettings } from '../src/pod/runtime-config.js';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const nodeBinary = join(repoRoot, 'node_modules/.bin/node');
const agentEntry = join(repoRoot, 'bin/nodelet.js');
const setpriv = '/usr/bin/setpriv';

const mainEndpoint = 'unix:///run/nodelet/containerd/containerd.sock';
const floorEndpoint = 'unix:///run/nodelet/containerd-floor/containerd.sock';
const cniSocket = '/run/nodelet/cni.sock';
/** Held by every test run that starts an agent (scripts/test.sh, the brief's flock rule): one agent per machine. */
const testsLock = '/run/nodelet/tests.lock';
const busybox = 'localhost/nodelet/busybox:1.35';
/** Node name given to the agent: static pods are named `<name>-nodelet-bench`. */
const benchNode = 'nodelet-bench';
/** Every bench pod (floor and nodelet) lives in this namespace, so cleanup finds exactly the bench's runtime objects. */
const benchNamespace = 'nodelet-bench';

const targets = { singleRatio: 1.25, parallelRatio: 1.15, peakRssMB: 100 };
const singleTimeoutMs = 60_000;
const parallelTimeoutMs = 300_000;
const teardownTimeoutMs = 120_000;
const otherAgentPollMs = 20_000;
const otherAgentWaitMs = 15 * 60_000;

// ------------------------------------------------------------------------------------------------------------ options

interface Options {
  reps: number;
  pods: number;
  json: boolean;
  pollMs: number;
  eagerPoll: boolean;
  agentV: number;
  agentLog: string;
}

const usage = `usage: node dist/bench/bench.js [--reps N] [--pods N] [--json] [--poll-ms N] [--eager-poll] [--agent-v N] [--agent-log FILE]
  --reps N     repetitions of each measurement (default 5)
  --pods N     pods started at once in the parallel case (default 30)
  --json       print the figures as JSON on stdout (the table then goes to stderr)
  --poll-ms N  interval between polls of the agent's status socket once every pod has its container created (default 5)
  --eager-poll poll every --poll-ms from the manifest rename on, not only once the agent logged 'Created container'
               for every pod (the answer then costs the agent CPU while it is busiest: for comparison only)
  --agent-v N  the agent's log verbosity (-v), for diagnosis only (default 0)
  --agent-log FILE  also write the agent's log lines to FILE, for diagnosis
Needs both containerds of the rig: bash scripts/runtime.sh up && NODELET_RUNTIME_INSTANCE=floor bash scripts/runtime.sh up`;

function parseOptions(argv: string[]): Options {
  const opts: Options = { reps: 5, pods: 30, json: false, pollMs: 5, eagerPoll: false, agentV: 0, agentLog: '' };
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
      case '--poll-ms': opts.pollMs = int(flag, value(), 1); break;
      case '--agent-v': opts.agentV = int(flag, value(), 0); break;
      case '--agent-log': opts.agentLog = value() ?? ''; if (!opts.agentLog) throw new UsageError('--agent-log needs a file'); break;
      case '--json': opts.json = true; break;
      case '--eager-poll': opts.eagerPoll = true; break;
      case '-h': case '--help': throw new UsageError('', 0);
      default: throw new UsageError(`unknown argument: ${argv[i]}`);
    }
  }
  // The agent's pod subnet is a /24: leave room for pods of someone else's tests on the same containerd.
  if (opts.pods > 200) throw new UsageError('--pods is limited to 200 (the pod subnets are /24)');
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

/** A field of /proc/<pid>/status in MB (VmRSS, VmHWM). */
function memoryMB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
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

  constructor(base: string, private readonly verbosity: number, private readonly logFile: string) {
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
      agentEntry,
      '--pod-manifest-path', this.manifestDir,
      '--container-runtime-endpoint', mainEndpoint,
      '--root-dir', this.rootDir,
      '--pod-logs-dir', this.podLogsDir,
      '--hostname-override', benchNode,
      '--logging-format', 'json',
      '-v', String(this.verbosity),
    ];
    // Own process group: a terminal's Ctrl-C reaches only the bench, which then has the agent tear its pods down.
    // setpriv (util-linux) execs the agent with SIGTERM as its parent-death signal, so even a SIGKILLed bench leaves no
    // agent behind once it drops the tests lock.
    if (this.logFile) this.logCopy = createWriteStream(this.logFile);
    const [command, ...argv] = existsSync(setpriv) ? [setpriv, '--pdeathsig', 'TERM', nodeBinary, ...args] : [nodeBinary, ...args];
    const child = spawn(command!, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd: repoRoot, detached: true });
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

  /** Pods (namespace/name) with a `msg` log line at index `from` or later; `from` moves past what was read. */
  podsLogged(msg: string, cursor: { from: number }, into: Set<string>): void {
    for (; cursor.from < this.lines.length; cursor.from++) {
      const l = this.lines[cursor.from]!;
      if (l.msg === msg && l.pod) into.add(l.pod);
    }
  }

  /** Warnings and errors the agent logged after `sinceEpochMs` (a healthy run has none about bench pods). */
  problemsSince(sinceEpochMs: number): LogLine[] {
    return this.lines.filter((l) => l.time >= sinceEpochMs && (l.level ?? 0) >= 40);
  }

  cpuMs(): { self: number; children: number } {
    return processCpuMs(this.pid!);
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
  { key: 'observed', label: 'seen Running+IP by the bench poll' },
];

interface NodeletSample {
  elapsedMs: number;
  t0Epoch: number;
  pods: string[];
  observedAt: Map<string, number>;
  rttsMs: number[];
  agentCpuMs: number;
  agentChildCpuMs: number;
  benchCpuMs: number;
  /** When the fast polling began (ms after the rename). */
  fastPollFromMs: number;
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

  constructor(private readonly opts: Options, readonly signal: AbortSignal) {}

  async prepare(): Promise<void> {
    const signal = this.signal;
    for (const [name, cri] of [['main', this.main], ['floor', this.floor]] as const) {
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
    return { main: await count(this.main), floor: await count(this.floor) };
  }

  async startAgent(): Promise<void> {
    this.agent = new BenchAgent(this.base, this.opts.agentV, this.opts.agentLog);
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
    const signal = this.signal;
    // Written aside as dotfiles (which the agent ignores), then renamed in: the agent never sees a half file.
    for (const name of names) await writeFile(join(agent.manifestDir, `.${name}.json.tmp`), manifestText(name));
    const staticNames = names.map((n) => `${n}-${benchNode}`);
    const wanted = new Set(staticNames);
    const observedAt = new Map<string, number>();
    const rttsMs: number[] = [];
    const created = new Set<string>();
    const cursor = { from: agent.lines.length };
    let fastPollFromMs = this.opts.eagerPoll ? 0 : NaN;
    let lastPoll = -Infinity;
    const cpu0 = agent.cpuMs();
    const benchCpu0 = process.cpuUsage();
    const t0 = now();
    for (const name of names) renameSync(join(agent.manifestDir, `.${name}.json.tmp`), join(agent.manifestDir, `${name}.json`));
    for (;;) {
      if (!agent.running) throw new Error(`nodelet exited during the measurement:\n${agent.recentOutput()}`);
      if (Number.isNaN(fastPollFromMs)) {
        agent.podsLogged('Created container', cursor, created);
        if (staticNames.every((n) => created.has(`${benchNamespace}/${n}`))) fastPollFromMs = now() - t0;
      }
      // Before the fast phase the socket is asked only every 100 ms: a failed pod or a changed log text still shows.
      if (!Number.isNaN(fastPollFromMs) || now() - lastPoll >= 100) {
        const sent = now();
        lastPoll = sent;
        const pods = await fetchPods(agent.socket, 5_000);
        const answered = now();
        rttsMs.push(answered - sent);
        for (const p of pods) {
          const name = p.metadata?.name ?? '';
          if (!wanted.has(name) || observedAt.has(name)) continue;
          if (isRunning(p)) observedAt.set(name, answered - t0);
          else if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded') throw new Error(`bench pod ${name} ended ${p.status.phase}: ${JSON.stringify(p.status)}`);
        }
        if (observedAt.size === wanted.size) {
          const cpu1 = agent.cpuMs();
          const benchCpu = process.cpuUsage(benchCpu0);
          if (Number.isNaN(fastPollFromMs)) this.note("pods were Running before the agent logged 'Created container' for each; their end was seen by the 100 ms poll");
          return {
            elapsedMs: answered - t0,
            t0Epoch: toEpoch(t0),
            pods: staticNames,
            observedAt,
            rttsMs,
            agentCpuMs: cpu1.self - cpu0.self,
            agentChildCpuMs: cpu1.children - cpu0.children,
            benchCpuMs: (benchCpu.user + benchCpu.system) / 1000,
            fastPollFromMs,
          };
        }
        if (answered - t0 > timeoutMs) {
          const pending = staticNames.filter((n) => !observedAt.has(n));
          const sample = pods.find((p) => p.metadata?.name === pending[0]);
          throw new Error(`${pending.length} of ${names.length} pods not Running with an IP after ${timeoutMs / 1000} s; e.g. ${pending[0]}: ${JSON.stringify(sample?.status ?? 'not listed')}\n${agent.recentOutput()}`);
        }
      }
      await delay(this.opts.pollMs, undefined, { signal });
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

  /** Extra agent CPU while the bench polls its status every pollMs, with `podsListed` pods in the answer. */
  async pollCost(): Promise<{ idleCpuPct: number; pollingCpuPct: number; rttMs: number; podsListed: number }> {
    const agent = this.agent!;
    const windowMs = 2_000;
    const podsListed = (await fetchPods(agent.socket)).length;
    const a = agent.cpuMs().self;
    await delay(windowMs, undefined, { signal: this.signal });
    const b = agent.cpuMs().self;
    const rtts: number[] = [];
    const end = now() + windowMs;
    while (now() < end) {
      const s = now();
      await fetchPods(agent.socket);
      rtts.push(now() - s);
      await delay(this.opts.pollMs, undefined, { signal: this.signal });
    }
    const c = agent.cpuMs().self;
    return { idleCpuPct: ((b - a) / windowMs) * 100, pollingCpuPct: ((c - b) / windowMs) * 100, rttMs: median(rtts), podsListed };
  }
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause ? `${err.message} (${errorText(err.cause)})` : err.message;
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
  rss: { idleStartMB: number; idleEndMB: number; peakMB: number };
  pollCost: { single?: Awaited<ReturnType<Bench['pollCost']>>; parallel?: Awaited<ReturnType<Bench['pollCost']>> };
}

async function run(bench: Bench, opts: Options): Promise<Results> {
  await bench.prepare();
  await bench.takeTestsLock();
  await bench.waitForOtherAgents();
  // Leftovers of an earlier bench run that died hard (no other bench runs: this one holds the tests lock).
  await bench.removeBenchPods(bench.main, bench.signal);
  await bench.removeBenchPods(bench.floor, bench.signal);
  await bench.removeStaleTempDirs();
  const foreign = await bench.foreignPods();
  if (foreign.main + foreign.floor > 0) bench.note(`other pods share the containerds at the start (main ${foreign.main}, floor ${foreign.floor}); figures may be disturbed`);
  await bench.startAgent();
  const agent = bench.agent!;
  const startEpoch = Date.now();
  const idleStartMB = memoryMB(agent.pid!, 'VmRSS');
  progress(`agent idle; RSS ${idleStartMB.toFixed(1)} MB`);
  const version = await bench.floor.version();

  const res: Results = {
    machine: { cpus: cpus().length, kernel: release(), node: process.version },
    runtime: `${version.runtimeName} ${version.runtimeVersion}`,
    options: opts,
    floor: { single: [], parallel: [] },
    nodelet: { single: [], parallel: [] },
    singleSteps: [],
    parallelSteps: [],
    rss: { idleStartMB, idleEndMB: NaN, peakMB: NaN },
    pollCost: {},
  };

  const floorOnce = async (names: string[]) => {
    const s = await bench.floorRun(names);
    await bench.removeBenchPods(bench.floor, bench.signal);
    return s;
  };
  const nodeletOnce = async (names: string[], timeoutMs: number, measurePollCost?: 'single' | 'parallel') => {
    const s = await bench.nodeletRun(names, timeoutMs);
    if (measurePollCost) {
      progress(`  measuring the status poll's cost with ${names.length} pod(s) listed...`);
      res.pollCost[measurePollCost] = await bench.pollCost();
    }
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
        const s = await nodeletOnce([`ns${k}`], singleTimeoutMs, k === 1 ? 'single' : undefined);
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
        const s = await nodeletOnce(batch(`np${k}`), parallelTimeoutMs, k === 1 ? 'parallel' : undefined);
        res.nodelet.parallel.push(s);
        progress(`  nodelet ${fmtMs(s.elapsedMs)}`);
      }
      await settle();
    }
  }

  bench.stopWatching();
  res.rss.peakMB = memoryMB(agent.pid!, 'VmHWM');
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
  const rtts = (xs: NodeletSample[]) => xs.flatMap((s) => s.rttsMs);
  const perPodCpu = (xs: NodeletSample[], pods: number) => ({
    selfMs: round1(median(xs.map((s) => s.agentCpuMs / pods))),
    pluginsMs: round1(median(xs.map((s) => s.agentChildCpuMs / pods))),
  });
  return {
    machine: res.machine,
    runtime: res.runtime,
    reps: res.options.reps,
    pods: res.options.pods,
    pollIntervalMs: res.options.pollMs,
    single,
    parallel,
    targets: {
      single: { max: targets.singleRatio, pass: single.ratio <= targets.singleRatio },
      parallel: { max: targets.parallelRatio, pass: parallel.ratio <= targets.parallelRatio },
      peakRss: { maxMB: targets.peakRssMB, pass: res.rss.peakMB < targets.peakRssMB },
    },
    rss: { peakMB: round1(res.rss.peakMB), idleAfterStartMB: round1(res.rss.idleStartMB), idleAfterRunMB: round1(res.rss.idleEndMB) },
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
    poll: {
      rttMedianMs: { single: round2(median(rtts(res.nodelet.single))), parallel: round2(median(rtts(res.nodelet.parallel))) },
      pollsPerMeasurement: { single: median(res.nodelet.single.map((s) => s.rttsMs.length)), parallel: median(res.nodelet.parallel.map((s) => s.rttsMs.length)) },
      eager: res.options.eagerPoll,
      fastPollFromMs: { single: round1(median(res.nodelet.single.map((s) => s.fastPollFromMs))), parallel: round1(median(res.nodelet.parallel.map((s) => s.fastPollFromMs))) },
      benchCpuMs: {
        floorSingle: round1(median(res.floor.single.map((s) => s.benchCpuMs))),
        nodeletSingle: round1(median(res.nodelet.single.map((s) => s.benchCpuMs))),
        floorParallel: round1(median(res.floor.parallel.map((s) => s.benchCpuMs))),
        nodeletParallel: round1(median(res.nodelet.parallel.map((s) => s.benchCpuMs))),
      },
      agentCpuPct: res.pollCost,
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
  lines.push(`nodelet peak RSS (VmHWM): ${f.rss.peakMB.toFixed(1)} MB  (target < ${targets.peakRssMB} MB: ${pf(f.targets.peakRss.pass)})`);
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
  lines.push('');
  const pc = f.poll.agentCpuPct;
  const pcText = (x: typeof pc.single) => (x ? `${x.idleCpuPct.toFixed(1)}% -> ${x.pollingCpuPct.toFixed(1)}% of a core with ${x.podsListed} pods listed (${x.rttMs.toFixed(2)} ms/request)` : '-');
  const pollWhen = f.poll.eager
    ? 'from the rename on (--eager-poll)'
    : `once every pod's container was created (at ${f.poll.fastPollFromMs.single.toFixed(0)} ms / ${f.poll.fastPollFromMs.parallel.toFixed(0)} ms), every 100 ms before`;
  lines.push(`status poll every ${f.pollIntervalMs} ms ${pollWhen}:`);
  lines.push(`  round trip median ${f.poll.rttMedianMs.single} ms (1 pod) / ${f.poll.rttMedianMs.parallel} ms (${f.pods} pods); ` +
    `${f.poll.pollsPerMeasurement.single} / ${f.poll.pollsPerMeasurement.parallel} polls per measurement`);
  lines.push(`  agent CPU, idle -> polling nonstop every ${f.pollIntervalMs} ms: ${pcText(pc.single)}; ${pcText(pc.parallel)}`);
  const bc = f.poll.benchCpuMs;
  lines.push(`  the bench's own CPU per measurement: 1 pod floor ${bc.floorSingle} ms / nodelet ${bc.nodeletSingle} ms; ${f.pods} pods floor ${bc.floorParallel} ms / nodelet ${bc.nodeletParallel} ms`);
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
  await step('main containerd', () => bench.removeBenchPods(bench.main));
  await step('floor containerd', () => bench.removeBenchPods(bench.floor));
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
  let res: Results | undefined;
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
  const f = figures(res);
  const text = table(f, bench.notes);
  if (opts.json) {
    process.stderr.write(text);
    process.stdout.write(JSON.stringify({ ...f, notes: bench.notes }, null, 2) + '\n');
  } else {
    process.stdout.write(text);
  }
  return 0;
}

// Explicit exit: stdout is written synchronously (pipe or terminal), and nothing the bench started is left to wait for.
process.exit(await main());
