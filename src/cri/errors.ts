// Typed CRI call failures: gRPC status codes (and containerd's known untyped messages) sorted by how the caller reacts.
import { status as GrpcStatus } from '@grpc/grpc-js';

/**
 * How a caller should react:
 * - NotFound: the object is gone; treat as already removed/stopped.
 * - Unavailable: the runtime is not reachable or not ready yet; retry later.
 * - InvalidArgument: the request itself is wrong; retrying it unchanged will not help.
 * - DeadlineExceeded: the call (or, for ExecSync, the command) ran out of time; the runtime may still finish it.
 * - AlreadyExists: a name or id is taken (e.g. a sandbox name reserved by an earlier, timed-out attempt).
 * - Cancelled: the caller aborted the call (AbortSignal) or closed the client.
 * - Unknown: anything else; retry with backoff.
 */
export type CriErrorKind =
  | 'NotFound'
  | 'Unavailable'
  | 'InvalidArgument'
  | 'DeadlineExceeded'
  | 'AlreadyExists'
  | 'Cancelled'
  | 'Unknown';

export class CriError extends Error {
  override readonly name = 'CriError';

  constructor(
    readonly kind: CriErrorKind,
    /** The CRI method, e.g. "RuntimeService/ContainerStatus". */
    readonly method: string,
    /** What the runtime said (the gRPC status's message). */
    readonly description: string,
    /** The gRPC status code, when the failure came from gRPC. */
    readonly grpcCode?: number,
    options?: { cause?: unknown },
  ) {
    super(`${method}: ${description}`, options);
  }
}

/** Go's names of the gRPC codes (codes.Code.String()), by number. */
const goCodeNames = ['OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied',
  'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated'];

/**
 * An error as kubelet's CRI client (k8s.io/cri-client) hands it on, for messages users see (events, container states):
 * grpc-go's `rpc error: code = <Code> desc = <message>`, or, with `stripUnknown` (what the client does for image pulls),
 * the bare message of an Unknown one. Anything else is its message.
 */
export function kubeletErrorText(err: unknown, stripUnknown = false): string {
  if (!(err instanceof CriError) || err.grpcCode === undefined) return err instanceof Error ? err.message : String(err);
  if (stripUnknown && err.grpcCode === GrpcStatus.UNKNOWN) return err.description;
  return `rpc error: code = ${goCodeNames[err.grpcCode] ?? `Code(${err.grpcCode})`} desc = ${err.description}`;
}

// containerd 1.6 answers with code UNKNOWN while its CRI plugin is still starting
// (fixed upstream later by returning UNAVAILABLE).
const NOT_INITIALIZED = /server is not initialized yet/;
// containerd's name registrar refuses a taken sandbox/container name (containerd 2: FailedPrecondition, 1.x: Unknown),
// e.g. `failed to reserve sandbox name "...": name "..." is reserved for "<id>"`.
const NAME_RESERVED = /is reserved for "/;
// containerd's errdefs.ErrNotFound reads "not found"; when a code path flattens the error chain the
// code degrades to UNKNOWN but the message still ends in ": not found". Anchored at the end so that
// e.g. a CNI failure mentioning a missing file is not mistaken for a missing container.
const FLATTENED_NOT_FOUND = /: not found$/;

/** Classifies a gRPC status code plus its details text. */
export function criErrorKind(code: number, details: string): CriErrorKind {
  switch (code) {
    case GrpcStatus.NOT_FOUND:
      return 'NotFound';
    case GrpcStatus.UNAVAILABLE:
      return 'Unavailable';
    case GrpcStatus.INVALID_ARGUMENT:
    case GrpcStatus.OUT_OF_RANGE:
      return 'InvalidArgument';
    case GrpcStatus.DEADLINE_EXCEEDED:
      return 'DeadlineExceeded';
    case GrpcStatus.ALREADY_EXISTS:
      return 'AlreadyExists';
    case GrpcStatus.CANCELLED:
      return 'Cancelled';
    case GrpcStatus.FAILED_PRECONDITION:
      return NAME_RESERVED.test(details) ? 'AlreadyExists' : 'Unknown';
    case GrpcStatus.UNKNOWN:
      if (NOT_INITIALIZED.test(details)) return 'Unavailable';
      if (NAME_RESERVED.test(details)) return 'AlreadyExists';
      if (FLATTENED_NOT_FOUND.test(details)) return 'NotFound';
      return 'Unknown';
    // INTERNAL, UNIMPLEMENTED (CRI v1 not
    // served), RESOURCE_EXHAUSTED (message too large), ...: no specific reaction; grpcCode keeps the detail.
    default:
      return 'Unknown';
  }
}

interface GrpcLikeError {
  code: number;
  details?: string;
  message?: string;
}

function isGrpcLikeError(err: unknown): err is GrpcLikeError {
  return typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'number';
}

/** Wraps whatever a gRPC call rejected with into a CriError (CriErrors pass through unchanged). */
export function toCriError(method: string, err: unknown): CriError {
  if (err instanceof CriError) return err;
  if (isGrpcLikeError(err)) {
    const details = err.details ?? err.message ?? '';
    return new CriError(criErrorKind(err.code, details), method, details, err.code, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new CriError('Unknown', method, message, undefined, { cause: err });
}

export function isNotFound(err: unknown): boolean {
  return err instanceof CriError && err.kind === 'NotFound';
}

export function isUnavailable(err: unknown): boolean {
  return err instanceof CriError && err.kind === 'Unavailable';
}

/** The runtime does not implement the method (gRPC Unimplemented), e.g. RuntimeConfig on containerd before 2.0. */
export function isUnimplemented(err: unknown): boolean {
  return err instanceof CriError && err.grpcCode === GrpcStatus.UNIMPLEMENTED;
}

/** The gRPC code of a failed CRI call as Go names it (kubelet's metric labels): "Unknown" when there is none. */
export function grpcCodeName(err: unknown): string {
  const code = err instanceof CriError ? err.grpcCode : undefined;
  return (code !== undefined ? goCodeNames[code] : undefined) ?? 'Unknown';
}
