// Limits a pod must stay within for nodelet to run it, beyond what the API server validates: refused pods are
// reported with the field, instead of stalling the node (thousands of containers) or exhausting its memory (an
// environment whose variables each repeat the one before grows exponentially).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { ExpansionLimitError, MAX_CONTAINER_ENV_LENGTH, envTooLarge, expandVars } from '../core/env-expansion.js';
import type { WaitingReason } from './status.js';

/**
 * The most containers (init containers included) nodelet runs in one pod. Kubernetes sets no limit; each container
 * costs its processes, cgroup, log file and CRI calls in every sync, and pods in practice have a handful.
 */
export const MAX_POD_CONTAINERS = 250;

/** The first limit the pod exceeds, as the field and message; undefined when it has none. */
export function podLimitViolation(pod: V1Pod): { field: string; message: string } | undefined {
  const init = pod.spec?.initContainers ?? [];
  const containers = pod.spec?.containers ?? [];
  const count = init.length + containers.length;
  if (count > MAX_POD_CONTAINERS) return { field: 'spec.containers', message: `Too many: ${count}: must have at most ${MAX_POD_CONTAINERS} items (init containers included)` };
  for (const [path, list] of [['spec.initContainers', init], ['spec.containers', containers]] as const) {
    for (const [i, c] of list.entries()) {
      const violation = literalExpansionViolation(c);
      if (violation) return { field: `${path}[${i}].${violation.field}`, message: violation.message };
    }
  }
  return undefined;
}

/**
 * Expands the container's literal env values, command and args as its start will (values read from elsewhere are
 * checked then): an expansion past Linux's limit, or an environment past the CRI message, is known before any start.
 */
function literalExpansionViolation(c: V1Container): { field: string; message: string } | undefined {
  const env = new Map<string, string>();
  let total = 0;
  const expand = (field: string, value: string): string | { field: string; message: string } => {
    try {
      return expandVars(value, env);
    } catch (err) {
      if (err instanceof ExpansionLimitError) return { field, message: err.message };
      throw err;
    }
  };
  for (const [j, e] of (c.env ?? []).entries()) {
    if (e.valueFrom) continue;
    const value = expand(`env[${j}].value`, e.value ?? '');
    if (typeof value !== 'string') return value;
    env.set(e.name, value);
    total += e.name.length + value.length;
    if (total > MAX_CONTAINER_ENV_LENGTH) return { field: 'env', message: envTooLarge };
  }
  for (const key of ['command', 'args'] as const) {
    for (const [j, s] of (c[key] ?? []).entries()) {
      const value = expand(`${key}[${j}]`, s);
      if (typeof value !== 'string') return value;
    }
  }
  return undefined;
}

/** The admission result of a pod over a limit: kubelet's rejectPod with nodelet's reason. */
export function podLimitRejection(pod: V1Pod): WaitingReason | undefined {
  const v = podLimitViolation(pod);
  if (!v) return undefined;
  const m = pod.metadata ?? {};
  return { reason: 'PodExceedsLimits', message: `Pod ${m.namespace}/${m.name}: ${v.field}: ${v.message}` };
}
