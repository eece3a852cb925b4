// Derives a pod's API status from the observed runtime state, as kubelet's generateAPIPodStatus does (pure).
import type { V1Container, V1ContainerState, V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus, V1ResourceRequirements } from '@kubernetes/client-node';
import { Quantity, tryParseQuantity } from '../core/quantity.js';
import { featureGatesOf, newestMinor, type KubeFeatureGates } from '../core/kube-minor.js';
import type { PodCgroupConfig } from '../host/cgroups.js';
import { shouldContainerBeRestarted } from './compute-actions.js';
import { isRestartableInitContainer } from './init-containers.js';
import { podQOSClass } from './qos.js';
import { ephemeralContainers } from '../core/pod-containers.js';
import { latestContainer, previousContainer, type ContainerObservation, type PodRuntimeState } from '../core/runtime-state.js';
import type { ProbeResultLookup } from '../core/probe-results.js';
import { recursiveReadOnlyStatus } from '../volume/recursive-read-only.js';

/** Why a container is waiting, from the last sync (kubelet's reason cache), e.g. ErrImagePull. */
export interface WaitingReason {
  reason: string;
  message: string;
}

export interface StatusInput {
  pod: V1Pod;
  state: PodRuntimeState;
  waitingReasons: ReadonlyMap<string, WaitingReason>;
  hostIP: string;
  /** The CRI runtime name used in containerIDs (`containerd://<id>`). */
  runtimeName: string;
  /** Whether the pod's runtime handler makes recursive read-only mounts (status.volumeMounts[].recursiveReadOnly). */
  recursiveReadOnlyMounts?: boolean;
  /** The status last derived for this pod, for sticky fields (startTime, transition times, terminal phase). */
  previous?: V1PodStatus;
  now: Date;
  /** Set when the pod was refused by the node (e.g. an unsupported field): phase Failed with this reason. */
  rejection?: WaitingReason;
  /** Probe results by container ID: they decide `started` and `ready` of containers that have the probe. */
  readiness?: ProbeResultLookup;
  startup?: ProbeResultLookup;
  /** The resources last applied to each container (kubelet's actuated state): a running one's memory request. */
  actuated?: (containerName: string) => V1ResourceRequirements | undefined;
  /** The pod cgroup's cpu and memory as read back, for a pod the API server has Running (status.resources). */
  podCgroup?: PodCgroupConfig;
  /** The pod's PodResizePending and PodResizeInProgress conditions, as kubelet's status manager holds them. */
  resizeConditions?: V1PodCondition[];
  /** The feature gates of the Kubernetes minor the node serves; the newest minor's when absent (standalone). */
  featureGates?: Readonly<KubeFeatureGates>;
}

function terminatedState(c: ContainerObservation, runtimeName: string): V1ContainerState {
  const exitCode = c.exitCode ?? 0;
  return {
    terminated: {
      exitCode,
      reason: c.reason || (exitCode === 0 ? 'Completed' : 'Error'),
      ...(c.message ? { message: c.message } : {}),
      startedAt: c.startedAt ? new Date(c.startedAt) : undefined,
      finishedAt: c.finishedAt ? new Date(c.finishedAt) : undefined,
      containerID: `${runtimeName}://${c.id}`,
    } as NonNullable<V1ContainerState['terminated']>,
  };
}

