// What a kubelet API caller may do: kubelet's request-to-attributes mapping (resource nodes, subresource by path),
// then SubjectAccessReview on the API server (allowed and denied answers cached) or AlwaysAllow.
import type { Clock } from '../core/clock.js';
import type { ApiRequester, UserInfo } from './authn.js';
import { TtlCache } from './ttl-cache.js';

/** kube's authorizer.Attributes as kubelet fills them: always a resource request on this Node. */
export interface RequestAttributes {
  user: UserInfo;
  verb: string;
  apiVersion: 'v1';
  resource: 'nodes';
  subresource: string;
  name: string;
  path: string;
}

/** kubelet's isSubpath: the path itself or anything under it. */
export function isSubpath(subpath: string, path: string): boolean {
  const base = path.endsWith('/') ? path.slice(0, -1) : path;
  return subpath === base || (subpath.startsWith(base) && subpath[base.length] === '/');
}

const verbs: Readonly<Record<string, string>> = { POST: 'create', GET: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/**
 * kubelet v1.37's GetRequestAttributes: the verb from the method (others: ""), and the subresources to ask for, in order.
 * With fine-grained authorization (KubeletFineGrainedAuthz, GA in 1.36 and on in every minor nodelet serves) /pods,
 * /allocatedPods and /runningpods ask for pods, /healthz for healthz and /configz for configz first; then every path
 * asks for one of stats, metrics, log, checkpoint, statusz, configz (/flagz) or, for anything else, proxy. The first
 * allowed one admits the request.
 */
export function requestAttributes(user: UserInfo, method: string, path: string, nodeName: string): RequestAttributes[] {
  const subresources: string[] = [];
  if (isSubpath(path, '/allocatedPods') || isSubpath(path, '/pods')) subresources.push('pods');
  else if (isSubpath(path, '/healthz')) subresources.push('healthz');
  else if (isSubpath(path, '/configz')) subresources.push('configz');
  else if (isSubpath(path, '/runningpods/')) subresources.push('pods');
  if (isSubpath(path, '/stats/')) subresources.push('stats');
  else if (isSubpath(path, '/metrics')) subresources.push('metrics');
  else if (isSubpath(path, '/logs/')) subresources.push('log');
  else if (isSubpath(path, '/checkpoint/')) subresources.push('checkpoint');
  else if (isSubpath(path, '/statusz')) subresources.push('statusz');
  else if (isSubpath(path, '/flagz')) subresources.push('configz');
  else subresources.push('proxy');
  return subresources.map((subresource) => ({ user, verb: verbs[method] ?? '', apiVersion: 'v1', resource: 'nodes', subresource, name: nodeName, path }));
}

/** kubelet's 403 body: the attributes differ only by subresource, all of which are named (Go's %v of a slice). */
export function forbiddenMessage(attrs: RequestAttributes[]): string {
  const a = attrs[0]!;
  return `Forbidden (user=${a.user.name}, verb=${a.verb}, resource=${a.resource}, subresource(s)=[${attrs.map((x) => x.subresource).join(' ')}])\n`;
}

/** kubelet's 500 body when the authorizer could not answer. */
export function authorizationErrorMessage(a: RequestAttributes): string {
  return `Authorization error (user=${a.user.name}, verb=${a.verb}, resource=${a.resource}, subresource=${a.subresource})`;
}

export interface Decision {
  allowed: boolean;
  reason: string;
}

export interface Authorizer {
  /** Rejects when it cannot decide (the API server unreachable): a 500, never a guess. */
  authorize(attrs: RequestAttributes): Promise<Decision>;
}

export const alwaysAllow: Authorizer = { authorize: async () => ({ allowed: true, reason: '' }) };

/** The SubjectAccessReview spec kube's webhook authorizer sends for these attributes. */
export function subjectAccessReviewSpec(a: RequestAttributes): object {
  return {
    user: a.user.name,
    ...(a.user.uid ? { uid: a.user.uid } : {}),
    groups: a.user.groups,
    ...(a.user.extra ? { extra: a.user.extra } : {}),
    resourceAttributes: { namespace: '', verb: a.verb, group: '', version: a.apiVersion, resource: a.resource, subresource: a.subresource, name: a.name },
  };
}

export interface WebhookAuthorizerOptions {
  client: ApiRequester;
  clock: Pick<Clock, 'now'>;
  /** authorization.webhook.cacheAuthorizedTTL / cacheUnauthorizedTTL. */
  authorizedTtlMs: number;
  unauthorizedTtlMs: number;
}

interface SubjectAccessReviewStatus {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

/** SubjectAccessReview (authorization.k8s.io/v1) on the API server, answers cached per spec. */
export class WebhookAuthorizer implements Authorizer {
  private readonly cache: TtlCache<Decision>;

  constructor(private readonly opts: WebhookAuthorizerOptions) {
    this.cache = new TtlCache(opts.clock);
  }

  async authorize(attrs: RequestAttributes): Promise<Decision> {
    const spec = subjectAccessReviewSpec(attrs);
    const key = JSON.stringify(spec);
    const cached = this.cache.get(key);
    if (cached) return cached;
    const review = await this.opts.client.request<SubjectAccessReviewStatus>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
      timeoutMs: 10_000,
    });
    const decision: Decision = { allowed: review.status?.allowed === true, reason: review.status?.reason ?? '' };
    this.cache.set(key, decision, decision.allowed ? this.opts.authorizedTtlMs : this.opts.unauthorizedTtlMs);
    return decision;
  }
}
