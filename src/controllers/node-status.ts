// Builds the Node object and its status as kubelet's node status setters do (pure: host facts and the clock are inputs).
import type { V1ContainerImage, V1Node, V1NodeCondition, V1NodeStatus, V1Taint } from '@kubernetes/client-node';
import type { Image, RuntimeFeatures, RuntimeHandler, RuntimeStatus } from '../cri/types.js';
import { describeRuntimeCondition, networkNotReadyError } from '../cri/runtime-info.js';
import type { MachineInfo } from '../host/machine-info.js';
import { kernelSupportsTmpfsIdmap } from '../host/user-namespaces.js';
import { canonicalJson as canonical } from '../core/canonical-json.js';
import { tryParseQuantity } from '../core/quantity.js';
import { aggregateMessage } from '../core/sync-result.js';
import { formatResourceList, nodeAllocatable, nodeCapacity, type NodeReservation, type ResourceList } from '../host/allocatable.js';

/**
 * The features of 1.37's declarable set (component-helpers' nodedeclaredfeatures) nodelet implements, sorted: the
 * resize of running init containers that are not sidecars. Not declared, because not built: pod-level resources resize,
 * memory-backed emptyDir resize, RestartAllContainersOnContainerExits, UserNamespacesHostNetworkSupport,
 * VolumeBindMountOptions, ExtendWebSocketsToKubelet, DRANodeAllocatableResources, DRAOptionalNodeOperations.
 */
export const nodeDeclaredFeatures: readonly string[] = ['InPlacePodVerticalScalingInitContainers'];

export const labelHostname = 'kubernetes.io/hostname';
export const labelOS = 'kubernetes.io/os';
export const labelArch = 'kubernetes.io/arch';
export const legacyLabelOS = 'beta.kubernetes.io/os';
export const legacyLabelArch = 'beta.kubernetes.io/arch';

/** The labels kubelet sets on its Node and reconciles on an existing one. */
export const kubeletOwnedLabels = [labelHostname, labelOS, labelArch, legacyLabelOS, legacyLabelArch] as const;

/** A NodeCondition as it travels: times are RFC 3339 strings (the client-node type says Date, the JSON says string). */
export type NodeConditionWire = Omit<V1NodeCondition, 'lastHeartbeatTime' | 'lastTransitionTime'> & {
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
};

/** metav1.Time's JSON form: RFC 3339 in UTC with whole seconds. */
export function formatTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The node's conditions in their wire form. */
export function nodeConditions(node: V1Node | undefined): NodeConditionWire[] {
  return (node?.status?.conditions ?? []) as unknown as NodeConditionWire[];
}

/** Whether the node's Ready condition is True. */
export function isNodeReady(node: V1Node | undefined): boolean {
  return nodeConditions(node).some((c) => c.type === 'Ready' && c.status === 'True');
}

// ---- resources ----

// ---- runtime readiness ----

/** kubelet's runtimeSyncThreshold (maxWaitForContainerRuntime): no successful runtime status for this long means it is down. */
export const runtimeSyncThresholdMs = 30_000;


/**
 * kubelet's runtimeState: what the last container runtime status check said, behind the Ready condition's message.
 * Fed by a periodic CRI Status call (kubelet's updateRuntimeUp); read with the time of the question.
 */
export class RuntimeState {
  private lastSync: number | undefined;
  private runtimeError: string | undefined;
  private networkError: string | undefined = 'network state unknown';
  /** The runtime's handlers and features as its last answer said (kubelet's setRuntimeHandlers, setRuntimeFeatures). */
  private runtimeHandlers: RuntimeHandler[] | undefined;
  private runtimeFeatures: RuntimeFeatures | undefined;

  constructor(private readonly thresholdMs = runtimeSyncThresholdMs) {}

  /** Records a CRI Status answer received at `now`. A failed call records nothing: staleness then says "down". */
  update(status: RuntimeStatus, now: number): void {
    this.runtimeHandlers = status.handlers ?? [];
    if (status.features) this.runtimeFeatures = status.features;
    const network = status.conditions.find((c) => c.type === 'NetworkReady');
    this.networkError = network?.status ? undefined : networkNotReadyError(network);
    const runtime = status.conditions.find((c) => c.type === 'RuntimeReady');
    if (!runtime?.status) {
      this.runtimeError = `container runtime not ready: ${describeRuntimeCondition(runtime)}`;
      return;
    }
    this.runtimeError = undefined;
    this.lastSync = now;
  }

  runtimeErrors(now: number): string[] {
    const errors: string[] = [];
    if (this.lastSync === undefined) errors.push('container runtime status check may not have completed yet');
    else if (this.lastSync + this.thresholdMs <= now) errors.push('container runtime is down');
    if (this.runtimeError) errors.push(this.runtimeError);
    return errors;
  }

