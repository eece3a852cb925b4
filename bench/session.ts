// One bench run's hold on the machine: both containerds, the tests lock, other agents, leftovers, the agent, teardown, notes.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { CriClient } from '../src/cri/client.js';
import { BenchAgent, mainEndpoint } from './agent.js';
import { Floor, type FloorSample } from './floor.js';
import { BenchKubelet, kubeletEndpoint } from './kubelet.js';
import type { Options } from './options.js';
import { otherAgentProcesses } from './procfs.js';
import { listPods } from './status-client.js';
import { cleanupSteps, errorText, now, progress } from './util.js';
import { benchNamespace, benchPods, busybox, podNamespaceLabel } from './workload.js';

const cniSocket = '/run/nodelet/cni.sock';
/** The rig's pid file of the main containerd (its CPU during the probe-load window is printed beside the agent's). */
export const mainPidFile = '/run/nodelet/containerd.pid';
/** Held by every test run that starts an agent (scripts/test.sh, the brief's flock rule): one agent per machine. */
const testsLock = '/run/nodelet/tests.lock';
// Generous: a TCG guest (npm run bench:vm) tears 30 pods down in minutes.
const teardownTimeoutMs = 600_000;
const otherAgentPollMs = 20_000;
const otherAgentWaitMs = 15 * 60_000;

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

export class Bench {
  readonly main = new CriClient(mainEndpoint);
  readonly floor = new Floor();
  base = '';
  agent?: BenchAgent;
  /** The real kubelet standalone, when --peers has it and the startup or probes phase runs (the cluster phase runs its own). */
  kubelet?: BenchKubelet;
  private kubeletCri?: CriClient;
  /** Warnings worth printing with the results (other agents appearing, foreign pods, agent warnings). */
  readonly notes: string[] = [];

  constructor(readonly opts: Options, readonly signal: AbortSignal) {}

  /** The containerds the chosen phases use: the floor only for the start-up and cluster measurements. */
  containerds(): (readonly ['main' | 'floor' | 'kubelet', CriClient])[] {
    const out: (readonly ['main' | 'floor' | 'kubelet', CriClient])[] = [['main', this.main]];
    if (this.usesFloor()) out.push(['floor', this.floor.cri]);
    if (this.usesKubelet()) out.push(['kubelet', (this.kubeletCri ??= new CriClient(kubeletEndpoint))]);
    return out;
  }

