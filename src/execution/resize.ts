// Carries out an in-place pod resize, as kubelet's doPodResizeAction: memory first, then cpu; for each, the pod's
// cgroup grows before its containers and shrinks after them, so the pod never holds less than its containers; a
// memory limit is not lowered below what is in use.
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { CriError, isUnimplemented } from '../cri/errors.js';
import type { LinuxContainerResources, RuntimeService } from '../cri/types.js';
import type { Logger } from '../core/log.js';
import { stepFailed, type StepResult } from '../core/sync-result.js';
import type { PodActions } from '../decisions/compute-actions.js';
import { podFromAllocation, type ContainerResourceUpdate, type ResizeResource } from '../decisions/resize.js';
import type { PodCgroupManager, PodCgroupSettings } from '../host/cgroups.js';
import type { PodResourcesState } from '../host/pod-resources-state.js';
import { podContainers } from '../core/pod-containers.js';
import { containerResources, podCgroupParent, podCgroupResources } from './resources.js';

/** Memory in use, in bytes: the pod's cgroup and its containers' by name. */
export interface PodMemoryUsage {
  pod?: number;
  containers: Map<string, number>;
}

export interface ResizeDeps {
  runtime: RuntimeService;
  podCgroups?: PodCgroupManager;
  actuated: PodResourcesState;
  cgroupRoot?: string;
  podPidsLimit?: number;
  memoryCapacity: bigint;
  memoryUsage: (pod: V1Pod, sandboxId: string) => Promise<PodMemoryUsage>;
  /** The container's resources changed: a cached status of it is stale. */
  resized: (containerId: string) => void;
}

export class ResizeError extends Error {}

/** The resource's request and limit of `from` over `into` (what a one-resource update leaves the container with). */
function withResource(into: V1ResourceRequirements | undefined, from: V1ResourceRequirements | undefined, r: ResizeResource): V1ResourceRequirements {
  const out: V1ResourceRequirements = {};
  for (const kind of ['requests', 'limits'] as const) {
    const merged = { ...(into?.[kind] as Record<string, string> | undefined) };
    const value = (from?.[kind] as Record<string, string> | undefined)?.[r];
    if (value === undefined) delete merged[r];
    else merged[r] = value;
    if (Object.keys(merged).length > 0) out[kind] = merged;
  }
  return out;
}

/** A pod cgroup setting of one resource: memory's limit, or cpu's quota (limit) or shares (request). */
type PodSetting = 'memoryLimit' | 'cpuQuota' | 'cpuShares';

function settingOf(s: PodCgroupSettings, which: PodSetting): number {
  if (which === 'memoryLimit') return s.memoryLimitInBytes ?? 0;
  if (which === 'cpuQuota') return s.cpuQuota ?? 0;
  return s.cpuShares;
}

function partial(s: PodCgroupSettings, which: PodSetting): Pick<PodCgroupSettings, 'cpuShares' | 'cpuQuota' | 'cpuPeriod' | 'memoryLimitInBytes'> {
  if (which === 'memoryLimit') return { cpuShares: 0, ...(s.memoryLimitInBytes !== undefined ? { memoryLimitInBytes: s.memoryLimitInBytes } : {}) };
  if (which === 'cpuQuota') return { cpuShares: 0, ...(s.cpuQuota !== undefined ? { cpuQuota: s.cpuQuota, cpuPeriod: s.cpuPeriod ?? 100_000 } : {}) };
  return { cpuShares: s.cpuShares };
}

function sandboxResources(s: PodCgroupSettings): LinuxContainerResources {
  return { cpuShares: s.cpuShares, cpuQuota: s.cpuQuota ?? 0, cpuPeriod: s.cpuPeriod ?? 0, memoryLimitInBytes: s.memoryLimitInBytes ?? 0 };
}

/**
 * kubelet's validateMemoryResizeAction: a memory limit lowered (pod or container) must stay above what is in use, or
 * nothing is changed and the resize is retried at the next sync.
 */
