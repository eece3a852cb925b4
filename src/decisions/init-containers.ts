// How far a pod's initialization has come: kubelet's rules for init containers and sidecars (restartable init containers).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ProbeResultLookup } from '../core/probe-results.js';
import { latestContainer, type ContainerObservation, type PodRuntimeState } from '../core/runtime-state.js';

/** A sidecar: an init container with restartPolicy Always, started in order and kept running. */
export function isRestartableInitContainer(c: V1Container): boolean {
  return c.restartPolicy === 'Always';
}

export function hasRestartableInitContainer(pod: V1Pod): boolean {
  return (pod.spec?.initContainers ?? []).some(isRestartableInitContainer);
}

/** Failed for initialization: exited non-zero, or lost (unknown state). */
export function isInitContainerFailed(c: ContainerObservation): boolean {
  return (c.state === 'exited' && c.exitCode !== 0) || c.state === 'unknown';
}

export interface NextInitContainer {
  /** The latest instance of the failed init container to retry, when the next one is a retry. */
  lastFailed?: ContainerObservation;
  /** Index in spec.initContainers of the init container to start; undefined while one is still running. */
  next?: number;
  /** Every init container succeeded (or a regular container already runs). */
  done: boolean;
}

/** kubelet's findNextInitContainerToRun, for pods without sidecars. */
export function findNextInitContainerToRun(pod: V1Pod, state: PodRuntimeState): NextInitContainer {
  const inits = pod.spec?.initContainers ?? [];
  if (inits.length === 0) return { done: true };
  // A running regular container means initialization happened, even if its init containers are gone since.
  if ((pod.spec?.containers ?? []).some((c) => latestContainer(state, c.name)?.state === 'running')) return { done: true };
  for (let i = inits.length - 1; i >= 0; i--) {
    const status = latestContainer(state, inits[i]!.name);
    if (status && isInitContainerFailed(status)) return { lastFailed: status, next: i, done: false };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const status = latestContainer(state, inits[i]!.name);
    if (!status) continue;
    if (status.state === 'running') return { done: false };
    if (status.state === 'exited') return i === inits.length - 1 ? { done: true } : { next: i + 1, done: false };
  }
  return { next: 0, done: false };
}

/** kubelet's hasAnyRegularContainerCreated: the pod got past initialization at some point. */
export function hasAnyRegularContainerCreated(pod: V1Pod, state: PodRuntimeState): boolean {
  return (pod.spec?.containers ?? []).some((c) => {
    const s = latestContainer(state, c.name)?.state;
    return s === 'created' || s === 'running' || s === 'exited';
  });
}

export interface InitContainerPlan {
  /** Indices into spec.initContainers to (re)start, in order. */
  start: number[];
  /** Init containers to stop first (unknown state), with the reason. */
  kill: { container: ContainerObservation; reason: string }[];
  /** Initialization failed and the pod must not restart: kill it. */
  killPod: boolean;
  /** Regular containers may run. */
  initialized: boolean;
}

/**
 * kubelet's computeInitContainerActions for pods with sidecars: walking the init containers from the last,
 * it restarts sidecars that stopped, starts the next init container once the previous one succeeded (or,
 * for a sidecar, runs), and reports whether initialization is complete.
 */
export function computeInitContainerPlan(
  pod: V1Pod,
  state: PodRuntimeState,
  probes: { startup?: ProbeResultLookup | undefined; liveness?: ProbeResultLookup | undefined } = {},
): InitContainerPlan {
  const inits = pod.spec?.initContainers ?? [];
  const plan: InitContainerPlan = { start: [], kill: [], killPod: false, initialized: true };
  if (inits.length === 0) return plan;
  const previouslyInitialized = hasAnyRegularContainerCreated(pod, state);
  const restartOnFailure = (pod.spec?.restartPolicy ?? 'Always') !== 'Never';
  plan.initialized = previouslyInitialized;
  for (let i = inits.length - 1; i >= 0; i--) {
    const container = inits[i]!;
    const sidecar = isRestartableInitContainer(container);
    const status = latestContainer(state, container.name);
    if (!status) {
      if (previouslyInitialized && sidecar) plan.start.push(i);
      continue;
    }
    if (previouslyInitialized && !sidecar) continue;
    const initializedUpTo = () => {
      if (i === inits.length - 1) plan.initialized = true;
      else if (!previouslyInitialized) plan.start.push(i + 1);
    };
    switch (status.state) {
      case 'created':
        // Created but never started: the runtime failed to start it; start a fresh one.
        plan.start.push(i);
        break;
      case 'running': {
        if (!sidecar) break;
        // A sidecar counts as started (and lets the next init container go) once its startup probe succeeded.
        const startup = container.startupProbe ? probes.startup?.(status.id) : 'success';
        if (startup === 'failure') {
          plan.kill.push({ container: status, reason: `Init container ${container.name} failed startup probe` });
          plan.start.push(i);
          break;
        }
        if (startup !== 'success') break;
        initializedUpTo();
        if (container.livenessProbe && probes.liveness?.(status.id) === 'failure') {
          plan.kill.push({ container: status, reason: `Init container ${container.name} failed liveness probe` });
          plan.start.push(i);
        }
        break;
      }
      case 'exited':
        if (sidecar) {
          plan.start.push(i);
        } else if (isInitContainerFailed(status)) {
          if (!restartOnFailure) return { start: [], kill: [], killPod: true, initialized: false };
          plan.start.push(i);
        } else {
          initializedUpTo();
        }
        break;
      default:
        if (!sidecar && !restartOnFailure) return { start: [], kill: [], killPod: true, initialized: false };
        plan.kill.push({ container: status, reason: `Init container ${container.name} is in unknown state, try killing it before removal` });
        plan.start.push(i);
    }
    // Before initialization, init containers start one at a time.
    if (!previouslyInitialized) break;
  }
  plan.start.sort((a, b) => a - b);
  return plan;
}
