// Authorization tables: the admin, service accounts, and the Node authorizer's graph rules for system:node:<name>; Forbidden messages as kube words them.
import { authorizationError, authorize, authorizeNonResource, forbiddenMessage, nonResourceAuthorizationError } from '../authz.js';
import type { RequestAttributes, UserInfo } from '../types.js';
import { FakeView } from './auth-fake-view.js';

const node1: UserInfo = { username: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'] };
const admin: UserInfo = { username: 'admin', groups: ['system:masters', 'system:authenticated'] };
const sa: UserInfo = { username: 'system:serviceaccount:ns1:default', groups: ['system:serviceaccounts', 'system:serviceaccounts:ns1', 'system:authenticated'] };

function attrs(user: UserInfo, verb: string, resource: string, extra: Partial<RequestAttributes> = {}): RequestAttributes {
  return { user, verb, apiGroup: '', apiVersion: 'v1', resource, subresource: '', namespace: '', name: '', ...extra };
}

const view = new FakeView()
  .add('pods', {
    metadata: { name: 'web', namespace: 'ns1', uid: 'p1' },
    spec: {
      nodeName: 'n1',
      serviceAccountName: 'runner',
      imagePullSecrets: [{ name: 'pull' }],
      containers: [{
        name: 'c',
        envFrom: [{ secretRef: { name: 'env-from-secret' } }, { configMapRef: { name: 'env-from-cm' } }],
        env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 'env-secret', key: 'k' } } }, { name: 'B', valueFrom: { configMapKeyRef: { name: 'env-cm', key: 'k' } } }],
      }],
      initContainers: [{ name: 'i', env: [{ name: 'C', valueFrom: { secretKeyRef: { name: 'init-secret', key: 'k' } } }] }],
      volumes: [
        { name: 'v1', secret: { secretName: 'vol-secret' } },
        { name: 'v2', configMap: { name: 'vol-cm' } },
        { name: 'v3', projected: { sources: [{ secret: { name: 'proj-secret' } }, { configMap: { name: 'kube-root-ca.crt' } }, { serviceAccountToken: { path: 'token' } }] } },
        { name: 'v4', persistentVolumeClaim: { claimName: 'data' } },
      ],
    },
  })
  .add('pods', { metadata: { name: 'elsewhere', namespace: 'ns1', uid: 'p2' }, spec: { nodeName: 'n2', volumes: [{ name: 'v', secret: { secretName: 'other-secret' } }] } })
  .add('pods', { metadata: { name: 'pending', namespace: 'ns1', uid: 'p3' }, spec: { volumes: [{ name: 'v', secret: { secretName: 'pending-secret' } }] } })
  .add('persistentvolumeclaims', { metadata: { name: 'data', namespace: 'ns1' }, spec: { volumeName: 'pv-data' } });

type Row = [string, RequestAttributes, boolean, string];

