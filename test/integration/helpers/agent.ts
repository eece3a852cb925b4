// Runs the real nodelet binary against the rig's containerd for integration tests, and inspects the host.
import { spawn, type ChildProcess } from 'node:child_process';
import { get } from 'node:http';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import type { V1Pod } from '@kubernetes/client-node';
import { fetchPods } from '../../../src/agent/status-api.js';
import { CriClient } from '../../../src/cri/client.js';
import { podUidLabel } from '../../../src/core/labels.js';
import { mountsUnder, readMountInfo } from '../../../src/volume/mounter.js';
import { PodCgroupManager } from '../../../src/host/cgroups.js';

export const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../..');
export const criEndpoint = 'unix:///run/nodelet/containerd/containerd.sock';
export const busybox = 'localhost/nodelet/busybox:1.35';
export const podNetworkName = 'nodelet-bridge';
export const podSubnetPrefix = '10.99.0.';
export const testNode = 'nodelet-it';

/**
 * The KubeletConfiguration of a test's agent, unless the test gives its own: these hosts are cgroup v1, where kubelet
 * 1.37, and nodelet with it, refuse to start unless failCgroupV1 is false. A test's own --config file says it too, as a
 * kubelet user's on cgroup v1 does.
 */
export const defaultTestKubeletConfig = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\n';

/** The static pod name kubelet gives a manifest's pod on this node. */
export const staticName = (name: string) => `${name}-${testNode}`;

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `probe` until it returns a value (not undefined or false); stops at once with `signal`'s reason when it aborts. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000, intervalMs = 200, signal?: AbortSignal): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

export class AgentProcess {
  private child?: ChildProcess;
  private exited?: Promise<number | null>;
  output = '';

  private constructor(
    readonly manifestDir: string,
    readonly rootDir: string,
    readonly podLogsDir: string,
    /** Cluster mode: the node's kubeconfig, passed as --kubeconfig on every start (restarts included). */
    readonly kubeconfig?: string,
    /** --hostname-override: the node's name. */
    readonly nodeName: string = testNode,
    /** --container-runtime-endpoint: the rig's main containerd unless another instance's is given. */
    readonly runtimeEndpoint: string = criEndpoint,
  ) {}

  static async create(opts: { kubeconfig?: string; nodeName?: string; criEndpoint?: string } = {}): Promise<AgentProcess> {
    const base = await mkdtemp(join(tmpdir(), 'nodelet-it-'));
    return new AgentProcess(join(base, 'manifests'), join(base, 'root'), join(base, 'pod-logs'), opts.kubeconfig, opts.nodeName ?? testNode,
      opts.criEndpoint ?? criEndpoint);
  }

  get socket(): string {
    return join(this.rootDir, 'nodelet.sock');
  }

  /** The KubeletConfiguration a start without a --config of the test's own gets (see defaultTestKubeletConfig). */
  get configFile(): string {
    return join(this.rootDir, '..', 'test-kubelet-config.yaml');
  }

  /** The running agent's process id (a restart changes it). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * `socketTimeoutMs`: how long the status socket may take (a TLS bootstrap comes before it and waits for the signer).
   * Without a --config in `extraArgs` the agent gets defaultTestKubeletConfig; a test's own file must say failCgroupV1 too.
   */
  async start(extraArgs: string[] = [], socketTimeoutMs = 20_000): Promise<void> {
    const ownConfig = extraArgs.some((a) => a === '--config' || a.startsWith('--config='));
    if (!ownConfig) await writeFile(this.configFile, defaultTestKubeletConfig);
    const args = [
      ...(ownConfig ? [] : ['--config', this.configFile]),
      '--pod-manifest-path', this.manifestDir,
      '--container-runtime-endpoint', this.runtimeEndpoint,
      '--root-dir', this.rootDir,
      '--pod-logs-dir', this.podLogsDir,
      '--hostname-override', this.nodeName,
      '--logging-format', 'json',
      ...(this.kubeconfig ? ['--kubeconfig', this.kubeconfig] : []),
      ...extraArgs,
    ];
    // Run the bin file itself, as a user would, so its interpreter line (with its V8 flags) applies.
    const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };
    const child = spawn(join(repoRoot, 'bin/nodelet.js'), args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    this.child = child;
    child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.exited = new Promise((r) => child.once('exit', (code) => r(code)));
    await waitFor('nodelet status socket', async () => {
      if (child.exitCode !== null) throw new Error(`nodelet exited early (${child.exitCode}):\n${this.output}`);
      return existsSync(this.socket) ? true : undefined;
    }, socketTimeoutMs, 50);
  }