  usesKubelet(): boolean {
    return this.opts.peers.has('kubelet') && (this.opts.phases.has('startup') || this.opts.phases.has('probes') || this.opts.phases.has('cluster'));
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
        throw new Error(`${name} containerd is not answering at ${cri.target} (start it with ${name === 'main' ? '' : `NODELET_RUNTIME_INSTANCE=${name} `}bash scripts/runtime.sh up)`, { cause: err });
      }
      if (!(await cri.imageStatus(busybox, { signal, timeoutMs: 10_000 }))) {
        throw new Error(`${busybox} is not in the ${name} containerd (run the rig's up again)`);
      }
    }
    this.base = await mkdtemp(join(tmpdir(), 'nodelet-bench-'));
    await this.floor.prepare(join(this.base, 'floor-pod-logs'));
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

  /**
   * Waits (polling every 20 s, up to 15 minutes) until no other nodelet agent runs and the CNI socket is free; with
   * `socketOnly` (--no-wait, the soak), until the CNI socket is free: an agent serving it shares the rig's containerd,
   * while agents on other containerds are only noise in the figures, each noted.
   */
  async waitForOtherAgents({ socketOnly = false } = {}): Promise<void> {
    const deadline = now() + otherAgentWaitMs;
    for (;;) {
      const others = otherAgentProcesses(new Set([process.pid]), this.base);
      const socketBusy = await cniSocketInUse();
      if (!socketBusy && (socketOnly || others.length === 0)) {
        for (const p of others) progress(`NOTE: measuring while another nodelet agent or test run is active: ${p}`);
        return;
      }
      if (now() > deadline) throw new Error(`another nodelet agent still runs after 15 minutes: ${others.join('; ') || cniSocket + ' in use'}`);
      progress(`another nodelet agent or test run is active (${others.join('; ') || `${cniSocket} in use`}); waiting (checking every 20 s, up to 15 min)...`);
      await delay(otherAgentPollMs, undefined, { signal: this.signal });
    }
  }

  /** Counts runtime pods that are not the bench's (someone else's tests share the containerd: noise to report). */
  async foreignPods(): Promise<{ main: number; floor: number; kubelet: number }> {
    const count = async (cri: CriClient) =>
      (await cri.listPodSandbox({ state: 'SANDBOX_READY' }, { signal: this.signal, timeoutMs: 10_000 })).filter(
        (s) => s.labels[podNamespaceLabel] !== benchNamespace,
      ).length;
    const kubeletCri = this.containerds().find(([name]) => name === 'kubelet')?.[1];
    return { main: await count(this.main), floor: this.usesFloor() ? await count(this.floor.cri) : 0, kubelet: kubeletCri ? await count(kubeletCri) : 0 };
  }

  /** Starts the agent (standalone, or with `flags` in a directory of its own under the bench's), with --agent-config's file. */
  async startAgent(flags: string[] = [], dir = this.base): Promise<void> {
    const config = this.opts.agentConfig ? ['--config', this.opts.agentConfig] : [];
    this.agent = new BenchAgent(dir, this.opts.agentV, this.opts.agentLog, this.opts.agentCpuProf !== '' || this.opts.agentHeapProf !== '', [...config, ...flags]);
    await this.agent.start(this.signal);
    progress(`agent started (pid ${this.agent.pid}); waiting until it is idle...`);
    await this.waitAgentIdle();
  }

  /** Starts the real kubelet on its containerd instance (after the leftovers of a run that died are put back). */
  async startKubelet(): Promise<void> {
    const { opts } = this;
    // The same one on a restart: it keeps the record of the host as it was before kubelet first ran.
    this.kubelet ??= new BenchKubelet(this.base, { maxPods: Math.max(opts.pods, opts.bigPods, opts.probePods), logFile: opts.kubeletLog });
    progress('kubelet: starting standalone (its own containerd)...');
    await this.kubelet.start(this.signal);
    progress(`kubelet started (pid ${this.kubelet.pid}; /pods on 127.0.0.1:${this.kubelet.ports.readOnlyPort}); waiting until it is idle...`);
    await this.kubelet.waitIdle(this.signal);
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

  // ---- runtime pods

  /** Starts these floor pods at once (timed), then removes them (timed with `timedTeardown`: the floor's own teardown). */
  async floorOnce(names: string[], timedTeardown = false): Promise<FloorSample> {
    const sample = await this.floor.run(names, this.signal);
    if (timedTeardown) sample.teardownMs = await this.floor.teardown(this.signal);
    await this.removeBenchPods(this.floor.cri, this.signal);
    return sample;
  }

  /** StopPodSandbox + RemovePodSandbox for every bench sandbox on a containerd, until none is left. */
  async removeBenchPods(cri: CriClient, signal?: AbortSignal): Promise<void> {
    const deadline = now() + teardownTimeoutMs;
    for (;;) {
      const sandboxes = await cri.listPodSandbox(benchPods, { timeoutMs: 30_000, ...(signal ? { signal } : {}) });
      const containers = await cri.listContainers(benchPods, { timeoutMs: 30_000, ...(signal ? { signal } : {}) });
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

  /** Removes the bench manifests and waits until the agent has torn their pods down in the runtime and its status. */
  async nodeletTeardown(signal?: AbortSignal, timeoutMs = teardownTimeoutMs): Promise<void> {
    const agent = this.agent!;
    for (const f of await readdir(agent.manifestDir).catch(() => [] as string[])) await rm(join(agent.manifestDir, f), { force: true });
    const deadline = now() + timeoutMs;
    for (;;) {
      const opts = { timeoutMs: 30_000, ...(signal ? { signal } : {}) };
      const [sandboxes, containers] = await Promise.all([this.main.listPodSandbox(benchPods, opts), this.main.listContainers(benchPods, opts)]);
      const listed = agent.running ? (await listPods(agent.socket)).filter((p) => p.metadata?.namespace === benchNamespace).length : 0;
      if (sandboxes.length + containers.length + listed === 0) return;
      if (!agent.running) throw new Error(`nodelet exited during teardown:\n${agent.recentOutput()}`);
      if (now() > deadline) throw new Error(`nodelet did not tear down the bench pods within ${timeoutMs / 1000} s (${sandboxes.length} sandboxes, ${containers.length} containers, ${listed} pods in its status)`);
      await delay(100, undefined, signal ? { signal } : undefined);
    }
  }

  /** Tears everything down: the bench pods (through the agent, then CRI), the agent, the temp dir, the tests lock. */
  async cleanup(): Promise<string[]> {
    const { errors, step } = cleanupSteps();
    this.stopWatching();
    const agent = this.agent;
    if (agent?.running) {
      progress('cleanup: removing manifests and waiting for the agent to tear the bench pods down...');
      // Not a cleanup failure yet: what the agent leaves is removed through CRI below.
      await this.nodeletTeardown().catch((err: unknown) => progress(`cleanup: the agent did not tear down its pods (${errorText(err)}); removing them through CRI`));
    }
    if (agent) {
      progress('cleanup: stopping the agent...');
      await step('stopping the agent', () => agent.stop());
    }
    const kubelet = this.kubelet;
    if (kubelet) {
      progress('cleanup: kubelet: stopping its pods, stopping it, putting the host back...');
      await step('kubelet', () => kubelet.cleanupOrThrow());
    }
    // Only while holding the tests lock: without it, the bench pods in the containerds are another run's.
    if (this.lockHeld) {
      progress('cleanup: removing bench pods left in the containerds...');
      for (const [name, cri] of this.containerds()) await step(`${name} containerd`, () => this.removeBenchPods(cri));
    }
    if (this.base) await step('temp dir', () => rm(this.base, { recursive: true, force: true }));
    await step('releasing the tests lock', () => this.releaseTestsLock());
    this.main.close();
    this.floor.cri.close();
    this.kubeletCri?.close();
    return errors;
  }
}
