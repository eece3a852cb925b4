// Wires nodelet together: pod source -> pod workers <-> CRI runtime, the agent-owned pod network, the status API.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { LogEventRecorder } from '../controllers/event-recorder.js';
import { CriClient } from '../cri/client.js';
import { bridgeNames, hostLocalSubnets, loadPodNetworks } from '../cni/conflist.js';
import { CniExecutor } from '../cni/executor.js';
import { PodNetwork } from '../cni/pod-network.js';
import { CniShimServer } from '../cni/shim-server.js';
import { hostRoutes } from '../host/routes.js';
import { PodCgroupManager } from '../host/cgroups.js';
import { hostFilesystem } from '../host/filesystem.js';
import { DirectProgramRunner, SpawnHelperRunner } from '../host/program-runner.js';
import { detectNodeIP, hostAddresses, hostDnsConfig, nodeName } from '../host/node.js';
import { subnetCollisions } from '../cni/conflist.js';
import type { Logger } from '../core/log.js';
import { FilePodSource } from '../sources/file-source.js';
import { Backoff } from '../decisions/backoff.js';
import { ImageManager } from '../execution/images.js';
import { PodWorkers } from '../lifecycle/pod-workers.js';
import { Relister } from '../lifecycle/relist.js';
import { RuntimeObserver } from '../lifecycle/runtime-observer.js';
import { ProbeManager } from '../prober/manager.js';
import { StatusApi } from './status-api.js';
import type { AgentConfig } from './agent-config.js';
import { nodeAllocatable, nodeCapacity } from '../host/allocatable.js';
import { readMachineInfo } from '../host/machine-info.js';
import { PodVolumeManager } from '../volume/pod-volumes.js';

/** A configuration the agent cannot start with; the message names the setting. */
export class AgentConfigError extends Error {}

/** The status socket of an agent with this root dir (read by `nodelet pods`). */
export function statusSocketPath(rootDir: string): string {
  return join(rootDir, 'nodelet.sock');
}

const podNetworkGcIntervalMs = 60_000;
const workerErrorRetryMs = 2_000;

