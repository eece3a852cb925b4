// Makes a container's image present per its imagePullPolicy, with kubelet's pull back-off and reasons.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { EventRecorder } from '../core/events.js';
import type { AuthConfig, Image, ImageService, PodSandboxConfig } from '../cri/types.js';
import type { Logger } from '../core/log.js';
import type { ApiObjectSource } from '../core/api-objects.js';
import { keyringFromSecrets, lookupCredentials } from '../decisions/pull-credentials.js';
import { defaultImagePullPolicy } from '../core/image-reference.js';
import type { Backoff } from '../decisions/backoff.js';
import type { ImageUser } from './security-context.js';
import { SyncError } from '../core/sync-result.js';
import type { PodStartupLatencyTracker } from './pod-startup-latency.js';
import { kubeletErrorText } from '../cri/errors.js';

/** At most this many remembered pull failures (kubelet's map is unbounded; pods of failed pulls come and go). */
const maxPullErrors = 4096;

/** The container's pull policy, or kubelet's default from the image tag when unset. */
export function effectivePullPolicy(container: V1Container): string {
  return container.imagePullPolicy ?? defaultImagePullPolicy(container.image ?? '');
}

/** The image a container runs: the runtime's reference and the user the image runs as. */
export interface EnsuredImage {
  ref: string;
  user: ImageUser;
}

/** kubelet's getImageUser: the image's numeric uid, else its user name; an image naming neither runs as root. */
function imageUser(image: Image | undefined): ImageUser {
  return image?.uid !== undefined ? { uid: image.uid, username: '' } : { username: image?.username ?? '' };
}

/** Go's time.Duration String of a whole number of milliseconds (kubelet truncates pull times to ms): 523ms, 1.234s, 2m3.5s. */
export function goDuration(ms: number): string {
  const total = Math.max(0, Math.floor(ms));
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const s = ((total % 60_000) / 1000).toFixed(3).replace(/\.?0+$/, '');
  return h > 0 ? `${h}h${m}m${s}s` : m > 0 ? `${m}m${s}s` : `${s}s`;
}

export class ImageManager {
  /** The last pull failure per back-off key, which the back-off's message repeats (kubelet's prevPullErrMsg). */
  private readonly pullErrors = new Map<string, string>();

  constructor(
    private readonly images: ImageService,
    private readonly pullBackoff: Backoff,
    private readonly now: () => number,
    private readonly events: EventRecorder,
    /** Told when a pod's pulls start and end (the pod startup SLI leaves them out). */
    private readonly latency?: Pick<PodStartupLatencyTracker, 'startedPulling' | 'finishedPulling'>,
    /** The API server's secrets (cluster mode): the pod's imagePullSecrets. */
    private readonly objects?: ApiObjectSource,
  ) {}

  /**
   * The logins to try for the image from the pod's imagePullSecrets, as kubelet: a secret that cannot be read is logged
   * and skipped (the pull may still succeed), one that holds no docker config fails the pull naming it.
   */
  private async pullCredentials(pod: V1Pod, image: string, log: Logger, signal?: AbortSignal): Promise<AuthConfig[]> {
    const refs = pod.spec?.imagePullSecrets ?? [];
    if (!this.objects || refs.length === 0) return [];
    const namespace = pod.metadata?.namespace ?? 'default';
    const secrets = [];
    for (const { name } of refs) {
      if (!name) continue;
      try {
        secrets.push(await this.objects.getSecret(namespace, name, signal));
      } catch (err) {
        log.warn({ secret: `${namespace}/${name}`, err: (err as Error).message }, 'Unable to retrieve pull secret, the image pull may not succeed.');
      }
    }
    return lookupCredentials(keyringFromSecrets(secrets), image).map(({ username, password }) => ({ username, password }));
  }

  /** kubelet's pull: anonymous without matching credentials, else each login in turn until one works (errors aggregated). */
  private async pull(pod: V1Pod, image: string, sandboxConfig: PodSandboxConfig, log: Logger, signal?: AbortSignal): Promise<string> {
    const logins = await this.pullCredentials(pod, image, log, signal);
    if (logins.length === 0) return this.images.pullImage(image, sandboxConfig, { signal });
    const errors: string[] = [];
    for (const auth of logins) {
      try {
        return await this.images.pullImage(image, sandboxConfig, { signal }, auth);
      } catch (err) {
        errors.push(err instanceof Error ? err.message : String(err));
      }
    }
    // Go's utilerrors aggregate: one error as it is, several as [a, b].
    throw new Error(errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`);
  }

  /** Returns the image to run, or throws a SyncError with kubelet's reason. */
  async ensureImage(pod: V1Pod, container: V1Container, sandboxConfig: PodSandboxConfig, log: Logger, signal?: AbortSignal): Promise<EnsuredImage> {
    const image = container.image ?? '';
    const ref = { pod, containerName: container.name };
    const policy = effectivePullPolicy(container);
    if (policy !== 'Always') {
      const present = await this.images.imageStatus(image, { signal });
      if (present) {
        this.events.event(ref, 'Normal', 'Pulled', `Container image "${image}" already present on machine`);
        return { ref: present.id, user: imageUser(present) };
      }
      if (policy === 'Never') {
        const message = `Container image "${image}" is not present with pull policy of Never`;
        this.events.event(ref, 'Warning', 'ErrImageNeverPull', message);
        throw new SyncError('ErrImageNeverPull', message);
      }
    }
    const key = `${pod.metadata?.uid}/${image}`;
    const now = this.now();
    if (this.pullBackoff.isInBackoffSinceUpdate(key, now)) {
      // kubelet records this one as Normal: the back-off is working as intended.
      this.events.event(ref, 'Normal', 'BackOff', `Back-off pulling image "${image}"`);
      // The container's waiting message also says why the last pull failed.
      const previous = this.pullErrors.get(key);
      throw new SyncError('ImagePullBackOff', `Back-off pulling image "${image}"${previous ? `: ${previous}` : ''}`);
    }
    log.info({ image }, `Pulling image "${image}"`);
    this.events.event(ref, 'Normal', 'Pulling', `Pulling image "${image}"`);
    const started = this.now();
    const podUid = pod.metadata?.uid ?? '';
    this.latency?.startedPulling(podUid, started);
    let imageRef: string;
    try {
      imageRef = await this.pull(pod, image, sandboxConfig, log, signal);
      this.latency?.finishedPulling(podUid, this.now());
      this.pullErrors.delete(key);
      log.info({ image, imageRef, durationMs: this.now() - started }, `Successfully pulled image "${image}"`);
    } catch (err) {
      this.pullBackoff.next(key, now);
      // As kubelet's CRI client: an Unknown failure is the runtime's bare message.
      const message = kubeletErrorText(err, true);
      this.pullErrors.delete(key);
      this.pullErrors.set(key, `ErrImagePull: ${message}`);
      if (this.pullErrors.size > maxPullErrors) this.pullErrors.delete(this.pullErrors.keys().next().value!);
      log.warn({ image, err: message }, `Failed to pull image "${image}"`);
      this.events.event(ref, 'Warning', 'Failed', `Failed to pull image "${image}": ${message}`);
      throw new SyncError('ErrImagePull', message, { cause: err });
    }
    const pulled = await this.images.imageStatus(imageRef, { signal });
    // nodelet pulls without a queue, so the pull took as long as the wait for it.
    const took = goDuration(this.now() - started);
    this.events.event(ref, 'Normal', 'Pulled', `Successfully pulled image "${image}" in ${took} (${took} including waiting). Image size: ${pulled?.size ?? 0} bytes.`);
    return { ref: imageRef, user: imageUser(pulled) };
  }
}
