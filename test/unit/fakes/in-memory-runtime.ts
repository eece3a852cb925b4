// An in-memory CRI runtime for unit tests: RuntimeService and ImageService as containerd 2's CRI plugin answers them, plus test controls.
//
// What it reproduces (checked against the rig's containerd 2.4.2 by test/contract/runtime-contract.ts):
// - errors: the gRPC code and message containerd sends, classified by src/cri/errors.ts exactly as CriClient does,
//   so `CriError.kind`, `.method`, `.grpcCode` and `.message` are what the client would give;
// - ids: 64 hex digits; every id argument also accepts a unique prefix (containerd's truncindex);
// - names: a sandbox's `name_namespace_uid_attempt` and a container's `name_<sandbox name>` are reserved until removal;
// - states: StopContainer of a created or exited container does nothing; StopPodSandbox SIGKILLs running containers
//   (137) and leaves created ones; StartContainer that fails leaves the container EXITED (128, StartError);
//   RemoveContainer / RemovePodSandbox stop what still runs; stops and removals succeed for absent ids;
// - statuses: reason Completed / Error computed for exited containers unless one was set (OOMKilled, StartError);
//   ContainerStatus names the image by its first tag and imageRef by its first repo digest, lists by the config's
//   image and the image id; a sandbox's IPs vanish when it stops; `verbose` adds containerd's `info` JSON.
// Where it differs on purpose: no process runs (a container exits when the test says so, StopContainer returns at once
// instead of waiting out its timeout), lists come back in creation order, timestamps come from the injected clock.
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { CriError, toCriError, type CriErrorKind } from '../../../src/cri/errors.js';
import type {
  CallOptions,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerState,
  ContainerStatus,
  ExecSyncResult,
  Image,
  ImageService,
  KeyValueMap,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxState,
  PodSandboxStatus,
  NamespaceOption,
  RuntimeCondition,
  RuntimeHandler,
  RuntimeService,
  RuntimeStatus,
  VersionInfo,
} from '../../../src/cri/types.js';

/** A CRI method by its name on RuntimeService / ImageService. */
export type CriMethod = keyof RuntimeService | keyof ImageService;

/** The CRI RPC name each method sends (and that CriError.method carries). */
const rpcNames: Record<CriMethod, string> = {
  version: 'Version',
  status: 'Status',
  runPodSandbox: 'RunPodSandbox',
  stopPodSandbox: 'StopPodSandbox',
  removePodSandbox: 'RemovePodSandbox',
  podSandboxStatus: 'PodSandboxStatus',
  listPodSandbox: 'ListPodSandbox',
  createContainer: 'CreateContainer',
  startContainer: 'StartContainer',
  stopContainer: 'StopContainer',
  removeContainer: 'RemoveContainer',
  listContainers: 'ListContainers',
  containerStatus: 'ContainerStatus',
  execSync: 'ExecSync',
  updateContainerResources: 'UpdateContainerResources',
  updatePodSandboxResources: 'UpdatePodSandboxResources',
  imageStatus: 'ImageStatus',
  pullImage: 'PullImage',
  listImages: 'ListImages',
  removeImage: 'RemoveImage',
};

/** One call the runtime received: the method and its key arguments (ids, names, filters, timeouts). */
export interface CriCall {
  method: CriMethod;
  args: Record<string, unknown>;
}

/** An image to have present (or to be pulled): a reference, or a reference with details. */
export type ImageSeed =
  | string
  | {
      ref: string;
      /** "sha256:<64 hex>"; derived from the reference when omitted. */
      id?: string;
      size?: number;
      /** The image config's User, as containerd reads it: "1000", "nginx", "1000:1000". */
      user?: string;
    };

/** What a command run by ExecSync does: its output and exit code, or it outlives the call's timeout. */
export type ExecOutcome = { stdout?: string | Buffer; stderr?: string | Buffer; exitCode?: number } | 'timeout';

/** A container as the test controls see it. */
export interface ContainerView {
  id: string;
  podSandboxId: string;
  name: string;
  attempt: number;
  state: ContainerState;
  config: ContainerConfig;
}

export interface InMemoryRuntimeOptions {
  /** Wall clock in milliseconds since the epoch (the unit of src/cri/types.ts); default Date.now. */
  now?: () => number;
  /** Images present from the start. */
  images?: ImageSeed[];
  /** IPs a sandbox that is not in the node's network gets; default 10.88.0.2, 10.88.0.3, ... (as a CNI bridge would). */
  podIPs?: (config: PodSandboxConfig) => string[];
  /** What Version answers; default containerd 2.4.2 speaking CRI v1. */
  version?: Partial<VersionInfo>;
}

/** A lookup by id or id prefix failed as containerd's truncindex fails. */
class LookupError extends Error {
  constructor(
    readonly notFound: boolean,
    message: string,
  ) {
    super(message);
  }
}

interface SandboxRecord {
  id: string;
  name: string;
  config: PodSandboxConfig;
  runtimeHandler: string;
  state: PodSandboxState;
  createdAt: number;
  ips: string[];
  pid: number;
}

