// QoS class and OOM score adjustment tables, as kubelet's GetPodQOS and GetContainerOOMScoreAdjust compute them.
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { containerOOMScoreAdjust, podQOSClass, type PodQOSClass } from '../../../src/decisions/qos.js';

function container(name: string, resources: V1ResourceRequirements = {}, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: 'img', resources, ...extra };
}

function pod(containers: V1Container[], initContainers: V1Container[] = [], extra: Partial<V1Pod['spec']> = {}, annotations: Record<string, string> = {}): V1Pod {
  return { metadata: { name: 'p', namespace: 'default', uid: 'u1', annotations }, spec: { containers, initContainers, ...extra } };
}

const both = (cpu: string, memory: string) => ({ cpu, memory });

describe('podQOSClass', () => {
  const cases: Array<[string, V1Pod, PodQOSClass]> = [
    ['no resources', pod([container('a'), container('b')]), 'BestEffort'],
    ['only non-QoS resources', pod([container('a', { limits: { 'ephemeral-storage': '1Gi' }, requests: { 'ephemeral-storage': '1Gi' } })]), 'BestEffort'],
    ['zero requests count as none', pod([container('a', { requests: both('0', '0') })]), 'BestEffort'],
    ['requests equal limits for cpu and memory', pod([container('a', { requests: both('1', '1Gi'), limits: both('1', '1Gi') })]), 'Guaranteed'],
    ['equal in another notation', pod([container('a', { requests: both('1000m', '1024Mi'), limits: both('1', '1Gi') })]), 'Guaranteed'],
    ['limits only (requests are defaulted by the decoder, not here)', pod([container('a', { limits: both('1', '1Gi') })]), 'Burstable'],
    ['only a cpu limit', pod([container('a', { requests: { cpu: '1' }, limits: { cpu: '1' } })]), 'Burstable'],
    ['request below limit', pod([container('a', { requests: both('500m', '1Gi'), limits: both('1', '1Gi') })]), 'Burstable'],
    ['one guaranteed, one best effort container', pod([container('a', { requests: both('1', '1Gi'), limits: both('1', '1Gi') }), container('b')]), 'Burstable'],
    [
      'init container without limits breaks Guaranteed',
      pod([container('a', { requests: both('1', '1Gi'), limits: both('1', '1Gi') })], [container('init')]),
      'Burstable',
    ],
    [
      'init container with equal limits keeps Guaranteed',
      pod([container('a', { requests: both('1', '1Gi'), limits: both('1', '1Gi') })], [container('init', { requests: both('1', '1Gi'), limits: both('1', '1Gi') })]),
      'Guaranteed',
    ],
    ['only a memory request', pod([container('a', { requests: { memory: '64Mi' } })]), 'Burstable'],
    ['an invalid quantity counts as unset', pod([container('a', { requests: { memory: '64Kb' } })]), 'BestEffort'],
  ];
  test.each(cases)('%s', (_name, p, expected) => {
    expect(podQOSClass(p)).toBe(expected);
  });
});

describe('containerOOMScoreAdjust', () => {
  const gi = 1024n ** 3n;
  const capacity = 10n * gi;
  const burstable = (memory: string) => container('a', { requests: { memory }, limits: { memory: '20Gi' } });

  test('Guaranteed -997, BestEffort 1000', () => {
    expect(containerOOMScoreAdjust(pod([container('a', { requests: both('1', '1Gi'), limits: both('1', '1Gi') })]), container('a'), capacity)).toBe(-997);
    expect(containerOOMScoreAdjust(pod([container('a')]), container('a'), capacity)).toBe(1000);
  });

  test('node-critical static pods get -997 whatever their class', () => {
    const p = pod([container('a')], [], { priorityClassName: 'system-node-critical' }, { 'kubernetes.io/config.source': 'file' });
    expect(containerOOMScoreAdjust(p, container('a'), capacity)).toBe(-997);
    // Not critical without being static/mirror or of critical priority.
    const api = pod([container('a')], [], { priorityClassName: 'system-node-critical' }, { 'kubernetes.io/config.source': 'api' });
    expect(containerOOMScoreAdjust(api, container('a'), capacity)).toBe(1000);
  });

  const burstableCases: Array<[request: string, expected: number]> = [
    ['1Gi', 900], // 10% of memory
    ['5Gi', 500],
    ['10Gi', 3], // 1000 - 1000 = 0, raised to 3
    ['9.99Gi', 3],
    ['1Mi', 999], // 1000 - 0 = 1000 would equal BestEffort: 999
    ['0', 999],
    ['2560Mi', 750],
  ];
  test.each(burstableCases)('Burstable with memory request %s -> %p', (request, expected) => {
    const c = burstable(request);
    expect(containerOOMScoreAdjust(pod([c]), c, capacity)).toBe(expected);
  });

  test('a Burstable container without a memory request gets 999', () => {
    const c = container('a', { requests: { cpu: '100m' } });
    expect(containerOOMScoreAdjust(pod([c]), c, capacity)).toBe(999);
  });

  test('a sidecar is scored from the smallest of its own and the regular requests, one higher when not above', () => {
    const regular = burstable('2Gi');
    const sidecar = container('side', { requests: { memory: '1Gi' } }, { restartPolicy: 'Always' });
    const p = pod([regular], [sidecar]);
    expect(containerOOMScoreAdjust(p, regular, capacity)).toBe(800);
    // min(1Gi, 2Gi) = 1Gi -> 900, and 1Gi <= its own request -> 901.
    expect(containerOOMScoreAdjust(p, sidecar, capacity)).toBe(901);
    const bigSidecar = container('side', { requests: { memory: '4Gi' } }, { restartPolicy: 'Always' });
    // min(4Gi, 2Gi) = 2Gi -> 800, and 2Gi <= 4Gi -> 801.
    expect(containerOOMScoreAdjust(pod([regular], [bigSidecar]), bigSidecar, capacity)).toBe(801);
  });
});
