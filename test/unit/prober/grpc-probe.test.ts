// The grpc probe against a grpc.health.v1 server of grpc-js on loopback: each serving status, a server without the
// health service, no server at all; and the protobuf encoding of the request and response.
import { Server, ServerCredentials, status as grpcStatus, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { decodeHealthCheckResponse, encodeHealthCheckRequest, grpcProbe } from '../../../src/prober/grpc-probe.js';
import { runProbe } from '../../../src/prober/run-probe.js';

/** A health server answering each service with the status of `statuses` (a number), NOT_FOUND for the others. */
async function healthServer(statuses: Record<string, number>, opts: { health?: boolean } = {}): Promise<{ server: Server; port: number; asked: string[] }> {
  const server = new Server();
  const asked: string[] = [];
  if (opts.health !== false) {
    server.addService({
      Check: {
        path: '/grpc.health.v1.Health/Check', requestStream: false, responseStream: false,
        // The request decoded by hand (field 1, length-delimited; absent when empty), as an object: grpc-js refuses a
        // falsy request.
        requestDeserialize: (b: Buffer) => ({ service: b.subarray(2).toString('utf8') }),
        requestSerialize: (r: { service: string }) => encodeHealthCheckRequest(r.service),
        responseSerialize: (n: number) => Buffer.from(n === 0 ? [] : [0x08, n]),
        responseDeserialize: (b: Buffer) => decodeHealthCheckResponse(b),
      },
    }, {
      Check: (call: ServerUnaryCall<{ service: string }, number>, cb: sendUnaryData<number>) => {
        asked.push(call.request.service);
        const s = statuses[call.request.service];
        if (s === undefined) cb({ code: grpcStatus.NOT_FOUND, details: 'unknown service' });
        else cb(null, s);
      },
    });
  }
  const port = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))));
  return { server, port, asked };
}

test('SERVING is success; another status, or no such service, is a failure in kubelet words', async () => {
  const { server, port, asked } = await healthServer({ '': 1, down: 2, gone: 3 });
  try {
    expect(await grpcProbe('127.0.0.1', port, '', 2, 'kube-probe/1.37')).toEqual({ result: 'success', output: 'service healthy' });
    expect(await grpcProbe('127.0.0.1', port, 'down', 2, 'kube-probe/1.37')).toEqual({ result: 'failure', output: 'service unhealthy (responded with "NOT_SERVING")' });
    expect(await grpcProbe('127.0.0.1', port, 'gone', 2, 'kube-probe/1.37')).toEqual({ result: 'failure', output: 'service unhealthy (responded with "SERVICE_UNKNOWN")' });
    const missing = await grpcProbe('127.0.0.1', port, 'other', 2, 'kube-probe/1.37');
    expect(missing.result).toBe('failure');
    expect(missing.output).toMatch(/^error: health rpc probe failed: 5 NOT_FOUND: unknown service/);
    expect(asked).toEqual(['', 'down', 'gone', 'other']);
  } finally {
    server.forceShutdown();
  }
});

test('a server without the health service, and no server at all, are failures', async () => {
  const { server, port } = await healthServer({}, { health: false });
  try {
    expect((await grpcProbe('127.0.0.1', port, '', 2, 'kube-probe/1.37')).output).toMatch(/^error: this server does not implement the grpc health protocol \(grpc\.health\.v1\.Health\)/);
  } finally {
    server.forceShutdown();
  }
  expect(await grpcProbe('127.0.0.1', port, '', 1, 'kube-probe/1.37')).toEqual({ result: 'failure', output: `timeout: failed to connect service "127.0.0.1:${port}" within 1s: context deadline exceeded` });
});

test("runProbe sends a grpc probe to the pod's IP with its service", async () => {
  const { server, port, asked } = await healthServer({ api: 1 });
  try {
    const outcome = await runProbe({ grpc: { port, service: 'api' }, timeoutSeconds: 2 }, {
      container: { name: 'app' }, containerId: 'c1', field: 'spec.containers[0].livenessProbe', podIPs: ['127.0.0.1'], hostIPs: [], userAgent: 'kube-probe/1.37',
      runtime: { execSync: () => Promise.reject(new Error('no exec')) },
    });
    expect(outcome.result).toBe('success');
    expect(asked).toEqual(['api']);
  } finally {
    server.forceShutdown();
  }
});

test('the protobuf messages: service as field 1, status read past unknown fields', () => {
  expect(encodeHealthCheckRequest('')).toEqual(Buffer.alloc(0));
  expect(encodeHealthCheckRequest('api')).toEqual(Buffer.from([0x0a, 3, 0x61, 0x70, 0x69]));
  expect(encodeHealthCheckRequest('x'.repeat(200)).subarray(0, 3)).toEqual(Buffer.from([0x0a, 0xc8, 0x01]));
  expect(decodeHealthCheckResponse(Buffer.alloc(0))).toBe(0);
  expect(decodeHealthCheckResponse(Buffer.from([0x12, 2, 0x61, 0x62, 0x08, 2]))).toBe(2);
});