interface ContainerRecord {
  id: string;
  podSandboxId: string;
  name: string;
  config: ContainerConfig;
  imageId: string;
  logPath: string;
  state: ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  /** The reason containerd stored (OOMKilled, StartError); Completed / Error are derived when empty. */
  reason: string;
  message: string;
  pid: number;
}

interface ImageRecord {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  user: string;
}

interface Hold {
  reached: () => void;
  released: Promise<void>;
}

/** Exit code containerd reports for a container that failed to start (errorStartExitCode). */
const startErrorExitCode = 128;
/** 128 + SIGKILL / SIGTERM: a process killed by the signal. */
const killedExitCode = 137;
const terminatedExitCode = 143;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const clone = <T>(value: T): T => structuredClone(value);

/** Every label of the selector present with the same value (CRI's label selector: all must match). */
function matchesSelector(labels: KeyValueMap, selector: KeyValueMap | undefined): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);
}

/**
 * A reference as containerd names it in repoTags / repoDigests (docker's ParseDockerRef): the docker.io domain and
 * library/ path added to a bare name, :latest to a reference without tag or digest.
 */
export function normalizeImageRef(ref: string): string {
  const at = ref.indexOf('@');
  const named = at < 0 ? ref : ref.slice(0, at);
  const digest = at < 0 ? '' : ref.slice(at);
  const slash = named.indexOf('/');
  const first = slash < 0 ? '' : named.slice(0, slash);
  const hasDomain = first !== '' && (first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase());
  let name = hasDomain ? named : `docker.io/${slash < 0 ? `library/${named}` : named}`;
  if (name.startsWith('index.docker.io/')) name = `docker.io/${name.slice('index.docker.io/'.length)}`;
  const lastPart = name.slice(name.lastIndexOf('/') + 1);
  if (digest === '' && !lastPart.includes(':')) name += ':latest';
  return name + digest;
}

/** containerd's getUserFromImage: the user part of "user[:group]", numeric as uid, otherwise as name. */
function imageUser(user: string): Pick<Image, 'uid' | 'username'> {
  const name = user.split(':')[0] ?? '';
  if (name === '') return { username: '' };
  return /^\d+$/.test(name) ? { uid: Number(name), username: '' } : { username: name };
}

/**
 * RuntimeService and ImageService in memory. CRI methods first, then the test controls (below the marker comment);
 * the controls never go through the call log, failure injection or holds.
 */
export class InMemoryRuntime implements RuntimeService, ImageService {
  private readonly now: () => number;
  private readonly podIPs: (config: PodSandboxConfig) => string[];
  private readonly versionInfo: VersionInfo;
  private readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly containers = new Map<string, ContainerRecord>();
  private readonly images = new Map<string, ImageRecord>();
  /** Reserved sandbox and container names -> the id holding each. */
  private readonly names = new Map<string, string>();
  /** What a pull of a reference yields (normalized reference -> seed), and references whose pulls fail. */
  private readonly published = new Map<string, Exclude<ImageSeed, string>>();
  private readonly pullFailures = new Map<string, CriError | undefined>();
  private readonly failures = new Map<CriMethod, CriError[]>();
  private readonly holds = new Map<CriMethod, Hold[]>();
  private readonly conditions: RuntimeCondition[] = [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ];
  /** containerd 2's: the default handler and runc, both with user namespaces (runc 1.2+ has idmapped mounts). */
  private handlers: RuntimeHandler[] = [
    { name: '', recursiveReadOnlyMounts: true, userNamespaces: true },
    { name: 'runc', recursiveReadOnlyMounts: true, userNamespaces: true },
  ];
  private readonly log: CriCall[] = [];
  private down = false;
  private seq = 0;
  private ipSeq = 0;
  private execHandler: (c: ContainerView, cmd: string[], timeoutSeconds: number) => ExecOutcome | Promise<ExecOutcome> = () => ({});
  private stopSignalHandler: (c: ContainerView) => number | 'ignore' = () => terminatedExitCode;
  private startHandler: (c: ContainerView) => string | undefined = () => undefined;

  constructor(options: InMemoryRuntimeOptions = {}) {
    this.now = options.now ?? Date.now;
    this.podIPs = options.podIPs ?? (() => [`10.88.0.${(this.ipSeq++ % 253) + 2}`]);
    this.versionInfo = { version: '0.1.0', runtimeName: 'containerd', runtimeVersion: 'v2.4.2', runtimeApiVersion: 'v1', ...options.version };
    for (const seed of options.images ?? []) this.addImage(seed);
  }

  // ---- RuntimeService ----

  async version(opts?: CallOptions): Promise<VersionInfo> {
    await this.receive('version', {}, opts);
    return { ...this.versionInfo };
  }

  async status(opts?: CallOptions): Promise<RuntimeStatus> {
    await this.receive('status', {}, opts);
    return { conditions: clone(this.conditions), handlers: clone(this.handlers) };
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = '', opts?: CallOptions): Promise<string> {
    const m = config.metadata;
    await this.receive('runPodSandbox', { name: m.name, namespace: m.namespace, uid: m.uid, attempt: m.attempt, runtimeHandler }, opts);
    const id = this.newId('sandbox');
    const name = [m.name, m.namespace, m.uid, m.attempt].join('_');
    this.reserveName('runPodSandbox', 'sandbox', name, id);
    const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === 'NODE';
    this.sandboxes.set(id, {
      id,
      name,
      config: clone(config),
      runtimeHandler,
      state: 'SANDBOX_READY',
      createdAt: this.timestamp(),
      ips: hostNetwork ? [] : [...this.podIPs(config)],
      pid: this.nextPid(),
    });
    return id;
  }

