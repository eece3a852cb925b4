// The in-memory CRI runtime's own behaviour: its test controls and what the contract (test/contract) cannot drive on containerd.
import { CriError } from '../../../src/cri/errors.js';
import type { ContainerConfig, PodSandboxConfig } from '../../../src/cri/types.js';
import { InMemoryRuntime, normalizeImageRef, type CriMethod, type InMemoryRuntimeOptions } from '../fakes/in-memory-runtime.js';
import { criFailure } from '../../contract/runtime-contract.js';

const BUSYBOX = 'localhost/nodelet/busybox:1.35';

function sandboxConfig(name = 'p', network: 'POD' | 'NODE' = 'NODE'): PodSandboxConfig {
  return {
    metadata: { name, uid: `uid-${name}`, namespace: 'default', attempt: 0 },
    hostname: name,
    logDirectory: `/var/log/pods/default_${name}`,
    portMappings: [],
    labels: { pod: name },
    annotations: {},
    linux: { securityContext: { namespaceOptions: { network, pid: 'CONTAINER', ipc: 'POD' } } },
  };
}

function containerConfig(name = 'app', image = BUSYBOX): ContainerConfig {
  return {
    metadata: { name, attempt: 0 },
    image: { image },
    command: ['sleep', '3600'],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [{ containerPath: '/data', hostPath: '/tmp/data' }],
    labels: { container: name },
    annotations: {},
    logPath: `${name}/0.log`,
  };
}

/** A runtime with busybox present, one host-network sandbox and one container in it. */
async function setUp(options: InMemoryRuntimeOptions = {}, start = true) {
  const rt = new InMemoryRuntime({ images: [BUSYBOX], ...options });
  const sandbox = sandboxConfig();
  const sandboxId = await rt.runPodSandbox(sandbox);
  const containerId = await rt.createContainer(sandboxId, containerConfig(), sandbox);
  if (start) await rt.startContainer(containerId);
  rt.clearCalls();
  return { rt, sandbox, sandboxId, containerId };
}
describe('exitContainer', () => {
  it.each([
    ['exit 0', 0, undefined, 'Completed'],
    ['exit 3', 3, undefined, 'Error'],
    ['OOM kill', 137, 'OOMKilled', 'OOMKilled'],
    ['exit 0 with a stored reason', 0, 'Custom', 'Custom'],
  ])('%s: EXITED with the code and reason %s', async (_, code, reason, expected) => {
    const { rt, containerId } = await setUp();
    rt.exitContainer(containerId, code, reason, reason ? 'the message' : '');
    const s = await rt.containerStatus(containerId);
    expect(s).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: code, reason: expected, message: reason ? 'the message' : '' });
  });

  it('refuses a container that is not running (a plain Error: test misuse, not a runtime answer)', async () => {
    const { rt, containerId } = await setUp({}, false);
    expect(() => rt.exitContainer(containerId, 1)).toThrow(/is CONTAINER_CREATED, not running/);
    expect(() => rt.exitContainer('nope', 1)).toThrow(/no sandbox or container "nope"/);
  });
});

describe('StopContainer: the stop signal', () => {
  it.each<[string, number, ((c: unknown) => number | 'ignore') | undefined, number, string]>([
    ['timeout 0 is SIGKILL', 0, undefined, 137, 'Error'],
    ['by default the process dies of SIGTERM', 5, undefined, 143, 'Error'],
    ['a process that handles SIGTERM exits with its code', 5, () => 0, 0, 'Completed'],
    ['a process that ignores SIGTERM is SIGKILLed after the timeout', 5, () => 'ignore', 137, 'Error'],
    ['timeout 0 SIGKILLs even a handler', 0, () => 0, 137, 'Error'],
  ])('%s', async (_, timeout, handler, exitCode, reason) => {
    const { rt, containerId } = await setUp();
    if (handler) rt.onStopSignal(handler);
    await rt.stopContainer(containerId, timeout);
    expect(await rt.containerStatus(containerId)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode, reason });
  });

  it('the handler sees which container is stopped', async () => {
    const { rt, containerId, sandboxId } = await setUp();
    const seen: unknown[] = [];
    rt.onStopSignal((c) => (seen.push({ id: c.id, sandbox: c.podSandboxId, name: c.name, attempt: c.attempt }), 2));
    await rt.stopContainer(containerId, 30);
    expect(seen).toEqual([{ id: containerId, sandbox: sandboxId, name: 'app', attempt: 0 }]);
  });
});

