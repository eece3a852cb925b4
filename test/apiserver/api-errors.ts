// Status errors of the test API server, worded and coded as kube-apiserver's apimachinery errors package words them.
import type { FieldError } from './types.js';

/** A metav1.Status (kind Status) as kube-apiserver writes it for a failed request. */
export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: { reason?: string; message?: string; field?: string }[];
    retryAfterSeconds?: number;
  };
  code: number;
}

/** A request failure carrying the Status the client receives. */
export class ApiError extends Error {
  readonly status: StatusBody;
  constructor(status: StatusBody, options?: { cause?: unknown }) {
    super(status.message ?? status.reason ?? `status ${status.code}`, options);
    this.name = 'ApiError';
    this.status = status;
  }
  get code(): number {
    return this.status.code;
  }
}

/** What a resource is called in messages: `pods`, `leases.coordination.k8s.io` (schema.GroupResource.String()). */
export interface GroupResource {
  group: string;
  resource: string;
}

export function qualifiedResource(gr: GroupResource): string {
  return gr.group === '' ? gr.resource : `${gr.resource}.${gr.group}`;
}

function status(code: number, reason: string | undefined, message: string, details?: StatusBody['details']): StatusBody {
  const s: StatusBody = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, code };
  if (reason) s.reason = reason;
  if (details) s.details = details;
  return s;
}

function details(gr: GroupResource, name: string): NonNullable<StatusBody['details']> {
  const d: NonNullable<StatusBody['details']> = {};
  if (name) d.name = name;
  if (gr.group) d.group = gr.group;
  d.kind = gr.resource;
  return d;
}

export function notFound(gr: GroupResource, name: string): ApiError {
  return new ApiError(status(404, 'NotFound', `${qualifiedResource(gr)} "${name}" not found`, details(gr, name)));
}

export function alreadyExists(gr: GroupResource, name: string): ApiError {
  return new ApiError(status(409, 'AlreadyExists', `${qualifiedResource(gr)} "${name}" already exists`, details(gr, name)));
}

/** The optimistic-lock failure text of the generic registry. */
export const OPTIMISTIC_LOCK_MESSAGE = 'the object has been modified; please apply your changes to the latest version and try again';

export function conflict(gr: GroupResource, name: string, why: string): ApiError {
  return new ApiError(
    status(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedResource(gr)} "${name}": ${why}`, details(gr, name)),
  );
}

/** Field errors joined as utilerrors.NewAggregate prints them (deduplicated; brackets only for several). */
export function aggregate(messages: string[]): string {
  const unique = [...new Set(messages)];
  if (unique.length === 1) return unique[0] as string;
  return `[${unique.join(', ')}]`;
}

export function fieldErrorText(e: FieldError): string {
  return e.field ? `${e.field}: ${e.message}` : e.message;
}

/** 422 Invalid: `Pod "x" is invalid: spec.containers[0].image: Required value`. `kind` is the Kind (or resource, as kube does for updates). */
export function invalid(group: string, kind: string, name: string, errors: FieldError[]): ApiError {
  const qualifiedKind = group === '' ? kind : `${kind}.${group}`;
  const message =
    errors.length === 0
      ? `${qualifiedKind} "${name}" is invalid`
      : `${qualifiedKind} "${name}" is invalid: ${aggregate(errors.map(fieldErrorText))}`;
  const d: NonNullable<StatusBody['details']> = {};
  if (name) d.name = name;
  if (group) d.group = group;
  d.kind = kind;
  d.causes = errors.map((e) => ({ reason: e.type, message: e.message, field: e.field }));
  return new ApiError(status(422, 'Invalid', message, d));
}

export function forbidden(gr: GroupResource, name: string, why: string): ApiError {
  const message = name ? `${qualifiedResource(gr)} "${name}" is forbidden: ${why}` : `${qualifiedResource(gr)} is forbidden: ${why}`;
  return new ApiError(status(403, 'Forbidden', message, details(gr, name)));
}

/** Forbidden for a non-resource path: `forbidden: User "x" cannot get path "/foo"`. */
export function forbiddenPath(why: string): ApiError {
  return new ApiError(status(403, 'Forbidden', `forbidden: ${why}`, {}));
}

export function badRequest(message: string): ApiError {
  return new ApiError(status(400, 'BadRequest', message));
}

export function unauthorized(): ApiError {
  return new ApiError(status(401, 'Unauthorized', 'Unauthorized'));
}

export function methodNotAllowed(): ApiError {
  return new ApiError(status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {}));
}

/** kube's NewMethodNotSupported: a verb a resource does not implement. */
export function methodNotSupported(gr: GroupResource, action: string): ApiError {
  return new ApiError(
    status(405, 'MethodNotAllowed', `${action} is not supported on resources of kind "${qualifiedResource(gr)}"`, {
      ...(gr.group ? { group: gr.group } : {}),
      kind: gr.resource,
    }),
  );
}

export function unsupportedMediaType(contentType: string, accepted: string[]): ApiError {
  const what = contentType ? `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}` : 'the body of the request was in an unknown format';
  return new ApiError(status(415, 'UnsupportedMediaType', what));
}

export function notAcceptable(accepted: string[]): ApiError {
  return new ApiError(status(406, 'NotAcceptable', `only the following media types are accepted: ${accepted.join(', ')}`));
}

export function pathNotFound(): ApiError {
  return new ApiError(status(404, 'NotFound', 'the server could not find the requested resource', {}));
}

/** 410 Gone, reason Expired: `too old resource version: 5 (120)`. */
export function expired(message: string): ApiError {
  return new ApiError(status(410, 'Expired', message));
}

/** The storage's answer to a resourceVersion newer than it has (NewTooLargeResourceVersionError). */
export function tooLargeResourceVersion(requested: number, current: number): ApiError {
  return new ApiError(
    status(504, 'Timeout', `Too large resource version: ${requested}, current: ${current}`, {
      causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
      retryAfterSeconds: 1,
    }),
  );
}

/** A failure that is not a Status error (errors.ErrorToAPIStatus): code 500, no reason, the error's text. */
export function internal(message: string): ApiError {
  return new ApiError(status(500, undefined, message));
}

export function internalError(message: string): ApiError {
  return new ApiError(status(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] }));
}

/** A Success Status. `code` is left out where kube leaves it out (finalizeDelete's answer), so it may be 0 here. */
export function success(details?: StatusBody['details'], code = 0): StatusBody {
  const s: StatusBody = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code };
  if (details) s.details = details;
  return s;
}
