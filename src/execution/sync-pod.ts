// Executes a pod's computed actions against the runtime, step by step, recording a result per step.
import { totalmem } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { EventRecorder } from '../core/events.js';
import type { ApiObjectSource, ServiceLister } from '../core/api-objects.js';
import { isStaticPod } from '../core/config-annotations.js';
import type { Clock } from '../core/clock.js';
import type { KubeMinor } from '../core/kube-minor.js';
import type { DnsConfig, PodSandboxConfig, RuntimeHandler, RuntimeService, UserNamespace } from '../cri/types.js';
import { grpcCodeName, isNotFound } from '../cri/errors.js';
import type { Logger } from '../core/log.js';
import type { Backoff } from '../decisions/backoff.js';
import { lastExited, type ContainerToStart, type PodActions } from '../decisions/compute-actions.js';
import { containerEnv } from './env.js';
import { parseResolvConf, podDnsConfig } from './dns.js';
import { etcHostsPath, managedHostsContent, mountsManagedHosts } from './etc-hosts.js';
import { serviceEnvVarMap } from './service-env.js';
import { isRestartableInitContainer } from '../decisions/init-containers.js';
import type { EnsuredImage, ImageManager } from './images.js';
import type { PodCgroupManager } from '../host/cgroups.js';
import type { PodFilesystem } from '../host/filesystem.js';
import type { UserNamespaceManager } from '../host/user-namespaces.js';
import { podCgroupParent, podCgroupResources } from './resources.js';
import { runLifecycleHook } from './lifecycle-hooks.js';
import { latestContainer, type ContainerObservation, type PodRuntimeState } from '../core/runtime-state.js';
import { ephemeralContainers, podContainers } from '../core/pod-containers.js';
import {
  buildContainerConfig,
  buildSandboxConfig,
  podLogDirectory,
  terminationGracePeriodSeconds,
  type NodeRuntimeSettings,
} from './runtime-config.js';
import { stepFailed, SyncError, type StepResult } from '../core/sync-result.js';
import { volumeFailureResults, type PodVolumeManager } from '../volume/pod-volumes.js';
import { handlerSupportsRecursiveReadOnly } from '../volume/recursive-read-only.js';
import { imageVolumeFailures, imageVolumeSpec, type ImageVolumePull, type ImageVolumePulls } from '../volume/image-volumes.js';
import type { ContainerTypeLabel, NodeMetrics } from '../core/metrics.js';
import { resizePod, type PodMemoryUsage } from './resize.js';
import type { PodResourcesState } from '../host/pod-resources-state.js';

export interface SyncDeps {
  runtime: RuntimeService;
  /** The node's IP (status.hostIP). */
  hostIP: () => string;
  /** IPs the pod network gave a sandbox (primary first). */
  podIPs: (sandboxId: string) => string[];
  /** The subnets the pod network allocates from now: the IPs of this node's pods. */
  podSubnets: () => string[];
  /** The Kubernetes minor the node serves: its feature gates decide, its version names the hooks' User-Agent. */
  kubeMinor: KubeMinor;
  images: ImageManager;
  crashBackoff: Backoff;
  node: NodeRuntimeSettings;
  clock: Clock;
  /** Pod log directories are made and removed here. */
  files: PodFilesystem;
  /** Creates and removes pod cgroups; set exactly when node.cgroupsPerQOS is. */
  podCgroups?: PodCgroupManager;
  /** Sets up, mounts and tears down pod volumes under <root-dir>/pods/<uid>. */
  volumes: PodVolumeManager;
  /** The user namespaces of pods with hostUsers false: their ranges, given at the sandbox's creation, freed at the end. */
  userNamespaces: Pick<UserNamespaceManager, 'forPod' | 'release'>;
  /** configMaps, secrets and tokens from the API server (cluster mode); undefined standalone. */
  apiObjects?: ApiObjectSource;
  /** The cluster's Services for the pods' service variables (cluster mode); undefined standalone: no variables. */
  services?: ServiceLister;
  /** kubelet's events about the pod and its containers (the API server's in cluster mode, the log's standalone). */
  events: EventRecorder;
  /** kubelet's started pods and containers counters; without it nothing is recorded. */
  metrics?: NodeMetrics;
  /** In-place resize: the resources last applied to each container, and what the pod's memory limits check against. */
  resize?: {
    actuated: PodResourcesState;
    memoryUsage: (pod: V1Pod, sandboxId: string) => Promise<PodMemoryUsage>;
    /** A container's resources changed in place (its cached status is stale). */
    resized: (containerId: string) => void;
  };
  /** The runtime's handlers as its last Status listed them (recursive read-only mounts); unset or undefined: none known. */
  runtimeHandlers?: () => readonly RuntimeHandler[] | undefined;
}