function stateOf(c: ContainerObservation, runtimeName: string): V1ContainerState {
  switch (c.state) {
    case 'running':
      return { running: { startedAt: c.startedAt ? new Date(c.startedAt) : undefined } as NonNullable<V1ContainerState['running']> };
    case 'exited':
      return terminatedState(c, runtimeName);
    case 'created':
      return { waiting: { reason: 'ContainerCreated' } };
    default:
      return { waiting: { reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was observed' } };
  }
}

type ContainerKind = 'regular' | 'init' | 'sidecar' | 'ephemeral';

/** kubelet's prober view of a running container (regular or sidecar): started once its startup probe succeeded (at once without one). */
function probedStarted(input: StatusInput, spec: V1Container, kind: ContainerKind, id: string): boolean {
  return kind === 'init' || !spec.startupProbe || input.startup?.(id) === 'success';
}

/** Ready once started and its readiness probe succeeded (at once without one). */
function probedReady(input: StatusInput, spec: V1Container, kind: ContainerKind, id: string): boolean {
  return probedStarted(input, spec, kind, id) && (kind === 'init' || !spec.readinessProbe || input.readiness?.(id) === 'success');
}

/**
 * kubelet's status.volumeMounts (RecursiveReadOnlyMounts, GA and always on in 1.37): the container's mounts as
 * specified; a read-only one says whether it is recursively read-only (Enabled) or not (Disabled), as its
 * recursiveReadOnly resolves with the runtime handler's support.
 */
function volumeMountStatuses(spec: V1Container, handlerSupportsRRO: boolean): Pick<V1ContainerStatus, 'volumeMounts'> {
  if (!spec.volumeMounts?.length) return {};
  return {
    volumeMounts: spec.volumeMounts.map((m) => ({
      name: m.name,
      mountPath: m.mountPath,
      ...(m.readOnly ? { readOnly: true, recursiveReadOnly: recursiveReadOnlyStatus(m, handlerSupportsRRO) } : {}),
    })),
  };
}

// kubelet's cm.MinShares and cm.MinMilliCPULimit: at or below these the runtime cannot tell two values apart.
const minShares = 2n;
const minMilliCPULimit = 10n;

const milliCPU = (m: bigint) => Quantity.fromNanos(m * 1_000_000n, 'DecimalSI').toString();
const bytes = (b: bigint) => Quantity.fromNanos(b * 1_000_000_000n, 'BinarySI').toString();
const milliOf = (list: Record<string, string> | undefined, name: string) => tryParseQuantity(list?.[name])?.milliValue() ?? 0n;

/**
 * kubelet's convertContainerStatusResources (InPlacePodVerticalScaling): the allocated resources, and for a running
 * container what the runtime reports it has (cpu limit from the CFS quota, cpu request from the shares, memory limit),
 * the memory request from the actuated record; a value the runtime cannot tell from the allocated one (at the
 * minimum shares or quota) stays as allocated, one it does not report stays as last reported.
 */
function statusResources(input: StatusInput, spec: V1Container, latest: ContainerObservation): V1ResourceRequirements {
  const resources: V1ResourceRequirements = structuredClone(spec.resources ?? {});
  if (latest.state !== 'running') return resources;
  const previous = [...(input.previous?.containerStatuses ?? []), ...(input.previous?.initContainerStatuses ?? [])].find(
    (s) => s.name === spec.name && s.containerID?.endsWith(`://${latest.id}`) && s.state?.running,
  )?.resources;
  const keep = (kind: 'limits' | 'requests', name: string) => {
    const old = (previous?.[kind] as Record<string, string> | undefined)?.[name];
    if (old !== undefined) (resources[kind] as Record<string, string>)[name] = old;
  };
  const cri = latest.resources;
  const limits = resources.limits as Record<string, string> | undefined;
  if (limits) {
    const quota = cri?.cpuPeriod && cri.cpuPeriod > 0 && cri.cpuQuota !== undefined && cri.cpuQuota !== -1 ? (BigInt(cri.cpuQuota) * 1000n) / BigInt(cri.cpuPeriod) : 0n;
    if (quota > 0n) {
      if (quota > minMilliCPULimit || milliOf(limits, 'cpu') > minMilliCPULimit) limits.cpu = milliCPU(quota);
    } else keep('limits', 'cpu');
    if (cri?.memoryLimitInBytes && cri.memoryLimitInBytes > 0) limits.memory = bytes(BigInt(cri.memoryLimitInBytes));
    else keep('limits', 'memory');
  }
  const requests = resources.requests as Record<string, string> | undefined;
  if (requests) {
    const shares = BigInt(cri?.cpuShares ?? 0);
    const fromShares = shares >= minShares ? (shares * 1000n + 1023n) / 1024n : 0n;
    if (fromShares > 0n) {
      if (fromShares > minShares || milliOf(requests, 'cpu') > minShares) requests.cpu = milliCPU(fromShares);
    } else keep('requests', 'cpu');
    const memoryRequest = tryParseQuantity((input.actuated?.(spec.name)?.requests as Record<string, unknown> | undefined)?.memory);
    if (memoryRequest && !memoryRequest.isZero()) requests.memory = memoryRequest.toString();
    else keep('requests', 'memory');
  }
  return resources;
}

type ResourceList = Map<string, Quantity>;

function addList(into: ResourceList, list: Record<string, unknown> | undefined): void {
  for (const [name, raw] of Object.entries(list ?? {})) {
    const q = tryParseQuantity(raw);
    if (!q) continue;
    const had = into.get(name);
    into.set(name, had ? had.add(q) : q);
  }
}

function maxList(into: ResourceList, other: ResourceList): void {
  for (const [name, q] of other) if (!into.has(name) || q.cmp(into.get(name)!) > 0) into.set(name, q);
}

/**
 * kube's resource helper PodRequests / PodLimits over every resource: regular containers and sidecars add up, a plain
 * init container runs with the sidecars before it and the pod needs the larger; pod-level cpu and memory, when set,
 * replace the sums; the overhead adds to the requests, and to a limit that is set.
 */
export function podResourceList(pod: V1Pod, kind: 'requests' | 'limits'): ResourceList {
  const sum: ResourceList = new Map();
  for (const c of pod.spec?.containers ?? []) addList(sum, c.resources?.[kind] as Record<string, unknown> | undefined);
  const sidecars: ResourceList = new Map();
  const inits: ResourceList = new Map();
  for (const c of pod.spec?.initContainers ?? []) {
    const own = c.resources?.[kind] as Record<string, unknown> | undefined;
    let running: ResourceList;
    if (c.restartPolicy === 'Always') {
      addList(sum, own);
      addList(sidecars, own);
      running = sidecars;
    } else {
      running = new Map();
      addList(running, own);
      for (const [name, q] of sidecars) running.set(name, running.has(name) ? running.get(name)!.add(q) : q);
    }
    maxList(inits, running);
  }
  maxList(sum, inits);
  const podLevel = pod.spec?.resources?.[kind] as Record<string, unknown> | undefined;
  for (const name of ['cpu', 'memory']) {
    const q = tryParseQuantity(podLevel?.[name]);
    if (q) sum.set(name, q);
  }
  for (const [name, raw] of Object.entries((pod.spec?.overhead ?? {}) as Record<string, unknown>)) {
    const q = tryParseQuantity(raw);
    if (!q) continue;
    const had = sum.get(name);
    if (had) sum.set(name, had.add(q));
    else if (kind === 'requests') sum.set(name, q);
  }
  return sum;
}

const listJson = (l: ResourceList) => Object.fromEntries([...l].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, q]) => [k, q.toString()]));