/** The host's addresses for probe host checks, read at most every 30 s (every probe run asks). */
function cachedHostIPs(nodeIP: string): () => string[] {
  let addresses: string[] = [];
  let readAt = -Infinity;
  return () => {
    if (Date.now() - readAt > 30_000) {
      addresses = [nodeIP, ...hostAddresses()];
      readAt = Date.now();
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
    if (!config.podManifestPath && !config.kubeconfig) throw new AgentConfigError('--pod-manifest-path is required (standalone mode, without --kubeconfig)');
    await mkdir(config.rootDir, { recursive: true });
    const node = nodeName(config.hostnameOverride);
    const nodeIP = await detectNodeIP(config.nodeIP);
    const hostDns = await hostDnsConfig();

    const networks = await loadPodNetworks(config.cniConfDir, config.podCIDR ? { podCidr: config.podCIDR } : {});
    const routes = await hostRoutes({ signal });
    for (const subnet of hostLocalSubnets(networks.main)) {
      const clash = subnetCollisions(subnet, routes, bridgeNames(networks.main));
      if (clash.length > 0) {
        throw new AgentConfigError(
          `pod subnet ${subnet} (network "${networks.main.name}" in ${config.cniConfDir}${config.podCIDR ? ', --pod-cidr' : ''}) ` +
            `overlaps host routes: ${clash.map((r) => `${r.dst}${r.dev ? ` dev ${r.dev}` : ''}`).join(', ')}; choose another subnet with --pod-cidr`,
        );
      }
    }
    // Started now, while the agent is small: the helper's own start is the one fork of the agent's size it costs.
    const programs = config.spawnHelper ? await SpawnHelperRunner.start(config.spawnHelper, log) : new DirectProgramRunner();
    const executor = new CniExecutor({ binDirs: config.cniBinDirs, cacheDir: config.cniCacheDir, programs, log });
    const podNetwork = await PodNetwork.create({ executor, main: networks.main, loopback: networks.loopback, log });
    const shimServer = new CniShimServer({ socketPath: config.cniSocket, backend: podNetwork, log });
    await shimServer.listen();
    log.info(
      { node, nodeIP, network: networks.main.name, subnets: hostLocalSubnets(networks.main), cniSocket: config.cniSocket },
      'Pod network ready for the CNI shim',
    );

    const runtime = new CriClient(config.runtimeEndpoint, { requestTimeoutMs: config.runtimeRequestTimeoutMs });
    // kubelet's allocatable of this machine under the configured reservations (the Node's status follows the same
    // rules): what pods read of the node, and what admission counts until the Node is registered.
    const allocatable = async () => nodeAllocatable(nodeCapacity(await readMachineInfo(config.rootDir), config.kubelet.maxPods), config.kubelet);
    // Cluster mode's modules load only with --kubeconfig: standalone keeps their memory.
    const cluster = config.kubeconfig
      ? await (await import('./cluster-mode.js')).ClusterMode.create({ config, nodeName: node, nodeIP, runtime, podNetwork, allocatable, log })
      : undefined;
    const podCgroups = await PodCgroupManager.detect();
    let runtimeName = 'containerd';
    const observer = new RuntimeObserver(runtime, podNetwork, hostFilesystem);
    const volumes = new PodVolumeManager(config.rootDir, allocatable, cluster?.objects);
    // Events go to the API server in cluster mode; standalone, as kubelet without an API client, only to the log.
    const events = cluster?.events ?? new LogEventRecorder(log, node);
    // Before the workers: they tell it every change of their pods, for the status socket's watch.
    const api = new StatusApi(statusSocketPath(config.rootDir), () => workers.pods());
    const workers = new PodWorkers({
      volumes,
      runtime,
      images: new ImageManager(runtime, new Backoff(), Date.now, events),
      crashBackoff: new Backoff(),
      node: { podLogsDir: config.podLogsDir, hostDns, cgroupsPerQOS: true, seccompProfileRoot: join(config.rootDir, 'seccomp') },
      podCgroups,
      now: Date.now,
      files: hostFilesystem,
      observer,
      hostIP: () => nodeIP,
      podIPs: (sandboxId) => podNetwork.podIPs(sandboxId) ?? [],
      runtimeName: () => runtimeName,
      resyncIntervalMs: config.syncFrequencyMs,
      errorRetryMs: workerErrorRetryMs,
      log,
      ...(cluster ? { onStatus: cluster.onPodStatus, apiObjects: cluster.objects } : {}),
      onPodChange: (uid, pod) => api.podChanged(uid, pod),
      events,
      prober: new ProbeManager({ runtime, hostIP: () => nodeIP, hostIPs: cachedHostIPs(nodeIP), log, events }),
    });

    let lastNetworkGc = 0;
    let lastCgroupGc = 0;
    let cgroupGcRunning = false;
    const relister = new Relister(
      observer,
      config.relistPeriodMs,
      {
        onRelist: (changed, snapshot) => {
          workers.handleRelist(changed, snapshot);
          cluster?.onRelist(snapshot);
          // <root-dir>/pods/<uid> of pods neither desired nor in the runtime (e.g. removed while nodelet was down).
          volumes.sweepOrphanedPodDirs((uid) => workers.isKnown(uid), log, signal);
          // Pod cgroups of pods neither desired nor in the runtime: once the desired pods are known, then every minute.
          if (workers.desiredPodsKnown && !cgroupGcRunning && Date.now() - lastCgroupGc >= podNetworkGcIntervalMs) {
            lastCgroupGc = Date.now();
            cgroupGcRunning = true;
            void podCgroups
              .garbageCollect((uid) => workers.isKnown(uid))
              .then((r) => {
                if (r.removed.length) log.info({ podUids: r.removed }, 'Removed the cgroups of orphaned pods');
                if (r.failed.length) log.warn({ failed: r.failed }, 'Could not remove the cgroups of orphaned pods');
              })
              .catch((err: unknown) => log.warn({ err }, 'Pod cgroup garbage collection failed'))
              .finally(() => (cgroupGcRunning = false));
          }
          if (Date.now() - lastNetworkGc < podNetworkGcIntervalMs) return;
          lastNetworkGc = Date.now();
          // Attachments of sandboxes that no longer exist (e.g. removed while nodelet was down) are released.
          void podNetwork
            .garbageCollect(new Set(snapshot.sandboxes.map((s) => s.id)), signal)
            .then((r) => r.removed.length && log.info({ removed: r.removed }, 'Released pod network attachments of vanished sandboxes'))
            .catch((err: unknown) => log.warn({ err }, 'Pod network garbage collection failed'));
        },
        onRuntimeRecovered: () => workers.wakeAll(),
      },
      log,
    );
    const announceRuntime = async () => {
      while (!signal.aborted) {
        try {
          const v = await runtime.version({ signal, timeoutMs: 5_000 });
          runtimeName = v.runtimeName;
          log.info({ runtime: `${v.runtimeName}://${v.runtimeVersion}`, criVersion: v.runtimeApiVersion, endpoint: config.runtimeEndpoint }, 'Container runtime connected');
          return;
        } catch (err) {
          if (signal.aborted) return;
          log.warn({ err, endpoint: config.runtimeEndpoint }, 'Container runtime not reachable yet; pods wait for it');
          await new Promise((r) => setTimeout(r, 2_000));
        }
      }
    };

    await api.listen();
    // Standalone: the static pods are all there is; cluster mode merges them with the API's pods.
    const source = cluster ? undefined : new FilePodSource({
      dir: config.podManifestPath,
      nodeName: node,
      logger: log,
      rescanIntervalMs: config.fileCheckFrequencyMs,
      onPods: (pods: V1Pod[]) => workers.setDesiredPods(pods),
    });
    log.info({ node, podManifestPath: config.podManifestPath, statusSocket: statusSocketPath(config.rootDir) }, 'nodelet started');
    try {
      await Promise.all([announceRuntime(), cluster ? cluster.run(workers, signal) : source!.run(signal), relister.run(signal)]);
    } finally {
      workers.stop();
      await api.close();
      await shimServer.close();
      programs.close();
      runtime.close();
      log.info('nodelet stopped; pods keep running');
    }
  }
}
