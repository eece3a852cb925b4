// Authorization (system:masters, RBAC's default discovery roles, the Node authorizer) and NodeRestriction admission of the test API server, as kube-apiserver 1.32 decides them.
import { ApiError, forbidden, forbiddenPath, notFound } from './api-errors.js';
import type { ClusterView, Decision, RequestAttributes, UserInfo } from './types.js';

const MASTERS_GROUP = 'system:masters';
const NODES_GROUP = 'system:nodes';
const NODE_USER_PREFIX = 'system:node:';
const AUTHENTICATED_GROUP = 'system:authenticated';
const SERVICE_ACCOUNTS_GROUP = 'system:serviceaccounts';
const NODE_LEASE_NAMESPACE = 'kube-node-lease';
const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

const ALLOW: Decision = { allowed: true, reason: '' };
const deny = (reason: string): Decision => ({ allowed: false, reason });

/** An admission refusal that kube reports as NotFound (the object the check needs is gone), not as Forbidden. */
export interface AdmissionDecision extends Decision {
  notFound?: { group: string; resource: string; name: string };
}

/** kube's default node identifier: user system:node:<name> in group system:nodes. */
export function nodeIdentity(user: UserInfo): { isNode: boolean; nodeName: string } {
  if (!user.username.startsWith(NODE_USER_PREFIX) || !user.groups.includes(NODES_GROUP)) return { isNode: false, nodeName: '' };
  return { isNode: true, nodeName: user.username.slice(NODE_USER_PREFIX.length) };
}

// ---- authorization of resource requests ----

/**
 * The authorizer chain kube-apiserver runs with --authorization-mode=Node,RBAC and the default bootstrap policy:
 * system:masters may do anything; nodes get what the Node authorizer grants (with AuthorizeNodeWithSelectors, beta
 * and on in 1.32); every authenticated user gets system:basic-user; nothing else is bound (service accounts included).
 * A denial's reason is the text kube appends to the Forbidden message ('' for none).
 */
export function authorize(attrs: RequestAttributes, view: ClusterView): Decision {
  if (attrs.user.groups.includes(MASTERS_GROUP)) return ALLOW;
  const reasons: string[] = [];
  const { isNode, nodeName } = nodeIdentity(attrs.user);
  if (isNode) {
    const d = authorizeNode(nodeName, attrs, view);
    if (d.allowed) return d;
    if (d.reason) reasons.push(d.reason);
  }
  if (attrs.user.groups.includes(AUTHENTICATED_GROUP) && rulesAllow(BASIC_USER_RULES, attrs)) return ALLOW;
  // The union authorizer joins the reasons of every authorizer that had no opinion.
  return deny(reasons.join('\n'));
}

/** Non-resource paths (discovery, health, version, OIDC discovery) as the default RBAC roles grant them. */
export function authorizeNonResource(req: { user: UserInfo; verb: string; path: string }): Decision {
  const groups = req.user.groups;
  if (groups.includes(MASTERS_GROUP)) return ALLOW;
  if (req.verb !== 'get') return deny('');
  if (groups.includes(AUTHENTICATED_GROUP) && DISCOVERY_URLS.some((u) => urlMatches(u, req.path))) return ALLOW;
  if (groups.includes(SERVICE_ACCOUNTS_GROUP) && ISSUER_DISCOVERY_URLS.includes(req.path)) return ALLOW;
  return deny('');
}

/** system:discovery and system:public-info-viewer (bound to system:authenticated). */
const DISCOVERY_URLS = ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/readyz', '/version', '/version/', '/openapi', '/openapi/*'];
/** system:service-account-issuer-discovery (bound to system:serviceaccounts). */
const ISSUER_DISCOVERY_URLS = ['/.well-known/openid-configuration', '/openid/v1/jwks'];

function urlMatches(rule: string, path: string): boolean {
  return rule.endsWith('*') ? path.startsWith(rule.slice(0, -1)) : path === rule;
}

interface PolicyRule {
  groups: string[];
  /** resource or resource/subresource */
  resources: string[];
  verbs: string[];
}

