// Node-side pod admission, as kubelet's canAdmitPod with its predicate handler (GeneralPredicates): pure.
import type { V1Container, V1Node, V1NodeSelectorRequirement, V1NodeSelectorTerm, V1Pod, V1Taint, V1Toleration } from '@kubernetes/client-node';
import { isStaticPod } from '../core/config-annotations.js';
import { isRestartableInitContainer } from '../decisions/init-containers.js';
import { resourceQuantity } from '../decisions/qos.js';
import { forbiddenSysctls } from '../decisions/sysctl-admission.js';
import type { WaitingReason } from '../decisions/status.js';
import { unsupportedPodFields } from '../decisions/unsupported.js';
import { podLimitRejection } from '../decisions/pod-limits.js';

/** kubelet's reasons for pods refused for lack of a resource (lifecycle.OutOf*). */
const outOfReasons: Record<string, string> = {
  cpu: 'OutOfcpu',
  memory: 'OutOfmemory',
  'ephemeral-storage': 'OutOfephemeral-storage',
  pods: 'OutOfpods',
};

/** Prefix kubelet's rejectPod puts before the admission message in the pod's status. */
export const rejectedMessagePrefix = 'Pod was rejected: ';

export type AdmitResult = { admit: true } | { admit: false; reason: string; message: string };

/** The requests that admission adds up: cpu in millicores, memory and ephemeral storage in bytes. */
export interface PodRequests {
  cpu: bigint;
  memory: bigint;
  'ephemeral-storage': bigint;
}

const resourceNames = ['cpu', 'memory', 'ephemeral-storage'] as const;

/** A resource as admission adds it up: cpu in millicores, the rest in units; unset or unparsable is 0. */
function quantityOf(list: Record<string, unknown> | undefined, name: string): bigint {
  const q = resourceQuantity(list, name);
  if (!q) return 0n;
  return name === 'cpu' ? q.milliValue() : q.value();
}

/** A container's request; a limit without a request counts as the request, as the API server's defaulting makes it. */
function containerRequests(c: V1Container): PodRequests {
  const requests = c.resources?.requests as Record<string, unknown> | undefined;
  const limits = c.resources?.limits as Record<string, unknown> | undefined;
  const of = (name: string) => (requests && Object.hasOwn(requests, name) ? quantityOf(requests, name) : quantityOf(limits, name));
  return { cpu: of('cpu'), memory: of('memory'), 'ephemeral-storage': of('ephemeral-storage') };
}

/**
 * kube's resource helper PodRequests: regular containers and sidecars add up; each plain init container runs with
 * the sidecars started before it, so the pod needs the larger of that peak and the sum; plus the pod's overhead.
 */
export function podRequests(pod: V1Pod): PodRequests {
  const sum: PodRequests = { cpu: 0n, memory: 0n, 'ephemeral-storage': 0n };
  for (const c of pod.spec?.containers ?? []) {
    const r = containerRequests(c);
    for (const n of resourceNames) sum[n] += r[n];
  }
  const sidecars: PodRequests = { cpu: 0n, memory: 0n, 'ephemeral-storage': 0n };
  const peak: PodRequests = { cpu: 0n, memory: 0n, 'ephemeral-storage': 0n };
  for (const c of pod.spec?.initContainers ?? []) {
    const r = containerRequests(c);
    for (const n of resourceNames) {
      let running: bigint;
      if (isRestartableInitContainer(c)) {
        sum[n] += r[n];
        sidecars[n] += r[n];
        running = sidecars[n];
      } else {
        running = sidecars[n] + r[n];
      }
      if (running > peak[n]) peak[n] = running;
    }
  }
  const overhead = pod.spec?.overhead as Record<string, unknown> | undefined;
  for (const n of resourceNames) {
    if (peak[n] > sum[n]) sum[n] = peak[n];
    sum[n] += quantityOf(overhead, n);
  }
  return sum;
}

function predicateFailure(name: string, desc: string): AdmitResult {
  return { admit: false, reason: name, message: `Predicate ${name} failed: ${desc}` };
}

function matchesRequirement(r: V1NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1 || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0]!)) return false;
      const have = BigInt(value);
      const want = BigInt(values[0]!);
      return r.operator === 'Gt' ? have > want : have < want;
    }
    default:
      return false;
  }
}

/** A node selector term matches when all its expressions and fields do; a term with neither matches nothing. */
function matchesTerm(term: V1NodeSelectorTerm, node: V1Node): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  const labels = node.metadata?.labels ?? {};
  if (!exprs.every((r) => matchesRequirement(r, Object.hasOwn(labels, r.key) ? labels[r.key] : undefined))) return false;
  // metadata.name is the only node field a selector may name.
  return fields.every((r) => r.key === 'metadata.name' && (r.operator === 'In' || r.operator === 'NotIn') && matchesRequirement(r, node.metadata?.name));
}

/** The scheduler's GetRequiredNodeAffinity(pod).Match(node): spec.nodeSelector and required node affinity terms. */
export function matchesNodeAffinity(pod: V1Pod, node: V1Node): boolean {
  const labels = node.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const required = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  return (required.nodeSelectorTerms ?? []).some((t) => matchesTerm(t, node));
}

