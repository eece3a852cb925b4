// The real kubelet (the version the project builds from the upstream modules, kube/go.mod's) as nodelet's peer: standalone, on a
// containerd instance of its own ("kubelet": scripts/runtime.sh, the reference bridge chain on 10.95.0.0/24), running the
// bench's manifests as static pods.
//
// kubelet changes host state nodelet does not, and the bench puts it back when kubelet has stopped (and, after a run that
// died, at the start of the next one, from the record in /run/nodelet): the sysctls vm.overcommit_memory,
// vm.panic_on_oom, kernel.panic and kernel.panic_on_oops (kubelet sets them unless protectKernelDefaults, which instead
// refuses to start on any other value), its iptables chains (KUBE-IPTABLES-HINT, KUBE-KUBELET-CANARY, KUBE-FIREWALL and
// the INPUT/OUTPUT jumps to it, IPv4 and IPv6), /var/lib/kubelet (its device plugin socket path is fixed), the shared
// bind mount of its root dir on itself, and its cgroup root in every hierarchy. kubelet leaves its pods running when it
// stops: they are removed through the CRI of its containerd.
//
// When a pod runs: kubelet standalone has no status socket. Its read-only port (HTTP, bound to 127.0.0.1) serves GET /pods:
// the static pods with the status manager's status (kubelet.GetPods), the status kubelet would write to an API server.
// The bench polls it; a pod counts as running when that status is phase Running, every container running, with a pod IP:
// the same test as nodelet's (bench/status-client.ts isRunning), which the bench sees through nodelet's status watch.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { V1Pod, V1PodList } from '@kubernetes/client-node';
import { CriClient } from '../src/cri/client.js';
import { ensureBinaries } from '../test/cluster/control-plane.js';
import { memoryMB, processCpuMs } from './procfs.js';
import { isRunning } from './status-client.js';
import { errorText, now, progress, toEpoch } from './util.js';
import { benchNamespace, benchPods } from './workload.js';

const run = promisify(execFile);

export const kubeletEndpoint = 'unix:///run/nodelet/containerd-kubelet/containerd.sock';
/** The kubelet instance's containerd pid file (its CPU in the probe-load window). */
export const kubeletContainerdPidFile = '/run/nodelet/containerd-kubelet.pid';
/** kubelet's --hostname-override: its static pods are named `<name>-kubelet-bench`. */
export const kubeletNode = 'kubelet-bench';
const cgroupMount = '/sys/fs/cgroup';
const varLibKubelet = '/var/lib/kubelet';
const sysctls = ['vm/overcommit_memory', 'vm/panic_on_oom', 'kernel/panic', 'kernel/panic_on_oops'];
/** The iptables chains kubelet creates (pkg/kubelet/kubelet_network_linux.go), by table. */
const kubeletChains: Record<string, string[]> = { mangle: ['KUBE-IPTABLES-HINT', 'KUBE-KUBELET-CANARY'], nat: ['KUBE-KUBELET-CANARY'], filter: ['KUBE-FIREWALL', 'KUBE-KUBELET-CANARY'] };
const teardownTimeoutMs = 120_000;

interface HostState {
  sysctls: Record<string, string>;
  /** Per iptables binary and table, the kubelet chains that existed before kubelet started (those are left alone). */
  chains: Record<string, Record<string, string[]>>;
  varLibKubelet: boolean;
}

/** Where a kubelet of this module runs apart from nodelet and from other users of this module (the bench, the parity test). */
export interface KubeletPlacement {
  /** --hostname-override: its static pods are named `<name>-<nodeName>`. */
  nodeName: string;
  /** Its cgroupRoot (one path segment): its kubepods tree apart from nodelet's `kubepods` at the root of every hierarchy. */
  cgroupRoot: string;
  /** What kubelet changes on the host, recorded before it starts, put back after (or by the next run). */
  hostStateFile: string;
  /** Its pods in the runtime (a CRI label selector): removed through CRI when kubelet stops. */
  pods: { labelSelector: Record<string, string> };
}

export const benchPlacement: KubeletPlacement = {
  nodeName: kubeletNode,
  cgroupRoot: 'nodelet-kubelet-bench',
  hostStateFile: '/run/nodelet/kubelet-bench-host-state.json',
  pods: benchPods,
};

