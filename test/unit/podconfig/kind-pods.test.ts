// kind's DaemonSet pods for Kubernetes 1.37 (test/fixtures/kind/: kubeadm v1.37.2's kube-proxy, kind's kindnet), as
// the API server presents them for the node nodelet-1: nodelet admits them and classes them as kubelet does.
import { readFileSync } from 'node:fs';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { admitPod } from '../../../src/podconfig/admission.js';
import { containerOOMScoreAdjust, guaranteedOOMScoreAdj, isNodeCriticalPod, podQOSClass } from '../../../src/decisions/qos.js';
import { unsupportedPodFields } from '../../../src/decisions/unsupported.js';

const fixture = (name: string) => parse(readFileSync(new URL(`../../../../test/fixtures/kind/${name}`, import.meta.url), 'utf8')) as V1Pod;
const kubeProxy = fixture('kube-proxy-pod.yaml');
const kindnet = fixture('kindnet-pod.yaml');

/** A Ready kind worker named nodelet-1, still carrying the taint a node has until its network is up. */
const node: V1Node = {
  metadata: { name: 'nodelet-1', labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': 'nodelet-1' } },
  spec: { taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' }] },
  status: { allocatable: { cpu: '2', memory: '4Gi', 'ephemeral-storage': '20Gi', pods: '110' } },
};

test.each([
  ['kube-proxy', kubeProxy, 'BestEffort'],
  // kind's main (fed26882) dropped kindnet's limits: requests only, so Burstable (Guaranteed with kind v0.26's manifest).
  ['kindnet', kindnet, 'Burstable'],
])("%s: the API server's QoS class is nodelet's, and the pod is node-critical (system-node-critical, 2000001000)", (_name, pod, qos) => {
  expect(pod.status?.qosClass).toBe(qos);
  expect(podQOSClass(pod)).toBe(qos);
  expect(pod.spec).toMatchObject({ nodeName: 'nodelet-1', priorityClassName: 'system-node-critical', priority: 2000001000, preemptionPolicy: 'PreemptLowerPriority' });
  expect(isNodeCriticalPod(pod)).toBe(true);
  // Node-critical: kubelet's -997 whatever the QoS class.
  for (const c of pod.spec!.containers) expect(containerOOMScoreAdjust(pod, c, 4n << 30n)).toBe(guaranteedOOMScoreAdj);
  // Kubernetes 1.33 and later give a new pod generation 1 (status.observedGeneration reports it back).
  expect(pod.metadata?.generation).toBe(1);
});

test('nodelet admits both on nodelet-1, one beside the other, with nothing it cannot run', () => {
  expect(admitPod(kubeProxy, [], node)).toEqual({ admit: true });
  expect(admitPod(kindnet, [kubeProxy], node)).toEqual({ admit: true });
  for (const pod of [kubeProxy, kindnet]) expect(unsupportedPodFields(pod)).toBeUndefined();
  // The DaemonSet controller's node affinity pins each pod to its node.
  expect(admitPod(kindnet, [], { ...node, metadata: { ...node.metadata, name: 'nodelet-2' } })).toMatchObject({ admit: false, reason: 'NodeAffinity' });
});

test("kindnet's volumes in 1.37: kind's NRI socket directory beside the CNI configuration, xtables lock and modules", () => {
  expect(kindnet.spec!.volumes!.map((v) => [v.name, v.hostPath?.path ?? (v.projected ? 'projected' : '')])).toEqual([
    ['cni-cfg', '/etc/cni/net.d'],
    ['xtables-lock', '/run/xtables.lock'],
    ['lib-modules', '/lib/modules'],
    ['nri-plugin', '/var/run/nri'],
    [expect.stringMatching(/^kube-api-access-[a-z0-9]{5}$/), 'projected'],
  ]);
  expect(kindnet.spec!.containers[0]!.resources).toEqual({ requests: { cpu: '100m', memory: '50Mi' } });
});