  async stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.receive('stopPodSandbox', { podSandboxId }, opts);
    // containerd 2 stops an unknown sandbox as a stopped one (stops are idempotent).
    const sandbox = this.findSandbox('stopPodSandbox', podSandboxId, `an error occurred when try to find sandbox "${podSandboxId}"`, true);
    if (sandbox) this.stopSandbox(sandbox);
  }

  async removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.receive('removePodSandbox', { podSandboxId }, opts);
    const sandbox = this.findSandbox('removePodSandbox', podSandboxId, `an error occurred when try to find sandbox "${podSandboxId}"`, true);
    if (!sandbox) return;
    // containerd stops a sandbox that still runs ("Forcibly stopping sandbox") and removes its containers with it.
    if (sandbox.state === 'SANDBOX_READY') this.stopSandbox(sandbox);
    for (const c of [...this.containers.values()]) if (c.podSandboxId === sandbox.id) this.deleteContainer(c);
    this.names.delete(sandbox.name);
    this.sandboxes.delete(sandbox.id);
  }

  async podSandboxStatus(podSandboxId: string, verbose = false, opts?: CallOptions): Promise<PodSandboxStatus> {
    await this.receive('podSandboxStatus', { podSandboxId, verbose }, opts);
    // containerd's message names no id here.
    const s = this.findSandbox('podSandboxStatus', podSandboxId, 'an error occurred when try to find sandbox');
    return {
      id: s.id,
      metadata: clone(s.config.metadata),
      state: s.state,
      createdAt: s.createdAt,
      ips: [...s.ips],
      labels: clone(s.config.labels),
      annotations: clone(s.config.annotations),
      info: verbose ? { info: JSON.stringify(this.sandboxInfo(s)) } : {},
    };
  }

  async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    await this.receive('listPodSandbox', { filter: clone(filter) }, opts);
    const id = filter?.id ? this.resolvesTo(this.sandboxes, filter.id) : undefined;
    return [...this.sandboxes.values()]
      .filter((s) => (!id || s.id === id) && (!filter?.state || s.state === filter.state) && matchesSelector(s.config.labels, filter?.labelSelector))
      .map((s) => ({
        id: s.id,
        metadata: clone(s.config.metadata),
        state: s.state,
        createdAt: s.createdAt,
        labels: clone(s.config.labels),
        annotations: clone(s.config.annotations),
        runtimeHandler: s.runtimeHandler,
      }));
  }

  async createContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    const args = { podSandboxId, name: config.metadata.name, attempt: config.metadata.attempt, image: config.image.image };
    await this.receive('createContainer', args, opts);
    // containerd's order: the sandbox, its running task, the name, then the image.
    const sandbox = this.findSandbox('createContainer', podSandboxId, `failed to find sandbox id "${podSandboxId}"`);
    if (sandbox.state !== 'SANDBOX_READY') {
      throw this.error('createContainer', GrpcStatus.UNKNOWN, `sandbox container "${sandbox.id}" is not running`);
    }
    // containerd's sameUsernsConfig: the container's user namespace must be the one of the sandbox config sent with it.
    const userns = (ns: NamespaceOption | undefined) => JSON.stringify(ns?.usernsOptions ?? null);
    if (userns(config.linux?.securityContext?.namespaceOptions) !== userns(sandboxConfig.linux?.securityContext?.namespaceOptions)) {
      throw this.error('createContainer', GrpcStatus.UNKNOWN, 'user namespace config for sandbox is different from container');
    }
    const sm = sandboxConfig.metadata;
    const name = [config.metadata.name, sm.name, sm.namespace, sm.uid, config.metadata.attempt].join('_');
    const id = this.newId('container');
    this.reserveName('createContainer', 'container', name, id);
    const image = this.resolveImage(config.image.image);
    if (!image) {
      this.names.delete(name);
      throw this.error('createContainer', GrpcStatus.NOT_FOUND, `failed to resolve image "${config.image.image}": not found`);
    }
    // containerd's mutateImageMount checks of an image volume's mount (the image's content is not modelled: any sub path exists).
    for (const m of config.mounts) {
      if (!m.image) continue;
      const refused = m.hostPath !== ''
        ? 'hostpath must be empty while mount image'
        : !m.readonly
          ? 'readonly must be true while mount image'
          : !this.resolveImage(m.image.image)
            ? `failed to resolve image "${m.image.image}": not found`
            : undefined;
      if (refused) {
        this.names.delete(name);
        throw this.error('createContainer', GrpcStatus.UNKNOWN, `failed to mount image volume: ImageVolumeMountFailed: ${refused}`);
      }
    }
    this.containers.set(id, {
      id,
      podSandboxId: sandbox.id,
      name,
      config: clone(config),
      imageId: image.id,
      logPath: sandboxConfig.logDirectory && config.logPath ? posix.join(sandboxConfig.logDirectory, config.logPath) : '',
      state: 'CONTAINER_CREATED',
      createdAt: this.timestamp(),
      startedAt: 0,
      finishedAt: 0,
      exitCode: 0,
      reason: '',
      message: '',
      pid: 0,
    });
    return id;
  }

  async startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.receive('startContainer', { containerId }, opts);
    const c = this.findContainer('startContainer', containerId, `an error occurred when try to find container "${containerId}"`);
    if (c.state !== 'CONTAINER_CREATED') {
      throw this.error('startContainer', GrpcStatus.UNKNOWN, `failed to set starting state for container "${c.id}": container is in ${c.state} state`);
    }
    const sandbox = this.sandboxes.get(c.podSandboxId);
    const failure =
      sandbox?.state !== 'SANDBOX_READY' ? `sandbox container "${c.podSandboxId}" is not running` : this.startHandler(this.view(c));
    if (failure !== undefined) {
      // containerd marks a container that failed to start as exited, never started.
      this.exit(c, startErrorExitCode, 'StartError', failure);
      throw this.error('startContainer', GrpcStatus.UNKNOWN, failure);
    }
    c.state = 'CONTAINER_RUNNING';
    c.startedAt = this.timestamp();
    c.pid = this.nextPid();
  }

  async stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    await this.receive('stopContainer', { containerId, timeoutSeconds }, opts);
    // containerd 2 stops an unknown container as a stopped one (stops are idempotent); it stops only a running
    // container, a created or exited one is left as it is.
    const c = this.findContainer('stopContainer', containerId, `an error occurred when try to find container "${containerId}"`, true);
    if (c?.state !== 'CONTAINER_RUNNING') return;
    const response = timeoutSeconds > 0 ? this.stopSignalHandler(this.view(c)) : 'ignore';
    this.exit(c, response === 'ignore' ? killedExitCode : response, '', '');
  }

  async removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.receive('removeContainer', { containerId }, opts);
    const c = this.findContainer('removeContainer', containerId, `an error occurred when try to find container "${containerId}"`, true);
    if (c) this.deleteContainer(c);
  }

  async listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    await this.receive('listContainers', { filter: clone(filter) }, opts);
    const id = filter?.id ? this.resolvesTo(this.containers, filter.id) : undefined;
    const sandboxId = filter?.podSandboxId ? this.resolvesTo(this.sandboxes, filter.podSandboxId) : undefined;
    return [...this.containers.values()]
      .filter(
        (c) =>
          (!id || c.id === id) &&
          (!sandboxId || c.podSandboxId === sandboxId) &&
          (!filter?.state || c.state === filter.state) &&
          matchesSelector(c.config.labels, filter?.labelSelector),
      )
      .map((c) => ({
        id: c.id,
        podSandboxId: c.podSandboxId,
        metadata: clone(c.config.metadata),
        image: { image: c.config.image.image, annotations: clone(c.config.image.annotations ?? {}) },
        imageRef: c.imageId,
        state: c.state,
        createdAt: c.createdAt,
        labels: clone(c.config.labels),
        annotations: clone(c.config.annotations),
      }));
  }

  async containerStatus(containerId: string, verbose = false, opts?: CallOptions): Promise<ContainerStatus> {
    await this.receive('containerStatus', { containerId, verbose }, opts);
    const c = this.findContainer('containerStatus', containerId, `an error occurred when try to find container "${containerId}"`);
    // As containerd: the image by its first tag and imageRef by its first repo digest, while the image is present.
    const image = this.images.get(c.imageId);
    let reason = c.reason;
    if (c.state === 'CONTAINER_EXITED' && reason === '') reason = c.exitCode === 0 ? 'Completed' : 'Error';
    return {
      id: c.id,
      metadata: clone(c.config.metadata),
      state: c.state,
      createdAt: c.createdAt,
      startedAt: c.startedAt,
      finishedAt: c.finishedAt,
      exitCode: c.exitCode,
      image: { image: image?.repoTags[0] ?? c.config.image.image, annotations: {} },
      imageRef: image?.repoDigests[0] ?? c.imageId,
      reason,
      message: c.message,
      labels: clone(c.config.labels),
      annotations: clone(c.config.annotations),
      mounts: c.config.mounts.map((m) => ({
        containerPath: m.containerPath,
        hostPath: m.hostPath,
        readonly: m.readonly ?? false,
        selinuxRelabel: m.selinuxRelabel ?? false,
        propagation: m.propagation ?? 'PROPAGATION_PRIVATE',
        ...(m.image ? { image: clone(m.image) } : {}),
        ...(m.imageSubPath ? { imageSubPath: m.imageSubPath } : {}),
      })),
      logPath: c.logPath,
      user: this.containerUser(c),
      ...(c.config.linux?.resources ? { resources: clone(c.config.linux.resources) } : {}),
      info: verbose ? { info: JSON.stringify(this.containerInfo(c)) } : {},
    };
  }

  /**
   * The identities containerd reports for the container's first process: the security context's user and group (the
   * images here set none: root) and the primary group among the supplemental ones. Checked for the default, root.
   */
  private containerUser(c: ContainerRecord): { uid: number; gid: number; supplementalGroups: number[] } {
    const sc = c.config.linux?.securityContext;
    const gid = sc?.runAsGroup ?? 0;
    return { uid: sc?.runAsUser ?? 0, gid, supplementalGroups: [...new Set([gid, ...(sc?.supplementalGroups ?? [])])] };
  }

  async updateContainerResources(containerId: string, resources: LinuxContainerResources, opts?: CallOptions): Promise<void> {
    await this.receive('updateContainerResources', { containerId, resources: clone(resources) }, opts);
    const c = this.findContainer('updateContainerResources', containerId, 'failed to find container');
    // containerd writes the new values over the container's spec (its status reports them) and, if it runs, its cgroup.
    const linux = (c.config.linux ??= {});
    linux.resources = { ...linux.resources, ...resources };
  }

  async updatePodSandboxResources(podSandboxId: string, resources: LinuxContainerResources, opts?: CallOptions): Promise<void> {
    await this.receive('updatePodSandboxResources', { podSandboxId, resources: clone(resources) }, opts);
    this.findSandbox('updatePodSandboxResources', podSandboxId, 'failed to find sandbox');
  }

  async execSync(containerId: string, cmd: string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecSyncResult> {
    await this.receive('execSync', { containerId, cmd: [...cmd], timeoutSeconds }, opts);
    const c = this.findContainer('execSync', containerId, `failed to exec in container: failed to find container "${containerId}" in store`);
    if (c.state !== 'CONTAINER_RUNNING') {
      throw this.error('execSync', GrpcStatus.UNKNOWN, `failed to exec in container: container is in ${c.state} state`);
    }
    const outcome = await this.execHandler(this.view(c), [...cmd], timeoutSeconds);
    if (outcome === 'timeout') {
      // Without a timeout containerd waits for the command: the call ends only when the caller gives up.
      if (timeoutSeconds <= 0) return this.hang('execSync', opts);
      throw this.error('execSync', GrpcStatus.DEADLINE_EXCEEDED, `failed to exec in container: timeout ${timeoutSeconds}s exceeded: context deadline exceeded`);
    }
    return { stdout: Buffer.from(outcome.stdout ?? ''), stderr: Buffer.from(outcome.stderr ?? ''), exitCode: outcome.exitCode ?? 0 };
  }

  // ---- ImageService ----

  async imageStatus(image: string, opts?: CallOptions): Promise<Image | undefined> {
    await this.receive('imageStatus', { image }, opts);
    const found = this.resolveImage(image);
    return found && this.toImage(found);
  }

  async pullImage(image: string, _sandboxConfig?: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    await this.receive('pullImage', { image }, opts);
    const ref = normalizeImageRef(image);
    if (this.pullFailures.has(ref)) {
      throw (
        this.pullFailures.get(ref) ??
        this.error('pullImage', GrpcStatus.NOT_FOUND, `failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": ${ref}: not found`)
      );
    }
    return this.addImage({ ...this.published.get(ref), ref: image }).id;
  }

  async listImages(opts?: CallOptions): Promise<Image[]> {
    await this.receive('listImages', {}, opts);
    return [...this.images.values()].map((i) => this.toImage(i));
  }

  async removeImage(image: string, opts?: CallOptions): Promise<void> {
    await this.receive('removeImage', { image }, opts);
    // containerd removes every reference of the image; an absent image is no error.
    const found = this.resolveImage(image);
    if (found) this.images.delete(found.id);
  }

  // ---- test controls (not CRI: no call log, no injected failures) ----

  /** The CRI calls received so far, in order (calls aborted before they were sent are not received). */
  get calls(): readonly CriCall[] {
    return this.log;
  }

  /** Just the method names of `calls`, in order. */
  methods(): CriMethod[] {
    return this.log.map((c) => c.method);
  }

  /** The received calls of one method. */
  callsOf(method: CriMethod): CriCall[] {
    return this.log.filter((c) => c.method === method);
  }

  clearCalls(): void {
    this.log.length = 0;
  }

  /**
   * The next `times` calls of `method` fail with `error` before doing anything: a CriError as given, a kind
   * (a CriError of that kind, as the client would make from the matching gRPC code), or any error (wrapped as the
   * client wraps it).
   */
  failNext(method: CriMethod, error: CriError | CriErrorKind | Error = 'Unknown', times = 1): void {
    const err = typeof error === 'string' ? this.error(method, grpcCodeOf[error], `injected ${error} failure`) : toCriError(rpcNames[method], error);
    const queue = this.failures.get(method) ?? [];
    for (let i = 0; i < times; i++) queue.push(err);
    this.failures.set(method, queue);
  }

  /**
   * Holds the next call of `method` once received, until `release()`; `reached` resolves when it arrives. An abort
   * of the call's signal while held rejects it with Cancelled (what the client reports for a cancelled call).
   */
  holdNext(method: CriMethod): { reached: Promise<void>; release: () => void } {
    let reached!: () => void;
    let release!: () => void;
    const reachedP = new Promise<void>((r) => (reached = r));
    const released = new Promise<void>((r) => (release = r));
    const queue = this.holds.get(method) ?? [];
    queue.push({ reached, released });
    this.holds.set(method, queue);
    return { reached: reachedP, release };
  }

  /** While down, every call fails with Unavailable, as when containerd's socket does not answer. */
  setDown(down: boolean): void {
    this.down = down;
  }

  /** Sets a condition Status reports (RuntimeReady, NetworkReady, or another). */
  /** What Status tells of the runtime handlers; [] as a runtime before CRI's runtime_handlers. */
  setRuntimeHandlers(handlers: RuntimeHandler[]): void {
    this.handlers = clone(handlers);
  }

  setCondition(type: string, status: boolean, reason = '', message = ''): void {
    const existing = this.conditions.find((c) => c.type === type);
    if (existing) Object.assign(existing, { status, reason, message });
    else this.conditions.push({ type, status, reason, message });
  }

  /**
   * The container's process exits (it must be running): EXITED with the code, finishedAt now, and the reason
   * containerd would store (e.g. 'OOMKilled'); without one, ContainerStatus says Completed for 0, Error otherwise.
   */
  exitContainer(containerId: string, exitCode: number, reason = '', message = ''): void {
    const c = this.testLookup(this.containers, containerId);
    if (c.state !== 'CONTAINER_RUNNING') throw new Error(`exitContainer: container ${c.id} is ${c.state}, not running`);
    this.exit(c, exitCode, reason, message);
  }

  /** The sandbox's pause process dies: NOTREADY, its containers untouched (the network stays until StopPodSandbox). */
  exitSandbox(podSandboxId: string): void {
    const s = this.testLookup(this.sandboxes, podSandboxId);
    s.state = 'SANDBOX_NOTREADY';
    s.pid = 0;
  }

  /**
   * How StopContainer's stop signal is answered when it gives the process time (timeoutSeconds > 0): an exit code,
   * or 'ignore' (SIGKILL after the timeout: 137). Default: the process dies of SIGTERM, 143. A timeout of 0 is
   * always SIGKILL.
   */
  onStopSignal(handler: (c: ContainerView) => number | 'ignore'): void {
    this.stopSignalHandler = handler;
  }

  /** Decides whether StartContainer fails as runc does: a message fails the start (EXITED 128, StartError, that message). */
  onStart(handler: (c: ContainerView) => string | undefined): void {
    this.startHandler = handler;
  }

  /** What ExecSync's commands do; default: exit 0 without output. The handler may throw a CriError to fail the call. */
  onExec(handler: (c: ContainerView, cmd: string[], timeoutSeconds: number) => ExecOutcome | Promise<ExecOutcome>): void {
    this.execHandler = handler;
  }

  /** Makes an image present (as `ctr images import` would); returns it as ImageStatus does. */
  addImage(seed: ImageSeed): Image {
    const s = typeof seed === 'string' ? { ref: seed } : seed;
    const ref = normalizeImageRef(s.ref);
    const id = s.id ?? `sha256:${sha256(`image ${ref}`)}`;
    const at = ref.indexOf('@');
    const repo = at < 0 ? ref.slice(0, ref.lastIndexOf(':')) : ref.slice(0, at);
    const existing = this.images.get(id);
    const record: ImageRecord = existing ?? { id, repoTags: [], repoDigests: [], size: s.size ?? 1_000_000, user: s.user ?? '' };
    // Drop the reference from an image that had it (a tag moves to the newly imported image).
    for (const other of this.images.values()) {
      if (other.id !== id) other.repoTags = other.repoTags.filter((t) => t !== ref);
    }
    if (at < 0 && !record.repoTags.includes(ref)) record.repoTags.push(ref);
    const digestRef = at < 0 ? `${repo}@sha256:${sha256(`manifest ${id}`)}` : ref;
    if (!record.repoDigests.includes(digestRef)) record.repoDigests.push(digestRef);
    this.images.set(id, record);
    return this.toImage(record);
  }

  /** What a later pull of `seed.ref` yields (id, size, user); a pull of an unpublished reference yields defaults. */
  publishImage(seed: Exclude<ImageSeed, string>): void {
    this.published.set(normalizeImageRef(seed.ref), seed);
  }

  /** Pulls of the reference fail (default: containerd's NotFound of a reference the registry does not have) until cleared. */
  failPulls(ref: string, error?: CriError): void {
    this.pullFailures.set(normalizeImageRef(ref), error);
  }

  clearPullFailures(ref: string): void {
    this.pullFailures.delete(normalizeImageRef(ref));
  }

  /** All sandboxes and containers as the lists show them, without a call being logged. */
  /** The config a sandbox was created with (DNS, hostname, ...). */
  sandboxConfig(podSandboxId: string): PodSandboxConfig {
    return clone(this.sandboxes.get(podSandboxId)!.config);
  }

  /** The config a container was created with (its environment, ...). */
  containerConfig(containerId: string): ContainerConfig {
    return clone(this.containers.get(containerId)!.config);
  }

  peek(): { sandboxes: PodSandbox[]; containers: ContainerView[] } {
    return {
      sandboxes: [...this.sandboxes.values()].map((s) => ({
        id: s.id,
        metadata: clone(s.config.metadata),
        state: s.state,
        createdAt: s.createdAt,
        labels: clone(s.config.labels),
        annotations: clone(s.config.annotations),
        runtimeHandler: s.runtimeHandler,
      })),
      containers: [...this.containers.values()].map((c) => this.view(c)),
    };
  }

  // ---- internals ----

  /** Every call passes here: not sent if already aborted; logged; then held, refused while down, or failed as injected. */
  private async receive(method: CriMethod, args: Record<string, unknown>, opts: CallOptions | undefined): Promise<void> {
    const signal = opts?.signal;
    if (signal?.aborted) {
      throw new CriError('Cancelled', rpcNames[method], 'aborted before the call was sent', undefined, { cause: signal.reason });
    }
    this.log.push({ method, args });
    // Answer asynchronously, as a socket would: calls issued together are all received before any is answered.
    await Promise.resolve();
    const hold = this.holds.get(method)?.shift();
    if (hold) await this.held(hold, method, signal);
    if (this.down) {
      throw this.error(method, GrpcStatus.UNAVAILABLE, 'No connection established. Last error: connect ECONNREFUSED (in-memory runtime is down)');
    }
    const injected = this.failures.get(method)?.shift();
    if (injected) throw injected;
  }

  /** Waits for the hold's release; an abort of the call's signal first rejects with Cancelled. */
  private held(hold: Hold, method: CriMethod, signal: AbortSignal | undefined): Promise<void> {
    hold.reached();
    return new Promise<void>((resolve, reject) => {
      const cancel = () => reject(this.cancelled(method));
      if (signal?.aborted) return cancel();
      signal?.addEventListener('abort', cancel, { once: true });
      void hold.released.then(() => {
        signal?.removeEventListener('abort', cancel);
        resolve();
      });
    });
  }

  /** A call that never answers: it ends only when its signal aborts (Cancelled). */
  private hang(method: CriMethod, opts: CallOptions | undefined): Promise<never> {
    const signal = opts?.signal;
    return new Promise<never>((_, reject) => {
      if (signal?.aborted) reject(this.cancelled(method));
      else signal?.addEventListener('abort', () => reject(this.cancelled(method)), { once: true });
    });
  }

  /** What CriClient reports for a call its signal cancelled in flight. */
  private cancelled(method: CriMethod): CriError {
    return this.error(method, GrpcStatus.CANCELLED, 'Cancelled on client');
  }

  /** The CriError CriClient makes of containerd's answer with this gRPC code and message. */
  private error(method: CriMethod, code: GrpcStatus, details: string): CriError {
    return toCriError(rpcNames[method], { code, details, message: `${code} ${GrpcStatus[code]}: ${details}` });
  }

  private newId(kind: string): string {
    return sha256(`${kind} ${++this.seq}`);
  }

  private nextPid(): number {
    return 1000 + ++this.seq;
  }

  private timestamp(): number {
    return Math.floor(this.now());
  }

  private reserveName(method: CriMethod, kind: 'sandbox' | 'container', name: string, id: string): void {
    const holder = this.names.get(name);
    if (holder !== undefined) {
      // containerd 2: FailedPrecondition; a container's message also points at a concurrent CreateContainer.
      const hint = kind === 'container' ? '; check if another CreateContainer request is in progress' : '';
      throw this.error(method, GrpcStatus.FAILED_PRECONDITION, `failed to reserve ${kind} name "${name}"${hint}: name "${name}" is reserved for "${holder}"`);
    }
    this.names.set(name, id);
  }

  /** containerd's truncindex: an exact id or a unique prefix. */
  private lookup<T>(store: Map<string, T>, key: string): T {
    if (key === '') throw new LookupError(false, "prefix can't be empty");
    const exact = store.get(key);
    if (exact) return exact;
    const matches = [...store.keys()].filter((id) => id.startsWith(key));
    if (matches.length > 1) throw new LookupError(false, `Multiple IDs found with provided prefix: ${key}`);
    if (matches.length === 0) throw new LookupError(true, 'not found');
    return store.get(matches[0]!)!;
  }

  /** The full id a list filter's id or prefix names; unresolvable ones are compared as given (matching nothing). */
  private resolvesTo<T extends { id: string }>(store: Map<string, T>, key: string): string {
    try {
      return this.lookup(store, key).id;
    } catch {
      return key;
    }
  }

  private findSandbox(method: CriMethod, key: string, context: string): SandboxRecord;
  private findSandbox(method: CriMethod, key: string, context: string, absentOk: true): SandboxRecord | undefined;
  private findSandbox(method: CriMethod, key: string, context: string, absentOk = false): SandboxRecord | undefined {
    return this.find(this.sandboxes, method, key, context, absentOk);
  }

  private findContainer(method: CriMethod, key: string, context: string): ContainerRecord;
  private findContainer(method: CriMethod, key: string, context: string, absentOk: true): ContainerRecord | undefined;
  private findContainer(method: CriMethod, key: string, context: string, absentOk = false): ContainerRecord | undefined {
    return this.find(this.containers, method, key, context, absentOk);
  }

  private find<T>(store: Map<string, T>, method: CriMethod, key: string, context: string, absentOk: boolean): T | undefined {
    try {
      return this.lookup(store, key);
    } catch (err) {
      if (!(err instanceof LookupError)) throw err;
      if (err.notFound && absentOk) return undefined;
      throw this.error(method, err.notFound ? GrpcStatus.NOT_FOUND : GrpcStatus.UNKNOWN, `${context}: ${err.message}`);
    }
  }

  /** Lookups of the test controls: misuse is a plain Error, not a runtime answer. */
  private testLookup<T>(store: Map<string, T>, key: string): T {
    try {
      return this.lookup(store, key);
    } catch (err) {
      throw new Error(`no sandbox or container "${key}" in the in-memory runtime: ${(err as Error).message}`);
    }
  }

  /** containerd's localResolve: a digest is an id; else a reference (tag or repo digest); else an id or id prefix. */
  private resolveImage(refOrId: string): ImageRecord | undefined {
    if (/^sha256:[0-9a-f]{64}$/.test(refOrId)) return this.images.get(refOrId);
    if (refOrId === '') return undefined;
    const ref = normalizeImageRef(refOrId);
    for (const image of this.images.values()) if (image.repoTags.includes(ref) || image.repoDigests.includes(ref)) return image;
    const hex = refOrId.replace(/^sha256:/, '');
    if (!/^[0-9a-f]+$/.test(hex)) return undefined;
    const matches = [...this.images.values()].filter((i) => i.id.startsWith(`sha256:${hex}`));
    return matches.length === 1 ? matches[0] : undefined;
  }

  private toImage(i: ImageRecord): Image {
    return { id: i.id, repoTags: [...i.repoTags], repoDigests: [...i.repoDigests], size: i.size, ...imageUser(i.user) };
  }

  private exit(c: ContainerRecord, exitCode: number, reason: string, message: string): void {
    c.state = 'CONTAINER_EXITED';
    c.exitCode = exitCode;
    c.reason = reason;
    c.message = message;
    c.finishedAt = this.timestamp();
    c.pid = 0;
  }

  /** containerd's stopPodSandbox: running containers SIGKILLed (created ones stay created), network torn down. */
  private stopSandbox(s: SandboxRecord): void {
    for (const c of this.containers.values()) {
      if (c.podSandboxId === s.id && c.state === 'CONTAINER_RUNNING') this.exit(c, killedExitCode, '', '');
    }
    s.state = 'SANDBOX_NOTREADY';
    s.ips = [];
    s.pid = 0;
  }

  /** containerd's RemoveContainer: a running container is stopped first; the name is free again. */
  private deleteContainer(c: ContainerRecord): void {
    if (c.state === 'CONTAINER_RUNNING') this.exit(c, killedExitCode, '', '');
    this.names.delete(c.name);
    this.containers.delete(c.id);
  }

  private view(c: ContainerRecord): ContainerView {
    return { id: c.id, podSandboxId: c.podSandboxId, name: c.config.metadata.name, attempt: c.config.metadata.attempt, state: c.state, config: clone(c.config) };
  }

  /** The keys of containerd's verbose sandbox info (runtimeSpec reduced to what nodelet could read: the netns). */
  private sandboxInfo(s: SandboxRecord): object {
    const hostNetwork = s.config.linux?.securityContext?.namespaceOptions?.network === 'NODE';
    return {
      pid: s.pid,
      processStatus: s.state === 'SANDBOX_READY' ? 'running' : 'deleted',
      netNamespaceClosed: !hostNetwork && s.state !== 'SANDBOX_READY',
      image: 'localhost/nodelet/pause:1.0',
      snapshotKey: s.id,
      snapshotter: 'overlayfs',
      runtimeHandler: s.runtimeHandler,
      runtimeType: 'io.containerd.runc.v2',
      runtimeOptions: {},
      config: s.config,
      runtimeSpec: { linux: { namespaces: hostNetwork ? [] : [{ type: 'network', path: `/var/run/netns/cni-${s.id.slice(0, 8)}` }] } },
      cniResult: null,
    };
  }

  private containerInfo(c: ContainerRecord): object {
    return {
      sandboxID: c.podSandboxId,
      pid: c.pid,
      removing: false,
      snapshotKey: c.id,
      snapshotter: 'overlayfs',
      runtimeType: 'io.containerd.runc.v2',
      runtimeOptions: {},
      config: c.config,
      runtimeSpec: {},
    };
  }
}

/** The gRPC code whose CriError has each kind (Unknown's messages that errors.ts reclassifies are not used here). */
const grpcCodeOf: Record<CriErrorKind, GrpcStatus> = {
  NotFound: GrpcStatus.NOT_FOUND,
  Unavailable: GrpcStatus.UNAVAILABLE,
  InvalidArgument: GrpcStatus.INVALID_ARGUMENT,
  DeadlineExceeded: GrpcStatus.DEADLINE_EXCEEDED,
  AlreadyExists: GrpcStatus.ALREADY_EXISTS,
  Cancelled: GrpcStatus.CANCELLED,
  Unknown: GrpcStatus.UNKNOWN,
};
