// Makes a container's image (or an image volume's) present per its pull policy, with kubelet's pull back-off and reasons.
import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import type { EventRecorder, PodEventRef } from '../core/events.js';
import type { AuthConfig, Image, ImageService, PodSandboxConfig } from '../cri/types.js';
import type { Logger } from '../core/log.js';
import type { ApiObjectSource } from '../core/api-objects.js';
import { keyringFromSecrets, lookupCredentials } from '../decisions/pull-credentials.js';
import { defaultImagePullPolicy, imageNameError } from '../core/image-reference.js';
import type { Backoff } from '../decisions/backoff.js';
import type { ImageUser } from './security-context.js';
import { aggregateMessage, SyncError } from '../core/sync-result.js';
import { formatGoDuration } from '../core/duration.js';
import type { PodStartupLatencyTracker } from './pod-startup-latency.js';
import { kubeletErrorText } from '../cri/errors.js';
import type { NodeCredentials } from './node-credentials.js';
import { ImagePuller } from './image-puller.js';
import { describeProgress, PullProgressWatcher, type ContentStoreReader, type PullProgress } from './pull-progress.js';

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

export interface ImageManagerOptions {
  images: ImageService;
  pullBackoff: Backoff;
  now: () => number;
  events: EventRecorder;
  /** Told when a pod's pulls start and end (the pod startup SLI leaves them out). */
  latency?: Pick<PodStartupLatencyTracker, 'startedPulling' | 'finishedPulling'>;
  /** The API server's secrets (cluster mode): the pod's imagePullSecrets. */
  objects?: ApiObjectSource;
  /** The node's own docker config file (kubelet's default keyring), tried after the pod's secrets. */
  nodeCredentials?: Pick<NodeCredentials, 'keyring'>;
  /** kubelet's serializeImagePulls (default true) and maxParallelImagePulls (parallel pulls only; default no limit). */
  pulls?: { serialize: boolean; maxParallel?: number };
  /** The runtime's content store, where a pull's progress is read (asked at the first pull, until it answers). */
  contentStore?: () => Promise<ContentStoreReader | undefined>;
  /** How often a pull's progress is read, and from when (and how often) it is logged. */
  progressPollMs?: number;
  progressLogMs?: number;
}

/** What a pull gave: the runtime's image reference and the image's status (undefined when it could not be read). */
interface PulledImage {
  imageRef: string;
  image: Image | undefined;
}

export class ImageManager {
  /** The last pull failure per back-off key, which the back-off's message repeats (kubelet's prevPullErrMsg). */
  private readonly pullErrors = new Map<string, string>();

  private readonly images: ImageService;
  private readonly pullBackoff: Backoff;
  private readonly now: () => number;
  private readonly events: EventRecorder;

  private readonly puller: ImagePuller<PulledImage>;
  /** The content store's watcher, once the runtime answered where its store is (undefined in the promise: it names none). */
  private progressWatcher?: Promise<PullProgressWatcher | undefined>;
  /** The pull each pod waits for (by pod UID): its image, and its progress once it runs. */
  private readonly waiting = new Map<string, { image: string; key: string }>();
  private readonly progressByKey = new Map<string, PullProgress>();

  constructor(private readonly options: ImageManagerOptions) {
    ({ images: this.images, pullBackoff: this.pullBackoff, now: this.now, events: this.events } = options);
    this.puller = new ImagePuller({ ...(options.pulls ?? { serialize: true }), now: options.now });
  }

  /**
   * The logins to try for the image, as kubelet's keyring union: the pod's imagePullSecrets first, then the node's
   * docker config. A secret that cannot be read is logged and skipped (the pull may still succeed), one that holds no
   * docker config fails the pull naming it.
   */
  private async pullCredentials(pod: V1Pod, image: string, log: Logger, signal?: AbortSignal): Promise<AuthConfig[]> {
    const refs = pod.spec?.imagePullSecrets ?? [];
    const secrets = [];
    const { objects, nodeCredentials } = this.options;
    const namespace = pod.metadata?.namespace ?? 'default';
    for (const { name } of refs) {
      if (!name || !objects) continue;
      try {
        secrets.push(await objects.getSecret(namespace, name, signal));
      } catch (err) {
        log.warn({ secret: `${namespace}/${name}`, err: (err as Error).message }, 'Unable to retrieve pull secret, the image pull may not succeed.');
      }
    }
    const keyrings = [keyringFromSecrets(secrets), ...(nodeCredentials ? [await nodeCredentials.keyring()] : [])];
    return keyrings.flatMap((keyring) => lookupCredentials(keyring, image)).map(({ username, password }) => ({ username, password }));
  }

  /**
   * kubelet's pull: anonymous without matching credentials, else each login in turn until one works (errors
   * aggregated); then the image's status (kubelet's best-effort GetImageSize, inside the pull's time as there).
   */
  private async pullWithLogins(image: string, logins: AuthConfig[], sandboxConfig: PodSandboxConfig, signal: AbortSignal): Promise<PulledImage> {
    const errors: string[] = [];
    for (const auth of logins.length === 0 ? [undefined] : logins) {
      try {
        const imageRef = await this.images.pullImage(image, sandboxConfig, { signal }, auth);
        return { imageRef, image: await this.images.imageStatus(imageRef, { signal }).catch(() => undefined) };
      } catch (err) {
        if (logins.length === 0) throw err;
        errors.push(err instanceof Error ? err.message : String(err));
      }
    }
    throw new Error(aggregateMessage(errors));
  }

