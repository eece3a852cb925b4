// Defaulting of the served kinds as kube-apiserver does it for v1 (SetDefaults_* of pkg/apis/core/v1, plus what the pod strategy and admission plugins fill in on create).
import { parseQuantity } from './quantity.js';

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** obj[key] as an object, created when absent. */
function child(obj: Obj, key: string): Obj {
  const v = obj[key];
  if (isObject(v)) return v;
  const created: Obj = {};
  obj[key] = created;
  return created;
}

function objects(v: unknown): Obj[] {
  return Array.isArray(v) ? v.filter(isObject) : [];
}

function setIfAbsent(obj: Obj, key: string, value: unknown): void {
  if (obj[key] === undefined || obj[key] === null || obj[key] === '') obj[key] = value;
}

const apiVersions: Record<string, string> = {
  Pod: 'v1',
  Node: 'v1',
  ConfigMap: 'v1',
  Secret: 'v1',
  Service: 'v1',
  Namespace: 'v1',
  ServiceAccount: 'v1',
  Event: 'v1',
  Binding: 'v1',
  Lease: 'coordination.k8s.io/v1',
  TokenRequest: 'authentication.k8s.io/v1',
};

/** The tag of an image reference as kubelet's parsers.ParseImageName sees it: "latest" when neither tag nor digest is given. */
function imageTag(image: string): string {
  const [name = '', digest] = image.split('@');
  const lastSlash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  const tag = colon > lastSlash ? name.slice(colon + 1) : '';
  if (tag === '' && digest === undefined) return 'latest';
  return tag;
}

/** SetDefaults_HTTPGetAction, for probes and lifecycle handlers. */
function defaultHandler(handler: unknown): void {
  if (!isObject(handler) || !isObject(handler.httpGet)) return;
  setIfAbsent(handler.httpGet, 'path', '/');
  setIfAbsent(handler.httpGet, 'scheme', 'HTTP');
}

function defaultProbe(probe: unknown): void {
  if (!isObject(probe)) return;
  for (const [field, value] of [['timeoutSeconds', 1], ['periodSeconds', 10], ['successThreshold', 1], ['failureThreshold', 3]] as const) {
    if (!probe[field]) probe[field] = value;
  }
  defaultHandler(probe);
}

/** SetDefaults_ObjectFieldSelector. */
function defaultFieldRef(holder: unknown): void {
  if (isObject(holder) && isObject(holder.fieldRef)) setIfAbsent(holder.fieldRef, 'apiVersion', 'v1');
}

/** SetDefaults_Container plus the defaults of its nested types (ports, probes, env, resources). */
function defaultContainer(c: Obj, hostNetwork: boolean): void {
  if (!c.imagePullPolicy) c.imagePullPolicy = imageTag(typeof c.image === 'string' ? c.image : '') === 'latest' ? 'Always' : 'IfNotPresent';
  setIfAbsent(c, 'terminationMessagePath', '/dev/termination-log');
  setIfAbsent(c, 'terminationMessagePolicy', 'File');
  for (const port of objects(c.ports)) {
    setIfAbsent(port, 'protocol', 'TCP');
    // With host networking every container port is a host port (defaultHostNetworkPorts).
    if (hostNetwork && !port.hostPort) port.hostPort = port.containerPort;
  }
  for (const env of objects(c.env)) defaultFieldRef(env.valueFrom);
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) defaultProbe(c[probe]);
  if (isObject(c.lifecycle)) {
    defaultHandler(c.lifecycle.postStart);
    defaultHandler(c.lifecycle.preStop);
  }
  // ResourceRequirements is a struct, not a pointer: the API always returns it, empty as {}.
  const resources = child(c, 'resources');
  // SetDefaults_Pod: requests default to the limits when only limits are given.
  if (isObject(resources.limits)) {
    const requests = child(resources, 'requests');
    for (const [name, q] of Object.entries(resources.limits)) if (!(name in requests)) requests[name] = q;
  }
}

function defaultVolume(v: Obj): void {
  const sources = Object.keys(v).filter((k) => k !== 'name');
  if (sources.length === 0) v.emptyDir = {};
  for (const key of ['configMap', 'secret', 'downwardAPI', 'projected']) {
    const source = v[key];
    if (isObject(source) && source.defaultMode === undefined) source.defaultMode = 420;
  }
  if (isObject(v.downwardAPI)) for (const item of objects(v.downwardAPI.items)) defaultFieldRef(item);
  if (isObject(v.projected)) {
    for (const source of objects(v.projected.sources)) {
      if (isObject(source.serviceAccountToken)) setIfAbsent(source.serviceAccountToken, 'expirationSeconds', 3600);
      if (isObject(source.downwardAPI)) for (const item of objects(source.downwardAPI.items)) defaultFieldRef(item);
    }
  }
  if (isObject(v.hostPath) && v.hostPath.type === undefined) v.hostPath.type = '';
}

