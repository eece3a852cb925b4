// NodeRestriction tables (own Node, Lease, mirror pods, pod status and deletion, bound tokens) and the ServiceAccount plugin's pod mutation.
import { admissionError, admit } from '../authz.js';
import { admitServiceAccount } from '../sa-admission.js';
import type { RequestAttributes, UserInfo } from '../types.js';
import { FakeView } from './auth-fake-view.js';

const node1: UserInfo = { username: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'] };
const admin: UserInfo = { username: 'admin', groups: ['system:masters', 'system:authenticated'] };

function attrs(verb: string, resource: string, extra: Partial<RequestAttributes> = {}): RequestAttributes {
  return { user: node1, verb, apiGroup: '', apiVersion: 'v1', resource, subresource: '', namespace: '', name: '', ...extra };
}

const view = new FakeView()
  .add('nodes', { metadata: { name: 'n1', uid: 'node-uid' } })
  .add('pods', { metadata: { name: 'mine', namespace: 'ns1', uid: 'p1', labels: { app: 'a' } }, spec: { nodeName: 'n1', serviceAccountName: 'default' } })
  .add('pods', { metadata: { name: 'theirs', namespace: 'ns1', uid: 'p2' }, spec: { nodeName: 'n2', serviceAccountName: 'default' } });

const nodeObj = (labels: Record<string, string> = {}, spec: Record<string, unknown> = {}) => ({ metadata: { name: 'n1', labels }, spec });

function mirrorPod(extra: { spec?: Record<string, unknown>; metadata?: Record<string, unknown> } = {}): Record<string, unknown> {
  return {
    metadata: {
      name: 'static-web-n1',
      namespace: 'ns1',
      annotations: { 'kubernetes.io/config.mirror': 'hash' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'node-uid', controller: true }],
      ...extra.metadata,
    },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }], ...extra.spec },
  };
}

type Row = [string, RequestAttributes, Record<string, unknown> | undefined, Record<string, unknown> | undefined, string | null];

