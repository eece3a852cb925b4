// kubelet's image garbage collection (realImageGCManager and the kubelet's loop around it): every period, the images
// the runtime lists are recorded (first detected, last used by any container or as an image volume mounted in one,
// size); images unused for longer than imageMaximumGCAge are removed; when the image filesystem is at
// imageGCHighThresholdPercent or more, unused images are removed least recently used first down to
// imageGCLowThresholdPercent, none detected less than imageMinimumGCAge ago, none in use, none pinned, never the sandbox
// image. Not enough to remove is a FreeDiskSpaceFailed event, and twice in a row an ImageGCFailed event, as kubelet.
import type { Clock } from '../core/clock.js';
import type { EventRecorder } from '../core/events.js';
import type { Logger } from '../core/log.js';
import type { ImageService, RuntimeService, StatsService } from '../cri/types.js';
import { aggregateMessage } from '../core/sync-result.js';
import { isNotFound } from '../cri/errors.js';
import {
  bytesToFree,
  detectImages,
  evictionOrder,
  removableForSpace,
  tooLongUnused,
  type EvictionCandidate,
  type ImageGCPolicy,
  type ImageRecord,
} from '../decisions/image-gc.js';

/** kubelet's ImageGCPeriod. */
export const defaultImageGCPeriodMs = 5 * 60_000;

export interface ImageGCDeps {
  runtime: Pick<ImageService, 'listImages' | 'removeImage' | 'imageStatus'> & Pick<RuntimeService, 'listContainers' | 'containerStatus'> & Pick<StatsService, 'imageFsInfo'>;
  /** The size and free space of the filesystem holding a path (statfs). */
  filesystem: (path: string) => Promise<{ capacityBytes: number; availableBytes: number } | undefined>;
  /** The runtime's sandbox image, never removed (containerd 1.6 does not pin it in CRI). */
  sandboxImage: () => Promise<string | undefined>;
  events: Pick<EventRecorder, 'nodeEvent'>;
  clock: Pick<Clock, 'now' | 'sleep'>;
  log: Logger;
  policy: ImageGCPolicy;
  periodMs?: number;
}

export class ImageGCError extends Error {}

export class ImageGCManager {
  private records = new Map<string, ImageRecord>();
  private readonly began: number;

  constructor(private readonly deps: ImageGCDeps) {
    this.began = deps.clock.now();
  }

  /** kubelet turns image GC off when the high threshold is 100% and imageMaximumGCAge is off. */
  get enabled(): boolean {
    return this.deps.policy.highThresholdPercent < 100 || this.deps.policy.maxAgeMs > 0;
  }

  /** Runs garbage collection now and then every period until `signal` aborts, logging and recording failures as kubelet. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, log, events } = this.deps;
    if (!this.enabled) {
      log.info('ImageGCHighThresholdPercent is set 100 and ImageMaximumGCAge is 0, Disable image GC');
      return;
    }
    let previousFailed = false;
    while (!signal.aborted) {
      try {
        await this.garbageCollect(signal);
        if (previousFailed) log.info('Image garbage collection succeeded');
        previousFailed = false;
      } catch (err) {
        if (signal.aborted) return;
        const message = (err as Error).message;
        if (previousFailed) {
          log.error({ err: message }, 'Image garbage collection failed multiple times in a row');
          events.nodeEvent('Warning', 'ImageGCFailed', message);
        } else {
          log.error({ err: message }, 'Image garbage collection failed once. Stats initialization may not have completed yet');
        }
        previousFailed = true;
      }
      await clock.sleep(this.deps.periodMs ?? defaultImageGCPeriodMs, signal).catch(() => undefined);
    }
  }

  /**
   * The images in use by any container the runtime has, running or not: its own image and, as kubelet's handleImageVolumes,
   * the images its status shows mounted as image volumes; with the records brought up to date.
   */
  private async detect(now: number, signal?: AbortSignal): Promise<Set<string>> {
    const { runtime } = this.deps;
    const [images, containers, sandboxImage] = await Promise.all([runtime.listImages({ signal }), runtime.listContainers(undefined, { signal }), this.deps.sandboxImage()]);
    const inUse = new Set(containers.map((c) => c.imageRef));
    for (const c of containers) {
      // A container removed since the list mounts nothing any more; any other failure fails this collection, as kubelet's.
      const status = await runtime.containerStatus(c.id, false, { signal }).catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
      for (const m of status?.mounts ?? []) if (m.image?.image) inUse.add(m.image.image);
    }
    const sandbox = sandboxImage ? await runtime.imageStatus(sandboxImage, { signal }).catch(() => undefined) : undefined;
    this.records = detectImages(this.records, images.map((i) => ({ id: i.id, size: i.size, pinned: i.pinned === true || i.id === sandbox?.id })), inUse, now);
    return inUse;
  }

  private async remove(image: EvictionCandidate, signal?: AbortSignal): Promise<void> {
    this.deps.log.info({ imageID: image.id, size: image.size }, 'Removing image to free bytes');
    await this.deps.runtime.removeImage(image.id, { signal });
    this.records.delete(image.id);
  }

  /** One collection (kubelet's GarbageCollect); throws with kubelet's message when it cannot do what it must. */
  async garbageCollect(signal?: AbortSignal): Promise<void> {
    const { policy, log, events } = this.deps;
    const now = this.deps.clock.now();
    // Detected first: the candidates come from the records detect brings up to date.
    const inUse = await this.detect(now, signal);
    let candidates = evictionOrder(this.records, inUse);
    const old = tooLongUnused(candidates, now, this.began, policy.maxAgeMs);
    const oldErrors: string[] = [];
    for (const image of old) {
      try {
        await this.remove(image, signal);
        candidates = candidates.filter((c) => c !== image);
      } catch (err) {
        oldErrors.push((err as Error).message);
      }
    }
    if (oldErrors.length > 0) throw new ImageGCError(`wanted to free images older than ${policy.maxAgeMs / 1000}s, encountered errors in image deletion: ${aggregateMessage(oldErrors)}`);

    const fs = (await this.deps.runtime.imageFsInfo({ signal })).imageFilesystems[0];
    const usage = fs ? await this.deps.filesystem(fs.mountpoint) : undefined;
    if (!usage) throw new ImageGCError('failed to get image filesystem stats');
    if (usage.capacityBytes === 0) {
      const message = 'invalid capacity 0 on image filesystem';
      events.nodeEvent('Warning', 'InvalidDiskCapacity', message);
      throw new ImageGCError(message);
    }
    const { usagePercent, amount } = bytesToFree(usage.capacityBytes, usage.availableBytes, policy);
    if (usagePercent < policy.highThresholdPercent) return;
    log.info(
      { usage: usagePercent, highThreshold: policy.highThresholdPercent, amountToFree: amount, lowThreshold: policy.lowThresholdPercent },
      'Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold',
    );
    let freed = 0;
    const errors: string[] = [];
    for (const image of removableForSpace(candidates, now, policy.minAgeMs)) {
      try {
        await this.remove(image, signal);
      } catch (err) {
        errors.push((err as Error).message);
        continue;
      }
      freed += image.size;
      if (freed >= amount) break;
    }
    if (errors.length > 0) throw new ImageGCError(`wanted to free ${amount} bytes, but freed ${freed} bytes space with errors in image deletion: ${aggregateMessage(errors)}`);
    if (freed < amount) {
      const message = `Failed to garbage collect required amount of images. Attempted to free ${amount} bytes, but only found ${freed} bytes eligible to free.`;
      events.nodeEvent('Warning', 'FreeDiskSpaceFailed', message);
      throw new ImageGCError(message);
    }
  }
}