/** kubelet's MilliCPUToShares. */
function milliCPUToShares(milli: bigint): number {
  if (milli === 0n) return 2;
  return Number([2n, (milli * 1024n) / 1000n, 262144n].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))[1]);
}

/** cgroup v2 keeps cpu.weight, coarser than shares: kubelet's CPUSharesEqualAfterV2RoundTrip. */
function sharesSurviveWeight(allocatedShares: number, readback: number): boolean {
  const weight = allocatedShares === 0 ? 0 : 1 + Math.floor(((allocatedShares - 2) * 9999) / 262142);
  return Math.floor(((weight - 1) * 262142) / 9999) + 2 === readback;
}

/**
 * kubelet's status.resources and status.allocatedResources (InPlacePodLevelResourcesVerticalScaling, on since 1.36): the pod's
 * effective requests; its resources as allocated until the API server has it Running, then as its cgroup has them.
 */
function podStatusResources(input: StatusInput): { resources: V1ResourceRequirements; allocatedResources?: Record<string, string> } {
  const { pod } = input;
  const requests = podResourceList(pod, 'requests');
  const allocatedResources = requests.size > 0 ? { allocatedResources: listJson(requests) } : {};
  const base: V1ResourceRequirements = structuredClone(pod.spec?.resources ?? {});
  const cg = input.podCgroup;
  if (pod.status?.phase !== 'Running' || !cg) {
    const limits = podResourceList(pod, 'limits');
    const resources: V1ResourceRequirements = { ...base };
    if (requests.size > 0) resources.requests = listJson(requests);
    else delete resources.requests;
    if (limits.size > 0) resources.limits = listJson(limits);
    else delete resources.limits;
    return { resources, ...allocatedResources };
  }
  const previous = input.previous?.phase === 'Running' ? (input.previous as { resources?: V1ResourceRequirements }).resources : undefined;
  const req: Record<string, string> = { ...(base.requests as Record<string, string> | undefined) };
  const lim: Record<string, string> = { ...(base.limits as Record<string, string> | undefined) };
  const keep = (into: Record<string, string>, old: Record<string, string> | undefined, name: string) => {
    if (old?.[name] !== undefined) into[name] = old[name]!;
  };
  const fromShares = cg.cpuShares >= 2 ? BigInt(Math.ceil((cg.cpuShares * 1000) / 1024)) : 0n;
  if (fromShares > 0n) {
    const allocated = milliOf(req, 'cpu');
    if (fromShares > minShares || allocated > minShares) {
      if (!sharesSurviveWeight(milliCPUToShares(allocated), cg.cpuShares)) req.cpu = milliCPU(fromShares);
    }
  } else keep(req, previous?.requests as Record<string, string> | undefined, 'cpu');
  if (req.memory === undefined && requests.has('memory')) req.memory = requests.get('memory')!.toString();
  const quota = cg.cpuPeriod > 0 && cg.cpuQuota !== -1 ? BigInt(Math.trunc((cg.cpuQuota * 1000) / cg.cpuPeriod)) : 0n;
  if (quota > 0n) {
    if (quota > minMilliCPULimit || milliOf(lim, 'cpu') > minMilliCPULimit) lim.cpu = milliCPU(quota);
  } else keep(lim, previous?.limits as Record<string, string> | undefined, 'cpu');
  if (cg.memoryLimit > 0n) lim.memory = bytes(cg.memoryLimit);
  else keep(lim, previous?.limits as Record<string, string> | undefined, 'memory');
  const resources: V1ResourceRequirements = { ...base };
  if (Object.keys(req).length > 0) resources.requests = req;
  else delete resources.requests;
  if (Object.keys(lim).length > 0) resources.limits = lim;
  else delete resources.limits;
  return { resources, ...allocatedResources };
}

