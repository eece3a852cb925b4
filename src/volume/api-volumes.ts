// The files of configMap, secret, projected and downwardAPI volumes (kubelet's MakePayload / collectData), built before anything is mounted.
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import type { V1ConfigMap, V1KeyToPath, V1Pod, V1Secret, V1Volume } from '@kubernetes/client-node';
import { isObjectNotFound, type ApiObjectSource } from '../core/api-objects.js';
import { compareStrings } from '../core/compare.js';
import type { NodeAllocatable } from '../host/allocatable.js';
import type { FileProjection } from './atomic-writer.js';
import { clusterTrustBundleFiles, podCertificateFiles } from './certificate-sources.js';
import { downwardApiPayload } from './downward-api.js';

/** The API's defaults of defaultMode (ConfigMapVolumeSourceDefaultMode, SecretVolumeSourceDefaultMode, ProjectedVolumeSourceDefaultMode). */
export const configMapDefaultMode = 0o644;
export const secretDefaultMode = 0o644;
export const projectedDefaultMode = 0o644;
/** The API's default validity of a projected service account token. */
export const defaultTokenExpirationSeconds = 3600;

export type VolumePayload = Map<string, FileProjection>;

export interface PayloadContext {
  /** Undefined in standalone mode: volumes that need the API server cannot be built. */
  objects: ApiObjectSource | undefined;
  /** The node's allocatable resources, for downwardAPI resourceFieldRefs. */
  allocatable: () => Promise<NodeAllocatable>;
  signal?: AbortSignal;
}

/** AtomicWriter's path cleaning (path.Clean, no trailing slash). */
function cleanPath(path: string): string {
  return posix.normalize(path).replace(/(.)\/+$/, '$1');
}

/** kubelet's utilerrors.NewAggregate message: one error as it is, several as [a, b]. */
function aggregate(errors: Error[]): Error | undefined {
  if (errors.length === 0) return undefined;
  if (errors.length === 1) return errors[0];
  return new Error(`[${errors.map((e) => e.message).join(', ')}]`);
}

const decode = (b64: string) => Buffer.from(b64, 'base64');

/** The API server's MaxSecretSize, which bounds configMaps too: keys and values together. */
export const MAX_OBJECT_DATA_BYTES = 1024 * 1024;

/**
 * Refuses an object whose data the API server would not have stored: only a broken or hostile server sends one, and its
 * payload would go to memory and disk as it is.
 */
function checkDataSize(kind: string, obj: V1ConfigMap | V1Secret, maps: Record<string, string>[], decoded: boolean[]): void {
  let total = 0;
  maps.forEach((map, i) => {
    for (const [k, v] of Object.entries(map)) total += Buffer.byteLength(k) + (decoded[i] ? Math.floor((v.length * 3) / 4) : Buffer.byteLength(v));
  });
  if (total > MAX_OBJECT_DATA_BYTES) {
    throw new Error(`${kind} "${obj.metadata?.name ?? ''}" is too large: its data must have at most ${MAX_OBJECT_DATA_BYTES} bytes`);
  }
}

/** configmap.MakePayload: every data and binaryData key at defaultMode, or the items (key -> path, mode). */
export function configMapPayload(items: V1KeyToPath[] | undefined, configMap: V1ConfigMap, defaultMode: number, optional: boolean): VolumePayload {
  const payload: VolumePayload = new Map();
  const data = configMap.data ?? {};
  const binary = configMap.binaryData ?? {};
  checkDataSize('configmap', configMap, [data, binary], [false, true]);
  if (!items?.length) {
    for (const [name, value] of Object.entries(data)) payload.set(name, { data: Buffer.from(value, 'utf8'), mode: defaultMode });
    for (const [name, value] of Object.entries(binary)) payload.set(name, { data: decode(value), mode: defaultMode });
    return payload;
  }
  for (const item of items) {
    let content: Buffer;
    if (Object.hasOwn(data, item.key)) content = Buffer.from(data[item.key]!, 'utf8');
    else if (Object.hasOwn(binary, item.key)) content = decode(binary[item.key]!);
    else if (optional) continue;
    else throw new Error(`configmap references non-existent config key: ${item.key}`);
    payload.set(item.path, { data: content, mode: item.mode ?? defaultMode });
  }
  return payload;
}

