// The grpc probe (kubelet's pkg/probe/grpc): grpc.health.v1.Health/Check over a plaintext connection to the pod's IP;
// SERVING is success, anything else (another status, an error, no connection within the timeout) a failure, with
// kubelet's output text.
import { Client, Metadata, credentials, status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { ProbeOutcome } from './outcome.js';
import { joinHostPort } from './tcp-probe.js';
import { formatGoDuration } from '../core/duration.js';

/** grpc.health.v1.HealthCheckResponse.ServingStatus, by number. */
const servingStatusNames = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** HealthCheckRequest { string service = 1; } in protobuf's wire format (the empty default is not written). */
export function encodeHealthCheckRequest(service: string): Buffer {
  const bytes = Buffer.from(service, 'utf8');
  if (bytes.length === 0) return Buffer.alloc(0);
  const len: number[] = [];
  for (let n = bytes.length; ; n >>>= 7) {
    if (n < 0x80) {
      len.push(n);
      break;
    }
    len.push((n & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from([0x0a, ...len]), bytes]);
}

/** HealthCheckResponse { ServingStatus status = 1; }: the status number (0, UNKNOWN, when absent); other fields skipped. */
export function decodeHealthCheckResponse(buf: Buffer): number {
  let status = 0;
  let i = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; i < buf.length; shift += 7) {
      const b = buf[i++]!;
      value += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return value;
    }
    throw new Error('truncated varint in HealthCheckResponse');
  };
  while (i < buf.length) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) {
      const v = varint();
      if (field === 1) status = v;
    } else if (wire === 2) {
      const length = varint();
      i += length;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new Error(`unsupported wire type ${wire} in HealthCheckResponse`);
  }
  return status;
}

/** What kubelet's grpc prober says of a status. */
function servingStatusOutcome(status: number): ProbeOutcome {
  if (status === 1) return { result: 'success', output: 'service healthy' };
  return { result: 'failure', output: `service unhealthy (responded with "${servingStatusNames[status] ?? String(status)}")` };
}

/** One Health/Check call; the connection is made for it and closed after. Rejects only when `signal` aborts. */
export async function grpcProbe(host: string, port: number, service: string, timeoutSeconds: number, userAgent: string, signal?: AbortSignal): Promise<ProbeOutcome> {
  const addr = joinHostPort(host, port);
  const client = new Client(addr, credentials.createInsecure(), { 'grpc.primary_user_agent': userAgent });
  const deadline = Date.now() + timeoutSeconds * 1000;
  try {
    signal?.throwIfAborted();
    const connected = await new Promise<boolean>((resolve) => client.waitForReady(deadline, (err) => resolve(!err)));
    signal?.throwIfAborted();
    if (!connected) {
      return { result: 'failure', output: `timeout: failed to connect service "${addr}" within ${formatGoDuration(timeoutSeconds * 1000)}: context deadline exceeded` };
    }
    return await new Promise<ProbeOutcome>((resolve, reject) => {
      const call = client.makeUnaryRequest<{ service: string }, Buffer>(
        '/grpc.health.v1.Health/Check',
        (r) => encodeHealthCheckRequest(r.service),
        (b: Buffer) => b,
        { service },
        new Metadata(),
        { deadline },
        (err: ServiceError | null, resp?: Buffer) => {
          signal?.removeEventListener('abort', onAbort);
          if (signal?.aborted) return reject(signal.reason);
          if (!err) {
            try {
              return resolve(servingStatusOutcome(decodeHealthCheckResponse(resp ?? Buffer.alloc(0))));
            } catch (e) {
              return resolve({ result: 'failure', output: `error: health rpc probe failed: ${(e as Error).message}` });
            }
          }
          if (err.code === grpcStatus.UNIMPLEMENTED) {
            return resolve({ result: 'failure', output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${err.details}` });
          }
          if (err.code === grpcStatus.DEADLINE_EXCEEDED) {
            return resolve({ result: 'failure', output: `timeout: health rpc did not complete within ${formatGoDuration(timeoutSeconds * 1000)}` });
          }
          resolve({ result: 'failure', output: `error: health rpc probe failed: ${err.message}` });
        },
      );
      const onAbort = () => call.cancel();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  } finally {
    client.close();
  }
}
