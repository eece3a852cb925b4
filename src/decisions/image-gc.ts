// kubelet's image garbage collection (pkg/kubelet/images/image_gc_manager.go) as pure functions: the image records it
// keeps (first detected, last used, size), the order images are removed in (least recently used first, then first
// detected; never one in use or pinned), how many bytes to free when the image filesystem passes the high threshold,
// and which images are too young (imageMinimumGCAge) or too long unused (imageMaximumGCAge).

/** What kubelet remembers of an image: when it was first seen, when a container last used it, its size. */
export interface ImageRecord {
  firstDetectedMs: number;
  /** undefined: never seen in use since nodelet started (kubelet's zero time). */
  lastUsedMs?: number;
  size: number;
  /** Never removed: pinned by the runtime, or the sandbox image. */
  pinned: boolean;
}

export interface ImageGCPolicy {
  highThresholdPercent: number;
  lowThresholdPercent: number;
  /** An image detected less than this ago is not removed to free space. */
  minAgeMs: number;
  /** An image unused for longer is removed whatever the disk; 0: off. */
  maxAgeMs: number;
}

/** An image the runtime lists: its ID, size and whether it is pinned. */
export interface ListedImage {
  id: string;
  size: number;
  pinned: boolean;
}

/**
 * kubelet's detectImages: new images are first detected now, images in use were last used now, sizes and pins as the
 * runtime lists them, and images no longer listed are forgotten. Returns the new records.
 */
export function detectImages(records: ReadonlyMap<string, ImageRecord>, images: ListedImage[], inUse: ReadonlySet<string>, now: number): Map<string, ImageRecord> {
  const next = new Map<string, ImageRecord>();
  for (const image of images) {
    const before = records.get(image.id);
    next.set(image.id, {
      firstDetectedMs: before?.firstDetectedMs ?? now,
      ...(inUse.has(image.id) ? { lastUsedMs: now } : before?.lastUsedMs !== undefined ? { lastUsedMs: before.lastUsedMs } : {}),
      size: image.size,
      pinned: image.pinned,
    });
  }
  return next;
}

/** An image that may be removed, with its record. */
export interface EvictionCandidate extends ImageRecord {
  id: string;
}

/** kubelet's imagesInEvictionOrder: images neither in use nor pinned, least recently used first, then first detected. */
export function evictionOrder(records: ReadonlyMap<string, ImageRecord>, inUse: ReadonlySet<string>): EvictionCandidate[] {
  return [...records]
    .filter(([id, r]) => !inUse.has(id) && !r.pinned)
    .map(([id, r]) => ({ id, ...r }))
    .sort((a, b) => (a.lastUsedMs ?? 0) - (b.lastUsedMs ?? 0) || a.firstDetectedMs - b.firstDetectedMs);
}

/**
 * The bytes to free on the image filesystem: none below the high threshold, else down to the low one (kubelet's integer
 * percent arithmetic). Available above capacity counts as capacity, as kubelet's.
 */
export function bytesToFree(capacity: number, available: number, policy: Pick<ImageGCPolicy, 'highThresholdPercent' | 'lowThresholdPercent'>): { usagePercent: number; amount: number } {
  const avail = Math.min(available, capacity);
  const usagePercent = 100 - Math.floor((avail * 100) / capacity);
  if (usagePercent < policy.highThresholdPercent) return { usagePercent, amount: 0 };
  return { usagePercent, amount: Math.floor((capacity * (100 - policy.lowThresholdPercent)) / 100) - avail };
}

/**
 * kubelet's freeOldImages: with imageMaximumGCAge, once it has passed since garbage collection began, the candidates
 * unused for longer than it (never used counts from the epoch, as kubelet's zero time).
 */
export function tooLongUnused(candidates: EvictionCandidate[], now: number, gcBeganMs: number, maxAgeMs: number): EvictionCandidate[] {
  if (maxAgeMs === 0 || now - gcBeganMs <= maxAgeMs) return [];
  return candidates.filter((c) => now - (c.lastUsedMs ?? 0) > maxAgeMs);
}

/** kubelet's freeSpace filter: candidates not used at `now` and detected at least imageMinimumGCAge ago, in order. */
export function removableForSpace(candidates: EvictionCandidate[], now: number, minAgeMs: number): EvictionCandidate[] {
  return candidates.filter((c) => (c.lastUsedMs ?? 0) < now && now - c.firstDetectedMs >= minAgeMs);
}