export interface KubeletOptions {
  /** The bench's manifests may need more than kubelet's default of 110 pods. */
  maxPods?: number;
  /** A copy of kubelet's output. */
  logFile?: string;
  placement?: KubeletPlacement;
  /** Cluster mode: the node's kubeconfig (kubelet registers the Node and runs the pods bound to it). */
  kubeconfig?: string;
  /**
   * --node-ip. Without it kubelet looks its node name up in DNS at every status update (its NodeAddress setter), a query
   * that would leave the machine.
   */
  nodeIP?: string;
  /** More KubeletConfiguration fields, over the ones configText() chooses. */
  config?: Record<string, unknown>;
}

export interface KubeletSample {
  elapsedMs: number;
  t0Epoch: number;
  pods: string[];
  observedAt: Map<string, number>;
  /** How often /pods was polled (the figure's resolution). */
  pollMs: number;
  polls: number;
  kubeletCpuMs: number;
  benchCpuMs: number;
  /** The last bench container's start in the runtime (CRI startedAt), ms after the rename: read after the sample. */
  runtimeStartedMs: number;
}

/**
 * When the last bench container on a containerd started (CRI ContainerStatus startedAt, wall clock), in ms after
 * `t0Epoch`: the runtime's moment, asked after the measurement so it costs the measured agent nothing.
 */
export async function lastContainerStartedMs(cri: CriClient, t0Epoch: number, signal?: AbortSignal): Promise<number> {
  const opts = { timeoutMs: 30_000, ...(signal ? { signal } : {}) };
  const containers = await cri.listContainers(benchPods, opts);
  const started = await Promise.all(containers.map(async (c) => (await cri.containerStatus(c.id, false, opts)).startedAt));
  return started.length ? Math.max(...started) - t0Epoch : NaN;
}

/** A free loopback TCP port (the kernel's pick, released for kubelet to bind). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

async function iptablesChains(bin: string, table: string): Promise<string[]> {
  try {
    const { stdout } = await run(`${bin}-save`, ['-t', table], { timeout: 30_000 });
    return stdout.split('\n').filter((l) => l.startsWith(':')).map((l) => l.slice(1).split(' ', 1)[0]!);
  } catch {
    return [];
  }
}

async function readHostState(): Promise<HostState> {
  const chains: HostState['chains'] = {};
  for (const bin of ['iptables', 'ip6tables']) {
    chains[bin] = {};
    for (const table of Object.keys(kubeletChains)) chains[bin][table] = await iptablesChains(bin, table);
  }
  return {
    sysctls: Object.fromEntries(sysctls.map((s) => [s, readFileSync(`/proc/sys/${s}`, 'utf8').trim()])),
    chains,
    varLibKubelet: existsSync(varLibKubelet),
  };
}

/** Puts back what kubelet changed (kubelet has stopped): sysctls, its iptables chains and rules, /var/lib/kubelet. */
async function restoreHostState(state: HostState): Promise<string[]> {
  const problems: string[] = [];
  for (const [s, v] of Object.entries(state.sysctls)) {
    try {
      if (readFileSync(`/proc/sys/${s}`, 'utf8').trim() !== v) writeFileSync(`/proc/sys/${s}`, v);
    } catch (err) {
      problems.push(`sysctl ${s}=${v}: ${errorText(err)}`);
    }
  }
  for (const bin of ['iptables', 'ip6tables']) {
    const before = state.chains[bin] ?? {};
    const ipt = (...args: string[]) => run(bin, ['-w', '10', ...args], { timeout: 30_000 }).then(() => true, () => false);
    for (const [table, chains] of Object.entries(kubeletChains)) {
      const present = await iptablesChains(bin, table);
      for (const chain of chains) {
        if (!present.includes(chain) || (before[table] ?? []).includes(chain)) continue;
        // The jumps to it first (kubelet puts INPUT and OUTPUT -> KUBE-FIREWALL), then the chain.
        for (const from of ['INPUT', 'OUTPUT', 'FORWARD', 'PREROUTING', 'POSTROUTING']) while (await ipt('-t', table, '-D', from, '-j', chain));
        if (!(await ipt('-t', table, '-F', chain)) || !(await ipt('-t', table, '-X', chain))) problems.push(`${bin} -t ${table}: could not delete chain ${chain}`);
      }
    }
  }
  if (!state.varLibKubelet) await rm(varLibKubelet, { recursive: true, force: true }).catch((err: unknown) => problems.push(`${varLibKubelet}: ${errorText(err)}`));
  return problems;
}

