// The node's capacity and allocatable resources as kubelet computes them: the machine's capacity minus systemReserved,
// kubeReserved and the hard eviction thresholds (kubelet's container manager), the same rules for the Node's status and
// for what pods read of the node.
import { Quantity } from '../core/quantity.js';
import type { MachineInfo } from './machine-info.js';

/** Resources by name, as Node.status lists its capacity and allocatable. */
export type ResourceList = Record<string, Quantity>;

/** What every node's capacity (and so its allocatable) lists, beside a hugepages-<size> per pool. */
export type NodeResources = ResourceList & Record<'cpu' | 'memory' | 'ephemeral-storage' | 'pods', Quantity>;

/** The allocatable resources pods read: what an unset limit reads as in the downward API, what a memory-backed emptyDir may use. */
export type NodeAllocatable = Pick<NodeResources, 'cpu' | 'memory' | 'ephemeral-storage'>;

/** A hard eviction threshold: an absolute quantity, or a fraction of the resource's capacity ("10%"). */
export type EvictionThreshold = { quantity: Quantity } | { percentage: number };

/** The eviction signals nodelet honours: it evicts nothing, but kubelet subtracts these from allocatable. */
export type EvictionSignal = 'memory.available' | 'nodefs.available';

/** Resources a reservation may name (kubelet's systemReserved / kubeReserved keys). */
export type ReservedResource = 'cpu' | 'memory' | 'ephemeral-storage' | 'pid';

export interface NodeReservation {
  systemReserved: Partial<Record<ReservedResource, Quantity>>;
  kubeReserved: Partial<Record<ReservedResource, Quantity>>;
  evictionHard: Partial<Record<EvictionSignal, EvictionThreshold>>;
}

const whole = (n: bigint, format: 'DecimalSI' | 'BinarySI') => Quantity.fromNanos(n * 1_000_000_000n, format);

/** kubelet's capacity from machine info: cpu (cores), memory and ephemeral-storage (bytes), pods, a hugepages-<size> per pool. */
export function nodeCapacity(machine: MachineInfo, maxPods: number): NodeResources {
  const capacity: NodeResources = {
    cpu: Quantity.fromNanos(BigInt(machine.numCores) * 1_000_000_000n, 'DecimalSI'),
    memory: whole(machine.memoryCapacityBytes, 'BinarySI'),
    'ephemeral-storage': whole(machine.rootFsCapacityBytes, 'BinarySI'),
    pods: whole(BigInt(maxPods), 'DecimalSI'),
  };
  for (const pool of machine.hugePages) {
    const pageSize = BigInt(pool.pageSizeKiB) * 1024n;
    capacity[`hugepages-${whole(pageSize, 'BinarySI').toString()}`] = whole(pageSize * BigInt(pool.numPages), 'BinarySI');
  }
  return capacity;
}

/**
 * kubelet's internal capacity, what its top-level cgroup (kubepods) is limited by: the capacity and the machine's task
 * limit as `pid`, which the Node's capacity does not list.
 */
export function internalCapacity(capacity: NodeResources, machine: Pick<MachineInfo, 'maxPID'>): NodeResources {
  return machine.maxPID === undefined ? capacity : { ...capacity, pid: whole(BigInt(machine.maxPID), 'DecimalSI') };
}

/** A hard eviction threshold as an amount of the resource (kubelet's GetThresholdQuantity). */
function thresholdQuantity(threshold: EvictionThreshold, capacity: Quantity | undefined): Quantity {
  if ('quantity' in threshold) return threshold.quantity;
  // kubelet: int64(float64(capacity.Value()) * float64(percentage)), in BinarySI.
  const value = Number(capacity?.value() ?? 0n);
  return whole(BigInt(Math.trunc(value * threshold.percentage)), 'BinarySI');
}

/** kubelet's GetNodeAllocatableReservation: systemReserved + kubeReserved + the hard eviction thresholds, per capacity resource. */
export function allocatableReservation(capacity: ResourceList, reservation: NodeReservation): ResourceList {
  const eviction: ResourceList = {};
  const memory = reservation.evictionHard['memory.available'];
  if (memory) eviction.memory = thresholdQuantity(memory, capacity.memory);
  const nodefs = reservation.evictionHard['nodefs.available'];
  if (nodefs) eviction['ephemeral-storage'] = thresholdQuantity(nodefs, capacity['ephemeral-storage']);
  const result: ResourceList = {};
  for (const name of Object.keys(capacity)) {
    let sum = Quantity.zero();
    for (const part of [reservation.systemReserved, reservation.kubeReserved, eviction] as Record<string, Quantity | undefined>[]) {
      const q = part[name];
      if (q) sum = sum.add(q);
    }
    if (!sum.isZero()) result[name] = sum;
  }
  return result;
}

/** kubelet's allocatable: capacity minus the reservation (never negative), and memory minus the hugepages; same names as the capacity. */
export function nodeAllocatable<T extends ResourceList>(capacity: T, reservation: NodeReservation): T {
  const reserved = allocatableReservation(capacity, reservation);
  const allocatable: ResourceList = {};
  const minus = (a: Quantity, b: Quantity | undefined) => {
    const nanos = b ? a.nanos - b.nanos : a.nanos;
    return Quantity.fromNanos(nanos > 0n ? nanos : 0n, a.format);
  };
  for (const [name, q] of Object.entries(capacity)) allocatable[name] = minus(q, reserved[name]);
  for (const [name, q] of Object.entries(capacity)) {
    if (name.startsWith('hugepages-') && allocatable.memory) allocatable.memory = minus(allocatable.memory, q);
  }
  return allocatable as T;
}

export function formatResourceList(list: ResourceList): Record<string, string> {
  return Object.fromEntries(Object.entries(list).map(([k, v]) => [k, v.toString()]));
}