interface HostPort {
  ip: string;
  protocol: string;
  port: number;
}

/** Host ports a pod claims (regular containers and sidecars), kube's GetContainerPorts. */
export function podHostPorts(pod: V1Pod): HostPort[] {
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []).filter(isRestartableInitContainer)];
  const ports: HostPort[] = [];
  for (const c of containers) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort || p.hostPort <= 0) continue;
      ports.push({ ip: p.hostIP || '0.0.0.0', protocol: p.protocol || 'TCP', port: p.hostPort });
    }
  }
  return ports;
}

function portsConflict(a: HostPort, b: HostPort): boolean {
  if (a.port !== b.port || a.protocol !== b.protocol) return false;
  return a.ip === b.ip || a.ip === '0.0.0.0' || b.ip === '0.0.0.0';
}

/** kube's toleration matching for one taint. */
function tolerates(t: V1Toleration, taint: V1Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  const operator = t.operator || 'Equal';
  if (operator === 'Exists') return !t.key || t.key === taint.key;
  if (operator !== 'Equal') return false;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

/**
 * kubelet's admission of `pod` on `node` next to the pods already admitted and not terminal (`others`): the checks
 * of its admit handlers in order (sysctls, OS, supplementalGroupsPolicy, general predicates: resources first, then node
 * affinity, node name, host ports; NoExecute taints for pods from the API), then the fields nodelet cannot run. The first
 * failure decides.
 */
export function admitPod(pod: V1Pod, others: readonly V1Pod[], node: V1Node): AdmitResult {
  const sysctl = forbiddenSysctls(pod);
  if (sysctl) return { admit: false, ...sysctl };
  const nodeOS = node.metadata?.labels?.['kubernetes.io/os'] ?? 'linux';
  const podOS = pod.metadata?.labels?.['kubernetes.io/os'];
  if (podOS !== undefined && podOS !== nodeOS) {
    return { admit: false, reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" };
  }
  if (pod.spec?.os?.name !== undefined && pod.spec.os.name !== 'linux') {
    return { admit: false, reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" };
  }
  // kubelet's rejectPodAdmissionBasedOnSupplementalGroupsPolicy: Strict needs a node whose runtime reports the feature.
  if (pod.spec?.securityContext?.supplementalGroupsPolicy === 'Strict' && node.status?.features?.supplementalGroupsPolicy !== true) {
    return { admit: false, reason: 'SupplementalGroupsPolicyNotSupported', message: 'SupplementalGroupsPolicy=Strict is not supported in this node' };
  }

  const allocatable = (node.status?.allocatable ?? {}) as Record<string, unknown>;
  const maxPods = Number(quantityOf(allocatable, 'pods'));
  if (others.length + 1 > maxPods) return insufficient('pods', 1n, BigInt(others.length), BigInt(maxPods));
  const wanted = podRequests(pod);
  if (resourceNames.some((n) => wanted[n] > 0n)) {
    const used: PodRequests = { cpu: 0n, memory: 0n, 'ephemeral-storage': 0n };
    for (const o of others) {
      const r = podRequests(o);
      for (const n of resourceNames) used[n] += r[n];
    }
    for (const n of resourceNames) {
      const capacity = quantityOf(allocatable, n);
      if (wanted[n] > 0n && wanted[n] > capacity - used[n]) return insufficient(n, wanted[n], used[n], capacity);
    }
  }
  if (!matchesNodeAffinity(pod, node)) return predicateFailure('NodeAffinity', "node(s) didn't match Pod's node affinity/selector");
  if (pod.spec?.nodeName && pod.spec.nodeName !== node.metadata?.name) return predicateFailure('NodeName', "node(s) didn't match the requested node name");
  const claimed = others.flatMap(podHostPorts);
  if (podHostPorts(pod).some((p) => claimed.some((c) => portsConflict(p, c)))) {
    return predicateFailure('NodePorts', "node(s) didn't have free ports for the requested pod ports");
  }
  if (!isStaticPod(pod)) {
    const untolerated = (node.spec?.taints ?? []).find((t) => t.effect === 'NoExecute' && !(pod.spec?.tolerations ?? []).some((tol) => tolerates(tol, t)));
    if (untolerated) return predicateFailure('TaintToleration', "node(s) had taints that the pod didn't tolerate");
  }
  const overLimit = podLimitRejection(pod);
  if (overLimit) return { admit: false, ...overLimit };
  const unsupported = unsupportedPodFields(pod);
  if (unsupported) return { admit: false, ...unsupported };
  return { admit: true };
}

function insufficient(resource: string, requested: bigint, used: bigint, capacity: bigint): AdmitResult {
  return {
    admit: false,
    reason: outOfReasons[resource] ?? `OutOf${resource}`,
    message: `Node didn't have enough resource: ${resource}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
  };
}

/** The status kubelet's rejectPod gives a refused pod: Failed, the reason, and the message after its prefix. */
export function rejectedStatus(result: WaitingReason, qosClass: string): { phase: string; reason: string; message: string; qosClass: string } {
  return { phase: 'Failed', reason: result.reason, message: rejectedMessagePrefix + result.message, qosClass };
}
