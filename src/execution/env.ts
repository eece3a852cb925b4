// A container's environment as kubelet makes it: envFrom, plain values with $(VAR) expansion, the downward API, configMap and secret keys, env files.
import type { V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import type { NodeAllocatable } from '../host/allocatable.js';
import { podFieldValue as metadataFieldValue, resourceFieldValue } from '../volume/downward-api.js';
import { ExpansionLimitError, MAX_CONTAINER_ENV_LENGTH, envTooLarge, expandVars } from '../core/env-expansion.js';
import { envFromSources, keyRefValue, type ApiEnvContext } from './env-from-api.js';
import { fileKeyRefValue } from './env-file.js';
import { SyncError } from '../core/sync-result.js';

/** What the node knows of the pod when its container is created. */
export interface PodEnvContext extends ApiEnvContext {
  podIPs: string[];
  hostIP: string;
  /** Read when a resourceFieldRef names a limit the container does not set. */
  allocatable: () => Promise<NodeAllocatable>;
  /** The pod's service variables (service-env.ts serviceEnvVarMap); none standalone. */
  serviceEnv?: ReadonlyMap<string, string>;
  /** Where the pod's volume of that name lives on the host (set up before any container starts); undefined if none. */
  volumePath: (volumeName: string) => string | undefined;
}

/**
 * The value of a pod field for an env var (fieldRef), or undefined when the path is not one kubelet
 * supports there. Missing labels and annotations read as "".
 */
export function podFieldValue(pod: V1Pod, fieldPath: string, ctx: Pick<PodEnvContext, 'podIPs' | 'hostIP'>): string | undefined {
  switch (fieldPath) {
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP':
    case 'status.hostIPs':
      return ctx.hostIP;
    case 'status.podIP':
      return ctx.podIPs[0] ?? '';
    case 'status.podIPs':
      return ctx.podIPs.join(',');
    // The whole label and annotation maps are for volumes only.
    case 'metadata.labels':
    case 'metadata.annotations':
      return undefined;
  }
  try {
    return metadataFieldValue(pod, fieldPath);
  } catch {
    return undefined;
  }
}

async function valueFrom(pod: V1Pod, container: V1Container, e: V1EnvVar, field: string, ctx: PodEnvContext): Promise<string | undefined> {
  const source = e.valueFrom!;
  if (source.configMapKeyRef || source.secretKeyRef) return keyRefValue(pod, source, ctx);
  if (source.fileKeyRef) return fileKeyRefValue(source.fileKeyRef, ctx.volumePath(source.fileKeyRef.volumeName));
  if (source.fieldRef) {
    const value = podFieldValue(pod, source.fieldRef.fieldPath, ctx);
    if (value === undefined) throw new Error(`${field}.valueFrom.fieldRef.fieldPath: Unsupported value: "${source.fieldRef.fieldPath}"`);
    return value;
  }
  if (source.resourceFieldRef) {
    // The container defaults to the one being created, as the API server defaults it.
    const ref = { ...source.resourceFieldRef, containerName: source.resourceFieldRef.containerName || container.name };
    try {
      return resourceFieldValue(pod, ref, await ctx.allocatable());
    } catch (err) {
      throw new Error(`${field}.valueFrom.resourceFieldRef: ${(err as Error).message}`, { cause: err });
    }
  }
  throw new Error(`${field}.valueFrom: no supported source`);
}

/** kubelet's CreateContainerConfigError, naming the pod and container. */
export function configError(pod: V1Pod, container: V1Container, detail: string, cause?: unknown): SyncError {
  const m = pod.metadata ?? {};
  return new SyncError('CreateContainerConfigError', `pod ${m.namespace}/${m.name}, container ${container.name}: ${detail}`, { cause });
}

/**
 * The container's environment in kubelet's makeEnvironmentVariables order: the envFrom sources first, then each
 * `value` expanded against the variables defined before it and then the service variables, each `valueFrom` read
 * from the pod, the API server or an env file in a volume (an optional one that is missing sets nothing); last the service variables the
 * container does not define itself. Throws CreateContainerConfigError: kubelet's message for a missing configMap,
 * secret or key; else naming pod, container and field.
 */
export async function containerEnv(pod: V1Pod, container: V1Container, field: string, ctx: PodEnvContext): Promise<Map<string, string>> {
  const env = await envFromSources(pod, container, ctx);
  const services = ctx.serviceEnv ?? new Map<string, string>();
  // kubelet's MappingFuncFor(tmpEnv, serviceEnv): the container's own variables first.
  const lookup = { get: (name: string) => env.get(name) ?? services.get(name) };
  let envBytes = 0;
  for (const [i, e] of (container.env ?? []).entries()) {
    try {
      const value = e.valueFrom ? await valueFrom(pod, container, e, `${field}.env[${i}]`, ctx) : expandVars(e.value ?? '', lookup);
      if (value !== undefined) env.set(e.name, value);
      envBytes += e.name.length + (value?.length ?? 0);
      if (envBytes > MAX_CONTAINER_ENV_LENGTH) throw new Error(`${field}.env: ${envTooLarge}`);
    } catch (err) {
      if (err instanceof SyncError) throw err;
      const detail = err instanceof ExpansionLimitError ? `${field}.env[${i}].value: ${err.message}` : (err as Error).message;
      throw configError(pod, container, detail, err);
    }
  }
  for (const [name, value] of services) if (!env.has(name)) env.set(name, value);
  return env;
}