describe('failNext', () => {
  it.each<[CriMethod, (rt: InMemoryRuntime, ids: { sandboxId: string; containerId: string }) => Promise<unknown>, string]>([
    ['version', (rt) => rt.version(), 'Version'],
    ['listContainers', (rt) => rt.listContainers(), 'ListContainers'],
    ['stopContainer', (rt, { containerId }) => rt.stopContainer(containerId, 0), 'StopContainer'],
    ['removePodSandbox', (rt, { sandboxId }) => rt.removePodSandbox(sandboxId), 'RemovePodSandbox'],
    ['pullImage', (rt) => rt.pullImage('busybox'), 'PullImage'],
  ])('%s fails once with the injected kind, changing nothing, then works', async (method, call, rpc) => {
    const { rt, sandboxId, containerId } = await setUp();
    rt.failNext(method, 'Unavailable');
    const before = rt.peek();
    expect(await criFailure(call(rt, { sandboxId, containerId }))).toMatchObject({ kind: 'Unavailable', method: rpc, grpcCode: 14 });
    expect(rt.peek()).toEqual(before);
    await call(rt, { sandboxId, containerId });
    expect(rt.methods()).toEqual([method, method]);
  });

  it.each<[string, CriError | Error | 'NotFound' | 'DeadlineExceeded' | undefined, object]>([
    ['a kind', 'NotFound', { kind: 'NotFound', grpcCode: 5, message: 'CreateContainer: injected NotFound failure' }],
    ['another kind', 'DeadlineExceeded', { kind: 'DeadlineExceeded', grpcCode: 4 }],
    ['nothing: Unknown', undefined, { kind: 'Unknown', grpcCode: 2 }],
    ['a CriError, as given', new CriError('AlreadyExists', 'X', 'taken'), { kind: 'AlreadyExists', method: 'X', message: 'X: taken' }],
    ['a plain Error, wrapped as the client wraps it', new Error('boom'), { kind: 'Unknown', method: 'CreateContainer', message: 'CreateContainer: boom' }],
  ])('the error may be %s', async (_, error, expected) => {
    const { rt, sandbox, sandboxId } = await setUp();
    rt.failNext('createContainer', error);
    expect(await criFailure(rt.createContainer(sandboxId, containerConfig('other'), sandbox))).toMatchObject(expected);
  });

  it('times: the next n calls fail', async () => {
    const rt = new InMemoryRuntime();
    rt.failNext('status', 'Unknown', 2);
    await criFailure(rt.status());
    await criFailure(rt.status());
    await rt.status();
  });
});

