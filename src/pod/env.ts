// A container's environment as kubelet makes it: plain values with $(VAR) expansion and the downward API's fieldRef.
import type { V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import { expandVars } from './env-expansion.js';
import { SyncError } from './sync-result.js';

/** What the node knows of the pod when its container is created. */
export interface PodEnvContext {
  podIPs: string[];
  hostIP: string;
}

const annotationOrLabel = /^metadata\.(labels|annotations)\['(.+)'\]$/;

/**
 * The value of a pod field for the downward API (env fieldRef and downwardAPI volumes), or undefined when the
 * path is not one kubelet supports. Missing labels and annotations read as "".
 */
export function podFieldValue(pod: V1Pod, fieldPath: string, ctx: PodEnvContext): string | undefined {
  const m = pod.metadata ?? {};
  const keyed = annotationOrLabel.exec(fieldPath);
  if (keyed) return (keyed[1] === 'labels' ? m.labels : m.annotations)?.[keyed[2]!] ?? '';
  switch (fieldPath) {
    case 'metadata.name':
      return m.name ?? '';
    case 'metadata.namespace':
      return m.namespace ?? '';
    case 'metadata.uid':
      return m.uid ?? '';
    case 'metadata.labels':
      return formatMap(m.labels);
    case 'metadata.annotations':
      return formatMap(m.annotations);
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP':
      return ctx.hostIP;
    case 'status.hostIPs':
      return ctx.hostIP;
    case 'status.podIP':
      return ctx.podIPs[0] ?? '';
    case 'status.podIPs':
      return ctx.podIPs.join(',');
    default:
      return undefined;
  }
}

/** kubelet's downward API rendering of a map: sorted `key="value"` lines with the value quoted as Go's %q. */
export function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(map![k])}`)
    .join('\n');
}

function fieldRefValue(pod: V1Pod, env: V1EnvVar, field: string, ctx: PodEnvContext): string {
  const fieldPath = env.valueFrom!.fieldRef!.fieldPath;
  const value = podFieldValue(pod, fieldPath, ctx);
  // metadata.labels / metadata.annotations as a whole are for volumes only.
  if (value === undefined || fieldPath === 'metadata.labels' || fieldPath === 'metadata.annotations') {
    throw new SyncError('CreateContainerConfigError', `${field}.valueFrom.fieldRef.fieldPath: Unsupported value: "${fieldPath}"`);
  }
  return value;
}

/**
 * The container's environment in order: each `value` expanded against the variables defined before it,
 * each `valueFrom.fieldRef` read from the pod. Throws CreateContainerConfigError naming pod, container and field.
 */
export function containerEnv(pod: V1Pod, container: V1Container, field: string, ctx: PodEnvContext): Map<string, string> {
  const env = new Map<string, string>();
  (container.env ?? []).forEach((e, i) => {
    const envField = `${field}.env[${i}]`;
    try {
      if (e.valueFrom?.fieldRef) env.set(e.name, fieldRefValue(pod, e, envField, ctx));
      else env.set(e.name, expandVars(e.value ?? '', env));
    } catch (err) {
      const m = pod.metadata ?? {};
      throw new SyncError('CreateContainerConfigError', `pod ${m.namespace}/${m.name}, container ${container.name}: ${(err as Error).message}`);
    }
  });
  return env;
}