  /** SIGTERM and wait: the agent stops, pods keep running. */
  async stop(): Promise<number | null> {
    if (!this.child || this.child.exitCode !== null) return this.child?.exitCode ?? null;
    this.child.kill('SIGTERM');
    const child = this.child;
    const forceKill = setTimeout(() => child.kill('SIGKILL'), 15_000);
    try {
      return await this.exited!;
    } finally {
      clearTimeout(forceKill);
    }
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null;
  }

  async writeManifest(file: string, text: string): Promise<void> {
    const { mkdir } = await import('node:fs/promises');
    await mkdir(this.manifestDir, { recursive: true });
    // Written aside then renamed, as an editor or config tool would, so no half file is seen.
    const tmp = join(this.manifestDir, `.${file}.tmp`);
    await writeFile(tmp, text);
    const { rename } = await import('node:fs/promises');
    await rename(tmp, join(this.manifestDir, file));
  }

  async removeManifest(file: string): Promise<void> {
    await rm(join(this.manifestDir, file), { force: true });
  }

  pods(): Promise<V1Pod[]> {
    return fetchPods(this.socket);
  }

  async pod(name: string): Promise<V1Pod | undefined> {
    return (await this.pods()).find((p) => p.metadata?.name === staticName(name));
  }

  /** Waits until the named pod's status satisfies `ok`. */
  async waitForPod(name: string, what: string, ok: (p: V1Pod) => boolean, timeoutMs = 60_000): Promise<V1Pod> {
    return waitFor(`${name}: ${what}`, async () => {
      const p = await this.pod(name);
      return p && ok(p) ? p : undefined;
    }, timeoutMs);
  }

  /** Log lines (parsed JSON) the agent printed. */
  logLines(): Record<string, unknown>[] {
    return this.output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  /**
   * End of a test file: every manifest removed and the pods torn down by the agent, then the agent stopped;
   * whatever the runtime still holds of the pods (the agent died, a teardown failed) is removed through CRI.
   */
  async shutdown(cri: CriClient, uids: Set<string>): Promise<void> {
    try {
      for (const p of await this.pods().catch(() => [])) uids.add(p.metadata!.uid!);
      await rm(this.manifestDir, { recursive: true, force: true });
      if (this.running) await waitForRuntimeGone(cri, [...uids], 60_000).catch(() => undefined);
    } finally {
      await this.stop();
      await removeRuntimePods(cri, [...uids]);
      await this.cleanupDirs();
    }
  }

  /** Removes the test's directories, unmounting first whatever a failed teardown left mounted in them. */
  async cleanupDirs(): Promise<void> {
    const base = resolve(this.rootDir, '..');
    for (const m of mountsUnder(await readMountInfo(), base)) await execa('umount', ['-l', m.mountPoint], { reject: false });
    await rm(base, { recursive: true, force: true });
  }
}

/**
 * A test file's agent and CRI client, with the file's clean-up registered: after its tests every pod they
 * made is removed (by the agent, else straight through CRI), then `afterShutdown` runs. Tests add the UIDs of
 * the pods they see to `uids`; starting the agent is the file's own beforeAll.
 */
export async function testAgent(afterShutdown?: () => Promise<unknown>): Promise<{ agent: AgentProcess; cri: CriClient; uids: Set<string> }> {
  const cri = new CriClient(criEndpoint);
  const agent = await AgentProcess.create();
  const uids = new Set<string>();
  afterAll(async () => {
    try {
      await agent.shutdown(cri, uids);
    } finally {
      await afterShutdown?.();
      cri.close();
    }
  });
  return { agent, cri, uids };
}

export const isRunning = (p: V1Pod) =>
  p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state?.running) && !!p.status.podIP;