describe('call log', () => {
  it('records each received call with its key arguments, in order', async () => {
    const rt = new InMemoryRuntime({ images: [BUSYBOX] });
    const sandbox = sandboxConfig('web');
    const sb = await rt.runPodSandbox(sandbox, 'runc');
    const c = await rt.createContainer(sb, containerConfig('nginx'), sandbox);
    await rt.startContainer(c);
    await rt.listContainers({ labelSelector: { pod: 'web' } });
    await rt.stopContainer(c, 30);
    await rt.execSync(c, ['true'], 1).catch(() => undefined);
    await rt.removePodSandbox(sb);
    expect(rt.calls).toEqual([
      { method: 'runPodSandbox', args: { name: 'web', namespace: 'default', uid: 'uid-web', attempt: 0, runtimeHandler: 'runc' } },
      { method: 'createContainer', args: { podSandboxId: sb, name: 'nginx', attempt: 0, image: BUSYBOX } },
      { method: 'startContainer', args: { containerId: c } },
      { method: 'listContainers', args: { filter: { labelSelector: { pod: 'web' } } } },
      { method: 'stopContainer', args: { containerId: c, timeoutSeconds: 30 } },
      { method: 'execSync', args: { containerId: c, cmd: ['true'], timeoutSeconds: 1 } },
      { method: 'removePodSandbox', args: { podSandboxId: sb } },
    ]);
    expect(rt.callsOf('stopContainer')).toHaveLength(1);
    rt.clearCalls();
    expect(rt.calls).toEqual([]);
  });

  it('a call aborted before it was sent is Cancelled and not received; peek() is not a call', async () => {
    const { rt } = await setUp();
    const err = await criFailure(rt.listPodSandbox(undefined, { signal: AbortSignal.abort() }));
    expect(err).toMatchObject({ kind: 'Cancelled', method: 'ListPodSandbox', grpcCode: undefined });
    rt.peek();
    expect(rt.calls).toEqual([]);
  });

  it('calls issued together are all received before any is answered, as over a socket', async () => {
    const { rt, containerId } = await setUp();
    const order: string[] = [];
    const status = rt.containerStatus(containerId).then(() => order.push('status answered'));
    const list = rt.listContainers().then(() => order.push('list answered'));
    order.push(`received ${rt.methods().join(', ')}`);
    await Promise.all([status, list]);
    expect(order).toEqual(['received containerStatus, listContainers', 'status answered', 'list answered']);
  });
});

describe('holdNext', () => {
  it('holds a call until released; reached says it arrived', async () => {
    const { rt, containerId } = await setUp();
    const hold = rt.holdNext('stopContainer');
    let done = false;
    const stop = rt.stopContainer(containerId, 0).then(() => (done = true));
    await hold.reached;
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    expect(rt.peek().containers[0]!.state).toBe('CONTAINER_RUNNING');
    hold.release();
    await stop;
    expect(rt.peek().containers[0]!.state).toBe('CONTAINER_EXITED');
  });

  it('an abort while held rejects with Cancelled and does nothing', async () => {
    const { rt, containerId } = await setUp();
    const hold = rt.holdNext('removeContainer');
    const ac = new AbortController();
    const removal = rt.removeContainer(containerId, { signal: ac.signal });
    await hold.reached;
    ac.abort();
    expect(await criFailure(removal)).toMatchObject({ kind: 'Cancelled', grpcCode: 1, message: 'RemoveContainer: Cancelled on client' });
    hold.release();
    expect(rt.peek().containers).toHaveLength(1);
  });
});

describe('runtime health', () => {
  it('while down every call is Unavailable; back up, calls work', async () => {
    const { rt, containerId } = await setUp();
    rt.setDown(true);
    for (const call of [() => rt.version(), () => rt.listPodSandbox(), () => rt.containerStatus(containerId), () => rt.imageStatus(BUSYBOX)]) {
      expect(await criFailure(call())).toMatchObject({ kind: 'Unavailable', grpcCode: 14 });
    }
    rt.setDown(false);
    expect((await rt.containerStatus(containerId)).state).toBe('CONTAINER_RUNNING');
  });

  it('Status reports the conditions set', async () => {
    const rt = new InMemoryRuntime();
    rt.setCondition('NetworkReady', false, 'NetworkPluginNotReady', 'cni plugin not initialized');
    rt.setCondition('Extra', true);
    expect((await rt.status()).conditions).toEqual([
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'cni plugin not initialized' },
      { type: 'Extra', status: true, reason: '', message: '' },
    ]);
  });

  it('Version answers as configured', async () => {
    const rt = new InMemoryRuntime({ version: { runtimeVersion: 'v1.7.0' } });
    expect(await rt.version()).toEqual({ version: '0.1.0', runtimeName: 'containerd', runtimeVersion: 'v1.7.0', runtimeApiVersion: 'v1' });
  });
});

