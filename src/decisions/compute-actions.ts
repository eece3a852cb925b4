// Decides what a sync must do for one pod, from its desired spec and the runtime's observed state (pure).
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { isInBackoffSince, type BackoffEntry, type BackoffPolicy } from './backoff.js';
import { containerHash } from './container-hash.js';
import { computeInitContainerPlan, findNextInitContainerToRun, hasAnyRegularContainerCreated, hasRestartableInitContainer, isRestartableInitContainer } from './init-containers.js';
import { ephemeralContainers } from '../core/pod-containers.js';
import { latestContainer, type ContainerObservation, type PodRuntimeState, type SandboxObservation } from '../core/runtime-state.js';
import type { ProbeResultLookup } from '../core/probe-results.js';
import { containerResize, type ContainerResourceUpdate, type ResizeResource } from './resize.js';

export interface ContainerToStart {
  name: string;
  /** Index in spec.initContainers for init containers, spec.ephemeralContainers for ephemeral ones, else spec.containers. */
  specIndex: number;
  restartCount: number;
  reason: string;
}

export interface ContainerToKill {
  id: string;
  name: string;
  reason: string;
  /** Overrides the pod's grace period (a failed probe's terminationGracePeriodSeconds). */
  gracePeriodSeconds?: number;
}

export interface ContainerInBackoff {
  name: string;
  /** When the back-off ends and a sync should retry (ms since epoch). */
  retryAt: number;
  durationMs: number;
}

/** The plain record a sync executes, in the order its fields are listed. */
export interface PodActions {
  /** Stop every running container and the sandbox first. */
  killPod: boolean;
  createSandbox: boolean;
  /** The sandbox containers start in; empty when createSandbox (the executor fills in the new one). */
  sandboxId: string;
  /** Attempt number of the sandbox to create. */
  attempt: number;
  containersToKill: ContainerToKill[];
  /** Ephemeral containers never started yet; each starts once and is never restarted. */
  ephemeralContainersToStart: ContainerToStart[];
  /** Init containers to start before anything else, in order (several only for sidecars). */
  initContainersToStart: ContainerToStart[];
  containersToStart: ContainerToStart[];
  /** Containers (init or regular) that would restart now but are held back by crash-loop back-off. */
  containersInBackoff: ContainerInBackoff[];
  /** Running containers resized in place, per resource, decreases before increases (kubelet's ContainersToUpdate). */
  containersToUpdate: Record<ResizeResource, ContainerResourceUpdate[]>;
  /** The pod's cgroup follows its allocation (a container is resized, or restarted for a resize). */
  updatePodResources: boolean;
}

export interface ComputeContext {
  now: number;
  backoffPolicy: BackoffPolicy;
  /** The crash-loop back-off entry kept for a container of this pod. */
  crashBackoff: (containerName: string) => BackoffEntry | undefined;
  /** Probe results by container ID; a running container whose liveness or startup probe failed is restarted. */
  liveness?: ProbeResultLookup;
  startup?: ProbeResultLookup;
  /**
   * The resources last applied to each container of the pod (kubelet's actuated state); running containers whose
   * allocation differs are resized. Without it nothing is resized.
   */
  actuated?: (containerName: string) => V1ResourceRequirements | undefined;
}

/** kubelet's ShouldContainerBeRestarted: does the latest instance of a container call for a new one? */
export function shouldContainerBeRestarted(latest: ContainerObservation | undefined, restartPolicy: string): boolean {
  if (!latest) return true;
  if (latest.state === 'running') return false;
  if (latest.state === 'unknown' || latest.state === 'created') return true;
  if (restartPolicy === 'Never') return false;
  if (restartPolicy === 'OnFailure' && latest.exitCode === 0) return false;
  return true;
}

/** The sandbox to keep, or undefined when a new one is needed (none, not ready, several ready, or no IP). */
export function reusableSandbox(pod: V1Pod, state: PodRuntimeState): SandboxObservation | undefined {
  const latest = state.sandboxes[0];
  if (!latest || !latest.ready) return undefined;
  if (state.sandboxes.filter((s) => s.ready).length > 1) return undefined;
  if (!pod.spec?.hostNetwork && latest.ips.length === 0) return undefined;
  return latest;
}

function restartReason(latest: ContainerObservation | undefined): string {
  if (!latest) return 'container has not been started';
  if (latest.state === 'exited') return `container exited with code ${latest.exitCode ?? 'unknown'}`;
  return `container is in ${latest.state} state`;
}

/**
 * Plans one container's (re)start: undefined when it must not start, a back-off entry when it
 * would but crash-loop back-off holds it, else the start itself.
 */
/** The newest instance of a container that exited: kubelet measures crash-loop back-off from its finish. */
export function lastExited(state: PodRuntimeState, name: string): ContainerObservation | undefined {
  return state.containers.find((c) => c.name === name && c.state === 'exited' && c.finishedAt !== undefined);
}

