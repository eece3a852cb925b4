// Executes a pod's computed actions against the runtime, step by step, recording a result per step.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { PodSandboxConfig, RuntimeService } from '../cri/types.js';
import { isNotFound } from '../cri/errors.js';
import type { Logger } from '../log.js';
import type { Backoff } from './backoff.js';
import type { ContainerToStart, PodActions } from './compute-actions.js';
import { containerEnv } from './env.js';
import { isRestartableInitContainer } from './init-containers.js';
import type { ImageManager } from './images.js';
import { latestContainer, type PodRuntimeState } from './runtime-state.js';
import {
  buildContainerConfig,
  buildSandboxConfig,
  podLogDirectory,
  terminationGracePeriodSeconds,
  type NodeRuntimeSettings,
} from './runtime-config.js';
import { stepFailed, type StepResult } from './sync-result.js';

export interface SyncDeps {
  runtime: RuntimeService;
  /** The node's IP (status.hostIP). */
  hostIP: () => string;
  /** IPs the pod network gave a sandbox (primary first). */
  podIPs: (sandboxId: string) => string[];
  images: ImageManager;
  crashBackoff: Backoff;
  node: NodeRuntimeSettings;
  now: () => number;
}

export function crashBackoffKey(pod: V1Pod, containerName: string): string {
  return `${pod.metadata?.uid}/${containerName}`;
}

