// The CRI runtime contract: one suite of cases that both the in-memory runtime (unit tests) and the rig's containerd
// (integration tests) must pass, so the fake the pod lifecycle's unit tests run on behaves as the real runtime does.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriError, isNotFound } from '../../src/cri/errors.js';
import type { ContainerConfig, ImageService, KeyValueMap, PodSandboxConfig, RuntimeService } from '../../src/cri/types.js';

/** The images the rig imports (scripts/runtime.sh); a fake under contract must have them present. */
/** Awaits a rejection and returns it as a CriError (failing the case if it is anything else). */
export async function criFailure(p: Promise<unknown>): Promise<CriError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(CriError);
    return err as CriError;
  }
  throw new Error('expected the call to fail');
}

export const contractImages = {
  pause: 'localhost/nodelet/pause:1.0',
  busybox: 'localhost/nodelet/busybox:1.35',
} as const;

/** A runtime under contract, with the one thing each side does its own way. */
export interface RuntimeUnderContract {
  runtime: RuntimeService & ImageService;
  /**
   * Brings a started container whose command is `sh -c 'exit <exitCode>'` to its exit and resolves once the runtime
   * reports it EXITED: the real runtime just runs the command (wait for it), the fake is told to exit it.
   */
  exitContainer(containerId: string, exitCode: number): Promise<void>;
  /** Called last, after the contract removed what it created. */
  close?(): void | Promise<void>;
}

/** Labels every object of a run carries, so that cleanup finds exactly what this run made. */
const RUN_LABEL = 'nodelet.test/runtime-contract';