  networkErrors(): string[] {
    return this.networkError ? [this.networkError] : [];
  }

  /** The runtime's handlers; undefined until it answered once. */
  handlers(): RuntimeHandler[] | undefined {
    return this.runtimeHandlers;
  }

  /** What the runtime supports whatever the handler; undefined until a runtime that tells answered. */
  features(): RuntimeFeatures | undefined {
    return this.runtimeFeatures;
  }

  /** Everything keeping the node from Ready, in kubelet's order (runtime, then network). */
  readyErrors(now: number): string[] {
    return [...this.runtimeErrors(now), ...this.networkErrors()];
  }
}

// ---- the node ----

/** Everything the status is built from: host facts, runtime answers and configuration (injected, so building is pure). */
export interface NodeStatusInputs {
  nodeName: string;
  /** kubelet's hostname: the Hostname address and the kubernetes.io/hostname label. */
  hostname: string;
  /** The InternalIP; undefined when it could not be determined now (the addresses are then left as they are). */
  nodeIP: string | undefined;
  machine: MachineInfo;
  kubeletVersion: string;
  kubeletPort: number;
  maxPods: number;
  reservation: NodeReservation;
  /** From CRI Version; undefined until the runtime answered once. */
  runtime: { name: string; version: string } | undefined;
  /** RuntimeState.readyErrors at the time of the update. */
  readyErrors: string[];
  /** RuntimeState.handlers and features: node.status.runtimeHandlers and features (undefined: left as they are). */
  runtimeHandlers: RuntimeHandler[] | undefined;
  runtimeFeatures: RuntimeFeatures | undefined;
  /** From CRI ListImages; undefined when not known (the node's images are then left as they are). */
  images: Image[] | undefined;
  /** kubelet's nodeStatusMaxImages; -1 reports every image. */
  maxImages: number;
}

/**
 * kubelet's RuntimeHandlers setter, with what nodelet does on this node: recursive read-only mounts as the handler has
 * them; user namespaces where the handler has them and the kernel mounts tmpfs idmapped (nodelet refuses hostUsers false
 * otherwise).
 */
export function nodeRuntimeHandlers(handlers: RuntimeHandler[], kernelVersion: string): NonNullable<V1NodeStatus['runtimeHandlers']> {
  return handlers.map((h) => ({
    name: h.name,
    features: { recursiveReadOnlyMounts: h.recursiveReadOnlyMounts, userNamespaces: h.userNamespaces && kernelSupportsTmpfsIdmap(kernelVersion) },
  }));
}

/** kubelet's MaxNamesPerImageInNodeStatus. */
const maxNamesPerImage = 5;

/** The images kubelet reports: largest first, at most `max`, each with up to 5 names (digests first). */
export function nodeImages(images: Image[], max: number): V1ContainerImage[] {
  const sorted = [...images].sort((a, b) => b.size - a.size);
  const kept = max >= 0 ? sorted.slice(0, max) : sorted;
  return kept.map((image) => ({ names: [...image.repoDigests, ...image.repoTags].slice(0, maxNamesPerImage), sizeBytes: image.size }));
}

export interface NodeRegistration {
  taints: V1Taint[];
  providerID: string;
}

/** kubelet's initialNode: labels, spec from registration settings, and a full status. */
export function initialNode(inputs: NodeStatusInputs, registration: NodeRegistration, now: Date): V1Node {
  const node: V1Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: inputs.nodeName,
      labels: {
        [labelHostname]: inputs.hostname,
        [labelOS]: 'linux',
        [labelArch]: inputs.machine.architecture,
        [legacyLabelOS]: 'linux',
        [legacyLabelArch]: inputs.machine.architecture,
      },
    },
    spec: {},
  };
  if (registration.taints.length > 0) node.spec!.taints = registration.taints.map((t) => ({ ...t }));
  if (registration.providerID) node.spec!.providerID = registration.providerID;
  return setNodeStatus(node, inputs, now);
}

/**
 * kubelet's updateDefaultLabels on an existing Node: the labels it owns take the values it would register with.
 * Returns the labels to write, or undefined when nothing changes. Other labels are left alone.
 */
export function reconcileOwnedLabels(existing: V1Node, wanted: V1Node): Record<string, string> | undefined {
  const changes: Record<string, string> = {};
  for (const key of kubeletOwnedLabels) {
    const value = wanted.metadata?.labels?.[key];
    if (value === undefined || value === '') continue;
    if (existing.metadata?.labels?.[key] !== value) changes[key] = value;
  }
  return Object.keys(changes).length > 0 ? changes : undefined;
}

