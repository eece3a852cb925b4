// The agent under test: nodelet's bin file as a child process (its log, CPU, memory, manifests), and an inspector client for profiling.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, readFileSync, renameSync, type WriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { memoryMB, processCpuMs } from './procfs.js';
import { benchNode } from './workload.js';
import { now, progress, round1 } from './util.js';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const nodeBinary = join(repoRoot, 'node_modules/.bin/node');
const agentEntry = join(repoRoot, 'bin/nodelet.js');
const setpriv = '/usr/bin/setpriv';
/** The Node the agent runs on (bin/nodelet.js starts the project's pinned Node, whatever runs the bench). */
export function agentNodeVersion(): string {
  return execFileSync(nodeBinary, ['--version'], { encoding: 'utf8' }).trim();
}

/** The rig's main containerd, the agent's runtime. */
export const mainEndpoint = 'unix:///run/nodelet/containerd/containerd.sock';

export interface LogLine {
  time: number;
  msg: string;
  pod?: string;
  pods?: string[];
  phase?: string;
  level?: number;
  durationMs?: number;
}

const startTimeoutMs = 120_000;

/** The agent's KubeletConfiguration when the bench is given none: kubelet's defaults, but for failCgroupV1. */
export const agentKubeletConfig = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\n';

export class BenchAgent {
  private child?: ChildProcess;
  private exited?: Promise<void>;
  private stderrRest = '';
  private readonly tail: string[] = [];
  readonly lines: LogLine[] = [];
  readonly manifestDir: string;
  readonly rootDir: string;
  readonly podLogsDir: string;
  /** The KubeletConfiguration the agent gets unless its flags name one (--agent-config). */
  readonly configFile: string;

  private logCopy?: WriteStream;
  /** The inspector's WebSocket URL, once the agent printed it (only when started with `inspect`). */
  inspectorUrl?: string;

  constructor(base: string, private readonly verbosity: number, private readonly logFile: string, private readonly inspect = false,
    /** More flags (cluster mode's --kubeconfig). */
    private readonly extraFlags: string[] = []) {
    this.manifestDir = join(base, 'manifests');
    this.rootDir = join(base, 'root');
    this.podLogsDir = join(base, 'pod-logs');
    this.configFile = join(base, 'agent-kubelet-config.yaml');
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
    // These hosts are cgroup v1, where kubelet 1.37 (and nodelet) start only with failCgroupV1 false; the VM's bench
    // (cgroup v2) is unaffected by it. A --agent-config file must say it itself.
    const ownConfig = this.extraFlags.some((f) => f === '--config' || f.startsWith('--config='));
    if (!ownConfig) await writeFile(this.configFile, agentKubeletConfig);
    const args = [
      ...(ownConfig ? [] : ['--config', this.configFile]),
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
    // Generous: in a TCG guest (npm run bench:vm) the agent starts about ten times slower than on the host.
    const deadline = now() + startTimeoutMs;
    while (!this.lines.some((l) => l.msg === 'nodelet started')) {
      if (!this.running) throw new Error(`nodelet exited during start-up:\n${this.recentOutput()}`);
      if (now() > deadline) throw new Error(`nodelet did not start within ${startTimeoutMs / 1000} s:\n${this.recentOutput()}`);
      await delay(20, undefined, { signal });
    }
    while (!this.lines.some((l) => l.msg === 'Container runtime connected')) {
      if (!this.running) throw new Error(`nodelet exited during start-up:\n${this.recentOutput()}`);
      if (now() > deadline) throw new Error(`nodelet did not connect to ${mainEndpoint} within ${startTimeoutMs / 1000} s:\n${this.recentOutput()}`);
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
          ...(typeof rec.durationMs === 'number' ? { durationMs: rec.durationMs } : {}),
        });
      } catch {
        // A line that merely starts with '{' is kept in the tail only.
      }
    }
  }

  /** Writes a manifest aside as a dotfile (which the agent ignores), for renameManifestsIn: the agent never sees a half file. */
  async writeManifestAside(name: string, text: string): Promise<void> {
    await writeFile(join(this.manifestDir, `.${name}.json.tmp`), text);
  }

  /** Renames the manifests written aside into the agent's manifest directory, at once. */
  renameManifestsIn(names: string[]): void {
    for (const name of names) renameSync(join(this.manifestDir, `.${name}.json.tmp`), join(this.manifestDir, `${name}.json`));
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

  /** The spawn helper's current RSS (0 without one). */
  spawnHelperRssMB(): number {
    const helper = this.spawnHelperPid();
    return helper === undefined ? 0 : memoryMB(helper, 'VmRSS');
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

/** A minimal Chrome DevTools Protocol client over the agent's inspector WebSocket (diagnosis only). */
export class InspectorSession {
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

/** The agent's process.memoryUsage() in MB, through the inspector. */
export async function agentMemoryUsage(inspector: InspectorSession) {
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

export type JsMemory = Awaited<ReturnType<typeof agentMemoryUsage>>;
