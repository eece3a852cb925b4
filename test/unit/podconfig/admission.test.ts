// Node-side admission (kubelet's canAdmitPod / GeneralPredicates): reasons and messages as kubelet reports them.
import type { V1Container, V1Node, V1Pod } from '@kubernetes/client-node';
import { admitPod, podRequests, rejectedStatus } from '../../../src/podconfig/admission.js';

const node: V1Node = {
  metadata: { name: 'n1', labels: { 'kubernetes.io/hostname': 'n1', 'kubernetes.io/os': 'linux', disk: 'ssd', gen: '5' } },
  spec: { taints: [{ key: 'dedicated', value: 'db', effect: 'NoExecute' }, { key: 'soft', effect: 'NoSchedule' }] },
  status: { allocatable: { cpu: '1900m', memory: '1Gi', 'ephemeral-storage': '10Gi', pods: '3' } },
};

const tolerateAll = [{ key: 'dedicated', operator: 'Exists' }];

function pod(name: string, containers: Partial<V1Container>[] = [{}], spec: Partial<NonNullable<V1Pod['spec']>> = {}, meta: Partial<NonNullable<V1Pod['metadata']>> = {}): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, ...meta },
    spec: { nodeName: 'n1', tolerations: tolerateAll, containers: containers.map((c, i) => ({ name: `c${i}`, image: 'busybox', ...c })), ...spec },
  };
}

const req = (cpu?: string, memory?: string, storage?: string) => ({
  resources: { requests: { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}), ...(storage ? { 'ephemeral-storage': storage } : {}) } },
});