function pressureCondition(
  previous: NodeConditionWire | undefined,
  type: string,
  reason: string,
  message: string,
  now: string,
): NodeConditionWire {
  // nodelet does not measure pressure: the condition is False, and keeps its transition time once it is.
  if (previous?.status === 'False') return { ...previous, lastHeartbeatTime: now };
  return { type, status: 'False', reason, message, lastHeartbeatTime: now, lastTransitionTime: now };
}

function readyCondition(previous: NodeConditionWire | undefined, errors: string[], now: string): NodeConditionWire {
  const ready = errors.length === 0;
  const status = ready ? 'True' : 'False';
  return {
    type: 'Ready',
    status,
    reason: ready ? 'KubeletReady' : 'KubeletNotReady',
    message: ready ? 'kubelet is posting ready status' : aggregateMessage(errors),
    lastHeartbeatTime: now,
    lastTransitionTime: previous?.status === status && previous.lastTransitionTime ? previous.lastTransitionTime : now,
  };
}

/**
 * Applies kubelet's status setters to a copy of `node` at `now`: addresses, capacity and allocatable (resources of
 * others, e.g. extended ones, are kept), nodeInfo, daemon endpoints, images, and the pressure and Ready conditions
 * (heartbeat now; transition time only when the status changes; conditions of others kept, Ready last).
 */
