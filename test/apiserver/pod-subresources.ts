// The pod subresources with their own logic: binding (as the scheduler binds), eviction, and log (proxied to the kubelet
// of the pod's node, answering as kube-apiserver does when that kubelet cannot be reached).
import { request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { ApiError, badRequest, conflict, internal, internalError, notFound, success, type StatusBody } from './api-errors.js';
import { admissionError, admit } from './authz.js';
import { timestamp, type DeleteOptions, type Registry, type WriteContext } from './registry.js';
import { findResource, type Obj, type ResourceDef } from './resources.js';

function rec(v: unknown): Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}
function arr(v: unknown): Obj[] {
  return Array.isArray(v) ? (v as Obj[]) : [];
}
function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

const PODS = { group: '', resource: 'pods' };
const PODS_DEF = findResource('', 'v1', 'pods') as ResourceDef;

/**
 * POST pods/<name>/binding with a v1 Binding: sets spec.nodeName (only on an unbound pod that is not being deleted),
 * merges the binding's annotations and sets condition PodScheduled=True. Answers a Success Status (201).
 */
export function bindPod(registry: Registry, namespace: string, name: string, body: unknown, ctx: WriteContext, now: Date): StatusBody {
  const binding = rec(body);
  if (binding.kind !== undefined && binding.kind !== 'Binding') throw badRequest(`not a Binding object: ${JSON.stringify(body)}`);
  const bm = rec(binding.metadata);
  if (bm.namespace !== undefined && bm.namespace !== '' && bm.namespace !== namespace) {
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  if (str(bm.name) !== name) throw badRequest('name in URL does not match name in Binding object');
  const target = rec(binding.target);
  // ValidatePodBinding's errors come back as a plain aggregate error, which kube answers with 500.
  const problems: string[] = [];
  if (str(target.kind) !== '' && target.kind !== 'Node') problems.push(`target.kind: Not found: "${str(target.kind)}"`);
  if (str(target.name) === '') problems.push('target.name: Required value');
  if (problems.length > 0) throw internal(problems.length === 1 ? (problems[0] as string) : `[${problems.join(', ')}]`);
  const d = admit(ctx.attrs, binding, undefined, registry.view);
  if (!d.allowed) throw admissionError(ctx.attrs, binding, d);

  const pod = registry.store.get('pods', namespace, name);
  if (!pod) throw notFound(PODS, name);
  const pm = rec(pod.metadata);
  const spec = rec(pod.spec);
  // The binding's uid and resourceVersion are storage preconditions (the scheduler sends the pod's uid).
  if (str(bm.uid) !== '' && bm.uid !== pm.uid) {
    throw conflict(PODS, name, `Precondition failed: UID in precondition: ${str(bm.uid)}, UID in object meta: ${str(pm.uid)}`);
  }
  if (str(bm.resourceVersion) !== '' && bm.resourceVersion !== pm.resourceVersion) {
    throw conflict(PODS, name, `Precondition failed: ResourceVersion in precondition: ${str(bm.resourceVersion)}, ResourceVersion in object meta: ${str(pm.resourceVersion)}`);
  }
  const bindingResource = { group: '', resource: 'pods/binding' };
  if (pm.deletionTimestamp !== undefined) throw conflict(bindingResource, name, `pod ${name} is being deleted, cannot be assigned to a host`);
  if (str(spec.nodeName) !== '') throw conflict(bindingResource, name, `pod ${name} is already assigned to node "${str(spec.nodeName)}"`);
  spec.nodeName = str(target.name);
  pod.spec = spec;
  const annotations = rec(bm.annotations);
  if (Object.keys(annotations).length > 0) pm.annotations = { ...rec(pm.annotations), ...annotations };
  const status = rec(pod.status);
  const conditions = arr(status.conditions);
  const at = conditions.findIndex((c) => c.type === 'PodScheduled');
  const condition: Obj = { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: timestamp(now) };
  if (at >= 0) {
    const old = conditions[at] as Obj;
    if (old.status === 'True') condition.lastTransitionTime = old.lastTransitionTime;
    conditions[at] = condition;
  } else {
    conditions.push(condition);
  }
  status.conditions = conditions;
  pod.status = status;
  if (!ctx.dryRun) registry.store.update('pods', pod);
  return success(undefined, 201);
}

/** POST pods/<name>/eviction (policy/v1 Eviction): no disruption budgets exist here, so the pod is deleted with the eviction's options. */
export function evictPod(registry: Registry, namespace: string, name: string, body: unknown, ctx: WriteContext): StatusBody {
  const eviction = rec(body);
  if (str(rec(eviction.metadata).name) !== name) throw badRequest('name in URL does not match name in Eviction object');
  const options = rec(eviction.deleteOptions) as DeleteOptions;
  registry.delete(PODS_DEF, namespace, name, options, ctx);
  return success(undefined, 201);
}

/** Where kube-apiserver reaches a node's kubelet: the first address by --kubelet-preferred-address-types' default order. */
const ADDRESS_PREFERENCE = ['Hostname', 'InternalDNS', 'InternalIP', 'ExternalDNS', 'ExternalIP'];
const DEFAULT_KUBELET_PORT = 10250;

export interface KubeletClientCredentials {
  certPem: string;
  keyPem: string;
}

export type PodLogResult = { kind: 'empty' } | { kind: 'stream'; response: IncomingMessage };

const LOG_PARAMS = ['follow', 'previous', 'timestamps', 'sinceSeconds', 'sinceTime', 'tailLines', 'limitBytes'];

function containerNames(list: Obj[]): string {
  return list.map((c) => str(c.name)).join(' ');
}

/**
 * GET pods/<name>/log: picks the container as kube's LogLocation does (400s for a missing or unknown container), answers
 * nothing for a pod without a node, else streams the kubelet's /containerLogs answer. A kubelet that cannot be reached
 * gives the 500 Status kube-apiserver gives (`Get "https://...": dial tcp ...: connect: connection refused`).
 */
export async function podLog(registry: Registry, namespace: string, name: string, query: URLSearchParams, credentials: KubeletClientCredentials, signal: AbortSignal): Promise<PodLogResult> {
  const pod = registry.store.get('pods', namespace, name);
  if (!pod) throw notFound(PODS, name);
  const spec = rec(pod.spec);
  const containers = arr(spec.containers);
  const initContainers = arr(spec.initContainers);
  const ephemeral = arr(spec.ephemeralContainers);
  let container = query.get('container') ?? '';
  if (container === '') {
    if (containers.length === 1) {
      container = str(containers[0]?.name);
    } else {
      let msg = `a container name must be specified for pod ${name}, choose one of: [${containerNames(containers)}]`;
      if (initContainers.length > 0) msg += ` or one of the init containers: [${containerNames(initContainers)}]`;
      if (ephemeral.length > 0) msg += ` or one of the ephemeral containers: [${containerNames(ephemeral)}]`;
      throw badRequest(msg);
    }
  } else if (![...containers, ...initContainers, ...ephemeral].some((c) => c.name === container)) {
    throw badRequest(`container ${container} is not valid for pod ${name}`);
  }
  const nodeName = str(spec.nodeName);
  if (nodeName === '') return { kind: 'empty' };
  const node = registry.store.get('nodes', '', nodeName);
  if (!node) throw notFound({ group: '', resource: 'nodes' }, nodeName);
  const status = rec(node.status);
  const addresses = arr(status.addresses);
  let host = '';
  for (const type of ADDRESS_PREFERENCE) {
    const a = addresses.find((x) => x.type === type && str(x.address) !== '');
    if (a) {
      host = str(a.address);
      break;
    }
  }
  if (host === '') {
    const known = addresses.map((a) => `{${str(a.type)} ${str(a.address)}}`).join(' ');
    throw internal(`no preferred addresses found; known addresses: [${known}]`);
  }
  const port = Number(rec(rec(status.daemonEndpoints).kubeletEndpoint).Port) || DEFAULT_KUBELET_PORT;
  const params = new URLSearchParams();
  for (const p of LOG_PARAMS) {
    const v = query.get(p);
    if (v !== null && v !== '' && v !== 'false') params.set(p, v);
  }
  const hostPort = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const qs = params.toString();
  const url = `https://${hostPort}/containerLogs/${namespace}/${name}/${container}${qs ? `?${qs}` : ''}`;
  const response = await kubeletGet(url, credentials, signal);
  const code = response.statusCode ?? 500;
  if (code < 200 || code > 206) throw await kubeletFailure(response, name);
  return { kind: 'stream', response };
}

function kubeletGet(url: string, credentials: KubeletClientCredentials, signal: AbortSignal): Promise<IncomingMessage> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    // No --kubelet-certificate-authority: kube-apiserver does not verify the kubelet's serving certificate.
    const req = httpsRequest(url, { method: 'GET', cert: credentials.certPem, key: credentials.keyPem, rejectUnauthorized: false, signal, timeout: 30_000 }, resolve);
    req.on('timeout', () => req.destroy(Object.assign(new Error('i/o timeout'), { code: 'ETIMEDOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) => reject(internal(`Get "${url}": ${dialError(u, err)}`)));
    req.end();
  });
}

/** Go's net/http wording of a failed dial, which kube-apiserver passes on. */
function dialError(u: URL, err: NodeJS.ErrnoException): string {
  const addr = u.host;
  switch (err.code) {
    case 'ECONNREFUSED':
      return `dial tcp ${addr}: connect: connection refused`;
    case 'EHOSTUNREACH':
      return `dial tcp ${addr}: connect: no route to host`;
    case 'ENETUNREACH':
      return `dial tcp ${addr}: connect: network is unreachable`;
    case 'ETIMEDOUT':
      return `dial tcp ${addr}: i/o timeout`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `dial tcp: lookup ${u.hostname}: no such host`;
    default:
      return err.message;
  }
}

/** GenericHttpResponseChecker: 500 -> InternalError, 400 -> BadRequest with the kubelet's text, else a generic Status. */
async function kubeletFailure(response: IncomingMessage, name: string): Promise<ApiError> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size > 4096) break;
  }
  response.destroy();
  const text = Buffer.concat(chunks).toString('utf8').slice(0, 4096);
  const code = response.statusCode ?? 500;
  if (code === 500) return internalError(text);
  if (code === 400) return badRequest(text);
  const reasons: Record<number, [string, string]> = {
    401: ['Unauthorized', 'the server has asked for the client to provide credentials'],
    403: ['Forbidden', text],
    404: ['NotFound', 'the server could not find the requested resource'],
    409: ['Conflict', 'the server reported a conflict'],
    429: ['TooManyRequests', 'the server has received too many requests and has asked us to try again later'],
    503: ['ServiceUnavailable', 'the server is currently unable to handle the request'],
  };
  const [reason, message] = reasons[code] ?? ['', `the server responded with the status code ${code} but did not return more information`];
  return new ApiError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...(reason ? { reason } : {}),
    details: { name, kind: 'pods/log', causes: [{ reason: 'UnexpectedServerResponse', message: text }] },
    code,
  });
}
