// Unit tests for CriClient against an in-process fake CRI gRPC server on a temporary unix socket.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server, ServerCredentials, status, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { CriClient, grpcTarget } from '../../../src/cri/client.js';
import { CriError, isUnimplemented } from '../../../src/cri/errors.js';

const PROTO = fileURLToPath(new URL('../../../../proto/runtime/v1/api.proto', import.meta.url));
const pkg = loadSync(PROTO, { keepCase: false, longs: String, enums: String, defaults: true });

type Handler = (request: Record<string, unknown>) => Promise<object> | object;
type Callback = (err: { code: number; details: string } | null, res?: object) => void;

let dir: string;
let socket: string;
let server: Server;
/** Per-test handlers, keyed by CRI method name. */
const handlers = new Map<string, Handler>();
const received = new Map<string, Record<string, unknown>>();

function implement(service: string): UntypedServiceImplementation {
  const impl: UntypedServiceImplementation = {};
  for (const rpc of Object.keys(pkg[service] as object)) {
    impl[rpc] = (call: { request: Record<string, unknown> }, callback: Callback) => {
      received.set(rpc, call.request);
      const handler = handlers.get(rpc);
      if (!handler) return callback({ code: status.UNIMPLEMENTED, details: `${rpc} not faked` });
      Promise.resolve(handler(call.request)).then(
        (res) => callback(null, res),
        (err: { code: number; details: string }) => callback(err),
      );
    };
  }
  return impl;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'nodelet-cri-unit-'));
  socket = join(dir, 'cri.sock');
  server = new Server();
  for (const service of ['runtime.v1.RuntimeService', 'runtime.v1.ImageService']) {
    server.addService(pkg[service] as ServiceDefinition, implement(service));
  }
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

afterEach(() => {
  handlers.clear();
  received.clear();
});

describe('grpcTarget', () => {
  it('accepts kubelet-style unix endpoints and bare paths', () => {
    expect(grpcTarget('unix:///run/nodelet/containerd/containerd.sock')).toBe('unix:///run/nodelet/containerd/containerd.sock');
    expect(grpcTarget('/run/x.sock')).toBe('unix:///run/x.sock');
  });

  it('rejects other schemes with InvalidArgument', () => {
    expect(() => grpcTarget('tcp://127.0.0.1:1234')).toThrow(expect.objectContaining({ kind: 'InvalidArgument' }));
  });
});