/** secret.MakePayload: every data key at defaultMode, or the items (key -> path, mode). */
export function secretPayload(items: V1KeyToPath[] | undefined, secret: V1Secret, defaultMode: number, optional: boolean): VolumePayload {
  const payload: VolumePayload = new Map();
  const data = secret.data ?? {};
  checkDataSize('secret', secret, [data], [true]);
  if (!items?.length) {
    for (const [name, value] of Object.entries(data)) payload.set(name, { data: decode(value), mode: defaultMode });
    return payload;
  }
  for (const item of items) {
    if (!Object.hasOwn(data, item.key)) {
      if (optional) continue;
      throw new Error(`references non-existent secret key: ${item.key}`);
    }
    payload.set(item.path, { data: decode(data[item.key]!), mode: item.mode ?? defaultMode });
  }
  return payload;
}

/**
 * kubelet's FsUserFrom: the one runAsUser every container runs with (its own or the pod's), else undefined.
 * A projected token file is given to that user so a non-root container can read it at mode 0600.
 */
export function podFsUser(pod: V1Pod): number | undefined {
  let user: number | undefined;
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    const runAsUser = c.securityContext?.runAsUser ?? pod.spec?.securityContext?.runAsUser;
    if (runAsUser === undefined || (user !== undefined && user !== runAsUser)) return undefined;
    user = runAsUser;
  }
  return user;
}

function needApiServer(what: string): Error {
  return new Error(`${what} needs an API server: nodelet runs standalone (start it with --kubeconfig)`);
}

async function getOptional<T>(get: () => Promise<T>, optional: boolean): Promise<T | undefined> {
  try {
    return await get();
  } catch (err) {
    if (optional && isObjectNotFound(err)) return undefined;
    throw err;
  }
}

/** projected's collectData: every source tried, later sources overwrite earlier paths, errors aggregated. */
async function projectedPayload(pod: V1Pod, volume: V1Volume, ctx: PayloadContext): Promise<VolumePayload> {
  const source = volume.projected!;
  const defaultMode = source.defaultMode ?? projectedDefaultMode;
  const namespace = pod.metadata?.namespace ?? 'default';
  const payload: VolumePayload = new Map();
  const errors: Error[] = [];
  const fsGroup = pod.spec?.securityContext?.fsGroup;
  const fsUser = podFsUser(pod);
  // Tokens, trust anchors and certificates: with an fsUser or fsGroup private to them (fsGroup ownership then adds group read: 0640).
  const privateFile = { mode: fsUser !== undefined || fsGroup !== undefined ? 0o600 : defaultMode, ...(fsUser !== undefined ? { fsUser } : {}) };
  for (const [index, s] of (source.sources ?? []).entries()) {
    try {
      let part: VolumePayload | undefined;
      if (s.configMap) {
        const optional = s.configMap.optional === true;
        if (!ctx.objects) throw needApiServer(`configMap source "${s.configMap.name}"`);
        const cm = (await getOptional(() => ctx.objects!.getConfigMap(namespace, s.configMap!.name!, ctx.signal), optional)) ?? {};
        part = configMapPayload(s.configMap.items, cm, defaultMode, optional);
      } else if (s.secret) {
        const optional = s.secret.optional === true;
        if (!ctx.objects) throw needApiServer(`secret source "${s.secret.name}"`);
        const secret = (await getOptional(() => ctx.objects!.getSecret(namespace, s.secret!.name!, ctx.signal), optional)) ?? {};
        part = secretPayload(s.secret.items, secret, defaultMode, optional);
      } else if (s.downwardAPI) {
        part = downwardApiPayload(pod, { items: s.downwardAPI.items ?? [], defaultMode }, await ctx.allocatable());
      } else if (s.serviceAccountToken) {
        const tp = s.serviceAccountToken;
        if (!ctx.objects) throw needApiServer('serviceAccountToken source');
        const token = await ctx.objects.serviceAccountToken(
          pod,
          {
            serviceAccountName: pod.spec?.serviceAccountName || 'default',
            audiences: tp.audience ? [tp.audience] : [],
            expirationSeconds: tp.expirationSeconds ?? defaultTokenExpirationSeconds,
          },
        );
        part = new Map([[tp.path, { ...privateFile, data: Buffer.from(token.token, 'utf8') }]]);
      } else if (s.clusterTrustBundle) {
        if (!ctx.objects) throw needApiServer('clusterTrustBundle source');
        part = clusterTrustBundleFiles(s.clusterTrustBundle, await ctx.objects.trustAnchors(s.clusterTrustBundle, ctx.signal), privateFile);
      } else if (s.podCertificate) {
        if (!ctx.objects) throw needApiServer('podCertificate source');
        part = podCertificateFiles(s.podCertificate, ctx.objects.podCertificate(pod, volume.name, index), privateFile);
      }
      for (const [path, file] of part ?? []) payload.set(path, file);
    } catch (err) {
      errors.push(err as Error);
    }
  }
  const failed = aggregate(errors);
  if (failed) throw failed;
  return payload;
}