function containerStatus(input: StatusInput, spec: V1Container, kind: ContainerKind): V1ContainerStatus {
  const { state, runtimeName, waitingReasons, pod } = input;
  const latest = latestContainer(state, spec.name);
  const cached = waitingReasons.get(spec.name);
  if (!latest) {
    return {
      name: spec.name,
      ...volumeMountStatuses(spec, input.recursiveReadOnlyMounts ?? false),
      // kubelet's default waiting reason is PodInitializing for every container of a pod with init containers.
      state: { waiting: { reason: cached?.reason ?? (pod.spec?.initContainers?.length ? 'PodInitializing' : 'ContainerCreating'), ...(cached?.message ? { message: cached.message } : {}) } },
      ready: false,
      started: false,
      restartCount: 0,
      image: spec.image ?? '',
      imageID: '',
    };
  }
  const status: V1ContainerStatus = {
    name: spec.name,
    ...volumeMountStatuses(spec, input.recursiveReadOnlyMounts ?? false),
    state: stateOf(latest, runtimeName),
    // A plain init container is ready once it succeeded; an ephemeral one never is (kubelet leaves it false); others
    // while they run.
    ready:
      kind === 'init' ? latest.state === 'exited' && latest.exitCode === 0 : kind !== 'ephemeral' && latest.state === 'running' && probedReady(input, spec, kind, latest.id),
    started: latest.state === 'running' && probedStarted(input, spec, kind, latest.id),
    restartCount: latest.restartCount,
    image: spec.image ?? latest.image,
    imageID: latest.imageRef,
    containerID: `${runtimeName}://${latest.id}`,
    // kubelet (SupplementalGroupsPolicy, GA in 1.35): the identities the runtime reports the process started with.
    ...(latest.user ? { user: { linux: { uid: latest.user.uid, gid: latest.user.gid, supplementalGroups: latest.user.supplementalGroups } } } : {}),
    // kubelet (InPlacePodVerticalScaling, GA in 1.35): what the container has and what it was allocated.
    resources: statusResources(input, spec, latest),
    ...(spec.resources?.requests ? { allocatedResources: structuredClone(spec.resources.requests) } : {}),
  };
  const previous = previousContainer(state, spec.name);
  if (previous?.state === 'exited') status.lastState = terminatedState(previous, runtimeName);
  // A container that will be restarted and whose last start failed shows that failure as Waiting.
  const restartPolicy = kind === 'sidecar' ? 'Always' : kind === 'ephemeral' ? 'Never' : (pod.spec?.restartPolicy ?? 'Always');
  if (cached && shouldContainerBeRestarted(latest, restartPolicy)) {
    if (status.state?.terminated) status.lastState = status.state;
    status.state = { waiting: { reason: cached.reason, ...(cached.message ? { message: cached.message } : {}) } };
    status.ready = false;
    status.started = false;
  }
  return status;
}

