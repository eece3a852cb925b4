// Requests and limits to CRI container resources and pod cgroup settings, as kubelet converts them.
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import {
  containerResources,
  milliCPUToQuota,
  milliCPUToShares,
  podCgroupParent,
  podCgroupResources,
} from '../../../src/execution/resources.js';
import { SyncError } from '../../../src/core/sync-result.js';

const gi = 1024n ** 3n;

function container(name: string, resources: V1ResourceRequirements = {}, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: 'img', resources, ...extra };
}

function pod(containers: V1Container[], initContainers: V1Container[] = []): V1Pod {
  return { metadata: { name: 'web', namespace: 'default', uid: 'u1' }, spec: { containers, initContainers } };
}

describe('milliCPUToShares / milliCPUToQuota', () => {
  test.each([
    [0, 2],
    [1, 2],
    [2, 2],
    [10, 10],
    [100, 102],
    [250, 256],
    [500, 512],
    [1000, 1024],
    [1500, 1536],
    [256000, 262144],
    [1_000_000, 262144],
  ])('%p milliCPU -> %p shares', (milli, shares) => {
    expect(milliCPUToShares(milli)).toBe(shares);
  });

  test.each([
    [0, 0],
    [1, 1000],
    [5, 1000],
    [10, 1000],
    [100, 10_000],
    [250, 25_000],
    [1000, 100_000],
    [2500, 250_000],
  ])('%p milliCPU -> quota %p at a 100 ms period', (milli, quota) => {
    expect(milliCPUToQuota(milli)).toBe(quota);
  });
});

describe('containerResources', () => {
  test('requests give shares, limits give quota and memory; the QoS class gives the OOM score', () => {
    const c = container('a', { requests: { cpu: '250m', memory: '1Gi' }, limits: { cpu: '500m', memory: '2Gi' } });
    expect(containerResources(pod([c]), c, 10n * gi)).toEqual({
      cpuShares: 256,
      cpuPeriod: 100_000,
      cpuQuota: 50_000,
      memoryLimitInBytes: 2 * 1024 ** 3,
      oomScoreAdj: 900,
    });
  });

  test('a cpu limit alone sets the shares too', () => {
    const c = container('a', { limits: { cpu: '1500m' } });
    expect(containerResources(pod([c]), c, 10n * gi)).toMatchObject({ cpuShares: 1536, cpuQuota: 150_000 });
  });

  test('no resources: minimum shares, no quota, no memory limit, OOM score 1000', () => {
    const c = container('a');
    expect(containerResources(pod([c]), c, 10n * gi)).toEqual({ cpuShares: 2, cpuPeriod: 100_000, cpuQuota: 0, oomScoreAdj: 1000 });
  });

  test('Guaranteed: equal requests and limits, OOM score -997', () => {
    const c = container('a', { requests: { cpu: '1', memory: '20Mi' }, limits: { cpu: '1', memory: '20Mi' } });
    expect(containerResources(pod([c]), c, 10n * gi)).toEqual({
      cpuShares: 1024,
      cpuPeriod: 100_000,
      cpuQuota: 100_000,
      memoryLimitInBytes: 20 * 1024 * 1024,
      oomScoreAdj: -997,
    });
  });

  test('an invalid quantity is a CreateContainerConfigError naming pod, container and field', () => {
    const c = container('app', { limits: { memory: '20Mx' } });
    let error: unknown;
    try {
      containerResources(pod([c]), c, 10n * gi);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SyncError);
    expect((error as SyncError).code).toBe('CreateContainerConfigError');
    expect((error as SyncError).message).toContain('resources.limits.memory "20Mx" of container app in pod default/web');
  });
});

describe('pod cgroups', () => {
  const guaranteed = container('a', { requests: { cpu: '500m', memory: '64Mi' }, limits: { cpu: '500m', memory: '64Mi' } });

  test('cgroup parent per QoS class (cgroupfs driver)', () => {
    expect(podCgroupParent(pod([guaranteed]))).toBe('/kubepods/podu1');
    expect(podCgroupParent(pod([container('a', { requests: { cpu: '100m' } })]))).toBe('/kubepods/burstable/podu1');
    expect(podCgroupParent(pod([container('a')]))).toBe('/kubepods/besteffort/podu1');
  });

  test("under kubelet's cgroupRoot (kind's /kubelet)", () => {
    expect(podCgroupParent(pod([guaranteed]), '/kubelet')).toBe('/kubelet/kubepods/podu1');
    expect(podCgroupParent(pod([container('a')]), '/kubelet/')).toBe('/kubelet/kubepods/besteffort/podu1');
    expect(podCgroupParent(pod([container('a')]), '/')).toBe('/kubepods/besteffort/podu1');
  });

  test('Guaranteed pods get summed shares, quota and memory limit', () => {
    const second = container('b', { requests: { cpu: '1', memory: '64Mi' }, limits: { cpu: '1', memory: '64Mi' } });
    expect(podCgroupResources(pod([guaranteed, second]))).toEqual({
      cpuShares: 1536,
      cpuQuota: 150_000,
      cpuPeriod: 100_000,
      memoryLimitInBytes: 128 * 1024 * 1024,
    });
  });

  test('Burstable pods get limits only where every container declares them', () => {
    const limitedMemory = container('a', { requests: { cpu: '100m', memory: '32Mi' }, limits: { memory: '64Mi' } });
    const alsoLimitedMemory = container('b', { requests: { memory: '16Mi' }, limits: { memory: '16Mi' } });
    expect(podCgroupResources(pod([limitedMemory, alsoLimitedMemory]))).toEqual({ cpuShares: 102, memoryLimitInBytes: 80 * 1024 * 1024 });
    const unlimited = container('c', { requests: { cpu: '100m' } });
    expect(podCgroupResources(pod([limitedMemory, unlimited]))).toEqual({ cpuShares: 204 });
  });

  test('BestEffort pods get the minimum shares only', () => {
    expect(podCgroupResources(pod([container('a')]))).toEqual({ cpuShares: 2 });
  });

  test("every pod gets the node's podPidsLimit when it is positive (kubelet's pod container manager)", () => {
    expect(podCgroupResources(pod([container('a')]), 1024)).toEqual({ cpuShares: 2, pidsLimit: 1024 });
    expect(podCgroupResources(pod([guaranteed]), 64).pidsLimit).toBe(64);
    expect(podCgroupResources(pod([guaranteed]), -1)).not.toHaveProperty('pidsLimit');
    expect(podCgroupResources(pod([guaranteed]), 0)).not.toHaveProperty('pidsLimit');
  });

  test('an init container larger than the regular containers sets the pod request; sidecars add up', () => {
    const app = container('app', { requests: { cpu: '100m' } });
    const bigInit = container('init', { requests: { cpu: '1' } });
    expect(podCgroupResources(pod([app], [bigInit])).cpuShares).toBe(1024);
    const sidecar = container('side', { requests: { cpu: '200m' } }, { restartPolicy: 'Always' });
    // Regular + sidecar = 300m; the init container after the sidecar runs with it: 1200m.
    expect(podCgroupResources(pod([app], [sidecar, bigInit])).cpuShares).toBe(milliCPUToShares(1200));
    expect(podCgroupResources(pod([app], [sidecar])).cpuShares).toBe(milliCPUToShares(300));
  });
});