const nodeRows: Row[] = [
  // Objects the node's pods reference.
  ['get a secret its pod mounts', attrs(node1, 'get', 'secrets', { namespace: 'ns1', name: 'vol-secret' }), true, ''],
  ['get an image pull secret', attrs(node1, 'get', 'secrets', { namespace: 'ns1', name: 'pull' }), true, ''],
  ['get envFrom / env secrets', attrs(node1, 'get', 'secrets', { namespace: 'ns1', name: 'env-from-secret' }), true, ''],
  ['get an init container env secret', attrs(node1, 'get', 'secrets', { namespace: 'ns1', name: 'init-secret' }), true, ''],
  ['get a projected secret', attrs(node1, 'get', 'secrets', { namespace: 'ns1', name: 'proj-secret' }), true, ''],
  ['watch a secret by metadata.name', attrs(node1, 'watch', 'secrets', { namespace: 'ns1', fieldSelector: 'metadata.name=vol-secret' }), true, ''],
  ['list a configmap by metadata.name', attrs(node1, 'list', 'configmaps', { namespace: 'ns1', fieldSelector: 'metadata.name=kube-root-ca.crt' }), true, ''],
  ['get env / volume configmaps', attrs(node1, 'get', 'configmaps', { namespace: 'ns1', name: 'env-cm' }), true, ''],
  ['get a referenced pvc', attrs(node1, 'get', 'persistentvolumeclaims', { namespace: 'ns1', name: 'data' }), true, ''],
  ['get the pv of a referenced pvc', attrs(node1, 'get', 'persistentvolumes', { name: 'pv-data' }), true, ''],
  ['a token for the SA of its pod', attrs(node1, 'create', 'serviceaccounts', { subresource: 'token', namespace: 'ns1', name: 'runner' }), true, ''],
  // Everything else of those kinds.
  ['get a secret of a pod on another node', attrs(node1, 'get', 'secrets', { namespace: 'ns1', name: 'other-secret' }), false, "no relationship found between node 'n1' and this object"],
  ['get a secret of an unbound pod', attrs(node1, 'get', 'secrets', { namespace: 'ns1', name: 'pending-secret' }), false, "no relationship found between node 'n1' and this object"],
  ['same name in another namespace', attrs(node1, 'get', 'secrets', { namespace: 'ns2', name: 'vol-secret' }), false, "no relationship found between node 'n1' and this object"],
  ['list all secrets of a namespace', attrs(node1, 'list', 'secrets', { namespace: 'ns1' }), false, 'No Object name found'],
  ['list secrets cluster-wide', attrs(node1, 'list', 'secrets'), false, 'can only read namespaced object of this type'],
  ['update a referenced secret', attrs(node1, 'update', 'secrets', { namespace: 'ns1', name: 'vol-secret' }), false, 'can only read resources of this type'],
  ['get a service account', attrs(node1, 'get', 'serviceaccounts', { namespace: 'ns1', name: 'runner' }), false, 'can only create tokens for individual service accounts'],
  ['a token for another SA', attrs(node1, 'create', 'serviceaccounts', { subresource: 'token', namespace: 'ns1', name: 'default' }), false, "no relationship found between node 'n1' and this object"],
  // Pods (AuthorizeNodeWithSelectors).
  ['list its pods by spec.nodeName', attrs(node1, 'list', 'pods', { fieldSelector: 'spec.nodeName=n1' }), true, ''],
  ['watch its pods by spec.nodeName', attrs(node1, 'watch', 'pods', { fieldSelector: 'spec.nodeName==n1' }), true, ''],
  ['list pods of another node', attrs(node1, 'list', 'pods', { fieldSelector: 'spec.nodeName=n2' }), false, 'can only list/watch pods with spec.nodeName field selector'],
  ['list all pods', attrs(node1, 'list', 'pods'), false, 'can only list/watch pods with spec.nodeName field selector'],
  ['get a pod bound to it', attrs(node1, 'get', 'pods', { namespace: 'ns1', name: 'web' }), true, ''],
  ['get a pod bound elsewhere', attrs(node1, 'get', 'pods', { namespace: 'ns1', name: 'elsewhere' }), false, "no relationship found between node 'n1' and this object"],
  ['create a (mirror) pod', attrs(node1, 'create', 'pods', { namespace: 'ns1' }), true, ''],
  ['delete a pod', attrs(node1, 'delete', 'pods', { namespace: 'ns1', name: 'web' }), true, ''],
  ['patch pod status', attrs(node1, 'patch', 'pods', { subresource: 'status', namespace: 'ns1', name: 'web' }), true, ''],
  ['update pod status', attrs(node1, 'update', 'pods', { subresource: 'status', namespace: 'ns1', name: 'web' }), true, ''],
  ['update a pod', attrs(node1, 'update', 'pods', { namespace: 'ns1', name: 'web' }), false, ''],
  ['bind a pod', attrs(node1, 'create', 'pods', { subresource: 'binding', namespace: 'ns1', name: 'web' }), false, ''],
  // Nodes.
  ['get its node', attrs(node1, 'get', 'nodes', { name: 'n1' }), true, ''],
  ['watch its node by metadata.name', attrs(node1, 'watch', 'nodes', { fieldSelector: 'metadata.name=n1' }), true, ''],
  ['get another node', attrs(node1, 'get', 'nodes', { name: 'n2' }), false, "node 'n1' cannot read 'n2', only its own Node object"],
  ['list all nodes', attrs(node1, 'list', 'nodes'), false, "node 'n1' cannot read all nodes, only its own Node object"],
  ['create a node', attrs(node1, 'create', 'nodes'), true, ''],
  ['patch a node', attrs(node1, 'patch', 'nodes', { name: 'n1' }), true, ''],
  ['patch node status', attrs(node1, 'patch', 'nodes', { subresource: 'status', name: 'n1' }), true, ''],
  ['delete its node', attrs(node1, 'delete', 'nodes', { name: 'n1' }), false, ''],
  // Leases.
  ['get its lease', attrs(node1, 'get', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease', name: 'n1' }), true, ''],
  ['create a lease', attrs(node1, 'create', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease' }), true, ''],
  ['update its lease', attrs(node1, 'update', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease', name: 'n1' }), true, ''],
  ['update another lease', attrs(node1, 'update', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease', name: 'n2' }), false, 'can only access node lease with the same name as the requesting node'],
  ['a lease elsewhere', attrs(node1, 'get', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'default', name: 'n1' }), false, 'can only access leases in the "kube-node-lease" system namespace'],
  ['list leases', attrs(node1, 'list', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease' }), false, 'can only get, create, update, patch, or delete a node lease'],
  // Static node rules.
  ['create core events', attrs(node1, 'create', 'events', { namespace: 'ns1' }), true, ''],
  ['patch core events', attrs(node1, 'patch', 'events', { namespace: 'ns1', name: 'e' }), true, ''],
  ['events.k8s.io events are not in the node rules', attrs(node1, 'create', 'events', { apiGroup: 'events.k8s.io', namespace: 'ns1' }), false, ''],
  ['watch services', attrs(node1, 'watch', 'services'), true, ''],
  ['get endpoints', attrs(node1, 'get', 'endpoints', { namespace: 'ns1', name: 'e' }), true, ''],
  ['namespaces are not readable', attrs(node1, 'get', 'namespaces', { name: 'ns1' }), false, ''],
  ['create a token review', attrs(node1, 'create', 'tokenreviews', { apiGroup: 'authentication.k8s.io' }), true, ''],
];

describe('Node authorizer', () => {
  test.each(nodeRows)('%s', (_title, a, allowed, reason) => {
    const d = authorize(a, view);
    expect(d).toEqual({ allowed, reason });
  });

  test('a node user without a name is unknown', () => {
    expect(authorize(attrs({ username: 'system:node:', groups: ['system:nodes'] }, 'get', 'nodes', { name: 'x' }), view))
      .toEqual({ allowed: false, reason: 'unknown node for user "system:node:"' });
  });

  test('system:node:<name> outside system:nodes is not a node', () => {
    expect(authorize(attrs({ username: 'system:node:n1', groups: ['system:authenticated'] }, 'get', 'nodes', { name: 'n1' }), view))
      .toEqual({ allowed: false, reason: '' });
  });
});

describe('admin and service accounts', () => {
  test('system:masters may do anything', () => {
    expect(authorize(attrs(admin, 'get', 'secrets', { namespace: 'ns1', name: 'other-secret' }), view).allowed).toBe(true);
    expect(authorize(attrs(admin, 'deletecollection', 'pods', { namespace: 'ns1' }), view).allowed).toBe(true);
    expect(authorize(attrs(admin, 'create', 'pods', { subresource: 'binding', namespace: 'ns1', name: 'web' }), view).allowed).toBe(true);
    expect(authorizeNonResource({ user: admin, verb: 'post', path: '/anything' }).allowed).toBe(true);
  });

  test('a service account gets nothing but discovery and self reviews', () => {
    expect(authorize(attrs(sa, 'list', 'pods', { namespace: 'ns1' }), view)).toEqual({ allowed: false, reason: '' });
    expect(authorize(attrs(sa, 'get', 'secrets', { namespace: 'ns1', name: 'vol-secret' }), view)).toEqual({ allowed: false, reason: '' });
    expect(authorize(attrs(sa, 'create', 'selfsubjectaccessreviews', { apiGroup: 'authorization.k8s.io' }), view).allowed).toBe(true);
  });

  test('discovery, version and health paths for every authenticated user', () => {
    for (const path of ['/api', '/api/v1', '/apis', '/apis/coordination.k8s.io/v1', '/version', '/healthz', '/livez', '/readyz', '/openapi/v3']) {
      expect(authorizeNonResource({ user: sa, verb: 'get', path }).allowed).toBe(true);
      expect(authorizeNonResource({ user: node1, verb: 'get', path }).allowed).toBe(true);
    }
    expect(authorizeNonResource({ user: node1, verb: 'get', path: '/metrics' }).allowed).toBe(false);
    expect(authorizeNonResource({ user: sa, verb: 'post', path: '/api' }).allowed).toBe(false);
    expect(authorizeNonResource({ user: sa, verb: 'get', path: '/openid/v1/jwks' }).allowed).toBe(true);
  });
});

describe('Forbidden messages', () => {
  test('a namespaced denial with the node authorizer reason', () => {
    const a = attrs(node1, 'get', 'secrets', { namespace: 'ns1', name: 'other-secret' });
    expect(forbiddenMessage(a, authorize(a, view).reason)).toBe(
      'secrets "other-secret" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "ns1": no relationship found between node \'n1\' and this object',
    );
    expect(authorizationError(a, 'x').status).toMatchObject({ code: 403, reason: 'Forbidden', details: { name: 'other-secret', kind: 'secrets' } });
  });

  test('cluster scope, group, subresource, no reason, list by field selector', () => {
    expect(forbiddenMessage(attrs(sa, 'list', 'nodes'), '')).toBe('nodes is forbidden: User "system:serviceaccount:ns1:default" cannot list resource "nodes" in API group "" at the cluster scope');
    expect(forbiddenMessage(attrs(node1, 'update', 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease', name: 'n2' }), 'r')).toBe(
      'leases.coordination.k8s.io "n2" is forbidden: User "system:node:n1" cannot update resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease": r',
    );
    expect(forbiddenMessage(attrs(node1, 'create', 'pods', { subresource: 'binding', namespace: 'ns1', name: 'web' }), '')).toBe(
      'pods "web" is forbidden: User "system:node:n1" cannot create resource "pods/binding" in API group "" in the namespace "ns1"',
    );
    expect(forbiddenMessage(attrs(node1, 'watch', 'secrets', { namespace: 'ns1', fieldSelector: 'metadata.name=s' }), 'r')).toBe(
      'secrets "s" is forbidden: User "system:node:n1" cannot watch resource "secrets" in API group "" in the namespace "ns1": r',
    );
    expect(nonResourceAuthorizationError({ user: sa, verb: 'get', path: '/metrics' }, '').message).toBe(
      'forbidden: User "system:serviceaccount:ns1:default" cannot get path "/metrics"',
    );
  });
});
