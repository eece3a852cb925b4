// The benchmark: nodelet's manifest-to-Running latency against the raw CRI floor of the same containerd build, in one run.
//
// Floor: RunPodSandbox + CreateContainer + StartContainer issued straight over gRPC to the "floor" containerd, whose CNI
// config is the plain reference bridge chain containerd runs itself (what kubelet would get from this containerd).
// nodelet: a static pod manifest renamed into the agent's manifest directory, until the agent's status socket reports
// the pod Running with its IP; the agent runs on the main containerd, whose CNI plugin is the shim back to the agent.
// Floor and nodelet repetitions alternate so machine noise hits both alike. Teardown between repetitions is not timed.
//
// Usage: node dist/bench/bench.js [--reps N] [--pods N] [--json] [--poll-ms N] [--agent-v N]
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { cpus, release, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
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

const mainEndpoint = 'unix:///run/nodelet/containerd/containerd.sock';
const floorEndpoint = 'unix:///run/nodelet/containerd-floor/containerd.sock';
const cniSocket = '/run/nodelet/cni.sock';
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
  agentV: number;
}

const usage = `usage: node dist/bench/bench.js [--reps N] [--pods N] [--json] [--poll-ms N] [--agent-v N]
  --reps N     repetitions of each measurement (default 5)
  --pods N     pods started at once in the parallel case (default 30)
  --json       print the figures as JSON on stdout (the table then goes to stderr)
  --poll-ms N  interval between polls of the agent's status socket (default 5)
  --agent-v N  the agent's log verbosity (-v), for diagnosis only (default 0)
Needs both containerds of the rig: bash scripts/runtime.sh up && NODELET_RUNTIME_INSTANCE=floor bash scripts/runtime.sh up`;

function parseOptions(argv: string[]): Options {
  const opts: Options = { reps: 5, pods: 30, json: false, pollMs: 5, agentV: 0 };
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
      case '--json': opts.json = true; break;
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

/** Processes (other than `exclude`) whose command line names bin/nodelet.js (as `pgrep -f` finds them) or a Jest integration run. */
function otherAgentProcesses(exclude: Set<number>): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || exclude.has(Number(entry))) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    } catch {
      continue;
    }
    // An integration test run starts agents one after another: a gap between two is no time to start ours.
    const integrationRun = cmdline.includes('jest') && cmdline.includes('integration');
    if (cmdline.includes('bin/nodelet.js') || integrationRun) found.push(`${entry} ${cmdline.slice(0, 160)}`);
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

  constructor(base: string, private readonly verbosity: number) {
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
    // Not detached: if the bench dies hard, a terminal's Ctrl-C or the session's end still reaches the agent.
    const child = spawn(nodeBinary, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: repoRoot });
    this.child = child;
    this.exited = new Promise((r) => child.once('exit', () => r()));
    child.stdout!.setEncoding('utf8').on('data', (d: string) => this.remember(d));
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

  /** Warnings and errors the agent logged after `sinceEpochMs` (a healthy run has none about bench pods). */
  problemsSince(sinceEpochMs: number): LogLine[] {
    return this.lines.filter((l) => l.time >= sinceEpochMs && (l.level ?? 0) >= 40);
  }

  cpuMs(): { self: number; children: number } {
    return processCpuMs(this.pid!);
  }

  /** SIGTERM, then SIGKILL after 15 s. The agent leaves pods running: the caller removes them first. */
  async stop(): Promise<void> {
    if (!this.child || !this.running) return;
    this.child.kill('SIGTERM');
    const stopped = await Promise.race([this.exited!.then(() => true), delay(15_000).then(() => false)]);
    if (!stopped) {
      progress('agent ignored SIGTERM for 15 s; killing it');
      this.child.kill('SIGKILL');
      await this.exited;
    }
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
}

interface FloorSample {
  elapsedMs: number;
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

