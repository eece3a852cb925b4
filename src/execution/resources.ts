// Resource requests and limits turned into CRI container resources and the pod cgroup's settings, as kubelet computes them (pure).
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { LinuxContainerResources } from '../cri/types.js';
import { systemdCgroupPath, type PodCgroupSettings } from '../host/cgroups.js';
import type { CgroupDriver } from '../cri/runtime-info.js';
import { InvalidQuantityError, parseQuantity, type Quantity } from '../core/quantity.js';
import { containerOOMScoreAdjust, podQOSClass, resourceQuantity, type PodQOSClass } from '../decisions/qos.js';
import { SyncError } from '../core/sync-result.js';

// The kernel's bounds for cpu.shares and the CFS period kubelet uses (pkg/kubelet/cm).
export const minShares = 2;
export const maxShares = 262144;
const sharesPerCPU = 1024;
const milliCPUToCPU = 1000;
/** 100 ms, in microseconds. */
export const quotaPeriod = 100_000;
/** 1 ms, in microseconds: the smallest quota the kernel accepts. */
const minQuotaPeriod = 1000;

/** kubelet's MilliCPUToShares: 1 CPU = 1024 shares, within [2, 262144]; no request gets the minimum. */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU === 0) return minShares;
  const shares = Math.floor((milliCPU * sharesPerCPU) / milliCPUToCPU);
  return Math.min(maxShares, Math.max(minShares, shares));
}

/** kubelet's MilliCPUToQuota: the CFS quota (µs per period) of a CPU limit, at least 1 ms; 0 (unlimited) without one. */
export function milliCPUToQuota(milliCPU: number, period: number = quotaPeriod): number {
  if (milliCPU === 0) return 0;
  return Math.max(minQuotaPeriod, Math.floor((milliCPU * period) / milliCPUToCPU));
}

/** A quantity of a container's requests or limits, parsed strictly: a user's invalid value is a config error. */
function containerQuantity(pod: V1Pod, container: V1Container, kind: 'requests' | 'limits', name: string): Quantity | undefined {
  const list = container.resources?.[kind] as Record<string, unknown> | undefined;
  if (!list || !Object.hasOwn(list, name)) return undefined;
  const raw = list[name];
  try {
    if (typeof raw !== 'string' && typeof raw !== 'number') throw new InvalidQuantityError(String(raw), 'must be a string or a number');
    return parseQuantity(raw);
  } catch (err) {
    if (!(err instanceof InvalidQuantityError)) throw err;
    const m = pod.metadata ?? {};
    throw new SyncError(
      'CreateContainerConfigError',
      `invalid resources.${kind}.${name} ${JSON.stringify(raw)} of container ${container.name} in pod ${m.namespace}/${m.name}: ${err.message}`,
      { cause: err },
    );
  }
}

/** What a quantity that cannot be held in a JS number means for the kernel: no limit. */
function toSafeNumber(v: bigint): number {
  return v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);
}

/**
 * kubelet's generateLinuxContainerResources without the cgroup v2 and hugepage parts: cpu shares from the
 * request (from the limit when only a limit is set), CFS quota from the limit with a 100 ms period, the memory
 * limit in bytes, and the OOM score adjustment of the pod's QoS class.
 */
export function containerResources(pod: V1Pod, container: V1Container, memoryCapacity: bigint): LinuxContainerResources {
  const cpuRequest = containerQuantity(pod, container, 'requests', 'cpu');
  const cpuLimit = containerQuantity(pod, container, 'limits', 'cpu');
  const memoryLimit = containerQuantity(pod, container, 'limits', 'memory');
  const sharesFrom = cpuRequest === undefined && cpuLimit !== undefined ? cpuLimit : cpuRequest;
  const resources: LinuxContainerResources = {
    cpuShares: milliCPUToShares(toSafeNumber(sharesFrom?.milliValue() ?? 0n)),
    cpuPeriod: quotaPeriod,
    cpuQuota: milliCPUToQuota(toSafeNumber(cpuLimit?.milliValue() ?? 0n)),
    oomScoreAdj: containerOOMScoreAdjust(pod, container, memoryCapacity),
  };
  const memoryBytes = memoryLimit?.value() ?? 0n;
  if (memoryBytes !== 0n) resources.memoryLimitInBytes = toSafeNumber(memoryBytes);
  return resources;
}

/** kubelet's cgroup parent for a pod with --cgroups-per-qos and the cgroupfs driver. */
export function podCgroupParent(pod: V1Pod, cgroupRoot = '/'): string {
  return join('/', cgroupRoot, `${qosCgroupPath(podQOSClass(pod))}/pod${pod.metadata?.uid ?? ''}`);
}

