// Makes a container's image present per its imagePullPolicy, with kubelet's pull back-off and reasons.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Image, ImageService, PodSandboxConfig } from '../cri/types.js';
import type { Logger } from '../log.js';
import { defaultImagePullPolicy } from '../podsource/image-reference.js';
import type { Backoff } from './backoff.js';
import type { ImageUser } from './security-context.js';
import { SyncError } from './sync-result.js';

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

export class ImageManager {
  constructor(
    private readonly images: ImageService,
    private readonly pullBackoff: Backoff,
    private readonly now: () => number,
  ) {}

  /** Returns the image to run, or throws a SyncError with kubelet's reason. */
  async ensureImage(pod: V1Pod, container: V1Container, sandboxConfig: PodSandboxConfig, log: Logger, signal?: AbortSignal): Promise<EnsuredImage> {
    const image = container.image ?? '';
    const policy = effectivePullPolicy(container);
    if (policy !== 'Always') {
      const present = await this.images.imageStatus(image, { signal });
      if (present) return { ref: present.id, user: imageUser(present) };
      if (policy === 'Never') {
        throw new SyncError('ErrImageNeverPull', `Container image "${image}" is not present with pull policy of Never`);
      }
    }
    const key = `${pod.metadata?.uid}/${image}`;
    const now = this.now();
    if (this.pullBackoff.isInBackoffSinceUpdate(key, now)) {
      throw new SyncError('ImagePullBackOff', `Back-off pulling image "${image}"`);
    }
    log.info({ image }, `Pulling image "${image}"`);
    const started = this.now();
    let ref: string;
    try {
      ref = await this.images.pullImage(image, sandboxConfig, { signal });
      log.info({ image, imageRef: ref, durationMs: this.now() - started }, `Successfully pulled image "${image}"`);
    } catch (err) {
      this.pullBackoff.next(key, now);
      const message = err instanceof Error ? err.message : String(err);
      log.warn({ image, err: message }, `Failed to pull image "${image}"`);
      throw new SyncError('ErrImagePull', message, { cause: err });
    }
    return { ref, user: imageUser(await this.images.imageStatus(ref, { signal })) };
  }
}