  /**
   * Runs a pull while reading its progress from the runtime's content store: every progressPollMs, logged once the pull
   * has taken progressLogMs and every progressLogMs after.
   */
  private async withProgress<T>(key: string, image: string, log: Logger, run: () => Promise<T>): Promise<T> {
    const watcher = await this.contentWatcher();
    const tracked = await watcher?.begin().catch(() => undefined);
    this.progressByKey.set(key, { downloadedBytes: 0 });
    const started = this.now();
    const logEvery = this.options.progressLogMs ?? 5_000;
    let nextLog = started + logEvery;
    let polling = false;
    const timer = tracked
      ? setInterval(() => {
          if (polling) return;
          polling = true;
          void tracked
            .poll()
            .then((progress) => {
              this.progressByKey.set(key, progress);
              if (this.now() < nextLog) return;
              nextLog += logEvery;
              log.info({ image, downloadedBytes: progress.downloadedBytes, totalBytes: progress.totalBytes }, `Pulling image "${image}": ${describeProgress(progress)}`);
            }, () => undefined)
            .finally(() => (polling = false));
        }, this.options.progressPollMs ?? 1_000)
      : undefined;
    timer?.unref();
    try {
      return await run();
    } finally {
      clearInterval(timer);
      this.progressByKey.delete(key);
    }
  }

  /** The content store's watcher, asked of the runtime once: a runtime that names no store is not asked again per pull. */
  private async contentWatcher(): Promise<PullProgressWatcher | undefined> {
    if (!this.progressWatcher && this.options.contentStore) {
      this.progressWatcher = this.options.contentStore().then(
        (store) => (store ? new PullProgressWatcher(store) : undefined),
        (err: unknown) => {
          this.progressWatcher = undefined; // the call failed: asked again at the next pull
          throw err;
        },
      );
    }
    return this.progressWatcher?.catch(() => undefined);
  }

  /**
   * The pull a pod waits for, as `nodelet pods -o wide` shows it: "<image> queued" before its turn, then the bytes
   * fetched of the bytes to fetch; undefined when the pod waits for no pull.
   */
  pullStatus(podUid: string): string | undefined {
    const wait = this.waiting.get(podUid);
    if (!wait) return undefined;
    const progress = this.progressByKey.get(wait.key);
    return `${wait.image} ${progress ? describeProgress(progress) : 'queued'}`;
  }

  /** Returns the image to run, or throws a SyncError with kubelet's reason. */
  ensureImage(pod: V1Pod, container: V1Container, sandboxConfig: PodSandboxConfig, log: Logger, signal?: AbortSignal): Promise<EnsuredImage> {
    return this.ensure(pod, container.image ?? '', effectivePullPolicy(container), { pod, containerName: container.name }, sandboxConfig, log, signal);
  }

  /**
   * Makes an image volume's image present per its pullPolicy (kubelet's getImageVolumes): the same pull, back-off and
   * events as a container's image, the events about the pod. Returns the runtime's image reference (the image's ID).
   */
  async ensureVolumeImage(pod: V1Pod, volume: V1Volume, sandboxConfig: PodSandboxConfig, log: Logger, signal?: AbortSignal): Promise<string> {
    const reference = volume.image?.reference ?? '';
    const policy = volume.image?.pullPolicy || defaultImagePullPolicy(reference);
    return (await this.ensure(pod, reference, policy, { pod }, sandboxConfig, log.child({ volume: volume.name }), signal)).ref;
  }

  /** kubelet's EnsureImageExists: the image present per `policy`, the events recorded about `ref`. */
  private async ensure(pod: V1Pod, image: string, policy: string, ref: PodEventRef, sandboxConfig: PodSandboxConfig, log: Logger, signal?: AbortSignal): Promise<EnsuredImage> {
    // kubelet's applyDefaultImageTag; only an image volume's reference can fail it (validation checks container images).
    const nameError = imageNameError(image);
    if (nameError !== undefined) {
      const message = `Failed to apply default image tag "${image}": couldn't parse image name "${image}": ${nameError}`;
      this.events.event(ref, 'Warning', 'InspectFailed', message);
      throw new SyncError('InvalidImageName', message);
    }
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
    this.options.latency?.startedPulling(podUid, started);
    let pulled: PulledImage;
    let pullDurationMs: number;
    try {
      const logins = await this.pullCredentials(pod, image, log, signal);
      // Pods pulling the same image with the same logins share one pull (the sandbox config only names the pod).
      const pullKey = JSON.stringify([image, logins]);
      this.waiting.set(podUid, { image, key: pullKey });
      try {
        ({ value: pulled, pullDurationMs } = await this.puller.pull(
          pullKey,
          (s) => this.withProgress(pullKey, image, log, () => this.pullWithLogins(image, logins, sandboxConfig, s)),
          signal,
        ));
      } finally {
        this.waiting.delete(podUid);
      }
      this.options.latency?.finishedPulling(podUid, this.now());
      this.pullErrors.delete(key);
      log.info({ image, imageRef: pulled.imageRef, durationMs: this.now() - started }, `Successfully pulled image "${image}"`);
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
    // The pull's own time, and this pod's from asking (a turn in the queue, or joining a pull under way, included); a pod
    // that joined a pull under way waited less than the whole pull, and kubelet's first figure never exceeds the second.
    const waitedMs = this.now() - started;
    const message = `Successfully pulled image "${image}" in ${formatGoDuration(Math.min(pullDurationMs, waitedMs))} (${formatGoDuration(waitedMs)} including waiting). Image size: ${pulled.image?.size ?? 0} bytes.`;
    this.events.event(ref, 'Normal', 'Pulled', message);
    return { ref: pulled.imageRef, user: imageUser(pulled.image) };
  }
}