/** The node's hosts file a host-network pod's /etc/hosts copies; a real one is a few lines. */
const maxHostsFileBytes = 1 << 20;

/** kubelet reads at most 10 MB of the resolver file; a real one is a few lines. */
const maxResolvConfBytes = 1 << 20;

/**
 * The pod's DNS config for a new sandbox, as kubelet's GetPodDNS: the host's resolver file read now (a file that cannot
 * be read or parsed fails the sandbox, as in kubelet), the events of forming it recorded.
 */
async function sandboxDns(deps: Pick<SyncDeps, 'node' | 'files' | 'events'>, pod: V1Pod): Promise<DnsConfig> {
  const settings = deps.node.dns;
  const host = settings.resolvConf ? parseResolvConf(await deps.files.readHead(settings.resolvConf, maxResolvConfBytes)) : { servers: [], searches: [], options: [] };
  const { dnsConfig, events } = podDnsConfig(pod, settings, host);
  for (const e of events) {
    if (e.about === 'node') deps.events.nodeEvent(e.type, e.reason, e.message);
    else deps.events.event({ pod }, e.type, e.reason, e.message);
  }
  return dnsConfig;
}

/**
 * The pod's service variables, as kubelet's makeEnvironmentVariables: a pod from the API server waits for the first
 * list of Services (so none starts without KUBERNETES_SERVICE_HOST after a restart); a static pod takes what is there.
 */
function podServiceEnv(deps: Pick<SyncDeps, 'services'>, pod: V1Pod): Map<string, string> {
  if (!deps.services) return new Map();
  if (!isStaticPod(pod) && !deps.services.hasSynced()) {
    throw new SyncError('CreateContainerConfigError', 'services have not yet been read at least once, cannot construct envvars');
  }
  // The API server defaults enableServiceLinks to true.
  return serviceEnvVarMap(deps.services.list(), pod.metadata?.namespace ?? 'default', pod.spec?.enableServiceLinks ?? true);
}

export function crashBackoffKey(pod: V1Pod, containerName: string): string {
  return `${pod.metadata?.uid}/${containerName}`;
}

/**
 * Stops running containers with the grace period, then the pod's ready sandboxes. As kubelet does, the
 * regular containers stop together first and sidecars after them, last-started first.
 */
async function killPod(deps: SyncDeps, pod: V1Pod, state: PodRuntimeState, gracePeriodSeconds: number, log: Logger, signal?: AbortSignal): Promise<StepResult[]> {
  const live = state.containers.filter((c) => c.state === 'running' || c.state === 'unknown');
  const sidecars = (pod.spec?.initContainers ?? []).filter(isRestartableInitContainer).map((c) => c.name);
  const isSidecar = (c: ContainerObservation) => sidecars.includes(c.name);
  const results = await Promise.all(
    live.filter((c) => !isSidecar(c)).map((c) => killContainer(deps, pod, state, c, gracePeriodSeconds, stoppingPod, log, signal)),
  );
  for (const c of live.filter(isSidecar).sort((a, b) => sidecars.indexOf(b.name) - sidecars.indexOf(a.name))) {
    results.push(await killContainer(deps, pod, state, c, gracePeriodSeconds, stoppingPod, log, signal));
  }
  for (const sandbox of state.sandboxes.filter((s) => s.ready)) {
    try {
      await deps.runtime.stopPodSandbox(sandbox.id, { signal });
      log.info({ sandboxId: sandbox.id }, 'Stopped pod sandbox');
      results.push({ action: 'KillPod', target: sandbox.id });
    } catch (err) {
      results.push(stepFailed('KillPod', sandbox.id, err, 'ErrKillPodSandbox'));
      log.warn({ sandboxId: sandbox.id, err }, 'Failed to stop pod sandbox');
    }
  }
  return results;
}