/** Unmounts everything at or under `dir`, deepest first. */
async function unmountUnder(dir: string): Promise<void> {
  const points = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4] ?? '')
    .filter((mp) => mp === dir || mp.startsWith(`${dir}/`)).sort().reverse();
  for (const mp of points) await run('umount', [mp]).catch(() => run('umount', ['-l', mp])).catch(() => undefined);
}

/** The cgroup v1 hierarchies mounted under /sys/fs/cgroup (cpu, memory, ..., systemd) and the v2 one if any. */
function hierarchies(): string[] {
  return readdirSync(cgroupMount).map((h) => join(cgroupMount, h)).filter((p) => {
    try {
      return statSync(p).isDirectory() && existsSync(join(p, 'cgroup.procs'));
    } catch {
      return false;
    }
  });
}

/** Creates kubelet's cgroup root in every hierarchy (kubelet refuses a cgroupRoot that does not exist). */
function createCgroupRoot(cgroupRoot: string): void {
  for (const h of hierarchies()) {
    const dir = join(h, cgroupRoot);
    if (!existsSync(dir)) mkdirSync(dir);
    if (h.endsWith('/cpuset')) {
      // A new cpuset cgroup starts with no cpus or mems: tasks (kubelet's children) could not join it.
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        if (readFileSync(join(dir, f), 'utf8').trim() === '') writeFileSync(join(dir, f), readFileSync(join(h, f), 'utf8').trim());
      }
    }
  }
}

/** Removes kubelet's cgroup root (its pods' cgroups have no tasks once the pods are removed), deepest first. */
function removeCgroupRoot(cgroupRoot: string): string[] {
  const problems: string[] = [];
  const remove = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) remove(join(dir, e.name));
    try {
      rmdirSync(dir);
    } catch (err) {
      problems.push(`cgroup ${dir}: ${errorText(err)}`);
    }
  };
  for (const h of hierarchies()) if (existsSync(join(h, cgroupRoot))) remove(join(h, cgroupRoot));
  return problems;
}

export class BenchKubelet {
  readonly cri = new CriClient(kubeletEndpoint);
  readonly dir: string;
  readonly manifestDir: string;
  readonly rootDir: string;
  readonly podLogsDir: string;
  readonly configPath: string;
  private child?: ChildProcess;
  private exited?: Promise<void>;
  private readonly tail: string[] = [];
  private readonly http = new Agent({ keepAlive: true, maxSockets: 1 });
  ports = { port: 0, readOnlyPort: 0, healthzPort: 0 };
  private hostState?: HostState;
  readonly placement: KubeletPlacement;
  private readonly maxPods: number;
  private readonly logFile: string;

