// Unit tests for sorting gRPC failures into CriError kinds, including containerd 1.6's untyped messages.
import { status } from '@grpc/grpc-js';
import { CriError, criErrorKind, isNotFound, isUnavailable, kubeletErrorText, toCriError } from '../../../src/cri/errors.js';

function grpcError(code: number, details: string): Error & { code: number; details: string } {
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), { code, details });
}

describe('criErrorKind', () => {
  it.each([
    [status.NOT_FOUND, 'an error occurred when try to find container "abc": not found', 'NotFound'],
    [status.UNAVAILABLE, 'No connection established. Last error: connect ENOENT /run/x.sock', 'Unavailable'],
    [status.INVALID_ARGUMENT, 'invalid sandbox config', 'InvalidArgument'],
    [status.OUT_OF_RANGE, 'out of range', 'InvalidArgument'],
    [status.DEADLINE_EXCEEDED, 'Deadline exceeded after 0.005s', 'DeadlineExceeded'],
    [status.ALREADY_EXISTS, 'image already exists', 'AlreadyExists'],
    [status.CANCELLED, 'Cancelled on client', 'Cancelled'],
    [status.FAILED_PRECONDITION, 'process already finished', 'Unknown'],
    [status.INTERNAL, 'Request message serialization failure', 'Unknown'],
    [status.UNIMPLEMENTED, 'unknown service runtime.v1.RuntimeService', 'Unknown'],
    [status.RESOURCE_EXHAUSTED, 'Received message larger than max', 'Unknown'],
  ] as const)('code %i (%s) -> %s', (code, details, kind) => {
    expect(criErrorKind(code, details)).toBe(kind);
  });

  it('maps containerd 1.6 "server is not initialized yet" (code Unknown) to Unavailable', () => {
    expect(criErrorKind(status.UNKNOWN, 'server is not initialized yet')).toBe('Unavailable');
  });

  it('maps a reserved sandbox/container name (containerd 2: FailedPrecondition; 1.x: Unknown) to AlreadyExists', () => {
    const details =
      'failed to reserve sandbox name "web_default_uid_0": name "web_default_uid_0" is reserved for "4f1c0e"';
    expect(criErrorKind(status.FAILED_PRECONDITION, details)).toBe('AlreadyExists');
    expect(criErrorKind(status.UNKNOWN, details)).toBe('AlreadyExists');
  });

  it('maps a flattened errdefs not-found (code Unknown, ends in ": not found") to NotFound', () => {
    expect(criErrorKind(status.UNKNOWN, 'failed to load task: no running task found: task abc not found: not found')).toBe(
      'NotFound',
    );
  });

  it('does not mistake other Unknown errors that merely mention "not found" for NotFound', () => {
    expect(
      criErrorKind(status.UNKNOWN, 'failed to destroy network for sandbox "x": failed to find plugin "bridge" in path [/opt]'),
    ).toBe('Unknown');
    expect(criErrorKind(status.UNKNOWN, 'exec: "nodelet-cni": executable file not found in $PATH')).toBe('Unknown');
    expect(criErrorKind(status.UNKNOWN, 'container is in CONTAINER_EXITED state')).toBe('Unknown');
  });
});

describe('toCriError', () => {
  it('keeps method, gRPC code, details and the original error as cause', () => {
    const original = grpcError(status.NOT_FOUND, 'an error occurred when try to find sandbox: not found');
    const err = toCriError('PodSandboxStatus', original);
    expect(err).toBeInstanceOf(CriError);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('CriError');
    expect(err.kind).toBe('NotFound');
    expect(err.method).toBe('PodSandboxStatus');
    expect(err.grpcCode).toBe(status.NOT_FOUND);
    expect(err.cause).toBe(original);
    expect(err.message).toBe('PodSandboxStatus: an error occurred when try to find sandbox: not found');
  });

  it('passes CriErrors through unchanged', () => {
    const err = new CriError('Cancelled', 'Version', 'aborted');
    expect(toCriError('Other', err)).toBe(err);
  });

  it('wraps non-gRPC failures as Unknown without a gRPC code', () => {
    const original = new TypeError('boom');
    const err = toCriError('CreateContainer', original);
    expect(err.kind).toBe('Unknown');
    expect(err.grpcCode).toBeUndefined();
    expect(err.cause).toBe(original);
  });
});

describe('isNotFound / isUnavailable', () => {
  it('recognise only CriErrors of that kind', () => {
    const notFound = toCriError('ContainerStatus', grpcError(status.NOT_FOUND, 'not found'));
    const unavailable = toCriError('Version', grpcError(status.UNAVAILABLE, 'connect ENOENT'));
    expect(isNotFound(notFound)).toBe(true);
    expect(isNotFound(unavailable)).toBe(false);
    expect(isUnavailable(unavailable)).toBe(true);
    expect(isUnavailable(notFound)).toBe(false);
    expect(isNotFound(grpcError(status.NOT_FOUND, 'raw gRPC error'))).toBe(false);
    expect(isNotFound(undefined)).toBe(false);
  });
});

describe('kubeletErrorText: an error as kubelet\'s CRI client shows it', () => {
  const exited = toCriError('ExecSync', grpcError(status.UNKNOWN, 'failed to exec in container: container is in CONTAINER_EXITED state'));
  test("grpc-go's form with Go's code name", () => {
    expect(kubeletErrorText(exited)).toBe('rpc error: code = Unknown desc = failed to exec in container: container is in CONTAINER_EXITED state');
    expect(kubeletErrorText(toCriError('PullImage', grpcError(status.NOT_FOUND, 'no such image')))).toBe('rpc error: code = NotFound desc = no such image');
  });
  test('an Unknown one stripped to its message where the client strips it (image pulls); other codes kept', () => {
    expect(kubeletErrorText(exited, true)).toBe('failed to exec in container: container is in CONTAINER_EXITED state');
    expect(kubeletErrorText(toCriError('PullImage', grpcError(status.NOT_FOUND, 'no such image')), true)).toBe('rpc error: code = NotFound desc = no such image');
  });
  test('an error that did not come from gRPC is its message', () => {
    expect(kubeletErrorText(new CriError('Cancelled', 'ExecSync', 'CRI client is closed'))).toBe('ExecSync: CRI client is closed');
    expect(kubeletErrorText(new Error('boom'))).toBe('boom');
  });
});
