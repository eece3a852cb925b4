// Shared pieces of the test API server's own tests: object builders and short request helpers.
import { apiRequest, type ApiCredentials, type ApiResponse, type RequestOptions } from '../test-client.js';

export type Obj = Record<string, unknown>;

export function pod(name: string, extra: { nodeName?: string; labels?: Record<string, string>; grace?: number; namespace?: string } = {}): Obj {
  const spec: Obj = { containers: [{ name: 'c', image: 'localhost/nodelet/busybox:1.35', command: ['sleep', '3600'] }] };
  if (extra.nodeName) spec.nodeName = extra.nodeName;
  if (extra.grace !== undefined) spec.terminationGracePeriodSeconds = extra.grace;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: extra.namespace ?? 'default', ...(extra.labels ? { labels: extra.labels } : {}) },
    spec,
  };
}

export function configMap(name: string, data: Record<string, string> = {}, labels?: Record<string, string>): Obj {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(labels ? { labels } : {}) }, data };
}

export function node(name: string, internalIP = '127.0.0.1', kubeletPort = 10250): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    status: {
      addresses: [{ type: 'InternalIP', address: internalIP }],
      daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status', lastHeartbeatTime: '2025-01-01T00:00:00Z', lastTransitionTime: '2025-01-01T00:00:00Z' }],
    },
  };
}

export const PODS = '/api/v1/namespaces/default/pods';
export const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';

/** A request that must succeed with `expect` (else the test fails showing the Status). */
export async function ok<T = Obj>(creds: ApiCredentials, method: string, path: string, options: RequestOptions = {}, expectStatus?: number): Promise<T> {
  const res = await apiRequest<T>(creds, method, path, options);
  const wanted = expectStatus ?? (method === 'POST' ? 201 : 200);
  if (res.status !== wanted) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res.body;
}

export function call(creds: ApiCredentials, method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
  return apiRequest(creds, method, path, options);
}

export function rv(obj: unknown): number {
  return Number(((obj as Obj).metadata as Obj).resourceVersion);
}