/** The kill reason of a whole pod's stop; its Killing events say kubelet's plain "Stopping container <name>". */
const stoppingPod = 'Stopping pod';

/** kubelet never stops a container with less than 2 s of grace. */
const minimumGracePeriodSeconds = 2;

/** The container's spec, or for one known only from the runtime, what its annotations kept of it. */
function containerSpecOf(pod: V1Pod, c: ContainerObservation): V1Container {
  const spec = podContainers(pod).find((s) => s.name === c.name);
  return spec ?? { name: c.name, ports: c.ports ?? [] };
}

/**
 * Stops one container: its preStop hook first (within the grace period), then StopContainer with what is
 * left of the grace period (at least 2 s): SIGTERM, and SIGKILL once that has passed.
 */
async function killContainer(
  deps: SyncDeps,
  pod: V1Pod,
  state: PodRuntimeState,
  c: ContainerObservation,
  requestedGraceSeconds: number,
  reason: string,
  log: Logger,
  signal?: AbortSignal,
): Promise<StepResult> {
  const { id, name } = c;
  let gracePeriodSeconds = Math.max(requestedGraceSeconds, minimumGracePeriodSeconds);
  const clog = log.child({ container: name, containerId: id });
  clog.info({ gracePeriod: gracePeriodSeconds, reason }, 'Killing container with a grace period');
  deps.events.event({ pod, containerName: name }, 'Normal', 'Killing', reason === stoppingPod ? `Stopping container ${name}` : reason);
  const preStop = containerSpecOf(pod, c).lifecycle?.preStop ?? c.preStop;
  if (preStop && c.state === 'running') {
    const started = deps.clock.now();
    try {
      await runLifecycleHook('PreStop', preStop, {
        pod,
        container: containerSpecOf(pod, c),
        containerId: id,
        podIPs: pod.spec?.hostNetwork ? [deps.hostIP()] : (state.sandboxes.find((s) => s.id === c.sandboxId)?.ips ?? []),
        hostIPs: [deps.hostIP()],
        podSubnets: deps.podSubnets(),
        kubeMinor: deps.kubeMinor,
        runtime: deps.runtime,
        timeoutSeconds: gracePeriodSeconds,
        clock: deps.clock,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      clog.warn({ err, reason: 'FailedPreStopHook' }, (err as Error).message);
      // As kubelet since 1.26: the hook's output stays out of the event, where it could leak secrets.
      deps.events.event({ pod, containerName: name }, 'Warning', 'FailedPreStopHook', 'PreStopHook failed');
    }
    gracePeriodSeconds = Math.max(gracePeriodSeconds - Math.floor((deps.clock.now() - started) / 1000), minimumGracePeriodSeconds);
  }
  try {
    await deps.runtime.stopContainer(id, gracePeriodSeconds, { signal });
    return { action: 'KillContainer', target: name };
  } catch (err) {
    if (isNotFound(err)) return { action: 'KillContainer', target: name };
    clog.warn({ err }, 'Failed to kill container');
    return stepFailed('KillContainer', name, err, 'ErrKillContainer');
  }
}

const specListField: Record<ContainerTypeLabel, string> = { container: 'containers', init_container: 'initContainers', ephemeral_container: 'ephemeralContainers' };

/** Pulls the image (per policy), creates and starts one container; the result names the failure kubelet would. */
async function startContainer(
  deps: SyncDeps,
  pod: V1Pod,
  spec: V1Container,
  /** Which of the pod's container lists `start.specIndex` indexes (the metrics' container_type). */
  containerType: ContainerTypeLabel,
  start: ContainerToStart,
  state: PodRuntimeState,
  sandboxId: string,
  sandboxConfig: PodSandboxConfig,
  imageVolumes: ImageVolumePulls,
  /** The pod's own user namespace, or why it cannot have it (the container's config then cannot be made). */
  userNamespace: UserNamespace | Error | undefined,
  log: Logger,
  signal?: AbortSignal,
): Promise<StepResult> {
  const clog = log.child({ container: spec.name });
  const ref = { pod, containerName: spec.name };
  // The container's field path in the pod, for error messages (e.g. spec.containers[1]).
  const field = `spec.${specListField[containerType]}[${start.specIndex}]`;
  /** kubelet's Failed event of a start step: "Error: " and what the step failed with. */
  const failed = (result: StepResult, detail: string): StepResult => {
    deps.events.event(ref, 'Warning', 'Failed', `Error: ${detail}`);
    return result;
  };
  // As kubelet: every start after an exit advances the container's back-off, reset if it ran long enough.
  const exited = lastExited(state, spec.name);
  if (exited) deps.crashBackoff.next(crashBackoffKey(pod, spec.name), deps.clock.now(), exited.finishedAt);
  const volumeFailures = imageVolumeFailures(spec, imageVolumes);
  if (volumeFailures) {
    // As kubelet: a Failed event per mount of an image volume that could not be pulled, the start failing with the last.
    for (const err of volumeFailures) deps.events.event(ref, 'Warning', 'Failed', `Error: ${err.code}`);
    return stepFailed('StartContainer', spec.name, volumeFailures[volumeFailures.length - 1], 'ErrImagePull');
  }
  let image: EnsuredImage;
  try {
    image = await deps.images.ensureImage(pod, spec, sandboxConfig, clog, signal);
  } catch (err) {
    // The image manager recorded what happened; this says which waiting reason it leads to (Error: ErrImagePull).
    const result = stepFailed('StartContainer', spec.name, err, 'ErrImagePull');
    return failed(result, result.error!.code);
  }
  let containerId: string;
  try {
    if (userNamespace instanceof Error) throw new SyncError('CreateContainerConfigError', userNamespace.message, { cause: userNamespace });
    const podIPs = pod.spec?.hostNetwork ? [deps.hostIP()] : deps.podIPs(sandboxId);
    const env = await containerEnv(pod, spec, field, {
      serviceEnv: podServiceEnv(deps, pod),
      podIPs,
      hostIP: deps.hostIP(),
      allocatable: () => deps.volumes.nodeAllocatable(),
      volumePath: (name) => {
        const volume = pod.spec?.volumes?.find((v) => v.name === name);
        return volume && deps.volumes.volumePath(pod.metadata!.uid!, volume);
      },
      ...(deps.apiObjects ? { objects: deps.apiObjects } : {}),
      ...(signal ? { signal } : {}),
    });
    const mounts = await deps.volumes.containerMounts(pod, spec, env, imageVolumes, signal, handlerSupportsRecursiveReadOnly(deps.runtimeHandlers?.()));
    if (mountsManagedHosts(pod, spec, podIPs)) {
      const nodeHosts = pod.spec?.hostNetwork ? await deps.files.readHead(etcHostsPath, maxHostsFileBytes) : '';
      const content = managedHostsContent(pod, podIPs, deps.node.dns.clusterDomain, nodeHosts);
      mounts.push({ containerPath: etcHostsPath, hostPath: await deps.volumes.etcHostsFile(pod.metadata!.uid!, content) });
    }
    if (spec.terminationMessagePath) {
      // The process writes its termination message here; it is read back once the container exits.
      mounts.push({ containerPath: spec.terminationMessagePath, hostPath: await deps.volumes.terminationMessageFile(pod.metadata!.uid!, spec.name) });
    }
    const config = buildContainerConfig(pod, spec, start.restartCount, env, {
      imageUser: image.user,
      node: deps.node,
      mounts,
      targetContainerId: ephemeralTargetId(pod, spec, state),
      ...(userNamespace ? { userNamespace } : {}),
    });
    await deps.files.makeDirs(join(sandboxConfig.logDirectory, spec.name), 0o755);
    deps.metrics?.containerStarted(containerType);
    containerId = await deps.runtime.createContainer(sandboxId, config, sandboxConfig, { signal }).catch((err: unknown) => {
      deps.metrics?.containerStartFailed(containerType, grpcCodeName(err));
      throw err;
    });
    clog.info({ containerId, restartCount: start.restartCount, reason: start.reason }, 'Created container');
    deps.events.event(ref, 'Normal', 'Created', 'Container created');
  } catch (err) {
    clog.warn({ err }, 'Failed to create container');
    const result = stepFailed('StartContainer', spec.name, err, 'CreateContainerError');
    return failed(result, result.error!.message);
  }
  try {
    await deps.runtime.startContainer(containerId, { signal }).catch((err: unknown) => {
      deps.metrics?.containerStartFailed(containerType, grpcCodeName(err));
      throw err;
    });
    clog.info({ containerId }, 'Started container');
    deps.events.event(ref, 'Normal', 'Started', 'Container started');
    // kubelet's setActuatedContainerResources: what the container now runs with.
    deps.resize?.actuated.setContainer(pod.metadata!.uid!, spec.name, spec.resources ?? {});
  } catch (err) {
    clog.warn({ err, containerId }, 'Failed to start container');
    const result = stepFailed('StartContainer', spec.name, err, 'RunContainerError');
    return failed(result, result.error!.message);
  }
  const postStart = spec.lifecycle?.postStart;
  if (postStart) {
    try {
      await runLifecycleHook('PostStart', postStart, {
        pod,
        container: spec,
        containerId,
        podIPs: pod.spec?.hostNetwork ? [deps.hostIP()] : deps.podIPs(sandboxId),
        hostIPs: [deps.hostIP()],
        podSubnets: deps.podSubnets(),
        kubeMinor: deps.kubeMinor,
        runtime: deps.runtime,
        timeoutSeconds: postStartTimeoutSeconds,
        clock: deps.clock,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      // As kubelet: a failed postStart hook kills the container, which then restarts per restartPolicy.
      clog.warn({ err, reason: 'FailedPostStartHook' }, (err as Error).message);
      deps.events.event(ref, 'Warning', 'FailedPostStartHook', 'PostStartHook failed');
      const observed: ContainerObservation = {
        id: containerId, sandboxId, name: spec.name, attempt: start.restartCount, restartCount: start.restartCount,
        hash: '', state: 'running', createdAt: deps.clock.now(), image: spec.image ?? '', imageRef: '',
      };
      await killContainer(deps, pod, state, observed, terminationGracePeriodSeconds(pod), 'FailedPostStartHook', log, signal);
      return stepFailed('StartContainer', spec.name, new SyncError('PostStartHookError', (err as Error).message), 'PostStartHookError');
    }
  }
  return { action: 'StartContainer', target: spec.name, containerId };
}

/**
 * The container an ephemeral container targets (targetContainerName), as kubelet's getTargetID: its latest instance;
 * a target the pod has never run is the start's CreateContainerConfigError.
 */
function ephemeralTargetId(pod: V1Pod, spec: V1Container, state: PodRuntimeState): string | undefined {
  const target = pod.spec?.ephemeralContainers?.find((e) => e.name === spec.name)?.targetContainerName;
  if (!target) return undefined;
  const instance = latestContainer(state, target);
  if (!instance) throw new SyncError('CreateContainerConfigError', `unable to find target container ${target}`);
  return instance.id;
}

/**
 * The pod's image volumes made present per their pullPolicy, as kubelet's getImageVolumes before it starts any container:
 * each volume's image to mount or why its pull failed (which fails only the containers mounting it).
 */
async function pullImageVolumes(deps: SyncDeps, pod: V1Pod, sandboxConfig: PodSandboxConfig, log: Logger, signal?: AbortSignal): Promise<ImageVolumePulls> {
  const pulls = new Map<string, ImageVolumePull>();
  for (const volume of pod.spec?.volumes ?? []) {
    if (!volume.image) continue;
    try {
      pulls.set(volume.name, { image: imageVolumeSpec(await deps.images.ensureVolumeImage(pod, volume, sandboxConfig, log, signal), pod) });
    } catch (err) {
      // As a container's own image: a failure without kubelet's reason reads as ErrImagePull.
      pulls.set(volume.name, { error: err instanceof SyncError ? err : new SyncError('ErrImagePull', (err as Error).message, { cause: err }) });
    }
  }
  return pulls;
}

/** kubelet's FailedMount events: one per volume that could not be set up. */
export function recordMountFailures(deps: Pick<SyncDeps, 'events'>, pod: V1Pod, err: unknown): void {
  for (const r of volumeFailureResults(err)) deps.events.event({ pod }, 'Warning', 'FailedMount', r.error!.message);
}

/** kubelet runs postStart hooks without a deadline; nodelet bounds them so a stuck hook cannot hold a pod forever. */
const postStartTimeoutSeconds = 600;

/**
 * Executes actions in kubelet's SyncPod order:
 *  1. kill the pod (running containers, then sandboxes) when asked; a failure ends the sync;
 *  2. kill the containers marked for killing;
 *  3. set up the pod's volumes when anything is to start; a failure ends the sync (a MountVolume result per
 *     failed volume; the containers keep waiting), as kubelet starts nothing before WaitForAttachAndMount succeeds;
 *  4. create the sandbox when asked; a failure ends the sync; then, when anything is to start, pull the image volumes'
 *     images (a failed pull fails only the containers mounting that volume, with its reason);
 *  5. start the ephemeral containers to start (a failure is recorded, the others still start);
 *  6. start the init containers to start, in order; an init container (not a sidecar) that fails ends the sync;
 *  7. start the containers in spec order (image, create, start). As kubelet does, a container
 *     that fails is recorded and the next one is still tried; the next sync retries it.
 */
export async function executePodActions(
  deps: SyncDeps,
  pod: V1Pod,
  actions: PodActions,
  state: PodRuntimeState,
  log: Logger,
  signal?: AbortSignal,
): Promise<StepResult[]> {
  const results: StepResult[] = [];
  const grace = terminationGracePeriodSeconds(pod);

  if (actions.killPod) {
    const killed = await killPod(deps, pod, state, grace, log, signal);
    results.push(...killed);
    if (killed.some((r) => r.error)) return results;
  }

  for (const k of actions.containersToKill) {
    const target = state.containers.find((c) => c.id === k.id);
    if (target) results.push(await killContainer(deps, pod, state, target, k.gracePeriodSeconds ?? grace, k.reason, log, signal));
  }

  const starting = [...actions.ephemeralContainersToStart, ...actions.initContainersToStart, ...actions.containersToStart];
  if (actions.createSandbox || starting.length > 0) {
    try {
      await deps.volumes.setUp(pod, log, signal);
    } catch (err) {
      recordMountFailures(deps, pod, err);
      // As kubelet: nothing starts, the containers keep waiting (ContainerCreating) and the sync is retried.
      results.push(...volumeFailureResults(err));
      return results;
    }
  }

  // kubelet's NamespacesForPod, which the sandbox's config and every container's ask: the pod's user namespace.
  let userNamespace: UserNamespace | Error | undefined;
  if (actions.createSandbox || starting.length > 0) {
    userNamespace = await deps.userNamespaces.forPod(pod).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
  }

  let sandboxId = actions.sandboxId;
  let attempt = state.sandboxes.find((s) => s.id === sandboxId)?.attempt ?? actions.attempt;
  if (actions.createSandbox) {
    if (state.sandboxes.length > 0) deps.events.event({ pod }, 'Normal', 'SandboxChanged', 'Pod sandbox changed, it will be killed and re-created.');
    attempt = actions.attempt;
    try {
      if (userNamespace instanceof Error) throw userNamespace;
      const config = buildSandboxConfig(pod, attempt, deps.node, await sandboxDns(deps, pod), userNamespace);
      await Promise.all([
        deps.files.makeDirs(config.logDirectory, 0o755),
        deps.podCgroups?.ensurePod(podCgroupParent(pod, deps.node.cgroupRoot), podCgroupResources(pod, deps.node.podPidsLimit)),
      ]);
      sandboxId = await deps.runtime.runPodSandbox(config, undefined, { signal }).catch((err: unknown) => {
        deps.metrics?.sandboxStarted(true);
        throw err;
      });
      deps.metrics?.sandboxStarted(false);
      log.info({ sandboxId, attempt }, 'Created pod sandbox');
      results.push({ action: 'CreatePodSandbox', target: sandboxId });
    } catch (err) {
      log.warn({ err, attempt }, 'Failed to create pod sandbox');
      deps.events.event({ pod }, 'Warning', 'FailedCreatePodSandBox', `Failed to create pod sandbox: ${(err as Error).message}`);
      results.push(stepFailed('CreatePodSandbox', '', err, 'ErrCreatePodSandbox'));
      return results;
    }
  }

  const sandboxConfig = buildSandboxConfig(pod, attempt, deps.node, undefined, userNamespace instanceof Error ? undefined : userNamespace);
  const imageVolumes = starting.length > 0 ? await pullImageVolumes(deps, pod, sandboxConfig, log, signal) : new Map<string, ImageVolumePull>();
  // As kubelet: ephemeral containers before init containers, so a debug container starts even while initialization
  // fails; one that fails does not hold the others back.
  const ephemeral = ephemeralContainers(pod);
  for (const start of actions.ephemeralContainersToStart) {
    results.push(await startContainer(deps, pod, ephemeral[start.specIndex]!, 'ephemeral_container', start, state, sandboxId, sandboxConfig, imageVolumes, userNamespace, log, signal));
  }
  const inits = pod.spec?.initContainers ?? [];
  for (const start of actions.initContainersToStart) {
    const spec = inits[start.specIndex]!;
    const result = await startContainer(deps, pod, spec, 'init_container', start, state, sandboxId, sandboxConfig, imageVolumes, userNamespace, log, signal);
    results.push(result);
    // An init container that cannot start stops initialization; a sidecar that cannot does not.
    if (result.error && !isRestartableInitContainer(spec)) return results;
  }
  const resizing = actions.updatePodResources || actions.containersToUpdate.memory.length > 0 || actions.containersToUpdate.cpu.length > 0;
  if (resizing && deps.resize) {
    results.push(
      await resizePod(
        {
          runtime: deps.runtime,
          ...(deps.podCgroups ? { podCgroups: deps.podCgroups } : {}),
          ...deps.resize,
          ...(deps.node.cgroupRoot !== undefined ? { cgroupRoot: deps.node.cgroupRoot } : {}),
          ...(deps.node.podPidsLimit !== undefined ? { podPidsLimit: deps.node.podPidsLimit } : {}),
          memoryCapacity: deps.node.memoryCapacityBytes ?? BigInt(totalmem()),
        },
        pod,
        actions,
        sandboxId,
        log,
        signal,
      ),
    );
  }
  const specs = pod.spec?.containers ?? [];
  for (const start of actions.containersToStart) {
    results.push(await startContainer(deps, pod, specs[start.specIndex]!, 'container', start, state, sandboxId, sandboxConfig, imageVolumes, userNamespace, log, signal));
  }
  return results;
}

/**
 * Removes what a pod no longer needs, as kubelet's container GC with one dead instance kept per
 * container name: older dead or never-started containers (and their log files), and sandboxes
 * that are neither the newest nor ready.
 */
export async function collectPodGarbage(deps: SyncDeps, pod: V1Pod, state: PodRuntimeState, log: Logger, signal?: AbortSignal): Promise<void> {
  const keptDead = new Set<string>();
  const logDir = podLogDirectory(deps.node.podLogsDir, pod);
  for (const c of state.containers) {
    if (c.state === 'running') continue;
    if (c.state === 'exited' && !keptDead.has(c.name)) {
      keptDead.add(c.name);
      continue;
    }
    if (c.state === 'created' && latestContainer(state, c.name)?.id === c.id) continue;
    try {
      await deps.runtime.removeContainer(c.id, { signal });
      await deps.files.removeAll(join(logDir, c.name, `${c.restartCount}.log`));
      log.debug({ container: c.name, containerId: c.id }, 'Removed dead container');
    } catch (err) {
      if (!isNotFound(err)) log.warn({ container: c.name, containerId: c.id, err }, 'Failed to remove dead container');
    }
  }
  for (const s of state.sandboxes.slice(1)) {
    if (s.ready || state.containers.some((c) => c.sandboxId === s.id)) continue;
    try {
      await deps.runtime.removePodSandbox(s.id, { signal });
      log.debug({ sandboxId: s.id }, 'Removed old pod sandbox');
    } catch (err) {
      if (!isNotFound(err)) log.warn({ sandboxId: s.id, err }, 'Failed to remove old pod sandbox');
    }
  }
}

/**
 * Tears a pod down completely: containers stopped with the grace period (SIGTERM, then SIGKILL),
 * sandboxes stopped (the runtime runs CNI DEL) and removed, its volumes unmounted and <root-dir>/pods/<uid>
 * removed, the pod's log directory deleted.
 * Throws on the first failure so the caller retries; every step is idempotent.
 */
export async function terminatePod(
  deps: SyncDeps,
  /** The pod, or for one known only from the runtime, its identity. */
  pod: V1Pod,
  state: PodRuntimeState,
  gracePeriodSeconds: number,
  logDirectory: string | undefined,
  log: Logger,
  signal?: AbortSignal,
  /** Runs once every container is stopped, before anything is removed (the pod's final status is read then). */
  afterKill?: () => Promise<void>,
  /**
   * The pod ended (Succeeded or Failed) but is not deleted: as kubelet, its stopped sandbox, its containers and their logs
   * stay (`kubectl logs` of a finished pod reads them) until the pod is deleted; its cgroup and volumes go now.
   */
  keepContent = false,
): Promise<void> {
  const failed = (await killPod(deps, pod, state, gracePeriodSeconds, log, signal)).find((r) => r.error);
  if (failed) {
    const message = `${failed.action} ${failed.target}: ${failed.error!.message}`;
    if (!signal?.aborted) deps.events.event({ pod }, 'Warning', 'FailedKillPod', `error killing pod: ${message}`);
    throw new Error(message);
  }
  await afterKill?.();
  if (keepContent) {
    await deps.podCgroups?.removePod(state.uid);
    await deps.volumes.tearDown(state.uid, log, signal);
    // As kubelet's SyncTerminatedPod: nothing of the pod runs any more, its range may go to another pod.
    await deps.userNamespaces.release(state.uid);
    return;
  }
  for (const s of state.sandboxes) {
    await deps.runtime.removePodSandbox(s.id, { signal });
    log.info({ sandboxId: s.id }, 'Removed pod sandbox');
  }
  // Containers whose sandbox is already gone are not removed with it.
  const sandboxIds = new Set(state.sandboxes.map((s) => s.id));
  for (const c of state.containers.filter((c) => !sandboxIds.has(c.sandboxId))) {
    try {
      await deps.runtime.removeContainer(c.id, { signal });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  await deps.podCgroups?.removePod(state.uid);
  await deps.volumes.tearDown(state.uid, log, signal);
  await deps.userNamespaces.release(state.uid);
  if (logDirectory) await deps.files.removeAll(logDirectory);
}