export function setNodeStatus(node: V1Node, inputs: NodeStatusInputs, now: Date): V1Node {
  const at = formatTime(now);
  const previous = node.status ?? {};
  const status: V1NodeStatus = { ...previous };

  if (inputs.nodeIP !== undefined) {
    status.addresses = [
      { type: 'InternalIP', address: inputs.nodeIP },
      { type: 'Hostname', address: inputs.hostname },
    ];
  }

  const capacity = nodeCapacity(inputs.machine, inputs.maxPods);
  const mergedCapacity: ResourceList = {};
  for (const [name, text] of Object.entries(previous.capacity ?? {})) {
    const q = tryParseQuantity(text);
    if (q) mergedCapacity[name] = q;
  }
  Object.assign(mergedCapacity, capacity);
  status.capacity = formatResourceList(mergedCapacity);
  status.allocatable = formatResourceList(nodeAllocatable(mergedCapacity, inputs.reservation));

  const previousInfo = previous.nodeInfo;
  status.nodeInfo = {
    machineID: inputs.machine.machineID,
    systemUUID: inputs.machine.systemUUID,
    bootID: inputs.machine.bootID,
    kernelVersion: inputs.machine.kernelVersion,
    osImage: inputs.machine.osImage,
    // Until the runtime answers, the last reported value stands (kubelet caches the runtime's type and version).
    containerRuntimeVersion: inputs.runtime
      ? `${inputs.runtime.name}://${inputs.runtime.version}`
      : (previousInfo?.containerRuntimeVersion ?? ''),
    kubeletVersion: inputs.kubeletVersion,
    // Deprecated; kubelet 1.37 leaves it empty (DisableNodeKubeProxyVersion, on and locked since 1.36).
    kubeProxyVersion: '',
    operatingSystem: 'linux',
    architecture: inputs.machine.architecture,
  };
  status.daemonEndpoints = { kubeletEndpoint: { Port: inputs.kubeletPort } };
  // kubelet's NodeFeatures and RuntimeHandlers setters, from the runtime's last Status.
  if (inputs.runtimeFeatures) status.features = { supplementalGroupsPolicy: inputs.runtimeFeatures.supplementalGroupsPolicy };
  if (inputs.runtimeHandlers) {
    status.runtimeHandlers = nodeRuntimeHandlers(inputs.runtimeHandlers, inputs.machine.kernelVersion);
    if (status.runtimeHandlers.length === 0) delete status.runtimeHandlers;
  }
  if (inputs.images) status.images = nodeImages(inputs.images, inputs.maxImages);
  // kubelet's NodeDeclaredFeatures (GA in 1.37): the API server admits to a node only the pod updates whose features it
  // declares.
  (status as V1NodeStatus & { declaredFeatures?: string[] }).declaredFeatures = [...nodeDeclaredFeatures];

  const conditions = nodeConditions(node);
  const find = (type: string) => conditions.find((c) => c.type === type);
  const ours: NodeConditionWire[] = [
    pressureCondition(find('MemoryPressure'), 'MemoryPressure', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available', at),
    pressureCondition(find('DiskPressure'), 'DiskPressure', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure', at),
    pressureCondition(find('PIDPressure'), 'PIDPressure', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available', at),
    readyCondition(find('Ready'), inputs.readyErrors, at),
  ];
  const ourTypes = new Set(ours.map((c) => c.type));
  // Conditions of others keep their place; kubelet keeps Ready last (version-skewed readers took the last one).
  const merged = [...conditions.filter((c) => !ourTypes.has(c.type)), ...ours];
  status.conditions = merged as unknown as V1NodeCondition[];

  return { ...node, status };
}

const pressureEventReasons: Record<string, Record<string, string>> = {
  MemoryPressure: { True: 'NodeHasInsufficientMemory', False: 'NodeHasSufficientMemory' },
  DiskPressure: { True: 'NodeHasDiskPressure', False: 'NodeHasNoDiskPressure' },
  PIDPressure: { True: 'NodeHasInsufficientPID', False: 'NodeHasSufficientPID' },
};

/**
 * The node events kubelet's setters record between two statuses (reasons; the message is "Node <name> status is now:
 * <reason>"): a pressure condition that appears or changes, and Ready when an existing Ready condition changes.
 */
export function nodeConditionEvents(before: V1Node | undefined, after: V1Node): string[] {
  const old = new Map(nodeConditions(before).map((c) => [c.type, c.status]));
  const reasons: string[] = [];
  for (const c of nodeConditions(after)) {
    const previous = old.get(c.type);
    if (previous === c.status) continue;
    const pressure = pressureEventReasons[c.type]?.[c.status];
    if (pressure) reasons.push(pressure);
    else if (c.type === 'Ready' && previous !== undefined) reasons.push(c.status === 'True' ? 'NodeReady' : 'NodeNotReady');
  }
  return reasons;
}

function withoutHeartbeats(conditions: NodeConditionWire[]): string {
  const sorted = [...conditions].sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
  return canonical(sorted.map(({ lastHeartbeatTime: _h, ...rest }) => rest));
}

function sameResources(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b ?? {}).length) return false;
  return ka.every((k) => {
    const qa = tryParseQuantity(a?.[k]);
    const qb = tryParseQuantity(b?.[k]);
    return qa && qb ? qa.cmp(qb) === 0 : a?.[k] === b?.[k];
  });
}

/** kubelet's nodeStatusHasChanged: any difference but the conditions' heartbeat times (quantities compared by value). */
export function nodeStatusHasChanged(original: V1NodeStatus | undefined, updated: V1NodeStatus | undefined): boolean {
  const a = original ?? {};
  const b = updated ?? {};
  if (withoutHeartbeats((a.conditions ?? []) as unknown as NodeConditionWire[]) !== withoutHeartbeats((b.conditions ?? []) as unknown as NodeConditionWire[])) {
    return true;
  }
  if (!sameResources(a.capacity, b.capacity) || !sameResources(a.allocatable, b.allocatable)) return true;
  const rest = (s: V1NodeStatus) => {
    const { conditions: _c, capacity: _cap, allocatable: _a, ...others } = s;
    return canonical(others);
  };
  return rest(a) !== rest(b);
}

/**
 * The strategic merge patch of nodes/<name>/status that turns `original` into `updated`, as kubelet's PatchNodeStatus
 * sends it: only the changed status fields; conditions merge by type; capacity and allocatable merge by key;
 * addresses (wrongly declared merge-by-type in the API) are replaced as a whole with a `$patch: replace` element.
 */
export function nodeStatusPatch(original: V1NodeStatus | undefined, updated: V1NodeStatus): { status: Record<string, unknown> } {
  const a = original ?? {};
  const patch: Record<string, unknown> = {};
  const changed = (x: unknown, y: unknown) => canonical(x) !== canonical(y);

  const before = new Map(((a.conditions ?? []) as unknown as NodeConditionWire[]).map((c) => [c.type, canonical(c)]));
  const conditions = ((updated.conditions ?? []) as unknown as NodeConditionWire[]).filter((c) => before.get(c.type) !== canonical(c));
  if (conditions.length > 0) patch.conditions = conditions;

  for (const field of ['capacity', 'allocatable'] as const) {
    const diff: Record<string, string | null> = {};
    const old = a[field] ?? {};
    const now = updated[field] ?? {};
    for (const [k, v] of Object.entries(now)) if (old[k] !== v) diff[k] = v;
    for (const k of Object.keys(old)) if (!(k in now)) diff[k] = null;
    if (Object.keys(diff).length > 0) patch[field] = diff;
  }
  if (changed(a.addresses ?? [], updated.addresses ?? [])) {
    patch.addresses = (a.addresses ?? []).length > 0 ? [...(updated.addresses ?? []), { $patch: 'replace' }] : updated.addresses;
  }
  for (const field of ['nodeInfo', 'daemonEndpoints', 'images', 'features', 'runtimeHandlers'] as const) {
    if (updated[field] !== undefined && changed(a[field], updated[field])) patch[field] = updated[field];
  }
  return { status: patch };
}