describe('admitPod', () => {
  const cases: { name: string; pod: V1Pod; others?: V1Pod[]; reason?: string; message?: string }[] = [
    { name: 'a pod that fits', pod: pod('ok', [req('500m', '100Mi')]) },
    {
      name: 'cpu over allocatable',
      pod: pod('big', [req('2')]),
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1900",
    },
    {
      name: 'cpu counting the admitted pods',
      pod: pod('third', [req('1')]),
      others: [pod('a', [req('500m')]), pod('b', [req('500m')])],
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 1000, used: 1000, capacity: 1900",
    },
    {
      name: 'memory',
      pod: pod('mem', [req(undefined, '2Gi')]),
      reason: 'OutOfmemory',
      message: `Node didn't have enough resource: memory, requested: ${2 * 1024 ** 3}, used: 0, capacity: ${1024 ** 3}`,
    },
    {
      name: 'ephemeral storage',
      pod: pod('disk', [req(undefined, undefined, '11Gi')]),
      reason: 'OutOfephemeral-storage',
      message: `Node didn't have enough resource: ephemeral-storage, requested: ${11 * 1024 ** 3}, used: 0, capacity: ${10 * 1024 ** 3}`,
    },
    {
      name: 'maxPods comes before resources',
      pod: pod('fourth', [req('5')]),
      others: [pod('a'), pod('b'), pod('c')],
      reason: 'OutOfpods',
      message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
    },
    { name: 'a pod without requests ignores cpu use', pod: pod('free'), others: [pod('a', [req('1900m')])] },
    { name: 'a limit without a request counts as the request', pod: pod('lim', [{ resources: { limits: { cpu: '3' } } }]), reason: 'OutOfcpu' },
    {
      name: 'an init container larger than the containers decides',
      pod: pod('init', [req('100m')], { initContainers: [{ name: 'i', image: 'busybox', ...req('1950m') }] }),
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 1950, used: 0, capacity: 1900",
    },
    {
      name: 'sidecars add to the containers',
      pod: pod('side', [req('1')], { initContainers: [{ name: 's', image: 'busybox', restartPolicy: 'Always', ...req('1') }] }),
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1900",
    },
    {
      name: 'pod overhead counts',
      pod: pod('overhead', [req('1800m')], { overhead: { cpu: '200m' } }),
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1900",
    },
    {
      name: 'node selector mismatch',
      pod: pod('sel', [{}], { nodeSelector: { disk: 'hdd' } }),
      reason: 'NodeAffinity',
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    },
    {
      name: 'required node affinity: one of the terms matches',
      pod: pod('aff', [{}], {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'disk', operator: 'In', values: ['hdd'] }] },
                { matchExpressions: [{ key: 'gen', operator: 'Gt', values: ['4'] }], matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] },
              ],
            },
          },
        },
      }),
    },
    {
      name: 'required node affinity: no term matches',
      pod: pod('aff2', [{}], {
        affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'disk', operator: 'DoesNotExist' }] }] } } },
      }),
      reason: 'NodeAffinity',
    },
    {
      name: 'bound to another node',
      pod: pod('elsewhere', [{}], { nodeName: 'n2' }),
      reason: 'NodeName',
      message: "Predicate NodeName failed: node(s) didn't match the requested node name",
    },
    {
      name: 'host port taken by an admitted pod',
      pod: pod('port2', [{ ports: [{ containerPort: 80, hostPort: 8080 }] }]),
      others: [pod('port1', [{ ports: [{ containerPort: 80, hostPort: 8080, hostIP: '127.0.0.1' }] }])],
      reason: 'NodePorts',
      message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
    },
    {
      name: 'same host port on another protocol is free',
      pod: pod('udp', [{ ports: [{ containerPort: 53, hostPort: 53, protocol: 'UDP' }] }]),
      others: [pod('tcp', [{ ports: [{ containerPort: 53, hostPort: 53 }] }])],
    },
    {
      name: 'untolerated NoExecute taint',
      pod: pod('taint', [{}], { tolerations: [] }),
      reason: 'TaintToleration',
      message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    },
    {
      name: 'static pods ignore taints',
      pod: pod('static', [{}], { tolerations: [] }, { annotations: { 'kubernetes.io/config.source': 'file' } }),
    },
    { name: 'forbidden sysctl', pod: pod('sysctl', [{}], { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '1' }] } }), reason: 'SysctlForbidden' },
    { name: 'OS field', pod: pod('win', [{}], { os: { name: 'windows' } }), reason: 'PodOSNotSupported' },
    { name: 'unsupported field', pod: pod('nfs', [{}], { volumes: [{ name: 'share', nfs: { server: '192.0.2.1', path: '/' } }] }), reason: 'UnsupportedPodSpec' },
    {
      name: 'over nodelet limits',
      pod: pod('crowd', Array.from({ length: 300 }, (_, i) => ({ name: `c${i}` }))),
      reason: 'PodExceedsLimits',
      message: 'Pod default/crowd: spec.containers: Too many: 300: must have at most 250 items (init containers included)',
    },
  ];

  it.each(cases)('$name', ({ pod: p, others, reason, message }) => {
    const result = admitPod(p, others ?? [], node);
    if (!reason) {
      expect(result).toEqual({ admit: true });
      return;
    }
    expect(result.admit).toBe(false);
    if (result.admit) return;
    expect(result.reason).toBe(reason);
    if (message) expect(result.message).toBe(message);
  });

  it('admits supplementalGroupsPolicy Strict only where the node reports the feature (Merge anywhere)', () => {
    const strict = pod('strict', [{}], { securityContext: { supplementalGroupsPolicy: 'Strict' } });
    expect(admitPod(strict, [], node)).toEqual({
      admit: false, reason: 'SupplementalGroupsPolicyNotSupported', message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
    });
    expect(admitPod(strict, [], { ...node, status: { ...node.status, features: { supplementalGroupsPolicy: false } } }).admit).toBe(false);
    expect(admitPod(strict, [], { ...node, status: { ...node.status, features: { supplementalGroupsPolicy: true } } })).toEqual({ admit: true });
    expect(admitPod(pod('merge', [{}], { securityContext: { supplementalGroupsPolicy: 'Merge' } }), [], node)).toEqual({ admit: true });
  });

  it('gives a rejected pod the status kubelet writes', () => {
    expect(rejectedStatus({ reason: 'OutOfcpu', message: 'Node didn\'t have enough resource: cpu, requested: 2000, used: 0, capacity: 1900' }, 'Burstable')).toEqual({
      phase: 'Failed',
      reason: 'OutOfcpu',
      message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1900",
      qosClass: 'Burstable',
    });
  });

  it('sums requests as kube resource helpers do', () => {
    const p = pod('sum', [req('100m', '10Mi'), req('200m')], {
      initContainers: [
        { name: 's1', image: 'b', restartPolicy: 'Always', ...req('50m') },
        { name: 'i1', image: 'b', ...req('400m', '100Mi') },
      ],
    });
    // sum = 100+200+50 = 350m; init peak = 50 + 400 = 450m; memory: 10Mi vs 100Mi.
    expect(podRequests(p)).toEqual({ cpu: 450n, memory: 100n * 1024n * 1024n, 'ephemeral-storage': 0n });
  });
});