describe('clock', () => {
  it('timestamps come from the injected clock, in milliseconds as src/cri/types.ts has them (floored)', async () => {
    let now = 1_700_000_000_000.7;
    const rt = new InMemoryRuntime({ images: [BUSYBOX], now: () => now });
    const sandbox = sandboxConfig();
    const sb = await rt.runPodSandbox(sandbox);
    now += 1000;
    const c = await rt.createContainer(sb, containerConfig(), sandbox);
    now += 1000;
    await rt.startContainer(c);
    now += 5000;
    rt.exitContainer(c, 1);
    expect((await rt.podSandboxStatus(sb)).createdAt).toBe(1_700_000_000_000);
    expect(await rt.containerStatus(c)).toMatchObject({ createdAt: 1_700_000_001_000, startedAt: 1_700_000_002_000, finishedAt: 1_700_000_007_000 });
    expect((await rt.listContainers())[0]!.createdAt).toBe(1_700_000_001_000);
  });
});

describe('start failures', () => {
  it('onStart returning a message fails StartContainer as runc does: Unknown, and EXITED 128 StartError', async () => {
    const { rt, containerId } = await setUp({}, false);
    const message = 'failed to create containerd task: exec: "nope": executable file not found in $PATH: unknown';
    rt.onStart((c) => (c.name === 'app' ? message : undefined));
    expect(await criFailure(rt.startContainer(containerId))).toMatchObject({ kind: 'Unknown', message: `StartContainer: ${message}` });
    expect(await rt.containerStatus(containerId)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 128, reason: 'StartError', message, startedAt: 0 });
  });
});

describe('ExecSync', () => {
  it('answers with what onExec says; output as Buffers', async () => {
    const { rt, containerId } = await setUp();
    rt.onExec((c, cmd) => (cmd[0] === 'cat' ? { stdout: `hello from ${c.name}`, exitCode: 0 } : { stderr: 'no', exitCode: 2 }));
    const ok = await rt.execSync(containerId, ['cat', '/ready'], 1);
    expect([ok.stdout.toString(), ok.stderr.toString(), ok.exitCode]).toEqual(['hello from app', '', 0]);
    const bad = await rt.execSync(containerId, ['false'], 1);
    expect([bad.stdout.toString(), bad.stderr.toString(), bad.exitCode]).toEqual(['', 'no', 2]);
  });

  it("a command past the call's timeout is containerd's DeadlineExceeded", async () => {
    const { rt, containerId } = await setUp();
    rt.onExec(() => 'timeout');
    expect(await criFailure(rt.execSync(containerId, ['sleep', '9'], 2))).toMatchObject({
      kind: 'DeadlineExceeded',
      grpcCode: 4,
      message: 'ExecSync: failed to exec in container: timeout 2s exceeded: context deadline exceeded',
    });
  });

  it('without a timeout a command that does not end holds the call until its signal aborts', async () => {
    const { rt, containerId } = await setUp();
    rt.onExec(() => 'timeout');
    const ac = new AbortController();
    const exec = rt.execSync(containerId, ['sleep', '9'], 0, { signal: ac.signal });
    setImmediate(() => ac.abort());
    expect((await criFailure(exec)).kind).toBe('Cancelled');
  });

  it('a handler may throw a CriError, which the call rejects with', async () => {
    const { rt, containerId } = await setUp();
    rt.onExec(() => {
      throw new CriError('Unknown', 'ExecSync', 'failed to exec in container: executable file not found');
    });
    expect((await criFailure(rt.execSync(containerId, ['nope'], 1))).message).toMatch(/executable file not found/);
  });
});