  constructor(base: string, private readonly opts: KubeletOptions = {}) {
    this.placement = opts.placement ?? benchPlacement;
    this.maxPods = opts.maxPods ?? 110;
    this.logFile = opts.logFile ?? '';
    this.dir = join(base, 'kubelet');
    this.manifestDir = join(this.dir, 'manifests');
    this.rootDir = join(this.dir, 'root');
    this.podLogsDir = join(this.dir, 'pod-logs');
    this.configPath = join(this.dir, 'kubelet-config.yaml');
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  recentOutput(): string {
    return this.tail.slice(-15).join('\n');
  }

  /** Puts back what an earlier run's kubelet changed, if that run died before its cleanup. */
  static async restoreLeftovers(placement: KubeletPlacement = benchPlacement): Promise<string[]> {
    const { hostStateFile } = placement;
    if (!existsSync(hostStateFile)) return [];
    progress(`kubelet: restoring the host state an earlier run's kubelet left (${hostStateFile})`);
    const state = JSON.parse(readFileSync(hostStateFile, 'utf8')) as HostState;
    const cri = new CriClient(kubeletEndpoint);
    try {
      await removeAllPods(cri, placement.pods);
    } catch {
      // that instance may not run
    } finally {
      cri.close();
    }
    const problems = [...removeCgroupRoot(placement.cgroupRoot), ...(await restoreHostState(state))];
    await rm(hostStateFile, { force: true });
    return problems;
  }

  /**
   * The KubeletConfiguration. Defaults are kubelet's unless said here; each choice keeps the comparison with nodelet's
   * defaults fair or is what standalone mode on this host needs.
   */
  configText(): string {
    const config = {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      // The bench's manifests, as nodelet's --pod-manifest-path. kubelet watches it with inotify (fileCheckFrequency, 20 s,
      // is only the rescan): the same trigger nodelet uses.
      staticPodPath: this.manifestDir,
      containerRuntimeEndpoint: kubeletEndpoint,
      // No systemd as PID 1; runc of that containerd uses cgroupfs too (SystemdCgroup = false).
      cgroupDriver: 'cgroupfs',
      // These hosts are cgroup v1, where kubelet 1.35 and later refuse to start unless it is false.
      failCgroupV1: false,
      // Apart from nodelet's kubepods tree, which is at the root of every hierarchy.
      cgroupRoot: `/${this.placement.cgroupRoot}`,
      // kubelet's defaults, and what nodelet does: kubepods/besteffort/pod<uid> per pod, the pods' total limited.
      cgroupsPerQOS: true,
      enforceNodeAllocatable: ['pods'],
      // No API server: nothing to authenticate against. The authenticated port stays on loopback, refuses anonymous
      // requests; the bench reads /pods on the read-only port (plain HTTP, loopback only).
      address: '127.0.0.1',
      port: this.ports.port,
      readOnlyPort: this.ports.readOnlyPort,
      healthzBindAddress: '127.0.0.1',
      healthzPort: this.ports.healthzPort,
      authentication: { anonymous: { enabled: false }, webhook: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' },
      podLogsDir: this.podLogsDir,
      // nodelet never removes images and has no eviction: kubelet must not garbage-collect the local images (they cannot
      // be pulled again here) or evict the bench's pods because another engineer filled the disk.
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      evictionHard: { 'memory.available': '0%', 'nodefs.available': '0%', 'nodefs.inodesFree': '0%', 'imagefs.available': '0%' },
      // The images are present; pulls do not happen. kubelet's default.
      serializeImagePulls: true,
      // kubelet's default is 110; the bench may start more at once.
      maxPods: Math.max(110, this.maxPods),
      // Defaults written out for the record: relist every 1 s (the generic PLEG; nodelet's relist is also 1 s),
      // protectKernelDefaults false (see the header), failSwapOn true (no swap on these machines).
      ...this.opts.config,
    };
    return JSON.stringify(config, null, 2) + '\n';
  }

  async start(signal: AbortSignal): Promise<void> {
    // The kubelet of `npm run kube:build`, at kube/go.mod's version (built when it is missing).
    const kubeletBinary = join(await ensureBinaries(), 'kubelet');
    await mkdir(this.manifestDir, { recursive: true });
    await mkdir(this.rootDir, { recursive: true });
    await mkdir(this.podLogsDir, { recursive: true });
    this.ports = { port: await freePort(), readOnlyPort: await freePort(), healthzPort: await freePort() };
    await writeFile(this.configPath, this.configText());
    // Once: a restarted kubelet finds the host as its predecessor left it.
    if (!this.hostState) {
      this.hostState = await readHostState();
      await mkdir('/run/nodelet', { recursive: true });
      writeFileSync(this.placement.hostStateFile, JSON.stringify(this.hostState));
    }
    createCgroupRoot(this.placement.cgroupRoot);
    const args = [
      '--config', this.configPath,
      '--root-dir', this.rootDir,
      // Else /var/lib/kubelet/pki.
      '--cert-dir', join(this.rootDir, 'pki'),
      '--hostname-override', this.placement.nodeName,
      ...(this.opts.kubeconfig ? ['--kubeconfig', this.opts.kubeconfig] : []),
      ...(this.opts.nodeIP ? ['--node-ip', this.opts.nodeIP] : []),
      '-v', '2',
    ];
    const logCopy = this.logFile ? (await import('node:fs')).createWriteStream(this.logFile, { flags: 'a' }) : undefined;
    const setpriv = '/usr/bin/setpriv';
    const [command, ...argv] = existsSync(setpriv) ? [setpriv, '--pdeathsig', 'TERM', kubeletBinary, ...args] : [kubeletBinary, ...args];
    const child = spawn(command!, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root' } });
    this.child = child;
    this.exited = new Promise((r) => child.once('exit', (code, sig) => {
      this.tail.push(`(kubelet exited: ${sig ?? `code ${code}`})`);
      r();
    }));
    const killOnExit = () => {
      if (this.running) child.kill('SIGTERM');
    };
    process.once('exit', killOnExit);
    child.once('exit', () => process.off('exit', killOnExit));
    const onData = (d: string) => {
      logCopy?.write(d);
      for (const line of d.split('\n')) if (line.trim()) this.tail.push(line.slice(0, 400));
      if (this.tail.length > 400) this.tail.splice(0, this.tail.length - 200);
    };
    child.stdout!.setEncoding('utf8').on('data', onData);
    child.stderr!.setEncoding('utf8').on('data', onData);
    const deadline = now() + 60_000;
    for (;;) {
      if (!this.running) throw new Error(`kubelet exited during start-up:\n${this.recentOutput()}`);
      if (now() > deadline) throw new Error(`kubelet not healthy with /pods answering within 60 s:\n${this.recentOutput()}`);
      const healthy = await this.get(`http://127.0.0.1:${this.ports.healthzPort}/healthz`).then((b) => b.trim() === 'ok', () => false);
      if (healthy && (await this.pods().then(() => true, () => false))) break;
      await delay(200, undefined, { signal });
    }
  }

  private get(url: string, timeoutMs = 10_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request(url, { agent: this.http, timeout: timeoutMs }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode} ${body.slice(0, 200)}`))));
      });
      req.on('timeout', () => req.destroy(new Error(`${url}: no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });
  }

  /** kubelet's pods with their status manager's status (GET /pods on the read-only port). */
  async pods(): Promise<V1Pod[]> {
    // An empty list is `"items": null` (a nil Go slice).
    return (JSON.parse(await this.get(`http://127.0.0.1:${this.ports.readOnlyPort}/pods`)) as V1PodList).items ?? [];
  }

  cpuMs(): { self: number; children: number } {
    return processCpuMs(this.pid!);
  }

  rssMB(field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
    return memoryMB(this.pid!, field);
  }

  async writeManifestAside(name: string, text: string): Promise<void> {
    await writeFile(join(this.manifestDir, `.${name}.json.tmp`), text);
  }

  renameManifestsIn(names: string[]): void {
    for (const name of names) renameSync(join(this.manifestDir, `.${name}.json.tmp`), join(this.manifestDir, `${name}.json`));
  }

  /**
   * Renames these manifests in and polls /pods every `pollMs` until kubelet's status shows every pod Running (all
   * containers running) with its IP; the sample ends at the poll that saw the last one.
   */
  async run(names: string[], manifest: (name: string) => string, timeoutMs: number, pollMs: number, signal: AbortSignal): Promise<KubeletSample> {
    for (const name of names) await this.writeManifestAside(name, manifest(name));
    const wanted = new Set(names.map((n) => `${n}-${this.placement.nodeName}`));
    const observedAt = new Map<string, number>();
    const cpu0 = this.cpuMs();
    const bench0 = process.cpuUsage();
    const t0 = now();
    this.renameManifestsIn(names);
    let polls = 0;
    let last: V1Pod[] = [];
    for (;;) {
      if (!this.running) throw new Error(`kubelet exited during the measurement:\n${this.recentOutput()}`);
      last = await this.pods();
      polls++;
      const at = now() - t0;
      for (const p of last) {
        const name = p.metadata?.name ?? '';
        if (!wanted.has(name) || observedAt.has(name)) continue;
        if (isRunning(p)) observedAt.set(name, at);
        else if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded') throw new Error(`kubelet's pod ${name} ended ${p.status.phase}: ${JSON.stringify(p.status)}`);
      }
      if (observedAt.size === wanted.size) break;
      if (at > timeoutMs) {
        const pending = [...wanted].filter((n) => !observedAt.has(n));
        const sample = last.find((p) => p.metadata?.name === pending[0]);
        throw new Error(`${pending.length} of ${names.length} kubelet pods not Running with an IP after ${timeoutMs / 1000} s; e.g. ${pending[0]}: ${JSON.stringify(sample?.status ?? 'not listed')}\n${this.recentOutput()}`);
      }
      await delay(Math.max(0, t0 + polls * pollMs - now()), undefined, { signal });
    }
    const elapsedMs = Math.max(...observedAt.values());
    const cpu1 = this.cpuMs();
    const bench = process.cpuUsage(bench0);
    return {
      elapsedMs, t0Epoch: toEpoch(t0), pods: [...wanted], observedAt, pollMs, polls,
      kubeletCpuMs: cpu1.self - cpu0.self, benchCpuMs: (bench.user + bench.system) / 1000,
      runtimeStartedMs: await lastContainerStartedMs(this.cri, toEpoch(t0), signal),
    };
  }

  /**
   * Removes the manifests and waits until kubelet has stopped their pods (gone from /pods, no bench container running);
   * then removes their sandboxes through CRI, which kubelet's container GC would do only a minute later. Not timed.
   */
  async teardown(signal?: AbortSignal): Promise<void> {
    for (const f of await readdir(this.manifestDir).catch(() => [] as string[])) await rm(join(this.manifestDir, f), { force: true });
    const deadline = now() + teardownTimeoutMs;
    const opts = { timeoutMs: 30_000, ...(signal ? { signal } : {}) };
    for (;;) {
      if (!this.running) break;
      const listed = (await this.pods()).filter((p) => p.metadata?.namespace === benchNamespace).length;
      const runningContainers = (await this.cri.listContainers({ ...benchPods, state: 'CONTAINER_RUNNING' }, opts)).length;
      const readySandboxes = (await this.cri.listPodSandbox({ ...benchPods, state: 'SANDBOX_READY' }, opts)).length;
      if (listed + runningContainers + readySandboxes === 0) break;
      if (now() > deadline) throw new Error(`kubelet did not stop the bench pods within ${teardownTimeoutMs / 1000} s (${listed} listed, ${runningContainers} containers running, ${readySandboxes} sandboxes ready)`);
      await delay(100, undefined, signal ? { signal } : undefined);
    }
    await removeAllPods(this.cri, this.placement.pods, signal);
  }

  /** Idle: kubelet used at most 5% of a core over a second (its housekeeping runs every 2 s, cAdvisor every 10 s). */
  async waitIdle(signal: AbortSignal, timeoutMs = 20_000): Promise<void> {
    const deadline = now() + timeoutMs;
    for (;;) {
      const before = this.cpuMs().self;
      await delay(1_000, undefined, { signal });
      if (!this.running) throw new Error(`kubelet exited:\n${this.recentOutput()}`);
      if (this.cpuMs().self - before <= 50 || now() > deadline) return;
    }
  }

  /** Stops kubelet (SIGTERM, SIGKILL after 15 s); what it changed stays for start or cleanup. */
  async stop(): Promise<void> {
    if (!this.running) return;
    // This child, not whichever runs when the timer fires (a restart starts another one).
    const child = this.child!;
    const exited = this.exited;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }

  /** cleanup(), its problems as one error. */
  async cleanupOrThrow(): Promise<void> {
    const problems = await this.cleanup();
    if (problems.length > 0) throw new Error(problems.join('; '));
  }

  /** Stops kubelet, removes its pods, unmounts its root dir and puts the host back. Returns the problems. */
  async cleanup(): Promise<string[]> {
    const problems: string[] = [];
    if (this.running) {
      await this.teardown().catch((err: unknown) => progress(`cleanup: kubelet did not stop its pods (${errorText(err)}); removing them through CRI`));
    }
    await this.stop();
    this.http.destroy();
    try {
      await removeAllPods(this.cri, this.placement.pods);
    } catch (err) {
      problems.push(`kubelet containerd: ${errorText(err)}`);
    }
    this.cri.close();
    await unmountUnder(this.dir);
    problems.push(...removeCgroupRoot(this.placement.cgroupRoot));
    if (this.hostState) {
      problems.push(...(await restoreHostState(this.hostState)));
      await rm(this.placement.hostStateFile, { force: true });
    }
    return problems;
  }
}

/** Every sandbox and container of these pods on the kubelet instance, removed (StopPodSandbox + RemovePodSandbox). */
async function removeAllPods(cri: CriClient, pods: KubeletPlacement['pods'], signal?: AbortSignal): Promise<void> {
  const deadline = now() + teardownTimeoutMs;
  const opts = { timeoutMs: 60_000, ...(signal ? { signal } : {}) };
  for (;;) {
    const sandboxes = await cri.listPodSandbox(pods, opts);
    const containers = await cri.listContainers(pods, opts);
    if (sandboxes.length === 0 && containers.length === 0) return;
    if (now() > deadline) throw new Error(`${sandboxes.length} sandboxes and ${containers.length} containers still in ${cri.target}`);
    await Promise.allSettled(sandboxes.map(async (s) => {
      await cri.stopPodSandbox(s.id, opts);
      await cri.removePodSandbox(s.id, opts);
    }));
    const orphans = containers.filter((c) => !sandboxes.some((s) => s.id === c.podSandboxId));
    await Promise.allSettled(orphans.map((c) => cri.removeContainer(c.id, opts)));
  }
}