/** Stops running containers (with the grace period) in parallel, then the pod's ready sandboxes. */
async function killPod(deps: SyncDeps, state: PodRuntimeState, gracePeriodSeconds: number, log: Logger, signal?: AbortSignal): Promise<StepResult[]> {
  const results = await Promise.all(
    state.containers
      .filter((c) => c.state === 'running' || c.state === 'unknown')
      .map((c) => killContainer(deps, c.id, c.name, gracePeriodSeconds, 'Stopping pod', log, signal)),
  );
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

/** kubelet never stops a container with less than 2 s of grace. */
const minimumGracePeriodSeconds = 2;

async function killContainer(
  deps: SyncDeps,
  id: string,
  name: string,
  requestedGraceSeconds: number,
  reason: string,
  log: Logger,
  signal?: AbortSignal,
): Promise<StepResult> {
  const gracePeriodSeconds = Math.max(requestedGraceSeconds, minimumGracePeriodSeconds);
  const clog = log.child({ container: name, containerId: id });
  clog.info({ gracePeriod: gracePeriodSeconds, reason }, 'Killing container with a grace period');
  try {
    await deps.runtime.stopContainer(id, gracePeriodSeconds, { signal });
    return { action: 'KillContainer', target: name };
  } catch (err) {
    if (isNotFound(err)) return { action: 'KillContainer', target: name };
    clog.warn({ err }, 'Failed to kill container');
    return stepFailed('KillContainer', name, err, 'ErrKillContainer');
  }
}

/** Pulls the image (per policy), creates and starts one container; the result names the failure kubelet would. */
async function startContainer(
  deps: SyncDeps,
  pod: V1Pod,
  spec: V1Container,
  /** The container's field path in the pod, for error messages (e.g. spec.containers[1]). */
  field: string,
  start: ContainerToStart,
  state: PodRuntimeState,
  sandboxId: string,
  sandboxConfig: PodSandboxConfig,
  log: Logger,
  signal?: AbortSignal,
): Promise<StepResult> {
  const clog = log.child({ container: spec.name });
  if (latestContainer(state, spec.name)?.state === 'exited') deps.crashBackoff.next(crashBackoffKey(pod, spec.name), deps.now());
  try {
    await deps.images.ensureImage(pod, spec, sandboxConfig, clog, signal);
  } catch (err) {
    return stepFailed('StartContainer', spec.name, err, 'ErrImagePull');
  }
  let containerId: string;
  try {
    const podIPs = pod.spec?.hostNetwork ? [deps.hostIP()] : deps.podIPs(sandboxId);
    const env = containerEnv(pod, spec, field, { podIPs, hostIP: deps.hostIP() });
    const config = buildContainerConfig(pod, spec, start.restartCount, env);
    await mkdir(join(sandboxConfig.logDirectory, spec.name), { recursive: true, mode: 0o755 });
    containerId = await deps.runtime.createContainer(sandboxId, config, sandboxConfig, { signal });
    clog.info({ containerId, restartCount: start.restartCount, reason: start.reason }, 'Created container');
  } catch (err) {
    clog.warn({ err }, 'Failed to create container');
    return stepFailed('StartContainer', spec.name, err, 'CreateContainerError');
  }
  try {
    await deps.runtime.startContainer(containerId, { signal });
    clog.info({ containerId }, 'Started container');
    return { action: 'StartContainer', target: spec.name };
  } catch (err) {
    clog.warn({ err, containerId }, 'Failed to start container');
    return stepFailed('StartContainer', spec.name, err, 'RunContainerError');
  }
}

/**
 * Executes actions in kubelet's SyncPod order:
 *  1. kill the pod (running containers, then sandboxes) when asked; a failure ends the sync;
 *  2. kill the containers marked for killing;
 *  3. create the sandbox when asked; a failure ends the sync;
 *  4. start the init containers to start, in order; an init container (not a sidecar) that fails ends the sync;
 *  5. start the containers in spec order (image, create, start). As kubelet does, a container
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
    const killed = await killPod(deps, state, grace, log, signal);
    results.push(...killed);
    if (killed.some((r) => r.error)) return results;
  }

  for (const k of actions.containersToKill) {
    results.push(await killContainer(deps, k.id, k.name, k.gracePeriodSeconds ?? grace, k.reason, log, signal));
  }

  let sandboxId = actions.sandboxId;
  let attempt = state.sandboxes.find((s) => s.id === sandboxId)?.attempt ?? actions.attempt;
  if (actions.createSandbox) {
    attempt = actions.attempt;
    const config = buildSandboxConfig(pod, attempt, deps.node);
    try {
      await mkdir(config.logDirectory, { recursive: true, mode: 0o755 });
      sandboxId = await deps.runtime.runPodSandbox(config, undefined, { signal });
      log.info({ sandboxId, attempt }, 'Created pod sandbox');
      results.push({ action: 'CreatePodSandbox', target: sandboxId });
    } catch (err) {
      log.warn({ err, attempt }, 'Failed to create pod sandbox');
      results.push(stepFailed('CreatePodSandbox', '', err, 'ErrCreatePodSandbox'));
      return results;
    }
  }

  const sandboxConfig = buildSandboxConfig(pod, attempt, deps.node);
  const inits = pod.spec?.initContainers ?? [];
  for (const start of actions.initContainersToStart) {
    const spec = inits[start.specIndex]!;
    const result = await startContainer(deps, pod, spec, `spec.initContainers[${start.specIndex}]`, start, state, sandboxId, sandboxConfig, log, signal);
    results.push(result);
    // An init container that cannot start stops initialization; a sidecar that cannot does not.
    if (result.error && !isRestartableInitContainer(spec)) return results;
  }
  const specs = pod.spec?.containers ?? [];
  for (const start of actions.containersToStart) {
    results.push(await startContainer(deps, pod, specs[start.specIndex]!, `spec.containers[${start.specIndex}]`, start, state, sandboxId, sandboxConfig, log, signal));
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
      await rm(join(logDir, c.name, `${c.restartCount}.log`), { force: true });
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
 * sandboxes stopped (the runtime runs CNI DEL) and removed, the pod's log directory deleted.
 * Throws on the first failure so the caller retries; every step is idempotent.
 */
export async function terminatePod(
  deps: SyncDeps,
  state: PodRuntimeState,
  gracePeriodSeconds: number,
  logDirectory: string | undefined,
  log: Logger,
  signal?: AbortSignal,
): Promise<void> {
  const failed = (await killPod(deps, state, gracePeriodSeconds, log, signal)).find((r) => r.error);
  if (failed) throw new Error(`${failed.action} ${failed.target}: ${failed.error!.message}`);
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
  if (logDirectory) await rm(logDirectory, { recursive: true, force: true });
}