const hasStarted = (s: V1ContainerStatus) => !!(s.state?.running || s.state?.terminated || s.lastState?.terminated);

/** kubelet's getPhase: init containers (plain and sidecars) first, then the regular containers. */
export function podPhase(pod: V1Pod, initStatuses: V1ContainerStatus[], statuses: V1ContainerStatus[]): string {
  const restartPolicy = pod.spec?.restartPolicy ?? 'Always';
  const byName = new Map(initStatuses.map((s) => [s.name, s]));
  let pendingInitialization = 0, failedInitialization = 0;
  let waiting = 0, running = 0, stopped = 0, succeeded = 0, unknown = 0;
  for (const c of pod.spec?.initContainers ?? []) {
    const s = byName.get(c.name);
    if (isRestartableInitContainer(c)) {
      if (!s) unknown++;
      else if (s.state?.running) {
        if (!s.started) pendingInitialization++;
        running++;
      } else if (s.state?.waiting && !s.lastState?.terminated) {
        pendingInitialization++;
        waiting++;
      }
      continue;
    }
    if (!s || s.state?.running) pendingInitialization++;
    else if (s.state?.terminated) {
      if (s.state.terminated.exitCode !== 0) failedInitialization++;
    } else if (s.lastState?.terminated) {
      if (s.lastState.terminated.exitCode !== 0) failedInitialization++;
    } else pendingInitialization++;
  }
  for (const s of statuses) {
    if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting && s.lastState?.terminated) stopped++;
    else if (s.state?.waiting) waiting++;
    else unknown++;
  }
  if (failedInitialization > 0 && restartPolicy === 'Never') return 'Failed';
  // A pod whose regular containers ran stays out of Pending while its sidecars restart.
  if ((pendingInitialization > 0 && !statuses.some(hasStarted)) || waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (restartPolicy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (restartPolicy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

/** kubelet's Initialized condition: every init container succeeded (sidecars: started), or a regular container ran. */
function initializedCondition(pod: V1Pod, initStatuses: V1ContainerStatus[], statuses: V1ContainerStatus[], phase: string): { ok: boolean; reason?: string; message?: string } {
  const inits = pod.spec?.initContainers ?? [];
  if (inits.length === 0) return { ok: true };
  const incomplete: string[] = [];
  for (const c of inits) {
    const s = initStatuses.find((x) => x.name === c.name);
    const complete = isRestartableInitContainer(c) ? !!s?.started : s?.state?.terminated?.exitCode === 0;
    if (!complete) incomplete.push(c.name);
  }
  if (phase === 'Succeeded') return { ok: true, reason: 'PodCompleted' };
  if (statuses.some(hasStarted) || incomplete.length === 0) return { ok: true };
  return { ok: false, reason: 'ContainersNotInitialized', message: `containers with incomplete status: [${incomplete.join(' ')}]` };
}

function condition(type: string, ok: boolean, input: StatusInput, reason?: string, message?: string): V1PodCondition {
  const status = ok ? 'True' : 'False';
  const prev = input.previous?.conditions?.find((c) => c.type === type);
  const lastTransitionTime = prev && prev.status === status && prev.lastTransitionTime ? prev.lastTransitionTime : input.now;
  const observedGeneration = input.pod.metadata?.generation;
  return {
    type,
    // kubelet (PodObservedGenerationTracking, GA in 1.35): the generation of the spec the condition was computed from.
    ...(observedGeneration ? { observedGeneration } : {}),
    status,
    lastProbeTime: null as unknown as undefined,
    lastTransitionTime,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  };
}

const terminalPhases = new Set(['Succeeded', 'Failed']);

/**
 * kubelet's readiness gate check (GeneratePodReadyCondition): why the pod's readiness gates keep it not Ready, read
 * from its conditions as the API server has them (others set them, kubelet keeps them); empty when every gate is True.
 */
export function readinessGateMessages(pod: V1Pod): string[] {
  const conditions = pod.status?.conditions ?? [];
  return (pod.spec?.readinessGates ?? []).flatMap((gate) => {
    const c = conditions.find((x) => x.type === gate.conditionType);
    if (!c) return [`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`];
    return c.status === 'True' ? [] : [`the status of pod readiness gate "${gate.conditionType}" is not "True", but ${c.status}`];
  });
}

/** kubelet's Ready condition: ContainersReady's when that is not True, else False while a readiness gate is not True. */
function readyCondition(pod: V1Pod, containersReady: V1PodCondition, input: StatusInput): V1PodCondition {
  if (containersReady.status !== 'True') return condition('Ready', false, input, containersReady.reason, containersReady.message);
  const gates = readinessGateMessages(pod);
  return gates.length > 0 ? condition('Ready', false, input, 'ReadinessGatesNotReady', gates.join(', ')) : condition('Ready', true, input);
}

/** Whether a change of the pod's conditions (a readiness gate set by another controller) changes its Ready condition. */
export function readinessGatesChangeReady(pod: V1Pod, status: V1PodStatus | undefined): boolean {
  if (!pod.spec?.readinessGates?.length || !status) return false;
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  const containersReady = status.conditions?.find((c) => c.type === 'ContainersReady');
  if (!ready || containersReady?.status !== 'True') return false;
  const gatesReady = readinessGateMessages(pod).length === 0;
  return (ready.status === 'True') !== gatesReady;
}

/**
 * Why kubelet 1.37 would make a new sandbox for the pod (PodSandboxChanged), the message of PodReadyToStartContainers
 * False with reason PodSandboxNotReady; undefined while the newest sandbox is ready with its IP.
 */
function sandboxNotReadyMessage(pod: V1Pod, state: PodRuntimeState): string | undefined {
  const newest = state.sandboxes[0];
  if (!newest) return 'no pod sandbox exists';
  if (state.sandboxes.filter((s) => s.ready).length > 1) return 'multiple pod sandboxes are ready and need to be reconciled';
  if (!newest.ready) return 'pod sandbox is not ready';
  if (pod.spec?.hostNetwork !== true && newest.ips.length === 0) return 'pod sandbox has no IP address';
  return undefined;
}

export function derivePodStatus(input: StatusInput): V1PodStatus {
  const { pod, state, previous, hostIP } = input;
  const containers = pod.spec?.containers ?? [];
  const statuses = containers.map((c) => containerStatus(input, c, 'regular'));
  const initStatuses = (pod.spec?.initContainers ?? []).map((c) => containerStatus(input, c, isRestartableInitContainer(c) ? 'sidecar' : 'init'));
  let phase = input.rejection ? 'Failed' : podPhase(pod, initStatuses, statuses);
  // A pod never leaves a terminal phase.
  if (previous?.phase && terminalPhases.has(previous.phase)) phase = previous.phase;
  const completed = terminalPhases.has(phase);

  const initialized = initializedCondition(pod, initStatuses, statuses, phase);
  const sandbox = state.sandboxes[0];
  const podIPs = pod.spec?.hostNetwork ? (hostIP ? [hostIP] : []) : (sandbox?.ips ?? []);
  const sidecarStatuses = initStatuses.filter((s) => (pod.spec?.initContainers ?? []).some((c) => c.name === s.name && isRestartableInitContainer(c)));
  const unready = [...sidecarStatuses, ...statuses].filter((s) => !s.ready).map((s) => s.name);
  const containersReady = !completed && unready.length === 0;
  // kubelet: PodFailed for a Failed pod (its containers may still be terminating), PodCompleted for a Succeeded one.
  const notReadyReason = completed ? (phase === 'Failed' ? 'PodFailed' : 'PodCompleted') : 'ContainersNotReady';
  const notReadyMessage = completed ? undefined : `containers with unready status: [${unready.join(' ')}]`;
  const sandboxNotReady = sandboxNotReadyMessage(pod, state);

  const containersReadyCondition = condition('ContainersReady', containersReady, input, containersReady ? undefined : notReadyReason, containersReady ? undefined : notReadyMessage);

  const status: V1PodStatus = {
    phase,
    conditions: [
      // kubelet drops a terminal pod's resize conditions.
      ...(completed ? [] : (input.resizeConditions ?? [])),
      condition('PodReadyToStartContainers', !sandboxNotReady, input, sandboxNotReady && 'PodSandboxNotReady', sandboxNotReady),
      condition('Initialized', initialized.ok, input, initialized.reason, initialized.message),
      readyCondition(pod, containersReadyCondition, input),
      containersReadyCondition,
      condition('PodScheduled', true, input),
    ],
    hostIP,
    hostIPs: hostIP ? [{ ip: hostIP }] : [],
    startTime: previous?.startTime ?? input.now,
    containerStatuses: statuses,
    qosClass: podQOSClass(pod),
  };
  if (initStatuses.length > 0) status.initContainerStatuses = initStatuses;
  const ephemeralStatuses = ephemeralContainers(pod).map((c) => containerStatus(input, c, 'ephemeral'));
  if (ephemeralStatuses.length > 0) status.ephemeralContainerStatuses = ephemeralStatuses;
  if (podIPs.length > 0) {
    status.podIP = podIPs[0];
    status.podIPs = podIPs.map((ip) => ({ ip }));
  } else if (previous?.podIP && completed) {
    // A finished pod keeps reporting the IP it had.
    status.podIP = previous.podIP;
    status.podIPs = previous.podIPs;
  }
  if (input.rejection) {
    status.reason = input.rejection.reason;
    status.message = input.rejection.message;
  }
  // Pod-level resources in the status only where the minor's gate reports them (kubelet 1.35 does not).
  if ((input.featureGates ?? featureGatesOf(newestMinor)).InPlacePodLevelResourcesVerticalScaling) Object.assign(status, podStatusResources(input));
  // kubelet's status manager (CalculatePodStatusObservedGeneration): the generation of the spec this status reflects.
  if (pod.metadata?.generation) status.observedGeneration = pod.metadata.generation;
  return status;
}
