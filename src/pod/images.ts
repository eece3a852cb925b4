// Makes a container's image present per its imagePullPolicy, with kubelet's pull back-off and reasons.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ImageService, PodSandboxConfig } from '../cri/types.js';
import type { Logger } from '../log.js';
import { defaultImagePullPolicy } from '../podsource/image-reference.js';
import type { Backoff } from './backoff.js';
import { SyncError } from './sync-result.js';

/** The container's pull policy, or kubelet's default from the image tag when unset. */
export function effectivePullPolicy(container: V1Container): string {
  return container.imagePullPolicy ?? defaultImagePullPolicy(container.image ?? '');
}

export class ImageManager {
  constructor(
    private readonly images: ImageService,
    private readonly pullBackoff: Backoff,
    private readonly now: () => number,
  ) {}

  /** Returns the image reference to run, or throws a SyncError with kubelet's reason. */
  async ensureImage(pod: V1Pod, container: V1Container, sandboxConfig: PodSandboxConfig, log: Logger, signal?: AbortSignal): Promise<string> {
    const image = container.image ?? '';
    const policy = effectivePullPolicy(container);
    if (policy !== 'Always') {
      const present = await this.images.imageStatus(image, { signal });
      if (present) return present.id;
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
    try {
      const ref = await this.images.pullImage(image, sandboxConfig, { signal });
      log.info({ image, imageRef: ref, durationMs: this.now() - started }, `Successfully pulled image "${image}"`);
      return ref;
    } catch (err) {
      this.pullBackoff.next(key, now);
      const message = err instanceof Error ? err.message : String(err);
      log.warn({ image, err: message }, `Failed to pull image "${image}"`);
      throw new SyncError('ErrImagePull', message, { cause: err });
    }
  }
}