/** system:basic-user. */
const BASIC_USER_RULES: PolicyRule[] = [
  { groups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'], verbs: ['create'] },
  { groups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
];

/**
 * bootstrappolicy.NodeRules() for the resources the Node authorizer does not subdivide (services, endpoints, core
 * events, reviews, CSRs, CSI and RuntimeClass reads). Nodes, pods, secrets, configmaps, PVCs, PVs, service accounts,
 * leases and CSINodes are decided by the subdivided checks below.
 */
const NODE_RULES: PolicyRule[] = [
  { groups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { groups: ['authorization.k8s.io'], resources: ['subjectaccessreviews', 'localsubjectaccessreviews'], verbs: ['create'] },
  { groups: [''], resources: ['services'], verbs: ['get', 'list', 'watch'] },
  { groups: [''], resources: ['events'], verbs: ['create', 'update', 'patch'] },
  { groups: [''], resources: ['endpoints'], verbs: ['get'] },
  { groups: ['certificates.k8s.io'], resources: ['certificatesigningrequests'], verbs: ['create', 'get', 'list', 'watch'] },
  { groups: ['storage.k8s.io'], resources: ['csidrivers'], verbs: ['get', 'list', 'watch'] },
  { groups: ['node.k8s.io'], resources: ['runtimeclasses'], verbs: ['get', 'list', 'watch'] },
];

function rulesAllow(rules: PolicyRule[], attrs: RequestAttributes): boolean {
  const combined = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  return rules.some((r) => r.groups.includes(attrs.apiGroup) && r.resources.includes(combined) && r.verbs.includes(attrs.verb));
}

function authorizeNode(nodeName: string, attrs: RequestAttributes, view: ClusterView): Decision {
  if (nodeName === '') return deny(`unknown node for user "${attrs.user.username}"`);
  const graph = new NodeGraph(nodeName, view);
  const core = attrs.apiGroup === '';
  if (core && attrs.resource === 'secrets') return readNamespacedObject(graph, 'secret', attrs);
  if (core && attrs.resource === 'configmaps') return readNamespacedObject(graph, 'configmap', attrs);
  if (core && attrs.resource === 'persistentvolumeclaims') {
    return attrs.subresource === 'status' ? statusUpdate(graph, 'pvc', attrs) : getRelated(graph, 'pvc', attrs);
  }
  if (core && attrs.resource === 'persistentvolumes') return getRelated(graph, 'pv', attrs);
  if (core && attrs.resource === 'serviceaccounts') return createToken(graph, attrs);
  if (attrs.apiGroup === 'coordination.k8s.io' && attrs.resource === 'leases') return lease(nodeName, attrs);
  if (attrs.apiGroup === 'storage.k8s.io' && attrs.resource === 'csinodes') return csiNode(nodeName, attrs);
  if (core && attrs.resource === 'nodes') return node(nodeName, attrs);
  if (core && attrs.resource === 'pods') return pod(graph, attrs);
  return rulesAllow(NODE_RULES, attrs) ? ALLOW : deny('');
}

function readNamespacedObject(graph: NodeGraph, type: VertexType, attrs: RequestAttributes): Decision {
  if (!['get', 'list', 'watch'].includes(attrs.verb)) return deny('can only read resources of this type');
  if (attrs.subresource) return deny('cannot read subresource');
  if (!attrs.namespace) return deny('can only read namespaced object of this type');
  return related(graph, type, attrs);
}

function getRelated(graph: NodeGraph, type: VertexType, attrs: RequestAttributes): Decision {
  if (attrs.verb !== 'get') return deny('can only get individual resources of this type');
  if (attrs.subresource) return deny('cannot get subresource');
  return related(graph, type, attrs);
}

function statusUpdate(graph: NodeGraph, type: VertexType, attrs: RequestAttributes): Decision {
  if (attrs.verb !== 'update' && attrs.verb !== 'patch') return deny('can only get/update/patch this type');
  return related(graph, type, attrs);
}

function related(graph: NodeGraph, type: VertexType, attrs: RequestAttributes): Decision {
  const name = effectiveName(attrs);
  if (!name) return deny('No Object name found');
  return graph.hasPathFrom(type, attrs.namespace, name) ? ALLOW : deny(`no relationship found between node '${graph.nodeName}' and this object`);
}

function createToken(graph: NodeGraph, attrs: RequestAttributes): Decision {
  if (attrs.verb !== 'create' || !attrs.name) return deny('can only create tokens for individual service accounts');
  if (attrs.subresource !== 'token') return deny('can only create token subresource of serviceaccount');
  return graph.hasPathFrom('serviceaccount', attrs.namespace, attrs.name)
    ? ALLOW
    : deny(`no relationship found between node '${graph.nodeName}' and this object`);
}

function lease(nodeName: string, attrs: RequestAttributes): Decision {
  if (!['get', 'create', 'update', 'patch', 'delete'].includes(attrs.verb)) return deny('can only get, create, update, patch, or delete a node lease');
  if (attrs.namespace !== NODE_LEASE_NAMESPACE) return deny(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
  // The name is unknown to the authorizer on create; NodeRestriction checks it then.
  if (attrs.verb !== 'create' && attrs.name !== nodeName) return deny('can only access node lease with the same name as the requesting node');
  return ALLOW;
}

function csiNode(nodeName: string, attrs: RequestAttributes): Decision {
  if (!['get', 'create', 'update', 'patch', 'delete'].includes(attrs.verb)) return deny('can only get, create, update, patch, or delete a CSINode');
  if (attrs.subresource) return deny('cannot authorize CSINode subresources');
  if (attrs.verb !== 'create' && attrs.name !== nodeName) return deny('can only access CSINode with the same name as the requesting node');
  return ALLOW;
}

function node(nodeName: string, attrs: RequestAttributes): Decision {
  if (attrs.subresource === '') {
    // NodeRestriction limits create/update/patch to the node's own object.
    if (['create', 'update', 'patch'].includes(attrs.verb)) return ALLOW;
    if (['get', 'list', 'watch'].includes(attrs.verb)) {
      const name = effectiveName(attrs);
      if (name === nodeName) return ALLOW;
      if (name === '') return deny(`node '${nodeName}' cannot read all nodes, only its own Node object`);
      return deny(`node '${nodeName}' cannot read '${name}', only its own Node object`);
    }
  } else if (attrs.subresource === 'status' && (attrs.verb === 'update' || attrs.verb === 'patch')) {
    return ALLOW;
  }
  return deny('');
}

function pod(graph: NodeGraph, attrs: RequestAttributes): Decision {
  if (attrs.subresource === '') {
    switch (attrs.verb) {
      case 'get':
        return related(graph, 'pod', attrs);
      case 'list':
      case 'watch':
        if (fieldRequirements(attrs.fieldSelector).some((r) => r.field === 'spec.nodeName' && r.op === '=' && r.value === graph.nodeName)) return ALLOW;
        if (effectiveName(attrs)) return related(graph, 'pod', attrs);
        return deny('can only list/watch pods with spec.nodeName field selector');
      case 'create':
      case 'delete':
        // Mirror pods; NodeRestriction limits them to pods bound to the node.
        return ALLOW;
    }
  } else if (attrs.subresource === 'status' && (attrs.verb === 'update' || attrs.verb === 'patch')) {
    return ALLOW;
  } else if (attrs.subresource === 'eviction' && attrs.verb === 'create') {
    return ALLOW;
  }
  return deny('');
}

/** The name kube's RequestInfo gives a list/watch: a `metadata.name=<x>` field selector names the single object. */
function effectiveName(attrs: RequestAttributes): string {
  if (attrs.name) return attrs.name;
  if (attrs.verb !== 'list' && attrs.verb !== 'watch') return '';
  return fieldRequirements(attrs.fieldSelector).find((r) => r.field === 'metadata.name' && r.op === '=')?.value ?? '';
}

function fieldRequirements(selector: string | undefined): { field: string; op: '=' | '!='; value: string }[] {
  if (!selector) return [];
  const out: { field: string; op: '=' | '!='; value: string }[] = [];
  for (const term of selector.split(',')) {
    const m = /^([^!=]+)(==|=|!=)(.*)$/.exec(term.trim());
    if (!m) continue;
    out.push({ field: (m[1] as string).trim(), op: m[2] === '!=' ? '!=' : '=', value: (m[3] as string).trim() });
  }
  return out;
}

// ---- the Node authorizer's graph, computed from the store ----

type VertexType = 'pod' | 'secret' | 'configmap' | 'pvc' | 'pv' | 'serviceaccount';

/**
 * The edges kube's graph populator records toward a node: node <- pod (spec.nodeName), pod <- secret / configmap /
 * pvc / serviceaccount (what the pod spec references), pvc <- pv. An object is related when a pod bound to the node
 * references it; the node is unknown (nothing related) until a pod is bound to it.
 */
class NodeGraph {
  private pods: Record<string, unknown>[] | undefined;

  constructor(readonly nodeName: string, private readonly view: ClusterView) {}

  hasPathFrom(type: VertexType, namespace: string, name: string): boolean {
    const pods = this.boundPods();
    switch (type) {
      case 'pod':
        return pods.some((p) => str(p, 'metadata', 'namespace') === namespace && str(p, 'metadata', 'name') === name);
      case 'serviceaccount':
        return pods.some((p) => str(p, 'metadata', 'namespace') === namespace && str(p, 'spec', 'serviceAccountName') === name);
      case 'secret':
        return pods.some((p) => str(p, 'metadata', 'namespace') === namespace && podReferences(p).secrets.has(name));
      case 'configmap':
        return pods.some((p) => str(p, 'metadata', 'namespace') === namespace && podReferences(p).configMaps.has(name));
      case 'pvc':
        return pods.some((p) => str(p, 'metadata', 'namespace') === namespace && podReferences(p).claims.has(name));
      case 'pv':
        return pods.some((p) => [...podReferences(p).claims].some((claim) => {
          const pvc = this.view.get('persistentvolumeclaims', str(p, 'metadata', 'namespace'), claim);
          return pvc !== undefined && str(pvc, 'spec', 'volumeName') === name;
        }));
    }
  }

  private boundPods(): Record<string, unknown>[] {
    this.pods ??= this.view.list('pods').filter((p) => str(p, 'spec', 'nodeName') === this.nodeName);
    return this.pods;
  }
}

/** What a pod spec references, as podutil.VisitPodSecretNames / VisitPodConfigmapNames and the PVC walk find them. */
export function podReferences(pod: Record<string, unknown>): { secrets: Set<string>; configMaps: Set<string>; claims: Set<string> } {
  const secrets = new Set<string>();
  const configMaps = new Set<string>();
  const claims = new Set<string>();
  const spec = rec(pod['spec']);
  const podName = str(pod, 'metadata', 'name');
  for (const ref of arr(spec['imagePullSecrets'])) addName(secrets, rec(ref)['name']);
  for (const key of ['initContainers', 'containers', 'ephemeralContainers']) {
    for (const c of arr(spec[key])) {
      const container = rec(c);
      for (const from of arr(container['envFrom'])) {
        addName(secrets, rec(rec(from)['secretRef'])['name']);
        addName(configMaps, rec(rec(from)['configMapRef'])['name']);
      }
      for (const env of arr(container['env'])) {
        const valueFrom = rec(rec(env)['valueFrom']);
        addName(secrets, rec(valueFrom['secretKeyRef'])['name']);
        addName(configMaps, rec(valueFrom['configMapKeyRef'])['name']);
      }
    }
  }
  for (const v of arr(spec['volumes'])) {
    const vol = rec(v);
    addName(secrets, rec(vol['secret'])['secretName']);
    addName(configMaps, rec(vol['configMap'])['name']);
    for (const s of arr(rec(vol['projected'])['sources'])) {
      addName(secrets, rec(rec(s)['secret'])['name']);
      addName(configMaps, rec(rec(s)['configMap'])['name']);
    }
    // Volume plugins that carry credentials in a secret.
    addName(secrets, rec(vol['azureFile'])['secretName']);
    for (const plugin of ['cephfs', 'cinder', 'flexVolume', 'iscsi', 'rbd', 'scaleIO', 'storageos']) {
      addName(secrets, rec(rec(vol[plugin])['secretRef'])['name']);
    }
    addName(secrets, rec(rec(vol['csi'])['nodePublishSecretRef'])['name']);
    addName(claims, rec(vol['persistentVolumeClaim'])['claimName']);
    // A generic ephemeral volume's claim is named <pod>-<volume>.
    if (vol['ephemeral'] !== undefined && typeof vol['name'] === 'string') claims.add(`${podName}-${vol['name']}`);
  }
  return { secrets, configMaps, claims };
}

function addName(set: Set<string>, name: unknown): void {
  if (typeof name === 'string' && name !== '') set.add(name);
}

// ---- NodeRestriction admission ----

type Operation = 'CREATE' | 'UPDATE' | 'DELETE';

function operationOf(verb: string): Operation | undefined {
  if (verb === 'create') return 'CREATE';
  if (verb === 'update' || verb === 'patch') return 'UPDATE';
  if (verb === 'delete' || verb === 'deletecollection') return 'DELETE';
  return undefined;
}

/**
 * The NodeRestriction admission plugin: a node may create only mirror pods bound to itself, delete and update the
 * status of only pods bound to itself, modify only its own Node (without configSource, taint or restricted label
 * changes), use only its own Lease in kube-node-lease, and request only tokens bound to pods scheduled on it.
 * `object` is the incoming object (after a patch is applied), `old` the stored one. Other users pass.
 * Run the ServiceAccount plugin (sa-admission.ts) first on pod creation, as kube orders them.
 */
export function admit(
  attrs: RequestAttributes,
  object: Record<string, unknown> | undefined,
  old: Record<string, unknown> | undefined,
  view: ClusterView,
): AdmissionDecision {
  const { isNode, nodeName } = nodeIdentity(attrs.user);
  if (!isNode) return ALLOW;
  const op = operationOf(attrs.verb);
  if (!op) return ALLOW;
  if (nodeName === '') return deny(`could not determine node from user "${attrs.user.username}"`);
  const core = attrs.apiGroup === '';
  if (core && attrs.resource === 'pods') {
    if (attrs.subresource === '') return admitPod(nodeName, op, attrs, object, view);
    if (attrs.subresource === 'status') return admitPodStatus(nodeName, op, object, old);
    if (attrs.subresource === 'eviction') return admitPodEviction(nodeName, op, attrs, object, view);
    return deny(`unexpected pod subresource "${attrs.subresource}", only 'status' and 'eviction' are allowed`);
  }
  if (core && attrs.resource === 'nodes') return admitNode(nodeName, op, attrs, object, old);
  if (core && attrs.resource === 'serviceaccounts') return admitTokenRequest(nodeName, op, attrs, object, view);
  if (attrs.apiGroup === 'coordination.k8s.io' && attrs.resource === 'leases') return admitLease(nodeName, op, attrs, object);
  return ALLOW;
}

function admitPod(nodeName: string, op: Operation, attrs: RequestAttributes, object: Record<string, unknown> | undefined, view: ClusterView): AdmissionDecision {
  if (op === 'CREATE') return admitMirrorPod(nodeName, object ?? {}, view);
  if (op === 'DELETE') {
    const existing = view.get('pods', attrs.namespace, attrs.name);
    if (!existing) return { allowed: false, reason: '', notFound: { group: '', resource: 'pods', name: attrs.name } };
    if (str(existing, 'spec', 'nodeName') !== nodeName) return deny(`node "${nodeName}" can only delete pods with spec.nodeName set to itself`);
    return ALLOW;
  }
  return deny(`unexpected operation "${op}", node "${nodeName}" can only create and delete mirror pods`);
}

function admitMirrorPod(nodeName: string, pod: Record<string, unknown>, view: ClusterView): AdmissionDecision {
  const annotations = rec(rec(pod['metadata'])['annotations']);
  if (!(MIRROR_POD_ANNOTATION in annotations)) {
    return deny(`pod does not have "${MIRROR_POD_ANNOTATION}" annotation, node "${nodeName}" can only create mirror pods`);
  }
  if (str(pod, 'spec', 'nodeName') !== nodeName) return deny(`node "${nodeName}" can only create pods with spec.nodeName set to itself`);
  const owners = arr(rec(pod['metadata'])['ownerReferences']).map(rec);
  if (owners.length > 1) return deny(`node "${nodeName}" can only create pods with a single owner reference set to itself`);
  const owner = owners[0];
  if (!owner) return deny(`node "${nodeName}" can only create pods with an owner reference set to itself`);
  if (owner['apiVersion'] !== 'v1' || owner['kind'] !== 'Node' || owner['name'] !== nodeName) {
    return deny(`node "${nodeName}" can only create pods with an owner reference set to itself`);
  }
  if (owner['controller'] !== true) return deny(`node "${nodeName}" can only create pods with a controller owner reference set to itself`);
  if (owner['blockOwnerDeletion'] === true) return deny(`node "${nodeName}" must not set blockOwnerDeletion on an owner reference`);
  const node = view.get('nodes', '', nodeName);
  if (!node) return { allowed: false, reason: '', notFound: { group: '', resource: 'nodes', name: nodeName } };
  const nodeUid = str(node, 'metadata', 'uid');
  if (owner['uid'] !== nodeUid) return deny(`node ${nodeName} UID mismatch: expected ${String(owner['uid'] ?? '')} got ${nodeUid}`);

  if (str(pod, 'spec', 'serviceAccountName') !== '') return deny(`node "${nodeName}" can not create pods that reference a service account`);
  const refs = podReferences(pod);
  if (refs.secrets.size > 0) return deny(`node "${nodeName}" can not create pods that reference secrets`);
  if (refs.configMaps.size > 0) return deny(`node "${nodeName}" can not create pods that reference configmaps`);
  const volumes = arr(rec(pod['spec'])['volumes']).map(rec);
  if (volumes.some((v) => arr(rec(v['projected'])['sources']).some((s) => rec(s)['clusterTrustBundle'] !== undefined))) {
    return deny(`node "${nodeName}" can not create pods that reference clustertrustbundles`);
  }
  if (volumes.some((v) => v['persistentVolumeClaim'] !== undefined)) return deny(`node "${nodeName}" can not create pods that reference persistentvolumeclaims`);
  return ALLOW;
}

function admitPodStatus(nodeName: string, op: Operation, object: Record<string, unknown> | undefined, old: Record<string, unknown> | undefined): Decision {
  if (op !== 'UPDATE') return deny(`unexpected operation "${op}"`);
  // No stored pod: the update fails with NotFound in storage.
  if (!old) return ALLOW;
  if (str(old, 'spec', 'nodeName') !== nodeName) return deny(`node "${nodeName}" can only update pod status for pods with spec.nodeName set to itself`);
  const next = object ?? {};
  if (!sameStringMap(rec(rec(old['metadata'])['labels']), rec(rec(next['metadata'])['labels']))) {
    return deny(`node "${nodeName}" cannot update labels through pod status`);
  }
  const claimStatuses = (o: Record<string, unknown>) => arr(rec(o['status'])['resourceClaimStatuses'])
    .map((s) => `${String(rec(s)['name'])}=${String(rec(s)['resourceClaimName'] ?? '<nil>')}`);
  if (claimStatuses(old).join('\n') !== claimStatuses(next).join('\n')) return deny(`node "${nodeName}" cannot update resource claim statues`);
  return ALLOW;
}

function admitPodEviction(nodeName: string, op: Operation, attrs: RequestAttributes, object: Record<string, unknown> | undefined, view: ClusterView): AdmissionDecision {
  if (op !== 'CREATE') return deny(`unexpected operation ${op}`);
  const podName = attrs.name || str(object ?? {}, 'metadata', 'name');
  if (!podName) return deny('could not determine pod from request data');
  const existing = view.get('pods', attrs.namespace, podName);
  if (!existing) return { allowed: false, reason: '', notFound: { group: '', resource: 'pods', name: podName } };
  if (str(existing, 'spec', 'nodeName') !== nodeName) return deny(`node ${nodeName} can only evict pods with spec.nodeName set to itself`);
  return ALLOW;
}

function admitNode(nodeName: string, op: Operation, attrs: RequestAttributes, object: Record<string, unknown> | undefined, old: Record<string, unknown> | undefined): Decision {
  const requested = attrs.name || str(object ?? {}, 'metadata', 'name');
  if (requested !== nodeName) return deny(`node "${nodeName}" is not allowed to modify node "${requested}"`);
  if (op === 'CREATE') {
    const nodeObj = object ?? {};
    if (rec(nodeObj['spec'])['configSource'] != null) return deny(`node "${nodeName}" is not allowed to create pods with a non-nil configSource`);
    const forbiddenLabels = forbiddenNodeLabels(modifiedLabels(labelsOf(nodeObj), {}));
    if (forbiddenLabels.length > 0) return deny(`node "${nodeName}" is not allowed to set the following labels: ${forbiddenLabels.join(', ')}`);
  }
  if (op === 'UPDATE' && object && old) {
    const configSource = rec(object['spec'])['configSource'];
    if (configSource != null && JSON.stringify(configSource) !== JSON.stringify(rec(old['spec'])['configSource'] ?? null)) {
      return deny(`node "${nodeName}" is not allowed to update configSource to a new non-nil configSource`);
    }
    if (!sameTaints(rec(object['spec'])['taints'], rec(old['spec'])['taints'])) return deny(`node "${nodeName}" is not allowed to modify taints`);
    const forbiddenLabels = forbiddenNodeLabels(modifiedLabels(labelsOf(object), labelsOf(old)));
    if (forbiddenLabels.length > 0) return deny(`is not allowed to modify labels: ${forbiddenLabels.join(', ')}`);
  }
  return ALLOW;
}

/** The labels kubelets may set on their Node (k8s.io/kubelet/pkg/apis well_known_labels). */
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
  'beta.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
]);
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];
const NODE_RESTRICTION_LABEL_NAMESPACE = 'node-restriction.kubernetes.io';

function labelNamespace(key: string): string {
  const slash = key.indexOf('/');
  return slash >= 0 ? key.slice(0, slash) : '';
}

const inNamespace = (ns: string, domain: string) => ns === domain || ns.endsWith(`.${domain}`);

function forbiddenNodeLabels(keys: string[]): string[] {
  return keys.filter((key) => {
    const ns = labelNamespace(key);
    if (inNamespace(ns, NODE_RESTRICTION_LABEL_NAMESPACE)) return true;
    const kubernetesLabel = inNamespace(ns, 'kubernetes.io') || inNamespace(ns, 'k8s.io');
    const kubeletLabel = KUBELET_LABELS.has(key) || KUBELET_LABEL_NAMESPACES.some((d) => inNamespace(ns, d));
    return kubernetesLabel && !kubeletLabel;
  }).sort();
}

function modifiedLabels(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  const keys = new Set<string>();
  for (const [k, v] of Object.entries(a)) if (!(k in b) || b[k] !== v) keys.add(k);
  for (const [k, v] of Object.entries(b)) if (!(k in a) || a[k] !== v) keys.add(k);
  return [...keys];
}

function labelsOf(o: Record<string, unknown>): Record<string, unknown> {
  return rec(rec(o['metadata'])['labels']);
}

/** Semantic equality as apimachinery's: a missing and an empty list are equal. */
function sameTaints(a: unknown, b: unknown): boolean {
  const norm = (t: unknown) => arr(t).map((x) => {
    const taint = rec(x);
    return [taint['key'] ?? '', taint['value'] ?? '', taint['effect'] ?? '', taint['timeAdded'] ?? null];
  });
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}

function sameStringMap(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return modifiedLabels(a, b).length === 0;
}

function admitTokenRequest(nodeName: string, op: Operation, attrs: RequestAttributes, object: Record<string, unknown> | undefined, view: ClusterView): AdmissionDecision {
  if (op !== 'CREATE' || attrs.subresource !== 'token') return ALLOW;
  const ref = rec(rec((object ?? {})['spec'])['boundObjectRef']);
  if (ref['apiVersion'] !== 'v1' || ref['kind'] !== 'Pod' || typeof ref['name'] !== 'string' || ref['name'] === '') {
    return deny('node requested token not bound to a pod');
  }
  if (typeof ref['uid'] !== 'string' || ref['uid'] === '') return deny('node requested token with a pod binding without a uid');
  const pod = view.get('pods', attrs.namespace, ref['name']);
  if (!pod) return { allowed: false, reason: '', notFound: { group: '', resource: 'pods', name: ref['name'] } };
  if (ref['uid'] !== str(pod, 'metadata', 'uid')) {
    return deny(`the UID in the bound object reference (${ref['uid']}) does not match the UID in record. The object might have been deleted and then recreated`);
  }
  if (str(pod, 'spec', 'nodeName') !== nodeName) return deny('node requested token bound to a pod scheduled on a different node');
  return ALLOW;
}

function admitLease(nodeName: string, op: Operation, attrs: RequestAttributes, object: Record<string, unknown> | undefined): Decision {
  if (attrs.namespace !== NODE_LEASE_NAMESPACE) return deny(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
  const name = op === 'CREATE' ? str(object ?? {}, 'metadata', 'name') : attrs.name;
  if (name !== nodeName) return deny('can only access node lease with the same name as the requesting node');
  return ALLOW;
}

// ---- the Forbidden answers ----

/**
 * What kube-apiserver's authorization filter says after `<resource> "<name>" is forbidden: `:
 * `User "u" cannot get resource "secrets" in API group "" in the namespace "ns"[: reason]`.
 */
export function authorizationFailure(attrs: RequestAttributes, reason: string): string {
  const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const scope = attrs.namespace ? `in the namespace "${attrs.namespace}"` : 'at the cluster scope';
  const msg = `User "${attrs.user.username}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.apiGroup}" ${scope}`;
  return reason ? `${msg}: ${reason}` : msg;
}

/** The whole Forbidden message of an authorization denial, e.g. `secrets "s" is forbidden: User "..." cannot get ...: no relationship found ...`. */
export function forbiddenMessage(attrs: RequestAttributes, reason: string): string {
  return authorizationError(attrs, reason).message;
}

/** The 403 Status of an authorization denial (details name and kind as kube's NewForbidden). */
export function authorizationError(attrs: RequestAttributes, reason: string): ApiError {
  return forbidden({ group: attrs.apiGroup, resource: attrs.resource }, effectiveName(attrs), authorizationFailure(attrs, reason));
}

/** The 403 Status of a non-resource denial: `forbidden: User "u" cannot get path "/x"`. */
export function nonResourceAuthorizationError(req: { user: UserInfo; verb: string; path: string }, reason: string): ApiError {
  const msg = `User "${req.user.username}" cannot ${req.verb} path "${req.path}"`;
  return forbiddenPath(reason ? `${msg}: ${reason}` : msg);
}

/**
 * The Status of an admission refusal (admission.NewForbidden): 403 `<resource> "<name>" is forbidden: <reason>`, the
 * name from the request or else the object (generateName, then "Unknown"); 404 when the plugin found an object missing.
 */
export function admissionError(attrs: RequestAttributes, object: Record<string, unknown> | undefined, decision: AdmissionDecision): ApiError {
  if (decision.notFound) return notFound({ group: decision.notFound.group, resource: decision.notFound.resource }, decision.notFound.name);
  const meta = rec((object ?? {})['metadata']);
  const name = attrs.name || (typeof meta['name'] === 'string' && meta['name']) || (typeof meta['generateName'] === 'string' && meta['generateName']) || 'Unknown';
  return forbidden({ group: attrs.apiGroup, resource: attrs.resource }, name, decision.reason);
}

// ---- plain-object helpers ----

function rec(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function str(o: Record<string, unknown>, ...path: string[]): string {
  let cur: unknown = o;
  for (const key of path) cur = rec(cur)[key];
  return typeof cur === 'string' ? cur : '';
}