describe('sandbox network', () => {
  it('a pod-network sandbox gets an IP (10.88.0.2, ...), a host-network one none; both lose it when stopped', async () => {
    const rt = new InMemoryRuntime();
    const pod = await rt.runPodSandbox(sandboxConfig('a', 'POD'));
    const pod2 = await rt.runPodSandbox(sandboxConfig('b', 'POD'));
    const host = await rt.runPodSandbox(sandboxConfig('c', 'NODE'));
    expect((await rt.podSandboxStatus(pod)).ips).toEqual(['10.88.0.2']);
    expect((await rt.podSandboxStatus(pod2)).ips).toEqual(['10.88.0.3']);
    expect((await rt.podSandboxStatus(host)).ips).toEqual([]);
    const info = JSON.parse((await rt.podSandboxStatus(pod, true)).info.info!);
    expect(info.runtimeSpec.linux.namespaces).toEqual([{ type: 'network', path: expect.stringMatching(/^\/var\/run\/netns\/cni-/) }]);
    await rt.stopPodSandbox(pod);
    expect((await rt.podSandboxStatus(pod)).ips).toEqual([]);
    expect(JSON.parse((await rt.podSandboxStatus(pod, true)).info.info!).netNamespaceClosed).toBe(true);
  });

  it('podIPs chooses the IPs (dual stack)', async () => {
    const rt = new InMemoryRuntime({ podIPs: (c) => [`10.1.0.${c.metadata.name.length}`, 'fd00::1'] });
    expect((await rt.podSandboxStatus(await rt.runPodSandbox(sandboxConfig('abc', 'POD')))).ips).toEqual(['10.1.0.3', 'fd00::1']);
  });

  it("exitSandbox: the pause process died: NOTREADY, containers and IPs untouched until StopPodSandbox", async () => {
    const rt = new InMemoryRuntime({ images: [BUSYBOX] });
    const config = sandboxConfig('a', 'POD');
    const sb = await rt.runPodSandbox(config);
    const c = await rt.createContainer(sb, containerConfig(), config);
    await rt.startContainer(c);
    rt.exitSandbox(sb);
    expect(await rt.podSandboxStatus(sb)).toMatchObject({ state: 'SANDBOX_NOTREADY', ips: ['10.88.0.2'] });
    expect((await rt.containerStatus(c)).state).toBe('CONTAINER_RUNNING');
    await rt.stopPodSandbox(sb);
    expect((await rt.containerStatus(c)).exitCode).toBe(137);
  });
});

