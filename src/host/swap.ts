// Whether the host has swap on, as kubelet reads it for failSwapOn (pkg/kubelet/util/swap).
import { readFile } from 'node:fs/promises';

/** kubelet's isSwapOnAccordingToProcSwaps: /proc/swaps lists a swap device or file below its header line. */
export function isSwapOnAccordingToProcSwaps(procSwaps: string): boolean {
  return procSwaps.trim().split('\n').length > 1;
}

/** Swap is on; a host without /proc/swaps has none, as kubelet assumes. */
export async function isSwapOn(path = '/proc/swaps'): Promise<boolean> {
  try {
    return isSwapOnAccordingToProcSwaps(await readFile(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
