// What kube's controllers do for namespaces, done by the test API server itself: the system namespaces, a `default`
// service account and the `kube-root-ca.crt` configmap in every namespace, and emptying a terminating namespace.
import { ApiError } from './api-errors.js';
import type { Registry, WriteContext } from './registry.js';
import { RESOURCES, findResource, type Obj, type ResourceDef } from './resources.js';

export const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
/** The cluster IP of default/kubernetes. */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';

const ROOT_CA_DESCRIPTION =
  'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.';

function def(group: string, resource: string): ResourceDef {
  return findResource(group, 'v1', resource) as ResourceDef;
}

function controllerContext(verb: string, resource: string, namespace: string, name: string): WriteContext {
  const user = { username: 'system:kube-controller-manager', groups: ['system:masters', 'system:authenticated'] };
  return {
    user,
    attrs: { user, verb, apiGroup: '', apiVersion: 'v1', resource, subresource: '', namespace, name },
    dryRun: false,
    fieldValidation: 'Ignore',
    warnings: [],
  };
}

function name(obj: Obj): string {
  return String((obj.metadata as Obj).name);
}

/** Keeps namespaces populated and finalizes terminating ones. Call start() once the registry is built. */
export class NamespaceController {
  constructor(
    private readonly registry: Registry,
    private readonly caPem: string,
  ) {}

  start(): void {
    this.registry.onNamespaceCreated = (ns) => this.populate(name(ns));
    this.registry.onNamespaceTerminating = (ns) => this.empty(name(ns));
    this.registry.onObjectRemoved = (storage, obj) => {
      if (storage === 'pods') this.finalizeIfEmpty(String((obj.metadata as Obj).namespace));
    };
    for (const ns of SYSTEM_NAMESPACES) {
      if (!this.registry.store.get('namespaces', '', ns)) {
        this.registry.create(def('', 'namespaces'), '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, controllerContext('create', 'namespaces', ns, ns));
      }
    }
    // kube-apiserver's own Service in default (its first service IP; 10.96.0.0/16 is kubeadm's and kind's range).
    if (!this.registry.store.get('services', 'default', 'kubernetes')) {
      this.createIgnoringConflict(def('', 'services'), 'default', {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'kubernetes', namespace: 'default', labels: { component: 'apiserver', provider: 'kubernetes' } },
        spec: { type: 'ClusterIP', clusterIP: KUBERNETES_SERVICE_IP, clusterIPs: [KUBERNETES_SERVICE_IP], ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }] },
      });
    }
    // After a restart: namespaces created before, and ones that were terminating when the server stopped.
    for (const ns of this.registry.store.list('namespaces').items) {
      if ((ns.metadata as Obj).deletionTimestamp !== undefined) this.empty(name(ns));
      else this.populate(name(ns));
    }
  }

  /** The service account controller's `default` and the root-ca-cert-publisher's `kube-root-ca.crt`. */
  private populate(namespace: string): void {
    if (!this.registry.store.get('serviceaccounts', namespace, 'default')) {
      this.createIgnoringConflict(def('', 'serviceaccounts'), namespace, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace } });
    }
    if (!this.registry.store.get('configmaps', namespace, 'kube-root-ca.crt')) {
      this.createIgnoringConflict(def('', 'configmaps'), namespace, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'kube-root-ca.crt', namespace, annotations: { 'kubernetes.io/description': ROOT_CA_DESCRIPTION } },
        data: { 'ca.crt': this.caPem },
      });
    }
  }

  private createIgnoringConflict(resource: ResourceDef, namespace: string, obj: Obj): void {
    try {
      this.registry.create(resource, namespace, obj, controllerContext('create', resource.resource, namespace, name(obj)));
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 409)) throw err;
    }
  }

  /** The namespace controller: deletes the content (pods gracefully), then the namespace once no pod is left. */
  private empty(namespace: string): void {
    for (const resource of RESOURCES) {
      if (!resource.namespaced || resource.group !== '' ) continue;
      for (const obj of this.registry.store.list(resource.storage, namespace).items) {
        if (resource.storage === 'pods') {
          try {
            this.registry.delete(resource, namespace, name(obj), {}, controllerContext('delete', 'pods', namespace, name(obj)));
          } catch (err) {
            if (!(err instanceof ApiError && err.code === 404)) throw err;
          }
        } else {
          this.registry.forceRemove(resource.storage, namespace, name(obj));
        }
      }
    }
    for (const resource of RESOURCES) {
      if (resource.namespaced && resource.group !== '' && resource.storage !== 'events') {
        for (const obj of this.registry.store.list(resource.storage, namespace).items) this.registry.forceRemove(resource.storage, namespace, name(obj));
      }
    }
    this.finalizeIfEmpty(namespace);
  }

  private finalizeIfEmpty(namespace: string): void {
    const ns = this.registry.store.get('namespaces', '', namespace);
    if (!ns || (ns.metadata as Obj).deletionTimestamp === undefined) return;
    if (this.registry.store.count('pods', namespace) > 0) return;
    this.registry.forceRemove('namespaces', '', namespace);
  }
}