const rows: Row[] = [
  // Nodes.
  ['create its node', attrs('create', 'nodes'), nodeObj({ 'kubernetes.io/hostname': 'n1', 'kubernetes.io/os': 'linux', 'node.kubernetes.io/exclude-from-external-load-balancers': '' }), undefined, null],
  ['create another node', attrs('create', 'nodes'), { metadata: { name: 'n2' } }, undefined, 'node "n1" is not allowed to modify node "n2"'],
  ['patch another node', attrs('patch', 'nodes', { name: 'n2' }), nodeObj(), nodeObj(), 'node "n1" is not allowed to modify node "n2"'],
  ['patch another node status', attrs('patch', 'nodes', { name: 'n2', subresource: 'status' }), nodeObj(), nodeObj(), 'node "n1" is not allowed to modify node "n2"'],
  ['register with a node-restriction label', attrs('create', 'nodes'), nodeObj({ 'node-restriction.kubernetes.io/pool': 'x', 'foo.node-restriction.kubernetes.io/a': 'b' }), undefined,
    'node "n1" is not allowed to set the following labels: foo.node-restriction.kubernetes.io/a, node-restriction.kubernetes.io/pool'],
  ['register with a role label', attrs('create', 'nodes'), nodeObj({ 'node-role.kubernetes.io/control-plane': '' }), undefined,
    'node "n1" is not allowed to set the following labels: node-role.kubernetes.io/control-plane'],
  ['register with own labels', attrs('create', 'nodes'), nodeObj({ 'example.com/tier': 'gold', 'kubelet.kubernetes.io/x': 'y', 'topology.kubernetes.io/zone': 'z' }), undefined, null],
  ['register with a configSource', attrs('create', 'nodes'), nodeObj({}, { configSource: { configMap: {} } }), undefined, 'node "n1" is not allowed to create pods with a non-nil configSource'],
  ['update its status', attrs('patch', 'nodes', { name: 'n1', subresource: 'status' }), nodeObj({ a: 'b' }), nodeObj({ a: 'b' }), null],
  ['remove a restricted label', attrs('update', 'nodes', { name: 'n1' }), nodeObj(), nodeObj({ 'node-restriction.kubernetes.io/pool': 'x' }),
    'is not allowed to modify labels: node-restriction.kubernetes.io/pool'],
  ['change its hostname label', attrs('update', 'nodes', { name: 'n1' }), nodeObj({ 'kubernetes.io/hostname': 'new' }), nodeObj({ 'kubernetes.io/hostname': 'old' }), null],
  ['remove its taint', attrs('patch', 'nodes', { name: 'n1' }), nodeObj(), nodeObj({}, { taints: [{ key: 'k', effect: 'NoSchedule' }] }), 'node "n1" is not allowed to modify taints'],
  ['taints: missing equals empty', attrs('patch', 'nodes', { name: 'n1' }), nodeObj({}, { taints: [] }), nodeObj(), null],
  ['set a new configSource', attrs('update', 'nodes', { name: 'n1' }), nodeObj({}, { configSource: { configMap: { name: 'x' } } }), nodeObj(),
    'node "n1" is not allowed to update configSource to a new non-nil configSource'],
  // Leases.
  ['create its lease', attrs('create', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease' }), { metadata: { name: 'n1' } }, undefined, null],
  ['create another lease', attrs('create', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease' }), { metadata: { name: 'n2' } }, undefined,
    'can only access node lease with the same name as the requesting node'],
  ['update its lease', attrs('update', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease', name: 'n1' }), { metadata: { name: 'n1' } }, { metadata: { name: 'n1' } }, null],
  ['a lease outside kube-node-lease', attrs('create', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'default' }), { metadata: { name: 'n1' } }, undefined,
    'can only access leases in the "kube-node-lease" system namespace'],
  // Pods.
  ['create a mirror pod', attrs('create', 'pods', { namespace: 'ns1' }), mirrorPod(), undefined, null],
  ['create a regular pod', attrs('create', 'pods', { namespace: 'ns1' }), { metadata: { name: 'p' }, spec: { nodeName: 'n1' } }, undefined,
    'pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods'],
  ['a mirror pod for another node', attrs('create', 'pods', { namespace: 'ns1' }), mirrorPod({ spec: { nodeName: 'n2' } }), undefined,
    'node "n1" can only create pods with spec.nodeName set to itself'],
  ['a mirror pod without owner', attrs('create', 'pods', { namespace: 'ns1' }), mirrorPod({ metadata: { ownerReferences: [] } }), undefined,
    'node "n1" can only create pods with an owner reference set to itself'],
  ['a mirror pod with a non-controller owner', attrs('create', 'pods', { namespace: 'ns1' }),
    mirrorPod({ metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'node-uid' }] } }), undefined,
    'node "n1" can only create pods with a controller owner reference set to itself'],
  ['a mirror pod owned by a stale node', attrs('create', 'pods', { namespace: 'ns1' }),
    mirrorPod({ metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'old', controller: true }] } }), undefined,
    'node n1 UID mismatch: expected old got node-uid'],
  ['a mirror pod using a secret', attrs('create', 'pods', { namespace: 'ns1' }), mirrorPod({ spec: { volumes: [{ name: 'v', secret: { secretName: 's' } }] } }), undefined,
    'node "n1" can not create pods that reference secrets'],
  ['a mirror pod using a configmap env', attrs('create', 'pods', { namespace: 'ns1' }),
    mirrorPod({ spec: { containers: [{ name: 'c', envFrom: [{ configMapRef: { name: 'cm' } }] }] } }), undefined, 'node "n1" can not create pods that reference configmaps'],
  ['a mirror pod with a service account', attrs('create', 'pods', { namespace: 'ns1' }), mirrorPod({ spec: { serviceAccountName: 'default' } }), undefined,
    'node "n1" can not create pods that reference a service account'],
  ['a mirror pod with a pvc', attrs('create', 'pods', { namespace: 'ns1' }), mirrorPod({ spec: { volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }] } }), undefined,
    'node "n1" can not create pods that reference persistentvolumeclaims'],
  ['delete its pod', attrs('delete', 'pods', { namespace: 'ns1', name: 'mine' }), undefined, undefined, null],
  ['delete a pod of another node', attrs('delete', 'pods', { namespace: 'ns1', name: 'theirs' }), undefined, undefined, 'node "n1" can only delete pods with spec.nodeName set to itself'],
  ['patch its pod status', attrs('patch', 'pods', { namespace: 'ns1', name: 'mine', subresource: 'status' }),
    { metadata: { name: 'mine', labels: { app: 'a' } }, status: { phase: 'Running' } }, view.get('pods', 'ns1', 'mine'), null],
  ['patch status of a pod of another node', attrs('patch', 'pods', { namespace: 'ns1', name: 'theirs', subresource: 'status' }),
    { metadata: { name: 'theirs' } }, view.get('pods', 'ns1', 'theirs'), 'node "n1" can only update pod status for pods with spec.nodeName set to itself'],
  ['relabel through status', attrs('patch', 'pods', { namespace: 'ns1', name: 'mine', subresource: 'status' }),
    { metadata: { name: 'mine', labels: { app: 'b' } } }, view.get('pods', 'ns1', 'mine'), 'node "n1" cannot update labels through pod status'],
  ['update a pod spec', attrs('update', 'pods', { namespace: 'ns1', name: 'mine' }), {}, {}, 'unexpected operation "UPDATE", node "n1" can only create and delete mirror pods'],
  ['a binding', attrs('create', 'pods', { namespace: 'ns1', name: 'mine', subresource: 'binding' }), {}, undefined, 'unexpected pod subresource "binding", only \'status\' and \'eviction\' are allowed'],
  // TokenRequests.
  ['a token bound to its pod', attrs('create', 'serviceaccounts', { namespace: 'ns1', name: 'default', subresource: 'token' }),
    { spec: { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'mine', uid: 'p1' } } }, undefined, null],
  ['an unbound token', attrs('create', 'serviceaccounts', { namespace: 'ns1', name: 'default', subresource: 'token' }), { spec: {} }, undefined, 'node requested token not bound to a pod'],
  ['a token without the pod uid', attrs('create', 'serviceaccounts', { namespace: 'ns1', name: 'default', subresource: 'token' }),
    { spec: { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'mine' } } }, undefined, 'node requested token with a pod binding without a uid'],
  ['a token bound to a pod of another node', attrs('create', 'serviceaccounts', { namespace: 'ns1', name: 'default', subresource: 'token' }),
    { spec: { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'theirs', uid: 'p2' } } }, undefined, 'node requested token bound to a pod scheduled on a different node'],
  ['a token for a recreated pod', attrs('create', 'serviceaccounts', { namespace: 'ns1', name: 'default', subresource: 'token' }),
    { spec: { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'mine', uid: 'old' } } }, undefined,
    'the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated'],
  // Events pass.
  ['create an event', attrs('create', 'events', { namespace: 'ns1' }), { metadata: { name: 'e' } }, undefined, null],
];