  /** Waits (polling every 20 s, up to 15 minutes) until no other nodelet agent runs and the CNI socket is free. */
  async waitForOtherAgents(): Promise<void> {
    const deadline = now() + otherAgentWaitMs;
    for (;;) {
      const others = otherAgentProcesses(new Set([process.pid]));
      const socketBusy = await cniSocketInUse();
      if (others.length === 0 && !socketBusy) return;
      if (now() > deadline) throw new Error(`another nodelet agent still runs after 15 minutes: ${others.join('; ') || cniSocket + ' in use'}`);
      progress(`another nodelet agent runs (${others.join('; ') || `${cniSocket} in use`}); waiting (checking every 20 s, up to 15 min)...`);
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
    this.agent = new BenchAgent(this.base, this.opts.agentV);
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

  checkNoOtherAgent(): void {
    const others = otherAgentProcesses(new Set([process.pid, this.agent?.pid ?? -1]));
    if (others.length > 0) this.note(`another nodelet process appeared during the run (${others.join('; ')}); figures may be disturbed`);
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
    const containerId = await this.floor.createContainer(sandboxId, buildContainerConfig(pod, spec, 0), sandboxConfig, { signal });
    const t2 = now();
    await this.floor.startContainer(containerId, { signal });
    const t3 = now();
    return { run: t1 - t0, create: t2 - t1, start: t3 - t2 };
  }

  async floorRun(names: string[]): Promise<FloorSample> {
    const pods = names.map(floorPod);
    const t0 = now();
    const results = await Promise.allSettled(pods.map((p) => this.floorStartPod(p)));
    const elapsedMs = now() - t0;
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw new Error(`floor pod failed to start: ${errorText(failed.reason)}`, { cause: failed.reason });
    const ok = results.map((r) => (r as PromiseFulfilledResult<{ run: number; create: number; start: number }>).value);
    return {
      elapsedMs,
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
    const cpu0 = agent.cpuMs();
    const t0 = now();
    for (const name of names) renameSync(join(agent.manifestDir, `.${name}.json.tmp`), join(agent.manifestDir, `${name}.json`));
    let last: V1Pod[] = [];
    for (;;) {
      if (!agent.running) throw new Error(`nodelet exited during the measurement:\n${agent.recentOutput()}`);
      const sent = now();
      last = await fetchPods(agent.socket, 5_000);
      const answered = now();
      rttsMs.push(answered - sent);
      for (const p of last) {
        const name = p.metadata?.name ?? '';
        if (!wanted.has(name) || observedAt.has(name)) continue;
        if (isRunning(p)) observedAt.set(name, answered - t0);
        else if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded') throw new Error(`bench pod ${name} ended ${p.status.phase}: ${JSON.stringify(p.status)}`);
      }
      if (observedAt.size === wanted.size) {
        const cpu1 = agent.cpuMs();
        return {
          elapsedMs: answered - t0,
          t0Epoch: toEpoch(t0),
          pods: staticNames,
          observedAt,
          rttsMs,
          agentCpuMs: cpu1.self - cpu0.self,
          agentChildCpuMs: cpu1.children - cpu0.children,
        };
      }
      if (answered - t0 > timeoutMs) {
        const pending = staticNames.filter((n) => !observedAt.has(n));
        const sample = last.find((p) => p.metadata?.name === pending[0]);
        throw new Error(`${pending.length} of ${names.length} pods not Running with an IP after ${timeoutMs / 1000} s; e.g. ${pending[0]}: ${JSON.stringify(sample?.status ?? 'not listed')}\n${agent.recentOutput()}`);
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
  await bench.waitForOtherAgents();
  // Leftovers of an earlier bench run that died hard.
  await bench.removeBenchPods(bench.main, bench.signal);
  await bench.removeBenchPods(bench.floor, bench.signal);
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
      bench.checkNoOtherAgent();
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
      bench.checkNoOtherAgent();
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
  const perPodCpu = (xs: NodeletSample[], pods: number) => round1(median(xs.map((s) => (s.agentCpuMs + s.agentChildCpuMs) / pods)));
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
      rttMedianMs: { single: round1(median(rtts(res.nodelet.single)) * 100) / 100, parallel: round1(median(rtts(res.nodelet.parallel)) * 100) / 100 },
      pollsPerMeasurement: { single: median(res.nodelet.single.map((s) => s.rttsMs.length)), parallel: median(res.nodelet.parallel.map((s) => s.rttsMs.length)) },
      agentCpuPct: res.pollCost,
    },
  };
}

type Figures = ReturnType<typeof figures>;

function table(f: Figures, notes: string[]): string {
  const pf = (pass: boolean) => (pass ? 'PASS' : 'MISS');
  const row = (cols: string[], widths: number[]) => cols.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  const w = [22, 12, 12, 8, 9, 4];
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
  lines.push(`  1 pod    floor   ${f.single.floor.samplesMs.join(', ')}`);
  lines.push(`  1 pod    nodelet ${f.single.nodelet.samplesMs.join(', ')}`);
  lines.push(`  ${String(f.pods).padEnd(2)} pods  floor   ${f.parallel.floor.samplesMs.join(', ')}`);
  lines.push(`  ${String(f.pods).padEnd(2)} pods  nodelet ${f.parallel.nodelet.samplesMs.join(', ')}`);
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
  lines.push(`agent CPU per pod (self + CNI plugins it ran): ${f.agentCpuPerPodMs.single} ms (1 pod), ${f.agentCpuPerPodMs.parallel} ms (${f.pods} pods)`);
  lines.push('');
  const pc = f.poll.agentCpuPct;
  const pcText = (x: typeof pc.single) => (x ? `${x.idleCpuPct.toFixed(1)}% -> ${x.pollingCpuPct.toFixed(1)}% of a core with ${x.podsListed} pods listed (${x.rttMs.toFixed(2)} ms/request)` : '-');
  lines.push(`status poll every ${f.pollIntervalMs} ms: round trip median ${f.poll.rttMedianMs.single} ms (1 pod) / ${f.poll.rttMedianMs.parallel} ms (${f.pods} pods); ` +
    `${f.poll.pollsPerMeasurement.single} / ${f.poll.pollsPerMeasurement.parallel} polls per measurement`);
  lines.push(`agent CPU without -> with polling: ${pcText(pc.single)}; ${pcText(pc.parallel)}`);
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
  const agent = bench.agent;
  if (agent?.running) {
    progress('cleanup: removing manifests and waiting for the agent to tear the bench pods down...');
    await step('agent teardown', () => bench.nodeletTeardown());
  }
  if (agent) {
    progress('cleanup: stopping the agent...');
    await step('stopping the agent', () => agent.stop());
  }
  progress('cleanup: removing bench pods left in either containerd...');
  await step('main containerd', () => bench.removeBenchPods(bench.main));
  await step('floor containerd', () => bench.removeBenchPods(bench.floor));
  if (bench.base) await step('temp dir', () => rm(bench.base, { recursive: true, force: true }));
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
    process.stderr.write(`${usage}\n`);
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
  try {
    res = await run(bench, opts);
  } catch (err) {
    failure = err;
  } finally {
    const errors = await cleanup(bench);
    for (const e of errors) progress(`cleanup problem: ${e}`);
    if (errors.length > 0 && !failure) failure = new Error('cleanup failed');
  }
  if (abort.signal.aborted) {
    progress('interrupted; bench pods, agent and temp files removed');
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
