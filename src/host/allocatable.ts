// The node's allocatable resources as kubelet computes them with no reservations: capacity minus the default hard eviction thresholds.
import { cpus, totalmem } from 'node:os';
import { statfs } from 'node:fs/promises';
import { Quantity } from '../core/quantity.js';

export interface NodeAllocatable {
  cpu: Quantity;
  memory: Quantity;
  ephemeralStorage: Quantity;
}

/** kubelet's default evictionHard: memory.available<100Mi, nodefs.available<10%. */
const memoryEvictionBytes = 100n * 1024n * 1024n;
const nodefsEvictionPercent = 10n;

const whole = (n: bigint, format: 'DecimalSI' | 'BinarySI') => Quantity.fromNanos((n > 0n ? n : 0n) * 1_000_000_000n, format);

/**
 * Allocatable = capacity - evictionHard: every CPU, MemTotal less 100Mi, and 90% of the filesystem holding the
 * agent's root dir as ephemeral storage (cAdvisor's root filesystem of kubelet).
 */
export async function nodeAllocatable(rootDir: string): Promise<NodeAllocatable> {
  const fs = await statfs(rootDir, { bigint: true });
  const storage = fs.blocks * fs.bsize;
  return {
    cpu: whole(BigInt(cpus().length), 'DecimalSI'),
    memory: whole(BigInt(totalmem()) - memoryEvictionBytes, 'BinarySI'),
    ephemeralStorage: whole(storage - (storage * nodefsEvictionPercent) / 100n, 'BinarySI'),
  };
}
