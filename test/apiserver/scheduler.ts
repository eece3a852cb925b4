// Binding pods to nodes the way kube-scheduler's DefaultBinder does: POST pods/<name>/binding with the pod's uid.
import { apiRequest, type ApiCredentials } from './test-client.js';
import type { TestApiServer } from './test-apiserver.js';

/** The scheduler's failure to bind, carrying the API server's answer. */
export class BindError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'BindError';
  }
}

/**
 * Binds a pod to a node: reads the pod for its uid, then creates a v1 Binding (metadata namespace, name and uid of the
 * pod; target Node/<node>), as DefaultBinder does. Throws BindError with the Status when the server refuses.
 */
export async function bindPod(target: TestApiServer | ApiCredentials, namespace: string, name: string, node: string): Promise<void> {
  const creds = 'admin' in target ? target.admin : target;
  const podPath = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
  const pod = await apiRequest<{ metadata?: { uid?: string }; message?: string }>(creds, 'GET', podPath);
  if (pod.status !== 200) throw new BindError(`get pod ${namespace}/${name}: ${pod.status} ${pod.body?.message ?? pod.text}`, pod.status, pod.body);
  const binding = {
    apiVersion: 'v1',
    kind: 'Binding',
    metadata: { namespace, name, uid: pod.body.metadata?.uid },
    target: { kind: 'Node', name: node },
  };
  const res = await apiRequest<{ message?: string }>(creds, 'POST', `${podPath}/binding`, { body: binding });
  if (res.status !== 201) throw new BindError(`bind ${namespace}/${name} to ${node}: ${res.status} ${res.body?.message ?? res.text}`, res.status, res.body);
}
