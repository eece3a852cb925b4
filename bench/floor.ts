// The raw CRI floor: the bench's pod started straight over gRPC on the floor containerd, with the configs kubelet would send.
//
// RunPodSandbox + CreateContainer + StartContainer on the "floor" containerd, whose CNI config is the plain reference bridge
// chain: what kubelet would get from this containerd. The configs are the ones nodelet builds for the same pod.
import { createHash, randomUUID } from 'node:crypto';
import { readFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container } from '@kubernetes/client-node';
import { CriClient } from '../src/cri/client.js';
import { cgroupDriverFromStatusInfo } from '../src/cri/runtime-info.js';
import type { ContainerConfig, DnsConfig, NamespaceOption, PodSandboxConfig } from '../src/cri/types.js';
import { benchNamespace, benchNode, benchPods, podNamespaceLabel, podSpec } from './workload.js';
import { errorText, now } from './util.js';

const floorEndpoint = 'unix:///run/nodelet/containerd-floor/containerd.sock';

// The labels and annotations kubelet puts on CRI sandboxes and containers.
const podNameLabel = 'io.kubernetes.pod.name';
const podUidLabel = 'io.kubernetes.pod.uid';
const containerNameLabel = 'io.kubernetes.container.name';

/** The namespaces of a pod without host namespaces or a shared process namespace. */
const namespaceOptions: NamespaceOption = { network: 'POD', pid: 'CONTAINER', ipc: 'POD' };

// kubelet's masked and read-only /proc paths of an unprivileged container with the Default proc mount.
const maskedPaths = [
  '/proc/asound', '/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list',
  '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware', '/sys/devices/virtual/powercap',
];
const readonlyPaths = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/** The host's resolver settings (nameserver / search / options of resolv.conf): a ClusterFirst pod's without cluster DNS. */
async function hostDns(path = '/etc/resolv.conf'): Promise<DnsConfig> {
  const dns: DnsConfig = { servers: [], searches: [], options: [] };
  for (const raw of (await readFile(path, 'utf8').catch(() => '')).split('\n')) {
    const [key, ...values] = raw.replace(/[#;].*$/, '').trim().split(/\s+/);
    if (key === 'nameserver' && values[0]) dns.servers.push(values[0]);
    else if (key === 'search') dns.searches = values;
    else if (key === 'options') dns.options.push(...values);
  }
  return dns;
}

/** nodelet's container hash annotation: the first 8 hex digits of the SHA-256 of the container's JSON with sorted keys. */
function containerHash(container: V1Container): string {
  const sorted = JSON.stringify(container, (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, (v as Record<string, unknown>)[k]]));
  });
  return createHash('sha256').update(sorted).digest('hex').slice(0, 8);
}

/** The floor's pod: the bench's pod spec, named like the static pod nodelet makes of the same manifest. */
interface FloorPod {
  name: string;
  uid: string;
}

/**
 * The sandbox config of a BestEffort pod without volumes, host ports, sysctls or security context, as kubelet builds it,
 * but without a pod cgroup (the floor creates none): with the cgroupfs driver no cgroup parent, with systemd's the one
 * slice `nodelet-floor.slice` for every floor pod (containerd 1.6 would otherwise give runc a cgroupfs path, which runc's
 * systemd driver refuses), outside kubepods, where nodelet's housekeeping would take its pods' slices for orphans.
 */
function sandboxConfig(pod: FloorPod, logsDir: string, dns: DnsConfig, systemdSlices: boolean): PodSandboxConfig {
  const identity = { [podNameLabel]: pod.name, [podNamespaceLabel]: benchNamespace, [podUidLabel]: pod.uid };
  return {
    metadata: { name: pod.name, namespace: benchNamespace, uid: pod.uid, attempt: 0 },
    hostname: pod.name.slice(0, 63).replace(/[-.]+$/, ''),
    logDirectory: join(logsDir, `${benchNamespace}_${pod.name}_${pod.uid}`),
    dnsConfig: { servers: [...dns.servers], searches: [...dns.searches], options: [...dns.options] },
    portMappings: [],
    labels: { app: 'nodelet-bench', ...identity },
    annotations: {},
    linux: {
      ...(systemdSlices ? { cgroupParent: 'nodelet-floor.slice' } : {}),
      securityContext: { namespaceOptions, privileged: false, seccomp: { profileType: 'RuntimeDefault' } },
      sysctls: {},
    },
  };
}