function planStart(
  container: V1Container,
  specIndex: number,
  latest: ContainerObservation | undefined,
  ctx: ComputeContext,
  state: PodRuntimeState,
  reason = restartReason(latest),
): ContainerToStart | ContainerInBackoff {
  const restartCount = latest ? latest.restartCount + 1 : 0;
  const exited = lastExited(state, container.name);
  if (exited) {
    const entry = ctx.crashBackoff(container.name);
    if (entry && isInBackoffSince(ctx.backoffPolicy, entry, exited.finishedAt!, ctx.now)) {
      return { name: container.name, retryAt: exited.finishedAt! + entry.durationMs, durationMs: entry.durationMs };
    }
  }
  return { name: container.name, specIndex, restartCount, reason };
}

/** Whether a pod whose regular containers need nothing more got through initialization (kubelet's check before a new sandbox). */
function initializationDone(pod: V1Pod, state: PodRuntimeState): boolean {
  return hasRestartableInitContainer(pod) ? hasAnyRegularContainerCreated(pod, state) : findNextInitContainerToRun(pod, state).done;
}

function isStart(plan: ContainerToStart | ContainerInBackoff): plan is ContainerToStart {
  return 'specIndex' in plan;
}

export function computePodActions(pod: V1Pod, state: PodRuntimeState, ctx: ComputeContext): PodActions {
  const containers = pod.spec?.containers ?? [];
  const restartPolicy = pod.spec?.restartPolicy ?? 'Always';
  const sandbox = reusableSandbox(pod, state);
  const anythingAlive = state.sandboxes.some((s) => s.ready) || state.containers.some((c) => c.state === 'running');
  const actions: PodActions = {
    killPod: false,
    createSandbox: false,
    sandboxId: sandbox?.id ?? '',
    attempt: 0,
    containersToKill: [],
    ephemeralContainersToStart: [],
    initContainersToStart: [],
    containersToStart: [],
    containersInBackoff: [],
    containersToUpdate: { memory: [], cpu: [] },
    updatePodResources: false,
  };
  /** A running container's resize: false when it restarts for it (killed here; the caller starts it again). */
  const planResize = (c: V1Container, latest: ContainerObservation): boolean => {
    if (!ctx.actuated) return true;
    const resize = containerResize(c, latest, ctx.actuated(c.name));
    if (resize.kind === 'none') return true;
    actions.updatePodResources = true;
    if (resize.kind === 'restart') {
      actions.containersToKill.push({ id: latest.id, name: c.name, reason: resize.message });
      return false;
    }
    for (const r of ['memory', 'cpu'] as const) {
      const update = resize.updates[r];
      if (!update) continue;
      // Decreases first, so the pod's total never rises above what it was allocated while containers change.
      if (resize.grows[r]) actions.containersToUpdate[r].push(update);
      else actions.containersToUpdate[r].unshift(update);
    }
    return true;
  };
  const addPlan = (plan: ContainerToStart | ContainerInBackoff) =>
    isStart(plan) ? actions.containersToStart.push(plan) : actions.containersInBackoff.push(plan);
  const inits = pod.spec?.initContainers ?? [];
  const addInitPlan = (i: number) => {
    const plan = planStart(inits[i]!, i, latestContainer(state, inits[i]!.name), ctx, state);
    if (isStart(plan)) actions.initContainersToStart.push(plan);
    else actions.containersInBackoff.push(plan);
  };

  if (!sandbox) {
    // Everything restarts in a new sandbox, unless the pod must not run again.
    actions.killPod = anythingAlive;
    actions.attempt = state.sandboxes[0] ? state.sandboxes[0].attempt + 1 : 0;
    if (restartPolicy === 'Never' && state.sandboxes.length > 0 && state.containers.length > 0) return actions;
    const toStart = containers.flatMap((c, i) => {
      const latest = latestContainer(state, c.name);
      if (restartPolicy === 'OnFailure' && latest?.state === 'exited' && latest.exitCode === 0) return [];
      return [planStart(c, i, latest, ctx, state)];
    });
    if (toStart.length === 0 && initializationDone(pod, state)) return actions;
    actions.createSandbox = true;
    // A new sandbox starts initialization over from the first init container.
    if (inits.length > 0) addInitPlan(0);
    else toStart.forEach(addPlan);
    return actions;
  }

  // As kubelet, ephemeral containers start even before initialization is done, and only once: one the runtime ever
  // had (running or exited) is not started again.
  const ephemeral = ephemeralContainers(pod);
  ephemeral.forEach((c, i) => {
    if (!latestContainer(state, c.name)) actions.ephemeralContainersToStart.push({ name: c.name, specIndex: i, restartCount: 0, reason: 'ephemeral container has not been started' });
  });

  // Until the pod is initialized, only init containers run.
  if (inits.length > 0) {
    const current = { ...state, containers: state.containers.filter((c) => c.sandboxId === sandbox.id) };
    // A running init container that is not a sidecar is resized in place (InPlacePodVerticalScalingInitContainers, GA
    // in 1.37); the API server allows it no RestartContainer policy.
    for (const c of inits) {
      const latest = latestContainer(current, c.name);
      if (!isRestartableInitContainer(c) && latest?.state === 'running') planResize(c, latest);
    }
    if (hasRestartableInitContainer(pod)) {
      const plan = computeInitContainerPlan(pod, current, { startup: ctx.startup, liveness: ctx.liveness });
      if (plan.killPod) {
        actions.killPod = anythingAlive;
        return actions;
      }
      for (const k of plan.kill) actions.containersToKill.push({ id: k.container.id, name: k.container.name, reason: k.reason });
      plan.start.forEach(addInitPlan);
      if (!plan.initialized) return actions;
      // Running sidecars the plan keeps are resized like regular containers.
      inits.forEach((c, i) => {
        const latest = latestContainer(current, c.name);
        if (!isRestartableInitContainer(c) || latest?.state !== 'running') return;
        if (plan.kill.some((k) => k.container.id === latest.id) || plan.start.includes(i)) return;
        if (!planResize(c, latest)) addInitPlan(i);
      });
    } else {
      const { lastFailed, next, done } = findNextInitContainerToRun(pod, current);
      if (!done) {
        if (next !== undefined) {
          if (lastFailed && restartPolicy === 'Never') {
            actions.killPod = anythingAlive;
          } else {
            if (lastFailed?.state === 'unknown') {
              actions.containersToKill.push({ id: lastFailed.id, name: lastFailed.name, reason: 'Init container is in unknown state, try killing it before removal' });
            }
            addInitPlan(next);
          }
        }
        return actions;
      }
    }
  }

  const specNames = new Set([...containers, ...inits, ...ephemeral].map((c) => c.name));
  let keepCount = 0;
  containers.forEach((c, i) => {
    const latest = latestContainer(state, c.name);
    if (latest?.state === 'unknown') {
      actions.containersToKill.push({ id: latest.id, name: c.name, reason: 'Container is in unknown state, try killing it before removal' });
    }
    if (!latest || latest.state !== 'running') {
      if (shouldContainerBeRestarted(latest, restartPolicy)) addPlan(planStart(c, i, latest, ctx, state));
      return;
    }
    if (latest.sandboxId !== sandbox.id) {
      actions.containersToKill.push({ id: latest.id, name: c.name, reason: 'Container runs in a sandbox that is not the pod\'s current one' });
      addPlan(planStart(c, i, latest, ctx, state));
      return;
    }
    if (latest.hash !== containerHash(c)) {
      actions.containersToKill.push({ id: latest.id, name: c.name, reason: `Container ${c.name} definition changed` });
      addPlan(planStart(c, i, latest, ctx, state, 'container definition changed'));
      return;
    }
    const failedProbe = ctx.liveness?.(latest.id) === 'failure' ? 'liveness' : ctx.startup?.(latest.id) === 'failure' ? 'startup' : undefined;
    if (failedProbe) {
      // kubelet kills it and, unless the policy is Never, starts it again in the same sync.
      const restart = restartPolicy !== 'Never';
      const grace = (failedProbe === 'liveness' ? c.livenessProbe : c.startupProbe)?.terminationGracePeriodSeconds;
      actions.containersToKill.push({
        id: latest.id,
        name: c.name,
        reason: `Container ${c.name} failed ${failedProbe} probe${restart ? ', will be restarted' : ''}`,
        ...(grace !== undefined ? { gracePeriodSeconds: grace } : {}),
      });
      // Like any start, the restart waits out crash-loop back-off measured from an earlier exit.
      if (restart) addPlan(planStart(c, i, latest, ctx, state, `container failed ${failedProbe} probe`));
      return;
    }
    if (!planResize(c, latest)) {
      addPlan(planStart(c, i, latest, ctx, state, 'container resize requires restart'));
      return;
    }
    keepCount++;
  });

  // Running containers that are not the latest instance of a spec container do not belong.
  for (const c of state.containers) {
    if (c.state !== 'running') continue;
    if (!specNames.has(c.name)) {
      actions.containersToKill.push({ id: c.id, name: c.name, reason: 'Container is not in the pod spec' });
    } else if (latestContainer(state, c.name)?.id !== c.id) {
      actions.containersToKill.push({ id: c.id, name: c.name, reason: 'Container is superseded by a newer instance' });
    }
  }

  if (keepCount === 0 && actions.containersToStart.length === 0 && actions.containersInBackoff.length === 0) {
    // Nothing runs and nothing will: the pod is done, so its sandbox (and network) goes, sidecars included.
    actions.killPod = true;
    actions.containersToKill = [];
    actions.ephemeralContainersToStart = [];
    actions.initContainersToStart = [];
    actions.containersInBackoff = [];
    actions.containersToUpdate = { memory: [], cpu: [] };
    actions.updatePodResources = false;
  }
  return actions;
}

/** True when the actions would change nothing in the runtime. */
export function isNoop(actions: PodActions): boolean {
  return (
    !actions.killPod &&
    !actions.createSandbox &&
    actions.containersToKill.length === 0 &&
    actions.ephemeralContainersToStart.length === 0 &&
    actions.initContainersToStart.length === 0 &&
    actions.containersToStart.length === 0 &&
    !actions.updatePodResources
  );
}