export function runtimeContract(factory: () => RuntimeUnderContract | Promise<RuntimeUnderContract>): void {
  const run = `${process.pid}-${Date.now()}`;
  const bogus = 'f'.repeat(64);
  let subject: RuntimeUnderContract;
  let rt: RuntimeService & ImageService;
  let logDirectory: string;
  /** Every sandbox id a case created, removed in afterAll whatever the cases did. */
  const created = new Set<string>();

  function sandboxConfig(name: string, labels: KeyValueMap = {}): PodSandboxConfig {
    return {
      metadata: { name, uid: randomUUID(), namespace: 'nodelet-contract', attempt: 0 },
      hostname: '',
      logDirectory,
      portMappings: [],
      labels: { [RUN_LABEL]: run, ...labels },
      annotations: { 'nodelet.test/annotation': name },
      // The node's network: no CNI (and no nodelet agent) is involved on the real side.
      linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
    };
  }

  function containerConfig(name: string, script: string, labels: KeyValueMap = {}, image: string = contractImages.busybox): ContainerConfig {
    return {
      metadata: { name, attempt: 0 },
      image: { image },
      command: ['sh', '-c'],
      args: [script],
      workingDir: '/',
      envs: [],
      mounts: [],
      labels: { [RUN_LABEL]: run, 'nodelet.test/container': name, ...labels },
      annotations: { 'nodelet.test/annotation': name },
      logPath: `${name}/0.log`,
    };
  }

  async function newSandbox(name: string, labels: KeyValueMap = {}): Promise<{ id: string; config: PodSandboxConfig }> {
    const config = sandboxConfig(name, labels);
    const id = await rt.runPodSandbox(config);
    created.add(id);
    return { id, config };
  }

  async function newContainer(
    sandbox: { id: string; config: PodSandboxConfig },
    name: string,
    script: string,
    options: { start?: boolean; labels?: KeyValueMap } = {},
  ): Promise<string> {
    const id = await rt.createContainer(sandbox.id, containerConfig(name, script, options.labels), sandbox.config);
    if (options.start ?? true) await rt.startContainer(id);
    return id;
  }

  async function removeEverything(): Promise<void> {
    const mine = { labelSelector: { [RUN_LABEL]: run } };
    for (const id of created) await rt.removePodSandbox(id);
    created.clear();
    for (const c of await rt.listContainers(mine)) await rt.removeContainer(c.id);
    for (const s of await rt.listPodSandbox(mine)) await rt.removePodSandbox(s.id);
  }

  beforeAll(async () => {
    subject = await factory();
    rt = subject.runtime;
    logDirectory = mkdtempSync(join(tmpdir(), 'nodelet-contract-'));
  });

  afterAll(async () => {
    try {
      if (rt) await removeEverything();
    } finally {
      await subject?.close?.();
      if (logDirectory) rmSync(logDirectory, { recursive: true, force: true });
    }
  });

  describe('runtime', () => {
    it('Version is containerd 2 speaking CRI v1; Status reports it ready', async () => {
      const v = await rt.version();
      expect(v).toMatchObject({ runtimeName: 'containerd', runtimeApiVersion: 'v1' });
      expect(v.runtimeVersion).toMatch(/^v?2\./);
      expect((await rt.status()).conditions).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'RuntimeReady', status: true })]));
    });
  });

  describe('images', () => {
    it('ImageStatus finds busybox by tag, id, short id and repo digest; ListImages lists it', async () => {
      const image = (await rt.imageStatus(contractImages.busybox))!;
      expect(image).toMatchObject({ repoTags: [contractImages.busybox], username: '' });
      expect(image.id).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(image.repoDigests[0]).toMatch(/^localhost\/nodelet\/busybox@sha256:[0-9a-f]{64}$/);
      expect(image.uid).toBeUndefined();
      expect(image.size).toBeGreaterThan(0);
      for (const ref of [image.id, image.id.slice('sha256:'.length, 'sha256:'.length + 12), image.repoDigests[0]!]) {
        expect((await rt.imageStatus(ref))?.id).toBe(image.id);
      }
      expect((await rt.listImages()).map((i) => i.id)).toContain(image.id);
    });

    it('an absent image: ImageStatus is undefined, RemoveImage succeeds', async () => {
      const absent = `localhost/nodelet/absent-${run}:1`;
      expect(await rt.imageStatus(absent)).toBeUndefined();
      await rt.removeImage(absent);
    });
  });

  describe('sandbox lifecycle', () => {
    it("RunPodSandbox: a 64-hex id of a READY sandbox with the config's metadata, labels and annotations", async () => {
      const before = Date.now();
      const { id, config } = await newSandbox('ready');
      expect(id).toMatch(/^[0-9a-f]{64}$/);
      const status = await rt.podSandboxStatus(id, true);
      expect(status).toMatchObject({ id, state: 'SANDBOX_READY', metadata: config.metadata, labels: config.labels, annotations: config.annotations, ips: [] });
      expect(status.createdAt).toBeGreaterThanOrEqual(before - 1000);
      expect(status.createdAt).toBeLessThanOrEqual(Date.now());
      expect(JSON.parse(status.info.info ?? '{}')).toMatchObject({ processStatus: 'running', pid: expect.any(Number) });
      expect(await rt.listPodSandbox({ id })).toEqual([
        { id, metadata: config.metadata, state: 'SANDBOX_READY', createdAt: status.createdAt, labels: config.labels, annotations: config.annotations, runtimeHandler: '' },
      ]);
      expect((await rt.podSandboxStatus(id.slice(0, 12))).id).toBe(id);
    });

    it('StopPodSandbox: NOTREADY, and again; RemovePodSandbox: gone, and again; PodSandboxStatus then NotFound', async () => {
      const { id } = await newSandbox('stopped');
      await rt.stopPodSandbox(id);
      await rt.stopPodSandbox(id);
      const status = await rt.podSandboxStatus(id, true);
      expect(status.state).toBe('SANDBOX_NOTREADY');
      expect(JSON.parse(status.info.info ?? '{}')).toMatchObject({ processStatus: 'deleted', pid: 0 });
      await rt.removePodSandbox(id);
      await rt.removePodSandbox(id);
      expect(await criFailure(rt.podSandboxStatus(id))).toMatchObject({ kind: 'NotFound', grpcCode: 5 });
      expect(await rt.listPodSandbox({ id })).toEqual([]);
    });

    it('the sandbox name (name, namespace, uid, attempt) is reserved until the sandbox is removed', async () => {
      const { id, config } = await newSandbox('reserved');
      const again = await criFailure(rt.runPodSandbox(config));
      expect(again).toMatchObject({ kind: 'AlreadyExists', method: 'RunPodSandbox', grpcCode: 9 });
      expect(again.message).toContain(`is reserved for "${id}"`);
      await rt.stopPodSandbox(id);
      expect((await criFailure(rt.runPodSandbox(config))).kind).toBe('AlreadyExists');
      await rt.removePodSandbox(id);
      created.add(await rt.runPodSandbox(config));
    });

    it('RemovePodSandbox of a READY sandbox stops it and removes its running containers with it', async () => {
      const sandbox = await newSandbox('removed-ready');
      const c = await newContainer(sandbox, 'app', 'exec sleep 3600');
      await rt.removePodSandbox(sandbox.id);
      expect((await criFailure(rt.containerStatus(c))).kind).toBe('NotFound');
      expect((await criFailure(rt.podSandboxStatus(sandbox.id))).kind).toBe('NotFound');
    });
  });

  describe('container lifecycle', () => {
    it('CreateContainer, StartContainer, StopContainer (SIGKILL), RemoveContainer: states, times, exit code 137', async () => {
      const sandbox = await newSandbox('lifecycle');
      const image = (await rt.imageStatus(contractImages.busybox))!;
      const config = containerConfig('app', 'exec sleep 3600');
      const id = await rt.createContainer(sandbox.id, config, sandbox.config);
      expect(id).toMatch(/^[0-9a-f]{64}$/);
      const created = await rt.containerStatus(id);
      expect(created).toMatchObject({
        id,
        metadata: config.metadata,
        state: 'CONTAINER_CREATED',
        startedAt: 0,
        finishedAt: 0,
        exitCode: 0,
        reason: '',
        message: '',
        labels: config.labels,
        annotations: config.annotations,
        logPath: join(logDirectory, 'app/0.log'),
        // By the image's first tag and first repo digest, as containerd names them in statuses.
        image: { image: image.repoTags[0] },
        imageRef: image.repoDigests[0] ?? image.id,
        // containerd 2 reports the process's identities (CRI ContainerUser): the image runs as root.
        user: { uid: 0, gid: 0, supplementalGroups: [0] },
      });

      await rt.startContainer(id);
      const running = await rt.containerStatus(id, true);
      expect(running.state).toBe('CONTAINER_RUNNING');
      expect(running.startedAt).toBeGreaterThanOrEqual(running.createdAt);
      expect(running.finishedAt).toBe(0);
      expect(JSON.parse(running.info.info ?? '{}')).toMatchObject({ sandboxID: sandbox.id, pid: expect.any(Number) });
      // Lists name the image as the config did, and imageRef by the image id.
      expect(await rt.listContainers({ id })).toEqual([
        {
          id,
          podSandboxId: sandbox.id,
          metadata: config.metadata,
          image: { image: contractImages.busybox, annotations: {} },
          imageRef: image.id,
          state: 'CONTAINER_RUNNING',
          createdAt: created.createdAt,
          labels: config.labels,
          annotations: config.annotations,
        },
      ]);
      const again = await criFailure(rt.startContainer(id));
      expect(again).toMatchObject({ kind: 'Unknown', grpcCode: 2 });
      expect(again.message).toBe(`StartContainer: failed to set starting state for container "${id}": container is in CONTAINER_RUNNING state`);

      await rt.stopContainer(id, 0);
      const stopped = await rt.containerStatus(id);
      expect(stopped).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 137, reason: 'Error', startedAt: running.startedAt });
      expect(stopped.finishedAt).toBeGreaterThanOrEqual(stopped.startedAt);
      await rt.stopContainer(id, 0);
      expect(await rt.containerStatus(id)).toEqual(stopped);

      await rt.removeContainer(id);
      await rt.removeContainer(id);
      expect(await criFailure(rt.containerStatus(id))).toMatchObject({ kind: 'NotFound', grpcCode: 5 });
      // The name is free again.
      await rt.removeContainer(await rt.createContainer(sandbox.id, config, sandbox.config));
    });

    it.each([
      [3, 'Error'],
      [0, 'Completed'],
    ])("a container whose command exits with %i: EXITED with that code, reason %s", async (code, reason) => {
      const sandbox = await newSandbox(`exit-${code}`);
      const id = await newContainer(sandbox, 'job', `exit ${code}`);
      await subject.exitContainer(id, code);
      const status = await rt.containerStatus(id);
      expect(status).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: code, reason, message: '' });
      expect(status.startedAt).toBeGreaterThan(0);
      // containerd stamps startedAt once the start call returns and finishedAt when the shim saw the exit, which for a
      // command that exits at once can come a millisecond or so earlier; never before the container's creation.
      expect(status.finishedAt).toBeGreaterThanOrEqual(status.startedAt - 10);
      expect(status.finishedAt).toBeGreaterThanOrEqual(status.createdAt);
      expect((await rt.listContainers({ podSandboxId: sandbox.id, state: 'CONTAINER_EXITED' })).map((c) => c.id)).toEqual([id]);
      // Stopping an exited container changes nothing; exec into it is refused.
      await rt.stopContainer(id, 10);
      expect(await rt.containerStatus(id)).toEqual(status);
      expect((await criFailure(rt.execSync(id, ['true'], 5))).message).toBe('ExecSync: failed to exec in container: container is in CONTAINER_EXITED state');
    });

    it('StopContainer leaves a created container CREATED; ExecSync into it is Unknown', async () => {
      const sandbox = await newSandbox('created-only');
      const id = await newContainer(sandbox, 'idle', 'true', { start: false });
      await rt.stopContainer(id, 0);
      expect((await rt.containerStatus(id)).state).toBe('CONTAINER_CREATED');
      const exec = await criFailure(rt.execSync(id, ['true'], 5));
      expect(exec).toMatchObject({ kind: 'Unknown', grpcCode: 2, message: 'ExecSync: failed to exec in container: container is in CONTAINER_CREATED state' });
    });

    it('StopPodSandbox SIGKILLs running containers and leaves created ones; starting one then fails as StartError 128', async () => {
      const sandbox = await newSandbox('stop-with-containers');
      const running = await newContainer(sandbox, 'running', 'exec sleep 3600');
      const idle = await newContainer(sandbox, 'idle', 'exec sleep 3600', { start: false });
      await rt.stopPodSandbox(sandbox.id);
      expect(await rt.containerStatus(running)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 137, reason: 'Error' });
      expect((await rt.containerStatus(idle)).state).toBe('CONTAINER_CREATED');
      const notRunning = `sandbox container "${sandbox.id}" is not running`;
      const start = await criFailure(rt.startContainer(idle));
      expect(start).toMatchObject({ kind: 'Unknown', message: `StartContainer: ${notRunning}` });
      expect(await rt.containerStatus(idle)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 128, reason: 'StartError', message: notRunning, startedAt: 0 });
      const create = await criFailure(rt.createContainer(sandbox.id, containerConfig('late', 'true'), sandbox.config));
      expect(create).toMatchObject({ kind: 'Unknown', grpcCode: 2, message: `CreateContainer: ${notRunning}` });
    });

    it('CreateContainer: a taken name is AlreadyExists, an absent image NotFound', async () => {
      const sandbox = await newSandbox('create-errors');
      const first = await newContainer(sandbox, 'app', 'true', { start: false });
      const taken = await criFailure(rt.createContainer(sandbox.id, containerConfig('app', 'true'), sandbox.config));
      expect(taken).toMatchObject({ kind: 'AlreadyExists', grpcCode: 9 });
      expect(taken.message).toContain(`is reserved for "${first}"`);
      const absent = `localhost/nodelet/absent-${run}:1`;
      const noImage = await criFailure(rt.createContainer(sandbox.id, containerConfig('other', 'true', {}, absent), sandbox.config));
      expect(noImage).toMatchObject({ kind: 'NotFound', grpcCode: 5, message: `CreateContainer: failed to resolve image "${absent}": not found` });
      // The failed create did not keep its name.
      await rt.createContainer(sandbox.id, containerConfig('other', 'true'), sandbox.config);
    });
  });

  describe('image mounts (image volumes)', () => {
    it('the image is mounted read-only at the mount, a directory of it at another (image_sub_path); the status keeps the image', async () => {
      const sandbox = await newSandbox('image-mount');
      const image = (await rt.imageStatus(contractImages.busybox))!;
      // The container image is busybox too: the mounts are checked against what it has itself.
      const script = 'cmp /img/bin/busybox /bin/busybox && cmp /sub/busybox /bin/busybox && ! touch /img/x 2>/dev/null';
      const config = containerConfig('reader', script);
      config.mounts = [
        { containerPath: '/img', hostPath: '', readonly: true, image: { image: image.id, annotations: {} } },
        { containerPath: '/sub', hostPath: '', readonly: true, image: { image: image.id, annotations: {} }, imageSubPath: 'bin' },
      ];
      const id = await rt.createContainer(sandbox.id, config, sandbox.config);
      await rt.startContainer(id);
      await subject.exitContainer(id, 0);
      const status = await rt.containerStatus(id);
      expect(status).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 0 });
      expect(status.mounts.map(({ containerPath, readonly, image: spec, imageSubPath }) => ({ containerPath, readonly, image: spec?.image, imageSubPath }))).toEqual([
        { containerPath: '/img', readonly: true, image: image.id, imageSubPath: undefined },
        { containerPath: '/sub', readonly: true, image: image.id, imageSubPath: 'bin' },
      ]);
    });

    it('a writable image mount, or one with a host path, is refused (Unknown, ImageVolumeMountFailed)', async () => {
      const sandbox = await newSandbox('image-mount-refused');
      const image = (await rt.imageStatus(contractImages.busybox))!;
      for (const [mount, reason] of [
        [{ containerPath: '/img', hostPath: '', readonly: false }, 'readonly must be true while mount image'],
        [{ containerPath: '/img', hostPath: logDirectory, readonly: true }, 'hostpath must be empty while mount image'],
      ] as const) {
        const config = containerConfig('refused', 'true');
        config.mounts = [{ ...mount, image: { image: image.id, annotations: {} } }];
        const err = await criFailure(rt.createContainer(sandbox.id, config, sandbox.config));
        expect(err).toMatchObject({ kind: 'Unknown', grpcCode: 2 });
        expect(err.message).toContain(`CreateContainer: failed to mount image volume: ImageVolumeMountFailed: ${reason}`);
      }
      // The failed creates did not keep the name.
      await rt.createContainer(sandbox.id, containerConfig('refused', 'true'), sandbox.config);
    });
  });

  describe('list filters', () => {
    const ids: Record<string, string> = {};
    let sandboxA: string;
    let sandboxB: string;

    // Other cases' objects carry the run label too: these carry a scope label of their own.
    const scope = { 'nodelet.test/scope': 'list-filters' };
    const mine = (labels: KeyValueMap = {}) => ({ [RUN_LABEL]: run, ...scope, ...labels });

    beforeAll(async () => {
      const a = await newSandbox('filter-a', { ...scope, role: 'a' });
      const b = await newSandbox('filter-b', { ...scope, role: 'b' });
      sandboxA = a.id;
      sandboxB = b.id;
      ids['a-run'] = await newContainer(a, 'a-run', 'exec sleep 3600', { labels: { ...scope, role: 'a' } });
      ids['a-idle'] = await newContainer(a, 'a-idle', 'true', { start: false, labels: { ...scope, role: 'a' } });
      ids['b-run'] = await newContainer(b, 'b-run', 'exec sleep 3600', { labels: { ...scope, role: 'b', tier: 'x' } });
      ids['b-idle'] = await newContainer(b, 'b-idle', 'true', { start: false, labels: { ...scope, role: 'b', tier: 'x' } });
    });

    it.each<[string, () => Parameters<RuntimeService['listContainers']>[0], string[]]>([
      ['the run and scope labels', () => ({ labelSelector: mine() }), ['a-idle', 'a-run', 'b-idle', 'b-run']],
      ['two labels, both must match', () => ({ labelSelector: mine({ role: 'a' }) }), ['a-idle', 'a-run']],
      ['a label the objects lack', () => ({ labelSelector: mine({ role: 'a', tier: 'x' }) }), []],
      ['a label value that differs', () => ({ labelSelector: mine({ tier: 'y' }) }), []],
      ['labels and state', () => ({ labelSelector: mine({ tier: 'x' }), state: 'CONTAINER_RUNNING' }), ['b-run']],
      ['state CREATED', () => ({ labelSelector: mine(), state: 'CONTAINER_CREATED' }), ['a-idle', 'b-idle']],
      ['sandbox id', () => ({ podSandboxId: sandboxB }), ['b-idle', 'b-run']],
      ['sandbox id prefix', () => ({ podSandboxId: sandboxA.slice(0, 12) }), ['a-idle', 'a-run']],
      ['sandbox id and state', () => ({ podSandboxId: sandboxA, state: 'CONTAINER_RUNNING' }), ['a-run']],
      ['container id', () => ({ id: ids['b-idle']! }), ['b-idle']],
      ['container id prefix and sandbox id', () => ({ id: ids['a-run']!.slice(0, 12), podSandboxId: sandboxA }), ['a-run']],
      ['container id of another sandbox', () => ({ id: ids['a-run']!, podSandboxId: sandboxB }), []],
      ['an unknown container id', () => ({ id: bogus }), []],
      ['an unknown sandbox id', () => ({ podSandboxId: bogus }), []],
    ])('ListContainers by %s', async (_, filter, expected) => {
      const names = (await rt.listContainers(filter())).map((c) => c.metadata.name);
      expect(names.sort()).toEqual(expected);
    });

    it.each<[string, () => Parameters<RuntimeService['listPodSandbox']>[0], string[]]>([
      ['the run and scope labels', () => ({ labelSelector: mine() }), ['filter-a', 'filter-b']],
      ['the run and scope labels and role', () => ({ labelSelector: mine({ role: 'b' }) }), ['filter-b']],
      ['a label the sandboxes lack', () => ({ labelSelector: mine({ tier: 'x' }) }), []],
      ['id prefix', () => ({ id: sandboxA.slice(0, 12) }), ['filter-a']],
      ['id and state NOTREADY', () => ({ id: sandboxA, state: 'SANDBOX_NOTREADY' }), []],
      ['an unknown id', () => ({ id: bogus }), []],
    ])('ListPodSandbox by %s', async (_, filter, expected) => {
      const names = (await rt.listPodSandbox(filter())).map((s) => s.metadata.name);
      expect(names.sort()).toEqual(expected);
    });
  });

  describe('unknown ids', () => {
    it.each<[string, () => Promise<unknown>, string]>([
      ['ContainerStatus', () => rt.containerStatus(bogus), `an error occurred when try to find container "${bogus}": not found`],
      ['StartContainer', () => rt.startContainer(bogus), `an error occurred when try to find container "${bogus}": not found`],
      ['ExecSync', () => rt.execSync(bogus, ['true'], 1), `failed to exec in container: failed to find container "${bogus}" in store: not found`],
      ['PodSandboxStatus', () => rt.podSandboxStatus(bogus), 'an error occurred when try to find sandbox: not found'],
      ['CreateContainer', () => rt.createContainer(bogus, containerConfig('x', 'true'), sandboxConfig('x')), `failed to find sandbox id "${bogus}": not found`],
    ])('%s is NotFound', async (method, call, message) => {
      expect(await criFailure(call())).toMatchObject({ kind: 'NotFound', method, grpcCode: 5, message: `${method}: ${message}` });
      expect(isNotFound(await criFailure(call()))).toBe(true);
    });

    it('an empty id is Unknown (not NotFound): containerd refuses the empty prefix', async () => {
      const err = await criFailure(rt.containerStatus(''));
      expect(err).toMatchObject({ kind: 'Unknown', grpcCode: 2, message: `ContainerStatus: an error occurred when try to find container "": prefix can't be empty` });
    });

    it('StopContainer, StopPodSandbox, RemoveContainer and RemovePodSandbox of unknown ids succeed (containerd 2)', async () => {
      await rt.stopContainer(bogus, 0);
      await rt.stopPodSandbox(bogus);
      await rt.removeContainer(bogus);
      await rt.removePodSandbox(bogus);
    });
  });

  describe('cleanup', () => {
    it('leaves no sandbox or container of this run behind', async () => {
      await removeEverything();
      expect(await rt.listContainers({ labelSelector: { [RUN_LABEL]: run } })).toEqual([]);
      expect(await rt.listPodSandbox({ labelSelector: { [RUN_LABEL]: run } })).toEqual([]);
    });
  });
}