/**
 * The files of a volume whose content nodelet writes (configMap, secret, projected, downwardAPI), keyed by cleaned
 * path; undefined for other volumes. Throws kubelet's message when an object, key or token is missing.
 */
export async function volumePayload(pod: V1Pod, volume: V1Volume, ctx: PayloadContext): Promise<VolumePayload | undefined> {
  const namespace = pod.metadata?.namespace ?? 'default';
  let payload: VolumePayload;
  if (volume.downwardAPI) {
    payload = downwardApiPayload(pod, volume.downwardAPI, await ctx.allocatable());
  } else if (volume.configMap) {
    const source = volume.configMap;
    const optional = source.optional === true;
    if (!ctx.objects) throw needApiServer('configMap volume');
    const cm = (await getOptional(() => ctx.objects!.getConfigMap(namespace, source.name ?? '', ctx.signal), optional)) ?? {};
    payload = configMapPayload(source.items, cm, source.defaultMode ?? configMapDefaultMode, optional);
  } else if (volume.secret) {
    const source = volume.secret;
    const optional = source.optional === true;
    if (!ctx.objects) throw needApiServer('secret volume');
    const secret = (await getOptional(() => ctx.objects!.getSecret(namespace, source.secretName ?? '', ctx.signal), optional)) ?? {};
    payload = secretPayload(source.items, secret, source.defaultMode ?? secretDefaultMode, optional);
  } else if (volume.projected) {
    payload = await projectedPayload(pod, volume, ctx);
  } else {
    return undefined;
  }
  return new Map([...payload].map(([path, file]) => [cleanPath(path), file]));
}

/** A digest of a payload (paths, modes, owners, content): equal digests mean nothing to rewrite. Secret content stays out of memory. */
export function payloadDigest(payload: VolumePayload): string {
  const hash = createHash('sha256');
  for (const [path, file] of [...payload].sort(([a], [b]) => compareStrings(a, b))) {
    hash.update(`${path}\0${file.mode}\0${file.fsUser ?? ''}\0${file.data.length}\0`);
    hash.update(file.data);
  }
  return hash.digest('hex');
}

/** Volumes whose files live on tmpfs (kubelet wraps a memory-backed emptyDir for them); configMap stays on disk. */
export function usesMemoryMedium(volume: V1Volume): boolean {
  return volume.secret !== undefined || volume.projected !== undefined || volume.downwardAPI !== undefined;
}