async function checkMemoryDecrease(deps: ResizeDeps, pod: V1Pod, sandboxId: string, current: PodCgroupSettings, desired: PodCgroupSettings, updates: ContainerResourceUpdate[]): Promise<void> {
  const podDecreasing = desired.memoryLimitInBytes !== undefined && desired.memoryLimitInBytes > 0 && (!current.memoryLimitInBytes || desired.memoryLimitInBytes < current.memoryLimitInBytes);
  const decreasing = updates.filter((u) => u.desired.memoryLimit !== 0n && (u.current.memoryLimit === 0n || u.desired.memoryLimit < u.current.memoryLimit));
  if (!podDecreasing && decreasing.length === 0) return;
  const usage = await deps.memoryUsage(pod, sandboxId);
  const errs: string[] = [];
  if (podDecreasing) {
    if (usage.pod === undefined) errs.push('missing pod memory usage');
    else if (usage.pod >= desired.memoryLimitInBytes!) errs.push(`attempting to set pod memory limit (${desired.memoryLimitInBytes}) below current usage (${usage.pod})`);
  }
  for (const u of decreasing) {
    const used = usage.containers.get(u.name);
    if (used === undefined) errs.push(`missing container "${u.name}" memory usage`);
    else if (BigInt(used) >= u.desired.memoryLimit) errs.push(`attempting to set container "${u.name}" memory limit (${u.desired.memoryLimit}) below current usage (${used})`);
  }
  if (errs.length > 0) throw new ResizeError(`cannot decrease memory limits: ${errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`}`);
}

/** Resizes the pod per its actions; the result is kubelet's ResizePodInPlace step (its error the PodResizeInProgress Error). */
export async function resizePod(deps: ResizeDeps, pod: V1Pod, actions: PodActions, sandboxId: string, log: Logger, signal?: AbortSignal): Promise<StepResult> {
  const uid = pod.metadata!.uid!;
  const cgroupName = podCgroupParent(pod, deps.cgroupRoot);
  const desired = podCgroupResources(pod, deps.podPidsLimit);
  // What the pod's cgroup holds now: its settings for the resources last applied to its containers.
  let current = podCgroupResources(podFromAllocation(pod, deps.actuated.get(uid)).pod, deps.podPidsLimit);
  const specs = new Map<string, V1Container>(podContainers(pod).map((c) => [c.name, c]));
  try {
    if (actions.containersToUpdate.memory.length > 0 || actions.updatePodResources) {
      await checkMemoryDecrease(deps, pod, sandboxId, current, desired, actions.containersToUpdate.memory);
    }
    const setPod = async (which: PodSetting) => {
      const next: PodCgroupSettings = { ...current, ...partial(desired, which), cpuShares: which === 'cpuShares' ? desired.cpuShares : current.cpuShares };
      // The runtime hears of the pod's new total first (best effort: kubelet proceeds when it is not implemented).
      await deps.runtime.updatePodSandboxResources(sandboxId, sandboxResources(next), { signal }).catch((err: unknown) => {
        // containerd before 2.3 answered Unknown "not implemented" (kubelet accepts both).
        if (!isUnimplemented(err) && !(err instanceof CriError && err.kind === 'Unknown' && err.description.includes('not implemented'))) throw err;
      });
      await deps.podCgroups?.resizePod(cgroupName, partial(desired, which));
      current = next;
    };
    const step = async (r: ResizeResource, limit: PodSetting, request: PodSetting | undefined) => {
      const updates = actions.containersToUpdate[r];
      if (updates.length === 0 && !actions.updatePodResources) return;
      const grows = (which: PodSetting) => settingOf(desired, which) > settingOf(current, which);
      const shrinks = (which: PodSetting) => settingOf(desired, which) < settingOf(current, which);
      // A pod limit never set stays unset (kubelet does not remove or add one in place).
      const limitSet = settingOf(current, limit) > 0 && settingOf(desired, limit) > 0;
      if (limitSet && grows(limit)) await setPod(limit);
      if (request && grows(request)) await setPod(request);
      for (const u of updates) {
        const spec = specs.get(u.name);
        if (!spec) continue;
        const resources = withResource(deps.actuated.container(uid, u.name), spec.resources, r);
        await deps.runtime.updateContainerResources(u.id, containerResources(pod, { ...spec, resources }, deps.memoryCapacity), { signal });
        deps.actuated.setContainer(uid, u.name, resources);
        deps.resized(u.id);
        log.info({ container: u.name, containerId: u.id, resource: r }, 'Resized container in place');
      }
      if (request && shrinks(request)) await setPod(request);
      if (limitSet && shrinks(limit)) await setPod(limit);
    };
    await step('memory', 'memoryLimit', undefined);
    await step('cpu', 'cpuQuota', 'cpuShares');
    return { action: 'ResizePodInPlace', target: uid };
  } catch (err) {
    log.warn({ err }, 'Pod resize failed; the next sync retries it');
    return stepFailed('ResizePodInPlace', uid, err, 'ErrResizePodInPlace');
  }
}