/** The config of the pod's container at its first start: no env, mounts, resources or security context (root, Unconfined). */
function containerConfig(pod: FloorPod, container: V1Container, gracePeriodSeconds: number): ContainerConfig {
  return {
    metadata: { name: container.name, attempt: 0 },
    image: { image: container.image ?? '' },
    command: container.command ?? [],
    args: container.args ?? [],
    workingDir: container.workingDir ?? '',
    envs: [],
    mounts: [],
    labels: { [podNameLabel]: pod.name, [podNamespaceLabel]: benchNamespace, [podUidLabel]: pod.uid, [containerNameLabel]: container.name },
    annotations: {
      'io.kubernetes.container.hash': containerHash(container),
      'io.kubernetes.container.restartCount': '0',
      'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
      'io.kubernetes.container.terminationMessagePolicy': 'File',
      'io.kubernetes.pod.terminationGracePeriod': String(gracePeriodSeconds),
    },
    logPath: `${container.name}/0.log`,
    stdin: false,
    tty: false,
    linux: {
      // BestEffort: the minimum CPU shares, no quota, kubelet's BestEffort OOM score.
      resources: { cpuShares: 2, cpuPeriod: 100_000, cpuQuota: 0, oomScoreAdj: 1000 },
      securityContext: {
        namespaceOptions, privileged: false, readonlyRootfs: false, noNewPrivs: false, seccomp: { profileType: 'Unconfined' }, runAsUser: 0,
        maskedPaths, readonlyPaths,
      },
    },
  };
}

export interface FloorSample {
  elapsedMs: number;
  benchCpuMs: number;
  runPodSandboxMs: number[];
  createContainerMs: number[];
  startContainerMs: number[];
  /** All the pods removed at once, kubelet's way (the large case only). */
  teardownMs?: number;
}

export class Floor {
  readonly cri = new CriClient(floorEndpoint);
  private logsDir = '';
  private dns: DnsConfig = { servers: [], searches: [], options: [] };
  private systemdSlices = false;

  /** Reads the host's resolver settings and the floor containerd's cgroup driver; the pods' log directories go under `logsDir`. */
  async prepare(logsDir: string): Promise<void> {
    this.logsDir = logsDir;
    this.dns = await hostDns();
    this.systemdSlices = cgroupDriverFromStatusInfo(await this.cri.statusInfo({ timeoutMs: 10_000 })) === 'systemd';
  }

  private async startPod(pod: FloorPod, signal: AbortSignal): Promise<{ run: number; create: number; start: number }> {
    const spec = podSpec();
    const container = spec.containers[0]!;
    const t0 = now();
    const sandbox = sandboxConfig(pod, this.logsDir, this.dns, this.systemdSlices);
    // kubelet creates the pod's log directory before RunPodSandbox and the container's before CreateContainer.
    await mkdir(sandbox.logDirectory, { recursive: true, mode: 0o755 });
    const sandboxId = await this.cri.runPodSandbox(sandbox, '', { signal });
    const t1 = now();
    await mkdir(join(sandbox.logDirectory, container.name), { recursive: true, mode: 0o755 });
    const containerId = await this.cri.createContainer(sandboxId, containerConfig(pod, container, spec.terminationGracePeriodSeconds!), sandbox, { signal });
    const t2 = now();
    await this.cri.startContainer(containerId, { signal });
    const t3 = now();
    return { run: t1 - t0, create: t2 - t1, start: t3 - t2 };
  }

  /** Starts these pods at once; the sample ends when the last StartContainer returned. The pods are left running. */
  async run(names: string[], signal: AbortSignal): Promise<FloorSample> {
    const pods = names.map((name): FloorPod => ({ name: `${name}-${benchNode}`, uid: randomUUID() }));
    const cpu0 = process.cpuUsage();
    const t0 = now();
    const results = await Promise.allSettled(pods.map((p) => this.startPod(p, signal)));
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

  /**
   * Removes every bench pod at once as kubelet's teardown of a pod goes, StopContainer with the pod's grace period, then
   * StopPodSandbox and RemovePodSandbox; resolves when the last pod is removed (the floor's own teardown, timed).
   */
  async teardown(signal: AbortSignal): Promise<number> {
    const opts = { signal, timeoutMs: 60_000 };
    const t0 = now();
    const [sandboxes, containers] = await Promise.all([this.cri.listPodSandbox(benchPods, opts), this.cri.listContainers(benchPods, opts)]);
    const grace = podSpec().terminationGracePeriodSeconds!;
    await Promise.all(sandboxes.map(async (s) => {
      await Promise.all(containers.filter((c) => c.podSandboxId === s.id).map((c) => this.cri.stopContainer(c.id, grace, opts)));
      await this.cri.stopPodSandbox(s.id, opts);
      await this.cri.removePodSandbox(s.id, opts);
    }));
    return now() - t0;
  }
}