describe('ids', () => {
  it('a prefix matching several ids is Unknown, as containerd says', async () => {
    const rt = new InMemoryRuntime({ images: [BUSYBOX] });
    const config = sandboxConfig();
    const sb = await rt.runPodSandbox(config);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await rt.createContainer(sb, containerConfig(`c${i}`), config));
    const shared = ids.map((id) => id[0]!).find((ch, i, all) => all.indexOf(ch) !== i)!;
    expect(await criFailure(rt.containerStatus(shared))).toMatchObject({
      kind: 'Unknown',
      message: `ContainerStatus: an error occurred when try to find container "${shared}": Multiple IDs found with provided prefix: ${shared}`,
    });
  });

  it('ContainerStatus: config mounts with the proto defaults filled in, the log path joined to the sandbox log directory', async () => {
    const { rt, containerId } = await setUp();
    expect(await rt.containerStatus(containerId)).toMatchObject({
      mounts: [{ containerPath: '/data', hostPath: '/tmp/data', readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' }],
      logPath: '/var/log/pods/default_p/app/0.log',
    });
  });

  it('returned objects are copies: changing them changes nothing in the runtime', async () => {
    const { rt, containerId } = await setUp();
    const listed = await rt.listContainers();
    listed[0]!.labels.container = 'changed';
    (await rt.containerStatus(containerId)).labels.container = 'changed too';
    expect((await rt.listContainers())[0]!.labels.container).toBe('app');
  });
});

describe('images', () => {
  it.each([
    ['busybox', 'docker.io/library/busybox:latest'],
    ['busybox:1.36', 'docker.io/library/busybox:1.36'],
    ['nginx/nginx', 'docker.io/nginx/nginx:latest'],
    ['index.docker.io/library/busybox', 'docker.io/library/busybox:latest'],
    ['localhost/nodelet/busybox:1.35', 'localhost/nodelet/busybox:1.35'],
    ['registry.k8s.io/pause', 'registry.k8s.io/pause:latest'],
    ['localhost:5000/app', 'localhost:5000/app:latest'],
    [`busybox@sha256:${'a'.repeat(64)}`, `docker.io/library/busybox@sha256:${'a'.repeat(64)}`],
  ])('normalizeImageRef(%s) is %s', (ref, normalized) => {
    expect(normalizeImageRef(ref)).toBe(normalized);
  });

  it('PullImage stores the image under its normalized tag and returns its id, which ImageStatus resolves', async () => {
    const rt = new InMemoryRuntime();
    expect(await rt.imageStatus('busybox')).toBeUndefined();
    const ref = await rt.pullImage('busybox');
    expect(ref).toMatch(/^sha256:[0-9a-f]{64}$/);
    const image = await rt.imageStatus(ref);
    expect(image).toMatchObject({ id: ref, repoTags: ['docker.io/library/busybox:latest'], username: '' });
    expect(await rt.imageStatus('docker.io/library/busybox:latest')).toEqual(image);
    expect(await rt.pullImage('docker.io/library/busybox')).toBe(ref);
    expect(await rt.listImages()).toEqual([image]);
  });

  it.each([
    ['1000', { uid: 1000, username: '' }],
    ['1000:1000', { uid: 1000, username: '' }],
    ['nginx', { username: 'nginx' }],
    ['nginx:nginx', { username: 'nginx' }],
    ['', { username: '' }],
  ])("an image whose config's User is %j reports %j", async (user, expected) => {
    const rt = new InMemoryRuntime({ images: [{ ref: 'present:1', user }] });
    rt.publishImage({ ref: 'pulled:1', user, size: 42 });
    const present = (await rt.imageStatus('present:1'))!;
    const pulled = (await rt.imageStatus(await rt.pullImage('pulled:1')))!;
    for (const image of [present, pulled]) {
      expect({ uid: image.uid, username: image.username }).toEqual({ uid: undefined, ...expected });
    }
    expect(pulled.size).toBe(42);
  });

  it("failPulls: containerd's NotFound for a reference the registry lacks, or the error given, until cleared", async () => {
    const rt = new InMemoryRuntime();
    rt.failPulls('nope');
    const ref = 'docker.io/library/nope:latest';
    expect(await criFailure(rt.pullImage('nope'))).toMatchObject({
      kind: 'NotFound',
      method: 'PullImage',
      message: `PullImage: failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": ${ref}: not found`,
    });
    rt.failPulls('nope', new CriError('Unknown', 'PullImage', 'connection refused'));
    expect((await criFailure(rt.pullImage('docker.io/library/nope'))).message).toBe('PullImage: connection refused');
    rt.clearPullFailures('nope');
    await rt.pullImage('nope');
  });

  it('RemoveImage removes it: CreateContainer then fails; an existing container names the image as its config did', async () => {
    const { rt, sandbox, sandboxId, containerId } = await setUp();
    const image = (await rt.imageStatus(BUSYBOX))!;
    expect((await rt.containerStatus(containerId)).imageRef).toBe(image.repoDigests[0]);
    await rt.removeImage(BUSYBOX);
    expect(await rt.imageStatus(image.id)).toBeUndefined();
    expect(await rt.containerStatus(containerId)).toMatchObject({ image: { image: BUSYBOX }, imageRef: image.id });
    expect((await criFailure(rt.createContainer(sandboxId, containerConfig('other'), sandbox))).kind).toBe('NotFound');
  });

  it('a tag imported again moves to the new image', async () => {
    const rt = new InMemoryRuntime({ images: [{ ref: 'app:1', id: `sha256:${'1'.repeat(64)}` }] });
    rt.addImage({ ref: 'app:1', id: `sha256:${'2'.repeat(64)}` });
    expect((await rt.imageStatus('app:1'))!.id).toBe(`sha256:${'2'.repeat(64)}`);
    expect((await rt.imageStatus(`sha256:${'1'.repeat(64)}`))!.repoTags).toEqual([]);
  });
});