export type QOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** The pod's QoS class as kube computes it (qos.ComputePodQOS): from the cpu and memory requests and limits of its containers and init containers. */
export function podQOSClass(pod: Obj): QOSClass {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let guaranteed = true;
  for (const c of [...objects(spec.containers), ...objects(spec.initContainers)]) {
    const resources = isObject(c.resources) ? c.resources : {};
    for (const [name, q] of Object.entries(isObject(resources.requests) ? resources.requests : {})) {
      const value = parseQuantity(q) ?? 0;
      if ((name === 'cpu' || name === 'memory') && value > 0) requests.set(name, (requests.get(name) ?? 0) + value);
    }
    const found = new Set<string>();
    for (const [name, q] of Object.entries(isObject(resources.limits) ? resources.limits : {})) {
      const value = parseQuantity(q) ?? 0;
      if ((name === 'cpu' || name === 'memory') && value > 0) {
        found.add(name);
        limits.set(name, (limits.get(name) ?? 0) + value);
      }
    }
    if (!found.has('cpu') || !found.has('memory')) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [name, req] of requests) if (limits.get(name) !== req) guaranteed = false;
  }
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/** Priorities of the built-in PriorityClasses (the only ones this server knows). */
const systemPriorities: Record<string, number> = { 'system-node-critical': 2000001000, 'system-cluster-critical': 2000000000 };

/** DefaultTolerationSeconds admission: pods tolerate not-ready and unreachable nodes for 300 s unless they say otherwise. */
function addDefaultTolerations(spec: Obj): void {
  const tolerations = Array.isArray(spec.tolerations) ? spec.tolerations : [];
  const tolerates = (key: string): boolean =>
    objects(tolerations).some((t) => (t.key === key || !t.key) && (t.effect === 'NoExecute' || !t.effect));
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    if (!tolerates(key)) tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
  }
  spec.tolerations = tolerations;
}

function defaultPod(pod: Obj): void {
  const spec = child(pod, 'spec');
  const metadata = isObject(pod.metadata) ? pod.metadata : {};
  const annotations = isObject(metadata.annotations) ? metadata.annotations : {};
  // SetDefaults_PodSpec
  setIfAbsent(spec, 'dnsPolicy', 'ClusterFirst');
  setIfAbsent(spec, 'restartPolicy', 'Always');
  if (!isObject(spec.securityContext)) spec.securityContext = {};
  if (typeof spec.terminationGracePeriodSeconds !== 'number') spec.terminationGracePeriodSeconds = 30;
  setIfAbsent(spec, 'schedulerName', 'default-scheduler');
  // SetDefaults_Pod
  if (typeof spec.enableServiceLinks !== 'boolean') spec.enableServiceLinks = true;
  const hostNetwork = spec.hostNetwork === true;
  for (const list of ['containers', 'initContainers', 'ephemeralContainers']) {
    for (const c of objects(spec[list])) defaultContainer(c, hostNetwork && list !== 'ephemeralContainers');
  }
  for (const v of objects(spec.volumes)) defaultVolume(v);
  // v1 conversion keeps the deprecated serviceAccount in step with serviceAccountName; the ServiceAccount admission
  // plugin names "default" for every pod but mirror pods.
  if (!spec.serviceAccountName && typeof spec.serviceAccount === 'string' && spec.serviceAccount) spec.serviceAccountName = spec.serviceAccount;
  if (!spec.serviceAccountName && !('kubernetes.io/config.mirror' in annotations)) spec.serviceAccountName = 'default';
  if (spec.serviceAccountName) spec.serviceAccount = spec.serviceAccountName;
  // Priority admission: priority from the PriorityClass (0 without one), preemptionPolicy PreemptLowerPriority.
  if (typeof spec.priority !== 'number') {
    spec.priority = typeof spec.priorityClassName === 'string' ? (systemPriorities[spec.priorityClassName] ?? 0) : 0;
  }
  setIfAbsent(spec, 'preemptionPolicy', 'PreemptLowerPriority');
  addDefaultTolerations(spec);
  // The pod strategy's PrepareForCreate: phase Pending and the QoS class, fixed for the pod's life.
  const status = child(pod, 'status');
  setIfAbsent(status, 'phase', 'Pending');
  setIfAbsent(status, 'qosClass', podQOSClass(pod));
}

/**
 * Fills in what kube-apiserver defaults for a v1 object of `kind` (mutates `obj`): apiVersion/kind, the SetDefaults_*
 * functions of pkg/apis/core/v1, and for a Pod also what the server sets on create (status.phase Pending, status.qosClass,
 * serviceAccountName "default", priority, and the DefaultTolerationSeconds tolerations). Fields already set are kept,
 * so applying it again (on update) changes nothing.
 */
export function applyDefaults(kind: string, obj: Record<string, unknown>): void {
  const apiVersion = apiVersions[kind];
  if (apiVersion !== undefined && !obj.apiVersion) obj.apiVersion = apiVersion;
  if (!obj.kind) obj.kind = kind;
  switch (kind) {
    case 'Pod':
      defaultPod(obj);
      break;
    case 'Node': {
      // SetDefaults_NodeStatus: allocatable defaults to capacity.
      const status = isObject(obj.status) ? obj.status : undefined;
      if (status && isObject(status.capacity) && status.allocatable === undefined) status.allocatable = { ...status.capacity };
      break;
    }
    case 'Secret':
      setIfAbsent(obj, 'type', 'Opaque');
      break;
    case 'Namespace': {
      // SetDefaults_Namespace labels every named namespace with its name; the namespace strategy adds the
      // "kubernetes" finalizer on create; SetDefaults_NamespaceStatus makes it Active.
      const metadata = child(obj, 'metadata');
      if (typeof metadata.name === 'string' && metadata.name) child(metadata, 'labels')['kubernetes.io/metadata.name'] = metadata.name;
      const spec = child(obj, 'spec');
      if (!Array.isArray(spec.finalizers)) spec.finalizers = ['kubernetes'];
      setIfAbsent(child(obj, 'status'), 'phase', 'Active');
      break;
    }
    default:
      // ConfigMap (its empty data map serializes away), ServiceAccount, Event and Lease have no visible defaults.
      break;
  }
}