describe('CriClient against a fake runtime', () => {
  let client: CriClient;
  beforeEach(() => {
    client = new CriClient(socket);
  });
  afterEach(() => client.close());

  it('maps sandbox status: ns timestamps to ms, primary then additional IPs, verbose info', async () => {
    handlers.set('PodSandboxStatus', () => ({
      status: {
        id: 'sb1',
        metadata: { name: 'web', uid: 'u1', namespace: 'default', attempt: 2 },
        state: 'SANDBOX_NOTREADY',
        createdAt: '1700000000123456789',
        network: { ip: '10.99.0.5', additionalIps: [{ ip: 'fd00::5' }] },
        labels: { a: 'b' },
      },
      info: { info: '{"pid":1}' },
    }));
    const s = await client.podSandboxStatus('sb1', true);
    expect(received.get('PodSandboxStatus')).toMatchObject({ podSandboxId: 'sb1', verbose: true });
    expect(s).toEqual({
      id: 'sb1',
      metadata: { name: 'web', uid: 'u1', namespace: 'default', attempt: 2 },
      state: 'SANDBOX_NOTREADY',
      createdAt: 1700000000123,
      ips: ['10.99.0.5', 'fd00::5'],
      labels: { a: 'b' },
      annotations: {},
      info: { info: '{"pid":1}' },
    });
  });

  it('sends filters with wrapped states and label selectors', async () => {
    handlers.set('ListPodSandbox', () => ({ items: [] }));
    handlers.set('ListContainers', () => ({ containers: [] }));
    await client.listPodSandbox({ state: 'SANDBOX_READY', labelSelector: { app: 'x' } });
    await client.listContainers({ podSandboxId: 'sb1', state: 'CONTAINER_CREATED' });
    expect(received.get('ListPodSandbox')).toMatchObject({
      filter: { state: { state: 'SANDBOX_READY' }, labelSelector: { app: 'x' } },
    });
    expect(received.get('ListContainers')).toMatchObject({
      filter: { podSandboxId: 'sb1', state: { state: 'CONTAINER_CREATED' } },
    });
  });

  it('wraps runAsUser/runAsGroup in Int64Value and keeps the rest of the container config', async () => {
    handlers.set('CreateContainer', () => ({ containerId: 'c1' }));
    const sandboxConfig = {
      metadata: { name: 'web', uid: 'u1', namespace: 'default', attempt: 0 },
      hostname: 'web',
      logDirectory: '/var/log/pods/x',
      portMappings: [{ protocol: 'TCP' as const, containerPort: 80, hostPort: 8080, hostIp: '' }],
      labels: {},
      annotations: {},
      linux: { securityContext: { runAsUser: 0, namespaceOptions: { network: 'NODE' as const, pid: 'CONTAINER' as const, ipc: 'POD' as const } } },
    };
    const id = await client.createContainer(
      'sb1',
      {
        metadata: { name: 'app', attempt: 1 },
        image: { image: 'localhost/nodelet/busybox:1.35' },
        command: ['sh'],
        args: ['-c', 'sleep 1'],
        workingDir: '/',
        // Bytes, not text: a Secret's value need not be UTF-8.
        envs: [{ key: 'A', value: Buffer.from([0x62, 0xff, 0x00, 0xc3]) }],
        mounts: [],
        labels: {},
        annotations: {},
        logPath: 'app/1.log',
        linux: { securityContext: { runAsUser: 1000, runAsGroup: 0, maskedPaths: ['/proc/kcore'] } },
      },
      sandboxConfig,
    );
    expect(id).toBe('c1');
    const req = received.get('CreateContainer') as Record<string, any>;
    expect(req.config.linux.securityContext).toMatchObject({
      runAsUser: { value: '1000' },
      runAsGroup: { value: '0' },
      maskedPaths: ['/proc/kcore'],
    });
    expect(req.config.envs).toEqual([{ key: 'A', value: Buffer.from([0x62, 0xff, 0x00, 0xc3]) }]);
    expect(req.sandboxConfig.linux.securityContext.runAsUser).toEqual({ value: '0' });
    expect(req.sandboxConfig.linux.securityContext.namespaceOptions).toMatchObject({ network: 'NODE', pid: 'CONTAINER' });
    expect(req.sandboxConfig.portMappings).toEqual([{ protocol: 'TCP', containerPort: 80, hostPort: 8080, hostIp: '' }]);
  });

  it('sends an image mount with its image and sub path (fields 9 and 10); reads them back from a status, absent when unset', async () => {
    handlers.set('CreateContainer', () => ({ containerId: 'c1' }));
    const image = { image: `sha256:${'a'.repeat(64)}`, annotations: { team: 'a' } };
    const mounts = [
      { containerPath: '/img', hostPath: '', readonly: true, image, imageSubPath: 'dir' },
      { containerPath: '/data', hostPath: '/var/lib/x', readonly: false },
    ];
    const config = { metadata: { name: 'app', attempt: 0 }, image: { image: 'busybox' }, command: [], args: [], workingDir: '', envs: [], mounts, labels: {}, annotations: {}, logPath: '' };
    const sandbox = { metadata: { name: 'web', uid: 'u1', namespace: 'default', attempt: 0 }, hostname: '', logDirectory: '', portMappings: [], labels: {}, annotations: {} };
    await client.createContainer('sb1', config, sandbox);
    expect((received.get('CreateContainer') as Record<string, any>).config.mounts).toEqual([
      expect.objectContaining({ containerPath: '/img', hostPath: '', readonly: true, image: expect.objectContaining({ image: image.image, annotations: { team: 'a' } }), imageSubPath: 'dir' }),
      expect.objectContaining({ containerPath: '/data', hostPath: '/var/lib/x', imageSubPath: '' }),
    ]);
    handlers.set('ContainerStatus', () => ({ status: { id: 'c1', mounts } }));
    expect((await client.containerStatus('c1')).mounts).toEqual([
      { containerPath: '/img', hostPath: '', readonly: true, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE', recursiveReadOnly: false, uidMappings: [], gidMappings: [], image, imageSubPath: 'dir' },
      { containerPath: '/data', hostPath: '/var/lib/x', readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE', recursiveReadOnly: false, uidMappings: [], gidMappings: [] },
    ]);
  });

  it('returns undefined for an absent image and maps a present one', async () => {
    handlers.set('ImageStatus', (req) =>
      (req.image as { image: string }).image === 'present'
        ? { image: { id: 'sha256:abc', repoTags: ['present'], size: '1234', uid: { value: '0' }, pinned: true } }
        : {},
    );
    expect(await client.imageStatus('absent')).toBeUndefined();
    expect(await client.imageStatus('present')).toEqual({
      id: 'sha256:abc',
      repoTags: ['present'],
      repoDigests: [],
      size: 1234,
      uid: 0,
      username: '',
      pinned: true,
    });
  });

  it('treats NotFound from RemoveContainer/RemovePodSandbox as success but surfaces it elsewhere', async () => {
    const notFound = () => Promise.reject({ code: status.NOT_FOUND, details: 'not found' });
    handlers.set('RemoveContainer', notFound);
    handlers.set('RemovePodSandbox', notFound);
    handlers.set('StopContainer', notFound);
    await expect(client.removeContainer('gone')).resolves.toBeUndefined();
    await expect(client.removePodSandbox('gone')).resolves.toBeUndefined();
    await expect(client.stopContainer('gone', 0)).rejects.toMatchObject({ kind: 'NotFound', method: 'StopContainer' });
  });

  it('returns ExecSync output as Buffers with the exit code', async () => {
    handlers.set('ExecSync', () => ({ stdout: Buffer.from('out'), stderr: Buffer.from('err'), exitCode: 3 }));
    const r = await client.execSync('c1', ['false'], 5);
    expect(received.get('ExecSync')).toMatchObject({ containerId: 'c1', cmd: ['false'], timeout: '5' });
    expect(r.stdout.toString()).toBe('out');
    expect(r.stderr.toString()).toBe('err');
    expect(r.exitCode).toBe(3);
  });

  it("RuntimeConfig: the runtime's cgroup driver, none without a Linux configuration, Unimplemented told apart", async () => {
    handlers.set('RuntimeConfig', () => ({ linux: { cgroupDriver: 'CGROUPFS' } }));
    expect(await client.runtimeConfig()).toEqual({ linux: { cgroupDriver: 'CGROUPFS' } });
    // An empty Linux configuration is the enum's zero, SYSTEMD (as Go's GetCgroupDriver reads it).
    handlers.set('RuntimeConfig', () => ({ linux: {} }));
    expect(await client.runtimeConfig()).toEqual({ linux: { cgroupDriver: 'SYSTEMD' } });
    handlers.set('RuntimeConfig', () => ({}));
    expect(await client.runtimeConfig()).toEqual({});
    handlers.delete('RuntimeConfig');
    const err = await client.runtimeConfig().catch((e: unknown) => e);
    expect(err).toMatchObject({ method: 'RuntimeConfig', grpcCode: status.UNIMPLEMENTED });
    expect(isUnimplemented(err)).toBe(true);
    expect(isUnimplemented(new CriError('Unavailable', 'RuntimeConfig', 'down', status.UNAVAILABLE))).toBe(false);
  });

  it('rejects with DeadlineExceeded when the runtime does not answer within timeoutMs', async () => {
    handlers.set('Version', () => new Promise(() => {}));
    await expect(client.version({ timeoutMs: 50 })).rejects.toMatchObject({ kind: 'DeadlineExceeded', method: 'Version' });
  });

  it('cancels an in-flight call when the signal aborts', async () => {
    handlers.set('Status', () => new Promise(() => {}));
    const ac = new AbortController();
    const pending = client.status({ signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    await expect(pending).rejects.toMatchObject({ kind: 'Cancelled', method: 'Status' });
  });

  it('rejects calls after close() with Cancelled', async () => {
    client.close();
    await expect(client.version()).rejects.toBeInstanceOf(CriError);
    await expect(client.version()).rejects.toMatchObject({ kind: 'Cancelled' });
  });
});

describe('CriClient across a runtime restart', () => {
  async function startFake(path: string): Promise<Server> {
    const fake = new Server();
    fake.addService(pkg['runtime.v1.RuntimeService'] as ServiceDefinition, {
      Version: (_call: unknown, callback: Callback) => callback(null, { runtimeApiVersion: 'v1' }),
    });
    await new Promise<void>((resolve, reject) =>
      fake.bindAsync(`unix://${path}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    return fake;
  }

  it('answers Unavailable while the runtime is down and recovers within seconds once it is back', async () => {
    const path = join(dir, 'restart.sock');
    let fake = await startFake(path);
    const client = new CriClient(path);
    try {
      expect((await client.version()).runtimeApiVersion).toBe('v1');
      fake.forceShutdown();
      rmSync(path, { force: true });
      await expect(client.version({ timeoutMs: 2_000 })).rejects.toMatchObject({ kind: 'Unavailable' });
      fake = await startFake(path);
      // Reconnect backoff is capped at 3 s (gRPC's default would grow towards 120 s).
      const until = Date.now() + 8_000;
      let answered = false;
      while (!answered && Date.now() < until) {
        answered = await client.version({ timeoutMs: 1_000 }).then(
          () => true,
          () => new Promise<boolean>((r) => setTimeout(() => r(false), 100)),
        );
      }
      expect(answered).toBe(true);
    } finally {
      client.close();
      fake.forceShutdown();
    }
  }, 15_000);
});

describe('CriClient without a runtime', () => {
  it('rejects with Unavailable when nothing listens on the socket', async () => {
    const client = new CriClient(join(dir, 'missing.sock'));
    try {
      await expect(client.version({ timeoutMs: 5_000 })).rejects.toMatchObject({ kind: 'Unavailable', method: 'Version' });
    } finally {
      client.close();
    }
  });
});