/**
 * The pod's cgroup as the runtime is told it (the sandbox's cgroup parent): kubelet's cgroupfs name, or with the
 * systemd driver its slice form (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice, of which
 * containerd uses the last slice).
 */
export function runtimeCgroupParent(cgroupName: string, driver: CgroupDriver = 'cgroupfs'): string {
  return driver === 'systemd' ? systemdCgroupPath(cgroupName) : cgroupName;
}

/** The cgroup pods of a QoS class live under: Guaranteed pods directly under kubepods. */
export function qosCgroupPath(qos: PodQOSClass): string {
  switch (qos) {
    case 'Guaranteed':
      return '/kubepods';
    case 'Burstable':
      return '/kubepods/burstable';
    case 'BestEffort':
      return '/kubepods/besteffort';
  }
}

type ResourceSums = { cpu: bigint; memory: bigint };

/**
 * The pod's effective requests or limits (resourcehelper.PodRequests / PodLimits): regular containers and
 * sidecars add up; each other init container runs alone with the sidecars started before it, so the pod
 * needs the larger of the two. `declared` reports whether every container set a positive value (limits).
 */
function podResourceSums(pod: V1Pod, kind: 'requests' | 'limits'): { sums: ResourceSums; declared: { cpu: boolean; memory: boolean } } {
  const declared = { cpu: true, memory: true };
  const of = (c: V1Container): ResourceSums => {
    const list = c.resources?.[kind] as Record<string, unknown> | undefined;
    const cpu = resourceQuantity(list, 'cpu')?.milliValue() ?? 0n;
    const memory = resourceQuantity(list, 'memory')?.value() ?? 0n;
    if (cpu <= 0n) declared.cpu = false;
    if (memory <= 0n) declared.memory = false;
    return { cpu, memory };
  };
  const sums: ResourceSums = { cpu: 0n, memory: 0n };
  for (const c of pod.spec?.containers ?? []) {
    const r = of(c);
    sums.cpu += r.cpu;
    sums.memory += r.memory;
  }
  const sidecars: ResourceSums = { cpu: 0n, memory: 0n };
  const initPeak: ResourceSums = { cpu: 0n, memory: 0n };
  for (const c of pod.spec?.initContainers ?? []) {
    const r = of(c);
    let running: ResourceSums;
    if (c.restartPolicy === 'Always') {
      sums.cpu += r.cpu;
      sums.memory += r.memory;
      sidecars.cpu += r.cpu;
      sidecars.memory += r.memory;
      running = { ...sidecars };
    } else {
      running = { cpu: r.cpu + sidecars.cpu, memory: r.memory + sidecars.memory };
    }
    if (running.cpu > initPeak.cpu) initPeak.cpu = running.cpu;
    if (running.memory > initPeak.memory) initPeak.memory = running.memory;
  }
  if (initPeak.cpu > sums.cpu) sums.cpu = initPeak.cpu;
  if (initPeak.memory > sums.memory) sums.memory = initPeak.memory;
  return { sums, declared };
}

/**
 * kubelet's ResourceConfigForPod with CFS quota enforced: shares from the summed cpu requests; for Guaranteed
 * pods, and Burstable pods whose every container declares the limit, the summed cpu limit as quota and the
 * summed memory limit; BestEffort pods get the minimum shares only. Every pod gets the node's podPidsLimit when it
 * is positive (kubelet's pod container manager adds it; -1 and 0 leave pids.max alone).
 */
export function podCgroupResources(pod: V1Pod, podPidsLimit = -1): PodCgroupSettings {
  const pids = podPidsLimit > 0 ? { pidsLimit: podPidsLimit } : {};
  const qos = podQOSClass(pod);
  if (qos === 'BestEffort') return { cpuShares: minShares, ...pids };
  const requests = podResourceSums(pod, 'requests').sums;
  const { sums: limits, declared } = podResourceSums(pod, 'limits');
  const result: PodCgroupSettings = { cpuShares: milliCPUToShares(toSafeNumber(requests.cpu)), ...pids };
  if (qos === 'Guaranteed' || declared.cpu) {
    result.cpuQuota = milliCPUToQuota(toSafeNumber(limits.cpu));
    result.cpuPeriod = quotaPeriod;
  }
  if (qos === 'Guaranteed' || declared.memory) result.memoryLimitInBytes = toSafeNumber(limits.memory);
  return result;
}
