// emptyDir sizing and set-up: tmpfs size as kubelet computes it, and the disk directory with its ready marker.
import type { V1Pod } from '@kubernetes/client-node';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseQuantity } from '../../../src/core/quantity.js';
import { kernelSupportsTmpfsNoswap, memoryVolumeSize, podMemoryLimit, setUpEmptyDir, tmpfsOptions } from '../../../src/volume/empty-dir.js';

const mi = (n: number) => BigInt(n) * 1024n * 1024n;
const pod = (limits: (string | undefined)[], initLimits: (string | undefined)[] = []): V1Pod => ({
  spec: {
    containers: limits.map((memory, i) => ({ name: `c${i}`, resources: memory ? { limits: { memory } } : {} })),
    initContainers: initLimits.map((memory, i) => ({ name: `i${i}`, resources: memory ? { limits: { memory } } : {} })),
  },
});
const allocatable = parseQuantity('1Gi');

test('pod memory limit: the sum, the largest init container if bigger, none unless every container has one', () => {
  expect(podMemoryLimit(pod(['64Mi', '32Mi']))!.value()).toBe(mi(96));
  expect(podMemoryLimit(pod(['64Mi'], ['128Mi']))!.value()).toBe(mi(128));
  expect(podMemoryLimit(pod(['64Mi', undefined]))).toBeUndefined();
  expect(podMemoryLimit(pod(['64Mi'], [undefined]))).toBeUndefined();
});

test.each([
  ['node allocatable without limits', pod([undefined]), undefined, mi(1024)],
  ['the pod limit when smaller', pod(['64Mi', '32Mi']), undefined, mi(96)],
  ['sizeLimit when smaller still', pod(['64Mi']), '16Mi', mi(16)],
  ['sizeLimit alone', pod([undefined]), '16Mi', mi(16)],
  ['never more than allocatable', pod(['4Gi']), '2Gi', mi(1024)],
  ['a zero sizeLimit is ignored', pod([undefined]), '0', mi(1024)],
])('tmpfs size: %s', (_, p, sizeLimit, bytes) => {
  expect(memoryVolumeSize(p, sizeLimit, allocatable)).toBe(bytes);
});

test('tmpfs options and noswap from Linux 6.4', () => {
  expect(tmpfsOptions(mi(16), false)).toEqual(['size=16777216']);
  expect(tmpfsOptions(mi(16), true)).toEqual(['size=16777216', 'noswap']);
  expect(kernelSupportsTmpfsNoswap('6.4.0')).toBe(true);
  expect(kernelSupportsTmpfsNoswap('6.18.44-fc')).toBe(true);
  expect(kernelSupportsTmpfsNoswap('6.1.0-18-amd64')).toBe(false);
  expect(kernelSupportsTmpfsNoswap('5.15.0')).toBe(false);
});

describe('disk emptyDir set-up', () => {
  let root: string;
  const log = pino({ level: 'silent' });
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'nodelet-emptydir-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test('a 0777 directory and the ready marker; an unknown medium fails', async () => {
    const dir = join(root, 'volumes/kubernetes.io~empty-dir/cache');
    const metaDir = join(root, 'plugins/kubernetes.io~empty-dir/cache');
    await setUpEmptyDir({ dir, metaDir, medium: '', tmpfs: [], log });
    expect(((await stat(dir)).mode & 0o7777).toString(8)).toBe('777');
    expect(existsSync(join(metaDir, 'ready'))).toBe(true);
    await expect(setUpEmptyDir({ dir: join(root, 'x'), metaDir: join(root, 'mx'), medium: 'Tape', tmpfs: [], log })).rejects.toThrow('unknown storage medium "Tape"');
  });

  test('fsGroup: group owner and setgid + group rw on the directory, once', async () => {
    const dir = join(root, 'v');
    await setUpEmptyDir({ dir, metaDir: join(root, 'm'), medium: '', tmpfs: [], fsGroup: 4321, log });
    const s = await stat(dir);
    expect(s.gid).toBe(4321);
    expect((s.mode & 0o7777).toString(8)).toBe('2777');
  });
});