describe('NodeRestriction', () => {
  test.each(rows)('%s', (_title, a, object, old, reason) => {
    const d = admit(a, object, old, view);
    if (reason === null) {
      expect(d).toEqual({ allowed: true, reason: '' });
    } else {
      expect(d).toEqual({ allowed: false, reason });
    }
  });

  test('other users pass', () => {
    expect(admit({ ...attrs('create', 'pods', { namespace: 'ns1' }), user: admin }, { metadata: { name: 'p' }, spec: {} }, undefined, view).allowed).toBe(true);
  });

  test('objects that are gone give NotFound; refusals a Forbidden naming the object', () => {
    const del = attrs('delete', 'pods', { namespace: 'ns1', name: 'ghost' });
    expect(admissionError(del, undefined, admit(del, undefined, undefined, view)).status).toMatchObject({ code: 404, reason: 'NotFound', message: 'pods "ghost" not found' });
    const noNode = new FakeView();
    const create = attrs('create', 'pods', { namespace: 'ns1' });
    expect(admissionError(create, mirrorPod(), admit(create, mirrorPod(), undefined, noNode)).status).toMatchObject({ code: 404, message: 'nodes "n1" not found' });

    const lease = attrs('create', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease' });
    const obj = { metadata: { name: 'n2' } };
    expect(admissionError(lease, obj, admit(lease, obj, undefined, view)).status).toMatchObject({
      code: 403,
      reason: 'Forbidden',
      message: 'leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node',
      details: { name: 'n2', group: 'coordination.k8s.io', kind: 'leases' },
    });
    const status = attrs('patch', 'pods', { namespace: 'ns1', name: 'theirs', subresource: 'status' });
    expect(admissionError(status, {}, admit(status, {}, view.get('pods', 'ns1', 'theirs'), view)).message).toBe(
      'pods "theirs" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself',
    );
    const regular = attrs('create', 'pods', { namespace: 'ns1' });
    const generated = { metadata: { generateName: 'web-' }, spec: {} };
    expect(admissionError(regular, generated, admit(regular, generated, undefined, view)).message).toBe(
      'pods "web-" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods',
    );
  });
});

describe('ServiceAccount admission', () => {
  const saView = () => new FakeView()
    .add('serviceaccounts', { metadata: { name: 'default', namespace: 'ns1', uid: 'sa' } })
    .add('serviceaccounts', { metadata: { name: 'quiet', namespace: 'ns1', uid: 'sa2' }, automountServiceAccountToken: false, imagePullSecrets: [{ name: 'regcred' }] });

  const pod = (spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): Record<string, unknown> => ({
    metadata: { name: 'web', namespace: 'ns1', ...metadata },
    spec: { containers: [{ name: 'app', image: 'i' }, { name: 'side', image: 'i' }], initContainers: [{ name: 'init', image: 'i' }], ...spec },
  });

  test('defaults the service account and mounts kube-api-access-xxxxx in every container', () => {
    const p = pod();
    expect(admitServiceAccount(p, saView())).toEqual({ allowed: true, reason: '' });
    const spec = p['spec'] as { serviceAccountName: string; volumes: { name: string; projected: unknown }[]; containers: { volumeMounts: unknown[] }[]; initContainers: { volumeMounts: unknown[] }[]; imagePullSecrets?: unknown };
    expect(spec.serviceAccountName).toBe('default');
    expect(spec.volumes).toHaveLength(1);
    const volume = spec.volumes[0]!;
    expect(volume.name).toMatch(/^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(volume.projected).toEqual({
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
    });
    const mount = { name: volume.name, readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' };
    for (const c of [...spec.containers, ...spec.initContainers]) expect(c.volumeMounts).toEqual([mount]);
    expect(spec.imagePullSecrets).toBeUndefined();
  });

  test('a missing service account is refused with kube\'s lookup error', () => {
    expect(admitServiceAccount(pod({ serviceAccountName: 'ghost' }), saView())).toEqual({
      allowed: false, reason: 'error looking up service account ns1/ghost: serviceaccount "ghost" not found',
    });
    expect(admitServiceAccount(pod(), new FakeView()).reason).toBe('error looking up service account ns1/default: serviceaccount "default" not found');
  });

  test('automount off on the service account (the pod may turn it back on); pull secrets copied', () => {
    const off = pod({ serviceAccountName: 'quiet' });
    admitServiceAccount(off, saView());
    expect((off['spec'] as Record<string, unknown>)['volumes']).toBeUndefined();
    expect((off['spec'] as Record<string, unknown>)['imagePullSecrets']).toEqual([{ name: 'regcred' }]);
    const on = pod({ serviceAccountName: 'quiet', automountServiceAccountToken: true, imagePullSecrets: [{ name: 'mine' }] });
    admitServiceAccount(on, saView());
    expect((on['spec'] as { volumes: unknown[] }).volumes).toHaveLength(1);
    expect((on['spec'] as Record<string, unknown>)['imagePullSecrets']).toEqual([{ name: 'mine' }]);
    const podOff = pod({ automountServiceAccountToken: false });
    admitServiceAccount(podOff, saView());
    expect((podOff['spec'] as Record<string, unknown>)['volumes']).toBeUndefined();
  });

  test('a container that mounts the path itself is left alone; no container needing it means no volume', () => {
    const own = { name: 'mine', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' };
    const p = pod({ initContainers: [], containers: [{ name: 'a', image: 'i', volumeMounts: [own] }, { name: 'b', image: 'i' }] });
    admitServiceAccount(p, saView());
    const spec = p['spec'] as { volumes: { name: string }[]; containers: { volumeMounts: { name: string }[] }[] };
    expect(spec.containers[0]!.volumeMounts).toEqual([own]);
    expect(spec.containers[1]!.volumeMounts[0]!.name).toBe(spec.volumes[0]!.name);
    const allOwn = pod({ initContainers: [], containers: [{ name: 'a', image: 'i', volumeMounts: [own] }] });
    admitServiceAccount(allOwn, saView());
    expect((allOwn['spec'] as Record<string, unknown>)['volumes']).toBeUndefined();
  });

  test('an existing kube-api-access volume is reused', () => {
    const p = pod({ volumes: [{ name: 'kube-api-access-abcde', projected: { sources: [] } }] });
    admitServiceAccount(p, saView());
    const spec = p['spec'] as { volumes: unknown[]; containers: { volumeMounts: { name: string }[] }[] };
    expect(spec.volumes).toHaveLength(1);
    expect(spec.containers[0]!.volumeMounts[0]!.name).toBe('kube-api-access-abcde');
  });

  test('mirror pods are not mutated but may not reference service accounts, secrets or token projections', () => {
    const mirror = { 'kubernetes.io/config.mirror': 'h' };
    const m = pod({}, { annotations: mirror });
    const before = JSON.stringify(m);
    expect(admitServiceAccount(m, new FakeView())).toEqual({ allowed: true, reason: '' });
    expect(JSON.stringify(m)).toBe(before);
    expect(admitServiceAccount(pod({ serviceAccountName: 'default' }, { annotations: mirror }), saView()).reason).toBe('a mirror pod may not reference service accounts');
    expect(admitServiceAccount(pod({ imagePullSecrets: [{ name: 'x' }] }, { annotations: mirror }), saView()).reason).toBe('a mirror pod may not reference secrets');
    expect(admitServiceAccount(pod({ volumes: [{ name: 'v', projected: { sources: [{ serviceAccountToken: { path: 't' } }] } }] }, { annotations: mirror }), saView()).reason)
      .toBe('a mirror pod may not use ServiceAccountToken volume projections');
  });
});
