// Container env read from the API server as kubelet's makeEnvironmentVariables does: envFrom configMaps/secrets and configMapKeyRef/secretKeyRef.
import type { V1ConfigMap, V1Container, V1EnvVarSource, V1Pod, V1Secret } from '@kubernetes/client-node';
import { isObjectNotFound, type ApiObjectSource } from '../core/api-objects.js';
import { SyncError } from '../core/sync-result.js';
import { envString } from './env-bytes.js';

/** A missing object or key: the container is not created (CreateContainerConfigError with kubelet's message). */
function configError(err: unknown): SyncError {
  if (err instanceof SyncError) return err;
  return new SyncError('CreateContainerConfigError', (err as Error).message, { cause: err });
}

async function lookup<T>(get: () => Promise<T>, optional: boolean): Promise<T | undefined> {
  try {
    return await get();
  } catch (err) {
    if (optional && isObjectNotFound(err)) return undefined;
    throw configError(err);
  }
}

// A Secret's bytes as they are, UTF-8 or not (env-bytes.ts).
const decode = (b64: string) => envString(Buffer.from(b64, 'base64'));

export interface ApiEnvContext {
  /** Undefined in standalone mode. */
  objects?: ApiObjectSource;
  /** Cancels the reads (the pod's sync was cancelled). */
  signal?: AbortSignal;
}

/**
 * The variables of the container's envFrom sources in order (a later source overrides an earlier one); a missing
 * optional object is skipped. Every key is taken with its prefix: kubelet 1.37 validates none (the API server checks
 * the keys and the prefix) and no longer reports InvalidEnvironmentVariableNames.
 */
export async function envFromSources(pod: V1Pod, container: V1Container, ctx: ApiEnvContext): Promise<Map<string, string>> {
  const env = new Map<string, string>();
  const namespace = pod.metadata?.namespace ?? 'default';
  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    let entries: [string, string][];
    if (from.configMapRef) {
      const name = from.configMapRef.name ?? '';
      if (!ctx.objects) throw configError(new Error(`couldn't get configMap ${namespace}/${name}, no kubeClient defined`));
      const cm = await lookup<V1ConfigMap>(() => ctx.objects!.getConfigMap(namespace, name, ctx.signal), from.configMapRef.optional === true);
      if (!cm) continue;
      entries = Object.entries(cm.data ?? {});
    } else if (from.secretRef) {
      const name = from.secretRef.name ?? '';
      if (!ctx.objects) throw configError(new Error(`couldn't get secret ${namespace}/${name}, no kubeClient defined`));
      const secret = await lookup<V1Secret>(() => ctx.objects!.getSecret(namespace, name, ctx.signal), from.secretRef.optional === true);
      if (!secret) continue;
      entries = Object.entries(secret.data ?? {}).map(([k, v]) => [k, decode(v)]);
    } else {
      continue;
    }
    for (const [key, value] of entries) env.set(prefix + key, value);
  }
  return env;
}

/**
 * The value of a configMapKeyRef or secretKeyRef; undefined when the reference is optional and its object or key
 * is missing (the variable is then not set). Throws CreateContainerConfigError with kubelet's message otherwise.
 */
export async function keyRefValue(pod: V1Pod, source: V1EnvVarSource, ctx: ApiEnvContext): Promise<string | undefined> {
  const namespace = pod.metadata?.namespace ?? 'default';
  if (source.configMapKeyRef) {
    const { name = '', key, optional = false } = source.configMapKeyRef;
    if (!ctx.objects) throw configError(new Error(`couldn't get configMap ${namespace}/${name}, no kubeClient defined`));
    const cm = await lookup<V1ConfigMap>(() => ctx.objects!.getConfigMap(namespace, name, ctx.signal), optional);
    if (!cm) return undefined;
    // Only data: binaryData never reaches the environment.
    if (cm.data && Object.hasOwn(cm.data, key)) return cm.data[key];
    if (optional) return undefined;
    throw configError(new Error(`couldn't find key ${key} in ConfigMap ${namespace}/${name}`));
  }
  if (source.secretKeyRef) {
    const { name = '', key, optional = false } = source.secretKeyRef;
    if (!ctx.objects) throw configError(new Error(`couldn't get secret ${namespace}/${name}, no kubeClient defined`));
    const secret = await lookup<V1Secret>(() => ctx.objects!.getSecret(namespace, name, ctx.signal), optional);
    if (!secret) return undefined;
    if (secret.data && Object.hasOwn(secret.data, key)) return decode(secret.data[key]!);
    if (optional) return undefined;
    throw configError(new Error(`couldn't find key ${key} in Secret ${namespace}/${name}`));
  }
  return undefined;
}