/** Everything in the runtime that belongs to pods with these UIDs. */
export async function runtimeObjects(cri: CriClient, uids: string[]): Promise<{ sandboxes: string[]; containers: string[] }> {
  const [sandboxes, containers] = await Promise.all([cri.listPodSandbox(), cri.listContainers()]);
  const mine = (labels: Record<string, string>) => uids.includes(labels[podUidLabel] ?? '');
  return {
    sandboxes: sandboxes.filter((s) => mine(s.labels)).map((s) => s.id),
    containers: containers.filter((c) => mine(c.labels)).map((c) => c.id),
  };
}

/** Waits until the runtime holds no sandbox or container of these pods. */
export async function waitForRuntimeGone(cri: CriClient, uids: string[], timeoutMs = 30_000): Promise<void> {
  await waitFor('pods gone from the runtime', async () => {
    const left = await runtimeObjects(cri, uids);
    return left.sandboxes.length + left.containers.length === 0 ? true : undefined;
  }, timeoutMs, 50);
}

/**
 * Last-resort cleanup of a test's pods straight through CRI (CNI DEL then runs through the shim's fallback),
 * and of the pod cgroups the agent would have removed with them.
 */
export async function removeRuntimePods(cri: CriClient, uids: string[]): Promise<void> {
  const { sandboxes } = await runtimeObjects(cri, uids);
  for (const id of sandboxes) {
    await cri.stopPodSandbox(id).catch(() => undefined);
    await cri.removePodSandbox(id).catch(() => undefined);
  }
  const cgroups = await PodCgroupManager.detect();
  for (const uid of uids) await cgroups.removePod(uid).catch(() => undefined);
}

/** The network namespace path of a sandbox, from containerd's verbose status. */
export async function sandboxNetns(cri: CriClient, sandboxId: string): Promise<string | undefined> {
  const status = await cri.podSandboxStatus(sandboxId, true);
  const info = JSON.parse(status.info.info ?? '{}') as { runtimeSpec?: { linux?: { namespaces?: { type: string; path?: string }[] } } };
  return info.runtimeSpec?.linux?.namespaces?.find((n) => n.type === 'network')?.path;
}

/** The host PID of a running container's process, from containerd's verbose status. */
export async function containerPid(cri: CriClient, containerId: string): Promise<number> {
  const status = await cri.containerStatus(containerId, true);
  const info = JSON.parse(status.info.info ?? '{}') as { pid?: number };
  if (!info.pid) throw new Error(`no pid for container ${containerId}`);
  return info.pid;
}

/** Host-side veth interfaces attached to a bridge. */
export async function bridgePorts(bridge: string): Promise<string[]> {
  const { stdout } = await execa('ip', ['-j', 'link', 'show', 'master', bridge], { reject: false });
  if (!stdout) return [];
  return (JSON.parse(stdout) as { ifname: string }[]).map((l) => l.ifname);
}

/** host-local reservations (files named by IP) of the pod network. */
export async function ipReservations(network = podNetworkName): Promise<string[]> {
  const dir = join('/var/lib/cni/networks', network);
  const files = await readdir(dir).catch(() => [] as string[]);
  return files.filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f));
}

/** GET from the host with a short timeout; traffic goes only to pod IPs this test created. */
export function httpGet(url: string, timeoutMs = 3_000): Promise<string> {
  return new Promise((resolve, reject) => {
    // No keep-alive agent: the test must not hold sockets open after it ends.
    const req = get(url, { agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** Stops the rig's containerd (SIGTERM) and waits until it has exited. */
export async function stopContainerd(): Promise<void> {
  const pid = Number((await readFile('/run/nodelet/containerd.pid', 'utf8')).trim());
  process.kill(pid, 'SIGTERM');
  await waitFor('containerd to exit', async () => {
    try {
      process.kill(pid, 0);
      return undefined;
    } catch {
      return true;
    }
  }, 20_000);
}

/** Starts the rig's containerd again (idempotent rig script). */
export async function startContainerd(): Promise<void> {
  await execa('bash', [`${repoRoot}/scripts/runtime.sh`, 'up'], { stdio: 'ignore' });
}
