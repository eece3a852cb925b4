// Wires nodelet together: pod sources -> pod config -> pod workers <-> CRI runtime, the agent-owned pod network, housekeeping,
// the status API; with --kubeconfig, cluster mode's API source and controllers.
import { access, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { LogEventRecorder } from '../controllers/event-recorder.js';
import { CriClient, runtimeSocketPath } from '../cri/client.js';
import { instrumentRuntime } from '../cri/instrumented.js';
import { KubeletMetrics } from '../server/metrics.js';
import { PodStartupLatencyTracker } from '../execution/pod-startup-latency.js';
import { hostLocalSubnets } from '../cni/conflist.js';
import { CniExecutor } from '../cni/executor.js';
import { PodNetwork } from '../cni/pod-network.js';
import { CniShimServer } from '../cni/shim-server.js';
import { BusctlSystemdUnits, detectCgroupVersion, PodCgroupManager, type HostCgroupVersion } from '../host/cgroups.js';
import { isSwapOn } from '../host/swap.js';
import { ForgottenShimCollector } from '../host/runtime-shims.js';
import {
  cgroupDriverFromRuntimeConfig,
  contentStoreDirFromStatusInfo,
  networkNotReadyError,
  runtimeConfigRequiredFrom,
  runtimeConfigUnimplementedMessage,
  sandboxImageFromStatusInfo,
  UnknownCgroupDriverError,
  type CgroupDriver,
} from '../cri/runtime-info.js';
import { isUnimplemented } from '../cri/errors.js';
import type { CallOptions, RuntimeConfig, RuntimeHandler } from '../cri/types.js';
import { runHealthzServer } from './healthz.js';
import { HeapMode } from './heap-mode.js';
import { resolvConfLimitWarning } from '../execution/dns.js';
import { hostFilesystem } from '../host/filesystem.js';
import { DirectProgramRunner, SpawnHelperRunner } from '../host/program-runner.js';
import { detectNodeIP, hostAddresses, nodeName } from '../host/node.js';
import { systemClock, type Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { FilePodSource } from '../sources/file-source.js';
import { Backoff } from '../decisions/backoff.js';
import { NodeCredentials } from '../execution/node-credentials.js';
import { ContentStoreFiles } from '../host/content-store.js';
import { ImageManager } from '../execution/images.js';
import { Housekeeping } from '../lifecycle/housekeeping.js';
import { ImageGCManager } from '../lifecycle/image-gc.js';
import { filesystemUsage } from '../host/resource-usage.js';
import { PodWorkers } from '../lifecycle/pod-workers.js';
import { Relister } from '../lifecycle/relist.js';
import { RuntimeObserver, type NodeRuntimeSnapshot } from '../lifecycle/runtime-observer.js';
import { ResizeConditions } from '../lifecycle/resize-conditions.js';
import { PodResourcesState } from '../host/pod-resources-state.js';
import { CgroupUsageReader } from '../host/resource-usage.js';
import { AllocationManager } from '../podconfig/allocation.js';
import { podCgroupParent } from '../execution/resources.js';
import { PodConfig } from '../podconfig/pod-config.js';
import { ProbeManager } from '../prober/manager.js';
import { StatusApi } from './status-api.js';
import { PodNetworkConfig, PodSubnetCollisionError } from './pod-network-config.js';
import { AgentConfigError, type AgentConfig } from './agent-config.js';
import { createKubeletApi } from './kubelet-api.js';
import { internalCapacity, nodeAllocatable, nodeCapacity } from '../host/allocatable.js';
import { milliCPUToShares } from '../execution/resources.js';
import { readMachineInfo } from '../host/machine-info.js';
import { PodVolumeManager } from '../volume/pod-volumes.js';
import { kubeletMappings, podDirMappingsStore, UserNamespaceManager } from '../host/user-namespaces.js';
import { newestMinor } from '../core/kube-minor.js';

export { AgentConfigError };

/** What the host offers the systemd cgroup driver: systemd as PID 1, and pod cgroups in the unified (v2) hierarchy. */
export interface CgroupHost {
  systemdRunning: boolean;
  unified: boolean;
}

/**
 * The cgroup driver pods get. kubelet 1.37 takes the runtime's when it tells (CRI RuntimeConfig, see
 * cgroupDriverFromCri) and overrides its configuration with it; nodelet refuses a configured driver that differs from
 * the runtime's, naming both, since one of the two configurations is wrong. Without an answer from the runtime the
 * configured driver is used. systemd needs systemd as PID 1, and nodelet implements it on cgroup v2 only: elsewhere it
 * is refused, naming the field.
 */
export function effectiveCgroupDriver(configured: CgroupDriver, runtime: CgroupDriver | undefined, host: CgroupHost): CgroupDriver {
  if (runtime && runtime !== configured) {
    throw new AgentConfigError(`cgroupDriver: "${configured}" does not match the container runtime's cgroup driver "${runtime}" ` +
      `(its runc runtime's SystemdCgroup = ${runtime === 'systemd'}): configure both alike, cgroupDriver in --config and SystemdCgroup in the runtime's configuration`);
  }
  if (configured !== 'systemd') return configured;
  const origin = runtime ? "(--config, and the container runtime's SystemdCgroup = true)" : '(--config)';
  const missing = !host.systemdRunning ? 'systemd is not running as PID 1 on this host' : !host.unified ? 'nodelet implements it on cgroup v2 hosts only, and this host has cgroup v1' : '';
  if (missing) {
    throw new AgentConfigError(`cgroupDriver: systemd ${origin} cannot be used: ${missing}; configure the runtime and cgroupDriver for cgroupfs`);
  }
  return configured;
}

/** kubelet 1.37's refusal of a cgroup v1 host while failCgroupV1 is true (pkg/kubelet/apis/config/validation/validation_linux.go). */
export const cgroupV1RefusedMessage =
  'kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release';

/** kubelet 1.37's warning on a cgroup v1 host (pkg/kubelet/cm/container_manager.go CgroupV1DeprecatedWarning). */
export const cgroupV1DeprecatedWarning =
  'cgroup v1 detected. cgroup v1 support is deprecated and will be removed in a future release. Please migrate to cgroup v2. ' +
  'More information at https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1';

/** kubelet 1.37's warning on cgroup v2 without the root's cpu.stat (CgroupV2KernelWarning, its missing space included). */
export const cgroupV2KernelWarning =
  "cgroup v2 is being used on a kernel, which doesn't support root `cpu.stat`.Kubelet will continue, but may experience instability or wrong behavior";

/** What kubelet's cgroup version check leaves of a host it starts on. */
export interface CgroupVersionCheck {
  /** kubelet_cgroup_version. */
  version: 1 | 2;
  /** What kubelet logs at -v 2 ("Warning: cgroup check") about the host. */
  warning?: string;
  /** The Warning event kubelet records on its Node (cgroup v1: reason CgroupV1, pkg/kubelet/events). */
  event?: { reason: string; message: string };
}

/**
 * kubelet 1.37 on the host's cgroup version. With failCgroupV1 (its default) a cgroup v1 host is refused before anything
 * runs: its configuration validation fails with kubelet's words, named here by the field. With failCgroupV1 false it
 * starts, and as its Run begins (cgroupVersionCheck, pkg/kubelet/kubelet_linux.go) logs the deprecation at -v 2 and
 * records it as a Warning event CgroupV1 on the Node; on cgroup v2 only a root cgroup without cpu.stat (kernels before
 * 5.8) is logged.
 */
export function cgroupVersionCheck(failCgroupV1: boolean, host: HostCgroupVersion): CgroupVersionCheck {
  if (host.version === 1) {
    if (failCgroupV1) throw new AgentConfigError(`failCgroupV1: ${cgroupV1RefusedMessage}`);
    return { version: 1, warning: cgroupV1DeprecatedWarning, event: { reason: 'CgroupV1', message: cgroupV1DeprecatedWarning } };
  }
  return host.rootCpuStat ? { version: 2 } : { version: 2, warning: cgroupV2KernelWarning };
}

export interface CriCgroupDriverDeps {
  runtime: { runtimeConfig(opts?: CallOptions): Promise<RuntimeConfig> };
  log: Logger;
  /** Waits between attempts; resolves early when the agent stops. */
  sleep: (ms: number) => Promise<void>;
  signal?: AbortSignal;
  /** kubelet_cri_losing_support{version}: the runtime lacks RuntimeConfig, which kubelet `version` requires. */
  losingSupport: (version: string) => void;
  /** One call's deadline (kubelet's is its runtime request timeout; nodelet does not hold its start that long). */
  timeoutMs?: number;
}

/** kubelet's attempts at RuntimeConfig at start, and the wait after a failed one (getCgroupDriverFromCRI). */
const runtimeConfigAttempts = 3;
const runtimeConfigRetryMs = 2_000;

/**
 * The runtime's cgroup driver, asked as kubelet 1.37 asks it at start (cmd/kubelet/app/server.go getCgroupDriverFromCRI):
 * CRI RuntimeConfig, tried 3 times 2 s apart while it fails. A runtime that does not implement it (Unimplemented: containerd
 * before 2.0) is counted in kubelet_cri_losing_support{version="1.38.0"} with kubelet's log line, and the
 * configured driver stays (undefined); so it does when the answer has no Linux configuration. A driver kubelet does
 * not know refuses the start. kubelet also exits when every attempt failed; nodelet starts without the runtime (pods
 * wait for it) and keeps the configured driver, saying so.
 */
export async function cgroupDriverFromCri(deps: CriCgroupDriverDeps): Promise<CgroupDriver | undefined> {
  const { runtime, log, signal } = deps;
  let lastError: unknown;
  for (let attempt = 1; attempt <= runtimeConfigAttempts && !signal?.aborted; attempt++) {
    let answer: RuntimeConfig;
    try {
      answer = await runtime.runtimeConfig({ timeoutMs: deps.timeoutMs ?? 2_000, ...(signal ? { signal } : {}) });
    } catch (err) {
      if (isUnimplemented(err)) {
        deps.losingSupport(runtimeConfigRequiredFrom);
        log.info(runtimeConfigUnimplementedMessage);
        return undefined;
      }
      lastError = err;
      if (attempt < runtimeConfigAttempts) await deps.sleep(runtimeConfigRetryMs);
      continue;
    }
    try {
      return cgroupDriverFromRuntimeConfig(answer);
    } catch (err) {
      throw err instanceof UnknownCgroupDriverError ? new AgentConfigError(err.message, { cause: err }) : err;
    }
  }
  log.warn({ err: lastError }, 'Container runtime not reachable: using cgroupDriver from the configuration');
  return undefined;
}

/** The status socket of an agent with this root dir (read by `nodelet pods`). */
export function statusSocketPath(rootDir: string): string {
  return join(rootDir, 'nodelet.sock');
}

const workerErrorRetryMs = 2_000;

/** The host's addresses for probe host checks, read at most every 30 s (every probe run asks). */
function cachedHostIPs(nodeIP: () => string, clock: Pick<Clock, 'now'>): () => string[] {
  let addresses: string[] = [];
  let readAt = -Infinity;
  return () => {
    if (clock.now() - readAt > 30_000) {
      addresses = [nodeIP(), ...hostAddresses()];
      readAt = clock.now();
    }
    return addresses;
  };
}

export class Agent {
  constructor(
    private readonly config: AgentConfig,
    private readonly log: Logger,
  ) {}

  /** Runs until the signal aborts; pods keep running after it returns (a restarted agent adopts them). */
  async run(signal: AbortSignal): Promise<void> {
    const { config, log } = this;
    const clock = systemClock;
    if (!config.podManifestPath && !config.kubeconfig) throw new AgentConfigError('--pod-manifest-path is required (standalone mode, without --kubeconfig)');
    // kubelet's configuration validation refuses a cgroup v1 host first (failCgroupV1); its warnings wait for the Run.
    const cgroupCheck = cgroupVersionCheck(config.kubelet.failCgroupV1, await detectCgroupVersion());
    // kubelet's container manager refuses these before anything runs.
    if (config.kubelet.failSwapOn && (await isSwapOn())) {
      throw new AgentConfigError('failSwapOn: running with swap on is not supported, please disable swap or set failSwapOn (--config) to false');
    }
    const cgroupfs = await PodCgroupManager.detect(config.kubelet.cgroupRoot);
    const node = nodeName(config.hostnameOverride);
    const metrics = new KubeletMetrics(node, clock.now);
    const runtime = instrumentRuntime(new CriClient(config.runtimeEndpoint, { requestTimeoutMs: config.runtimeRequestTimeoutMs, log }), metrics);
    let cgroupDriver: CgroupDriver;
    try {
      // The runtime's driver, when it is up now (nodelet starts without a runtime; pods wait for it).
      const runtimeDriver = await cgroupDriverFromCri({
        runtime,
        log,
        sleep: (ms) => clock.sleep(ms, signal),
        signal,
        losingSupport: (version) => metrics.criLosingSupport(version),
      });
      const host = { systemdRunning: await access('/run/systemd/system').then(() => true, () => false), unified: cgroupfs.unified };
      cgroupDriver = effectiveCgroupDriver(config.kubelet.cgroupDriver, runtimeDriver, host);
      if (runtimeDriver) log.info({ cgroupDriver }, 'Using cgroup driver setting received from the CRI runtime');
      // kubelet's cgroupManager.Validate: the cgroup root must exist in every hierarchy pods use.
      const missingRoot = await cgroupfs.missingRoot();
      if (missingRoot.length > 0) {
        throw new AgentConfigError(`cgroupRoot: invalid configuration: cgroup "${config.kubelet.cgroupRoot}" does not exist: ${missingRoot.join(', ')}`);
      }
    } catch (err) {
      runtime.close();
      throw err;
    }
    await mkdir(config.rootDir, { recursive: true });
    // kubelet's user namespace manager, with the ranges of the pods already on the node taken again.
    let userNamespaces: UserNamespaceManager;
    try {
      userNamespaces = new UserNamespaceManager({
        store: podDirMappingsStore(join(config.rootDir, 'pods')),
        range: await kubeletMappings(config.kubelet.userNamespacesIdsPerPod, log),
        idsPerPod: config.kubelet.userNamespacesIdsPerPod,
        maxPods: config.kubelet.maxPods,
        handlers: async () => (await runtime.status({ timeoutMs: 2_000 })).handlers,
        now: clock.now,
        log,
      });
      await userNamespaces.recover();
    } catch (err) {
      runtime.close();
      throw new AgentConfigError(`create user namespace manager: ${(err as Error).message}`, { cause: err });
    }
    const nodeIP = await detectNodeIP(config.nodeIP, node);
    // Pods' hostIP and the probes' host checks follow the Node's InternalIP as its status updates determine it.
    let hostIP = nodeIP;

    // Started now, while the agent is small: the helper's own start is the one fork of the agent's size it costs.
    const programs = config.spawnHelper ? await SpawnHelperRunner.start(config.spawnHelper, log) : new DirectProgramRunner();
    const executor = new CniExecutor({ binDirs: config.cniBinDirs, cacheDir: config.cniCacheDir, programs, log });
    const podCgroups = cgroupDriver === 'systemd' ? await PodCgroupManager.detect(config.kubelet.cgroupRoot, new BusctlSystemdUnits(programs)) : cgroupfs;
    const machine = await readMachineInfo(config.rootDir);
    const capacity = nodeCapacity(machine, config.kubelet.maxPods);
    // kubelet's node allocatable for the kubepods cgroup leaves the eviction thresholds in (they are for eviction), and
    // counts the machine's task limit (internal capacity `pid`, less the pid reservations) as its pids.max.
    const internal = internalCapacity(capacity, machine);
    const enforced = config.kubelet.enforceNodeAllocatable.includes('pods') ? nodeAllocatable(internal, { ...config.kubelet, evictionHard: {} }) : internal;
    await podCgroups.limitKubepods({
      cpuShares: milliCPUToShares(Number(enforced.cpu.milliValue())),
      memoryLimitInBytes: Number(enforced.memory.value()),
      ...(enforced.pid ? { pidsLimit: Number(enforced.pid.value()) } : {}),
    });
    // The network comes from --cni-conf-dir, read now and watched while the agent runs: until a file is there, only
    // host-network pods start and the node's network is not ready.
    const podNetwork = await PodNetwork.create({ executor, main: undefined, log });
    /** The subnets pod IPs come from now (hooks and probes may reach this node's other pods there). */
    const podSubnets = (): string[] => (podNetwork.main ? hostLocalSubnets(podNetwork.main) : []);
    const networkConfig = new PodNetworkConfig({
      network: podNetwork,
      dir: config.cniConfDir,
      podCidr: config.podCIDR,
      applyPodCidr: config.podCidrInConfDir,
      // In cluster mode nodelet's own network takes the Node's podCIDR and waits for it, as containerd's conf_template.
      podCidrFromNode: !!config.kubeconfig,
      podCidrStateFile: join(config.rootDir, 'pod-cidr'),
      log,
    });
    try {
      await networkConfig.load(signal);
    } catch (err) {
      programs.close();
      throw err instanceof PodSubnetCollisionError ? new AgentConfigError(err.message, { cause: err }) : err;
    }
    const shimServer = new CniShimServer({ socketPath: config.cniSocket, backend: podNetwork, log });
    await shimServer.listen();
    log.info(
      { node, nodeIP, network: podNetwork.main?.name, cniConfDir: config.cniConfDir, subnets: podNetwork.main ? hostLocalSubnets(podNetwork.main) : [], cniSocket: config.cniSocket },
      'Pod network ready for the CNI shim',
    );

    // kubelet's allocatable of this machine under the configured reservations (the Node's status follows the same
    // rules): what pods read of the node, and what admission counts until the Node is registered.
    const allocatable = async () => nodeAllocatable(nodeCapacity(await readMachineInfo(config.rootDir), config.kubelet.maxPods), config.kubelet);
    // Cluster mode's modules load only with --kubeconfig: standalone keeps their memory.
    const cluster = config.kubeconfig
      ? await (await import('./cluster-mode.js')).ClusterMode.create({ config, nodeName: node, nodeIP, onNodeIP: (ip) => { hostIP = ip; }, runtime, podNetwork: networkConfig, allocatable, log, signal })
      : undefined;
    // The Kubernetes minor served: the API server's in cluster mode, the newest standalone.
    const kubeMinor = cluster?.minor ?? newestMinor;
    let runtimeName = 'containerd';
    // The runtime's handlers (recursive read-only mounts): cluster mode's node status asks for them at every runtime
    // check, standalone asks once when the runtime answers.
    let standaloneHandlers: RuntimeHandler[] | undefined;
    const observer = new RuntimeObserver(runtime, podNetwork, hostFilesystem);
    const volumes = new PodVolumeManager(config.rootDir, allocatable, cluster?.objects);
    // Events go to the API server in cluster mode; standalone, as kubelet without an API client, only to the log.
    const events = cluster?.events ?? new LogEventRecorder(log, node, clock);
    const startupLatency = new PodStartupLatencyTracker();
    const images = new ImageManager({
      images: runtime,
      pullBackoff: new Backoff(),
      now: clock.now,
      events,
      latency: startupLatency,
      objects: cluster?.objects,
      nodeCredentials: new NodeCredentials({ rootDir: config.rootDir, now: clock.now, log }),
      pulls: { serialize: config.kubelet.serializeImagePulls, maxParallel: config.kubelet.maxParallelImagePulls },
      // A pull's progress is read from containerd's content store, found in its Status (at the first pull, while unknown).
      contentStore: async () => {
        const dir = contentStoreDirFromStatusInfo(await runtime.statusInfo({ timeoutMs: 2_000 }));
        return dir ? new ContentStoreFiles(dir) : undefined;
      },
    });
    // Before the workers: they tell it every change of their pods, for the status socket's watch.
    const api = new StatusApi(statusSocketPath(config.rootDir), () => workers.pods(), { pullStatus: (uid) => images.pullStatus(uid) });
    // In-place resize: what pods were allocated and what their containers run with, kept across restarts (kubelet's
    // allocated_pods_state and actuated_pods_state in its root dir), and the pods' resize conditions.
    const actuated = new PodResourcesState(join(config.rootDir, 'actuated_pods_state'));
    const resizeConditions = new ResizeConditions();
    const cgroupUsage = new CgroupUsageReader(podCgroups.mounted);
    const workers: PodWorkers = new PodWorkers({
      resize: {
        actuated,
        memoryUsage: async (pod, sandboxId) => {
          const podUsage = cgroupUsage.read(podCgroups.cgroupPath(podCgroupParent(pod, config.kubelet.cgroupRoot)))?.memory?.usageBytes;
          const stats = await runtime.listContainerStats({ podSandboxId: sandboxId });
          return {
            ...(podUsage !== undefined ? { pod: podUsage } : {}),
            containers: new Map(stats.flatMap((c) => (c.memory?.usageBytes !== undefined ? [[c.metadata.name, c.memory.usageBytes] as const] : []))),
          };
        },
        resized: (containerId) => observer.invalidate(containerId),
      },
      resizeConditions,
      volumes,
      userNamespaces,
      runtime,
      images,
      metrics,
      startupLatency,
      crashBackoff: new Backoff(),
      node: {
        podLogsDir: config.podLogsDir,
        dns: { clusterDNS: config.kubelet.clusterDNS, clusterDomain: config.kubelet.clusterDomain, resolvConf: config.kubelet.resolvConf, nodeIPs: [nodeIP] },
        cgroupsPerQOS: true,
        cgroupRoot: config.kubelet.cgroupRoot,
        cgroupDriver,
        podPidsLimit: config.kubelet.podPidsLimit,
        seccompProfileRoot: join(config.rootDir, 'seccomp'),
      },
      podCgroups,
      clock,
      files: hostFilesystem,
      observer,
      hostIP: () => hostIP,
      podIPs: (sandboxId) => podNetwork.podIPs(sandboxId) ?? [],
      podSubnets,
      runtimeName: () => runtimeName,
      runtimeHandlers: () => (cluster ? cluster.runtimeHandlers() : standaloneHandlers),
      kubeMinor,
      resyncIntervalMs: config.syncFrequencyMs,
      errorRetryMs: workerErrorRetryMs,
      log,
      // Standalone there is no one to write statuses to: the workers keep them for the status socket.
      ...(cluster
        ? { onStatus: (pod, status, final) => podConfig.podStatus(pod, status, final), apiObjects: cluster.objects, services: cluster.services }
        : {}),
      onPodChange: (uid, pod) => api.podChanged(uid, pod),
      networkNotReady: () => {
        const condition = podNetwork.notReadyCondition();
        return condition ? networkNotReadyError(condition) : undefined;
      },
      events,
      prober: new ProbeManager({ runtime, hostIP: () => hostIP, hostIPs: cachedHostIPs(() => hostIP, clock), podSubnets,
        kubeMinor, log, events, clock, metrics }),
    });
    // One pod config in both modes merges the sources' pods and hands them to the workers. Cluster mode adds node
    // admission, the status manager and mirror pods; standalone admits every static pod, as before: a pod nodelet
    // cannot run is refused by its worker, which reports it Failed on the status socket.
    const podConfig: PodConfig = new PodConfig({
      sources: [...(config.podManifestPath ? (['file'] as const) : []), ...(cluster ? (['api'] as const) : [])],
      workers,
      events,
      log,
      ...(cluster ? { node: () => cluster.admissionNode(), status: cluster.status, mirrors: cluster.mirrors } : {}),
      allocation: new AllocationManager(new PodResourcesState(join(config.rootDir, 'allocated_pods_state')), resizeConditions, events, log),
    });
    const staticPods = config.podManifestPath
      ? new FilePodSource({
          dir: config.podManifestPath,
          nodeName: node,
          logger: log,
          rescanIntervalMs: config.fileCheckFrequencyMs,
          onPods: (pods: V1Pod[]) => podConfig.setStaticPods(pods),
        })
      : undefined;

    // The kubelet API (port 10250): logs, exec, attach, port-forward for kubectl through the API server.
    let lastRelist: number | undefined;
    let lastSnapshot: NodeRuntimeSnapshot | undefined;
    const heapMode = new HeapMode({ clock, log });
    const kubeletApi = await createKubeletApi({
      config,
      nodeName: node,
      nodeIP,
      ...(cluster ? { client: cluster.client } : {}),
      pods: () => workers.pods(),
      runtime,
      metrics,
      runtimeListing: () => lastSnapshot,
      podCgroups,
      memoryCapacityBytes: Number(machine.memoryCapacityBytes),
      syncLoopEntry: () => lastRelist,
      onStatsScrape: () => heapMode.busy(),
      clock,
      log,
      signal,
    });
    const shims = new ForgottenShimCollector(runtimeSocketPath(config.runtimeEndpoint));
    const housekeeping = new Housekeeping({ clock, log, pods: workers, volumes, userNamespaces, podCgroups, podNetwork, shims });
    const imageGC = new ImageGCManager({
      runtime,
      filesystem: filesystemUsage,
      sandboxImage: async () => sandboxImageFromStatusInfo(await runtime.statusInfo({ timeoutMs: 2_000 })),
      events,
      clock,
      log,
      policy: {
        highThresholdPercent: config.kubelet.imageGCHighThresholdPercent,
        lowThresholdPercent: config.kubelet.imageGCLowThresholdPercent,
        minAgeMs: config.kubelet.imageMinimumGCAgeMs,
        maxAgeMs: config.kubelet.imageMaximumGCAgeMs,
      },
      periodMs: config.imageGCPeriodMs,
    });
    const relister = new Relister(
      observer,
      config.relistPeriodMs,
      {
        onRelist: (changed, snapshot) => {
          lastRelist = clock.now();
          lastSnapshot = snapshot;
          workers.handleRelist(changed, snapshot);
          podConfig.onRelist(snapshot);
          housekeeping.afterRelist(snapshot, signal);
        },
        onRuntimeRecovered: () => workers.wakeAll(),
      },
      log,
      clock,
      metrics,
    );
    const announceRuntime = async () => {
      while (!signal.aborted) {
        try {
          const v = await runtime.version({ signal, timeoutMs: 5_000 });
          runtimeName = v.runtimeName;
          if (!cluster) standaloneHandlers = (await runtime.status({ signal, timeoutMs: 5_000 })).handlers ?? [];
          log.info({ runtime: `${v.runtimeName}://${v.runtimeVersion}`, criVersion: v.runtimeApiVersion, endpoint: config.runtimeEndpoint }, 'Container runtime connected');
          return;
        } catch (err) {
          if (signal.aborted) return;
          log.warn({ err, endpoint: config.runtimeEndpoint }, 'Container runtime not reachable yet; pods wait for it');
          await clock.sleep(2_000, signal);
        }
      }
    };

    await api.listen();
    try {
      await kubeletApi.listen();
    } catch (err) {
      await api.close();
      throw new AgentConfigError(`cannot serve the kubelet API on ${config.kubelet.address}:${config.kubelet.port}: ${(err as Error).message}`, { cause: err });
    }
    log.info({ address: config.kubelet.address, port: kubeletApi.port }, 'Kubelet API listening (HTTPS)');
    // kubelet's cgroupVersionCheck as its Run begins.
    metrics.cgroupVersion(cgroupCheck.version);
    if (cgroupCheck.warning) log.debug({ error: cgroupCheck.warning }, 'Warning: cgroup check');
    if (cgroupCheck.event) events.nodeEvent('Warning', cgroupCheck.event.reason, cgroupCheck.event.message);
    // kubelet checks the host resolver file against the pods' limits once, when its sync loop starts.
    const { resolvConf, clusterDomain } = config.kubelet;
    if (resolvConf) {
      const read = await readFile(resolvConf, 'utf8').then((text) => ({ text, error: '' }), (err: Error) => ({ text: undefined, error: err.message }));
      const warning = resolvConfLimitWarning(resolvConf, read.text, clusterDomain, read.error);
      if (warning) events.nodeEvent('Warning', 'CheckLimitsForResolvConf', warning);
    }
    log.info({ node, podManifestPath: config.podManifestPath, statusSocket: statusSocketPath(config.rootDir) }, 'nodelet started');
    try {
      await Promise.all([
        announceRuntime(),
        staticPods?.run(signal),
        cluster?.run(podConfig, workers, signal),
        relister.run(signal),
        networkConfig.watch(signal, () => workers.wakeAll()),
        runHealthzServer({ address: config.kubelet.healthzBindAddress, port: config.kubelet.healthzPort, log }, signal),
        imageGC.run(signal),
        heapMode.run(signal),
      ]);
    } finally {
      workers.stop();
      await kubeletApi.close();
      await api.close();
      await shimServer.close();
      programs.close();
      runtime.close();
      log.info('nodelet stopped; pods keep running');
    }
  }
}
