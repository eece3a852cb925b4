// CRI client: RuntimeService and ImageService (runtime.v1) over the container runtime's unix socket via gRPC.
import { fileURLToPath } from 'node:url';
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { loadSync, type MethodDefinition } from '@grpc/proto-loader';
import { CONTAINERD_CRI_NAMESPACE, podNameLabel, podNamespaceLabel } from '../core/labels.js';
import type { Logger } from '../core/log.js';
import { CriError, isNotFound, toCriError } from './errors.js';
import type {
  AuthConfig,
  CallOptions,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStatus,
  ExecSyncResult,
  Image,
  ImageService,
  ImageSpec,
  KeyValueMap,
  LinuxContainerSecurityContext,
  LinuxSandboxSecurityContext,
  Mount,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxMetadata,
  PodSandboxStatus,
  RuntimeConfig,
  RuntimeService,
  RuntimeStatus,
  StatsService,
  StreamingService,
  StreamOptions,
  VersionInfo,
  ContainerStats,
  CpuUsage,
  FilesystemUsage,
  ImageFsInfo,
  MemoryUsage,
} from './types.js';

// dist/src/cri/client.js -> <repo>/proto (the same relative path holds for src/cri/client.ts).
const PROTO_DIR = new URL('../../../proto/', import.meta.url);
const CRI_PROTO = { path: fileURLToPath(new URL('runtime/v1/api.proto', PROTO_DIR)), services: ['runtime.v1.RuntimeService', 'runtime.v1.ImageService'] };
const TASKS_PROTO = { path: fileURLToPath(new URL('containerd/services/tasks/v1/tasks.proto', PROTO_DIR)), services: ['containerd.services.tasks.v1.Tasks'] };

/** Default deadlines; a call's CallOptions.timeoutMs replaces the computed deadline. */
export const DEFAULT_TIMEOUTS = {
  /** Mutating runtime calls (kubelet's --runtime-request-timeout default). RunPodSandbox gets twice this,
   *  StopContainer and ExecSync get this plus their own timeout, like kubelet. */
  requestMs: 2 * 60_000,
  /** Version, Status, List*, *Status: cheap reads that a caller repeats anyway. */
  readMs: 30_000,
  /** PullImage. */
  pullMs: 10 * 60_000,
} as const;

/** Overrides for DEFAULT_TIMEOUTS (requestMs, readMs, pullMs respectively). */
export interface CriClientOptions {
  requestTimeoutMs?: number;
  readTimeoutMs?: number;
  pullTimeoutMs?: number;
  /** Where the client says that it removed a task containerd left behind (see STRANDED_TASK). */
  log?: Logger;
}

// Like kubelet: 16 MiB responses (ListContainers on a busy node exceeds gRPC's 4 MiB default) and a quick
// reconnect after a runtime restart (gRPC's default backoff grows to 120 s).
const CHANNEL_OPTIONS = {
  'grpc.max_receive_message_length': 16 * 1024 * 1024,
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 3_000,
};

// Sent as VersionRequest.version: the CRI API version nodelet speaks.
const CRI_API_VERSION = 'v1';

type Method = MethodDefinition<object, unknown>;
const loaded = new Map<string, Map<string, Method>>();

/** A method of a proto's services, the proto loaded once per process on first use ("ContainerStatus" of CRI_PROTO). */
function method(proto: { path: string; services: string[] }, name: string): Method {
  let methods = loaded.get(proto.path);
  if (methods === undefined) {
    const pkg = loadSync(proto.path, { keepCase: false, longs: Number, enums: String, defaults: true });
    methods = new Map();
    for (const service of proto.services) {
      for (const [rpc, def] of Object.entries(pkg[service] as Record<string, Method>)) methods.set(rpc, def);
    }
    loaded.set(proto.path, methods);
  }
  const def = methods.get(name);
  if (def === undefined) throw new Error(`method ${name} is not in ${proto.path}`);
  return def;
}

// containerd answers RemoveContainer and RemovePodSandbox with this when a container it reports EXITED still has a task:
// a StartContainer whose client went away between the task's create and its start (an agent killed then) leaves the
// task CREATED, its `runc init` waiting, and no CRI call removes it (containerd/containerd#11037, in 1.6 and 2.x). CRI
// says a container being removed is removed by force if it runs, so the client completes what RemoveContainer
// promises through containerd's own task service on the same socket, in the namespace its CRI plugin uses.
const STRANDED_TASK = /cannot delete running task ([0-9a-f]{64})/;
const SIGKILL = 9;

/** Turns a kubelet-style --container-runtime-endpoint ("unix:///path" or a bare "/path") into a gRPC target. */
export function grpcTarget(endpoint: string): string {
  if (endpoint.startsWith('unix:')) return endpoint;
  if (endpoint.startsWith('/')) return `unix://${endpoint}`;
  throw new CriError('InvalidArgument', 'Connect', `unsupported CRI endpoint "${endpoint}": expected unix:///path or /path`);
}

/** The socket path of a CRI endpoint ("unix:///run/x.sock", "unix:/run/x.sock" or "/run/x.sock"). */
export function runtimeSocketPath(endpoint: string): string {
  return grpcTarget(endpoint).replace(/^unix:(\/\/)?/, '');
}

export class CriClient implements RuntimeService, ImageService, StreamingService, StatsService {
  readonly target: string;
  private readonly timeouts: Required<Omit<CriClientOptions, 'log'>>;
  private readonly log: Logger | undefined;
  private grpc: Client | undefined;
  private closed = false;

  /** Does no I/O: the proto is loaded and the socket connected on the first call. */
  constructor(endpoint: string, options: CriClientOptions = {}) {
    this.target = grpcTarget(endpoint);
    this.timeouts = {
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_TIMEOUTS.requestMs,
      readTimeoutMs: options.readTimeoutMs ?? DEFAULT_TIMEOUTS.readMs,
      pullTimeoutMs: options.pullTimeoutMs ?? DEFAULT_TIMEOUTS.pullMs,
    };
    this.log = options.log;
  }

  /** Closes the channel; later calls reject with kind Cancelled. */
  close(): void {
    this.closed = true;
    this.grpc?.close();
    this.grpc = undefined;
  }

  // ---- RuntimeService ----

  async version(opts?: CallOptions): Promise<VersionInfo> {
    const r = await this.call<WireVersionResponse>('Version', { version: CRI_API_VERSION }, this.timeouts.readTimeoutMs, opts);
    return {
      version: r.version,
      runtimeName: r.runtimeName,
      runtimeVersion: r.runtimeVersion,
      runtimeApiVersion: r.runtimeApiVersion,
    };
  }

  async status(opts?: CallOptions): Promise<RuntimeStatus> {
    const r = await this.call<WireStatusResponse>('Status', { verbose: false }, this.timeouts.readTimeoutMs, opts);
    return {
      conditions: r.status?.conditions ?? [],
      handlers: (r.runtimeHandlers ?? []).map((h) => ({
        name: h.name,
        recursiveReadOnlyMounts: h.features?.recursiveReadOnlyMounts ?? false,
        userNamespaces: h.features?.userNamespaces ?? false,
      })),
    };
  }

  /** The verbose Status's info: the runtime's own description of its configuration (containerd: "config", ...). */
  async statusInfo(opts?: CallOptions): Promise<Record<string, string>> {
    const r = await this.call<WireStatusResponse>('Status', { verbose: true }, this.timeouts.readTimeoutMs, opts);
    return r.info ?? {};
  }

  /** CRI RuntimeConfig: the runtime's configuration kubelet adopts at start; Unimplemented on runtimes before it (containerd before 2.0). */
  async runtimeConfig(opts?: CallOptions): Promise<RuntimeConfig> {
    const r = await this.call<WireRuntimeConfigResponse>('RuntimeConfig', {}, this.timeouts.readTimeoutMs, opts);
    return r.linux ? { linux: { cgroupDriver: r.linux.cgroupDriver } } : {};
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = '', opts?: CallOptions): Promise<string> {
    const r = await this.call<{ podSandboxId: string }>(
      'RunPodSandbox',
      { config: wireSandboxConfig(config), runtimeHandler },
      2 * this.timeouts.requestTimeoutMs,
      opts,
    );
    if (r.podSandboxId === '') throw new CriError('Unknown', 'RunPodSandbox', 'runtime returned an empty sandbox id');
    return r.podSandboxId;
  }

  async stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.call('StopPodSandbox', { podSandboxId }, this.timeouts.requestTimeoutMs, opts);
  }

  async removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    // containerd already treats an absent sandbox as removed; the contract holds for runtimes that do not.
    await this.removingStrandedTask(() => this.call('RemovePodSandbox', { podSandboxId }, this.timeouts.requestTimeoutMs, opts), opts).catch(
      ignoreNotFound,
    );
  }

  async podSandboxStatus(podSandboxId: string, verbose = false, opts?: CallOptions): Promise<PodSandboxStatus> {
    const r = await this.call<WirePodSandboxStatusResponse>(
      'PodSandboxStatus',
      { podSandboxId, verbose },
      this.timeouts.readTimeoutMs,
      opts,
    );
    const s = r.status;
    if (s === null) throw new CriError('Unknown', 'PodSandboxStatus', `runtime returned no status for sandbox ${podSandboxId}`);
    const ips: string[] = [];
    if (s.network !== null) {
      if (s.network.ip !== '') ips.push(s.network.ip);
      for (const extra of s.network.additionalIps) if (extra.ip !== '') ips.push(extra.ip);
    }
    return {
      id: s.id,
      metadata: sandboxMetadata(s.metadata),
      state: s.state,
      createdAt: nsToMs(s.createdAt),
      ips,
      labels: s.labels,
      annotations: s.annotations,
      info: r.info,
    };
  }

  async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    const wireFilter = filter && {
      id: filter.id,
      state: filter.state === undefined ? undefined : { state: filter.state },
      labelSelector: filter.labelSelector,
    };
    const r = await this.call<{ items: WirePodSandbox[] }>('ListPodSandbox', { filter: wireFilter }, this.timeouts.readTimeoutMs, opts);
    return r.items.map((p) => ({
      id: p.id,
      metadata: sandboxMetadata(p.metadata),
      state: p.state,
      createdAt: nsToMs(p.createdAt),
      labels: p.labels,
      annotations: p.annotations,
      runtimeHandler: p.runtimeHandler,
    }));
  }

  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string> {
    const r = await this.call<{ containerId: string }>(
      'CreateContainer',
      { podSandboxId, config: wireContainerConfig(config), sandboxConfig: wireSandboxConfig(sandboxConfig) },
      this.timeouts.requestTimeoutMs,
      opts,
    );
    if (r.containerId === '') throw new CriError('Unknown', 'CreateContainer', 'runtime returned an empty container id');
    return r.containerId;
  }

  async startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.call('StartContainer', { containerId }, this.timeouts.requestTimeoutMs, opts);
  }

  async stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    // The runtime waits up to timeoutSeconds before SIGKILL, so the deadline has to cover that wait.
    const deadline = this.timeouts.requestTimeoutMs + Math.max(0, timeoutSeconds) * 1000;
    await this.call('StopContainer', { containerId, timeout: timeoutSeconds }, deadline, opts);
  }

  async removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.removingStrandedTask(() => this.call('RemoveContainer', { containerId }, this.timeouts.requestTimeoutMs, opts), opts).catch(
      ignoreNotFound,
    );
  }

  /** Runs a removal; when containerd refuses it over a STRANDED_TASK, removes that task and runs the removal again. */
  private async removingStrandedTask(remove: () => Promise<unknown>, opts: CallOptions | undefined): Promise<void> {
    try {
      await remove();
    } catch (err) {
      const containerId = err instanceof CriError ? STRANDED_TASK.exec(err.description)?.[1] : undefined;
      if (containerId === undefined || !(await this.deleteStrandedTask(containerId, opts))) throw err;
      await remove();
    }
  }

  /** Kills and deletes the task of a container CRI reports EXITED; false when the container is anything else. */
  private async deleteStrandedTask(containerId: string, opts: CallOptions | undefined): Promise<boolean> {
    const status = await this.containerStatus(containerId, false, opts).catch(() => undefined);
    if (status?.state !== 'CONTAINER_EXITED') return false;
    const namespace = new Metadata();
    namespace.set('containerd-namespace', CONTAINERD_CRI_NAMESPACE);
    const tasks = (name: string, request: object, timeoutMs: number) => this.call(name, request, timeoutMs, opts, TASKS_PROTO, namespace);
    // The task may have gone by itself meanwhile; Delete says whether anything is left.
    await tasks('Kill', { containerId, signal: SIGKILL }, this.timeouts.requestTimeoutMs).catch(() => undefined);
    await tasks('Wait', { containerId }, 10_000).catch(() => undefined);
    await tasks('Delete', { containerId }, this.timeouts.requestTimeoutMs).catch(ignoreNotFound);
    this.log?.warn(
      {
        pod: `${status.labels[podNamespaceLabel] ?? ''}/${status.labels[podNameLabel] ?? ''}`,
        container: status.metadata.name,
        containerId,
      },
      "Removed the task containerd kept for an exited container (a StartContainer cut short, containerd#11037)",
    );
    return true;
  }

  async listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    const wireFilter = filter && {
      id: filter.id,
      state: filter.state === undefined ? undefined : { state: filter.state },
      podSandboxId: filter.podSandboxId,
      labelSelector: filter.labelSelector,
    };
    const r = await this.call<{ containers: WireContainer[] }>(
      'ListContainers',
      { filter: wireFilter },
      this.timeouts.readTimeoutMs,
      opts,
    );
    return r.containers.map((c) => ({
      id: c.id,
      podSandboxId: c.podSandboxId,
      metadata: containerMetadata(c.metadata),
      image: imageSpec(c.image),
      imageRef: c.imageRef,
      state: c.state,
      createdAt: nsToMs(c.createdAt),
      labels: c.labels,
      annotations: c.annotations,
    }));
  }

  async containerStatus(containerId: string, verbose = false, opts?: CallOptions): Promise<ContainerStatus> {
    const r = await this.call<WireContainerStatusResponse>(
      'ContainerStatus',
      { containerId, verbose },
      this.timeouts.readTimeoutMs,
      opts,
    );
    const s = r.status;
    if (s === null) throw new CriError('Unknown', 'ContainerStatus', `runtime returned no status for container ${containerId}`);
    return {
      id: s.id,
      metadata: containerMetadata(s.metadata),
      state: s.state,
      createdAt: nsToMs(s.createdAt),
      startedAt: nsToMs(s.startedAt),
      finishedAt: nsToMs(s.finishedAt),
      exitCode: s.exitCode,
      image: imageSpec(s.image),
      imageRef: s.imageRef,
      reason: s.reason,
      message: s.message,
      labels: s.labels,
      annotations: s.annotations,
      mounts: s.mounts,
      logPath: s.logPath,
      ...(s.user?.linux
        ? { user: { uid: Number(s.user.linux.uid), gid: Number(s.user.linux.gid), supplementalGroups: s.user.linux.supplementalGroups.map(Number) } }
        : {}),
      info: r.info,
    };
  }

  async execSync(containerId: string, cmd: string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecSyncResult> {
    // The runtime enforces timeoutSeconds itself (answering DeadlineExceeded); our deadline only backs it up.
    const deadline = this.timeouts.requestTimeoutMs + Math.max(0, timeoutSeconds) * 1000;
    const r = await this.call<{ stdout: Buffer; stderr: Buffer; exitCode: number }>(
      'ExecSync',
      { containerId, cmd, timeout: timeoutSeconds },
      deadline,
      opts,
    );
    return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode };
  }

  // ---- streaming (URLs on the runtime's streaming server) ----

  async exec(containerId: string, cmd: string[], streams: StreamOptions, opts?: CallOptions): Promise<string> {
    const r = await this.call<{ url: string }>('Exec', { containerId, cmd, ...streams }, this.timeouts.requestTimeoutMs, opts);
    return r.url;
  }

  async attach(containerId: string, streams: StreamOptions, opts?: CallOptions): Promise<string> {
    const r = await this.call<{ url: string }>('Attach', { containerId, ...streams }, this.timeouts.requestTimeoutMs, opts);
    return r.url;
  }

  async portForward(podSandboxId: string, ports: number[], opts?: CallOptions): Promise<string> {
    const r = await this.call<{ url: string }>('PortForward', { podSandboxId, port: ports }, this.timeouts.requestTimeoutMs, opts);
    return r.url;
  }

  // ---- stats ----

  async listContainerStats(filter?: { id?: string; podSandboxId?: string; labelSelector?: KeyValueMap }, opts?: CallOptions): Promise<ContainerStats[]> {
    const r = await this.call<{ stats: WireContainerStats[] }>('ListContainerStats', { filter }, this.timeouts.readTimeoutMs, opts);
    return r.stats.map(fromWireContainerStats);
  }

  async imageFsInfo(opts?: CallOptions): Promise<ImageFsInfo> {
    const r = await this.call<{ imageFilesystems: WireFilesystemUsage[]; containerFilesystems: WireFilesystemUsage[] }>('ImageFsInfo', {}, this.timeouts.readTimeoutMs, opts);
    return { imageFilesystems: r.imageFilesystems.map(fromWireFs), containerFilesystems: r.containerFilesystems.map(fromWireFs) };
  }

  // ---- ImageService ----

  async imageStatus(image: string, opts?: CallOptions): Promise<Image | undefined> {
    const r = await this.call<{ image: WireImage | null }>(
      'ImageStatus',
      { image: { image }, verbose: false },
      this.timeouts.readTimeoutMs,
      opts,
    );
    // CRI answers an absent image with an empty response, not NotFound.
    return r.image === null || r.image.id === '' ? undefined : fromWireImage(r.image);
  }

  async pullImage(image: string, sandboxConfig?: PodSandboxConfig, opts?: CallOptions, auth?: AuthConfig): Promise<string> {
    const r = await this.call<{ imageRef: string }>(
      'PullImage',
      { image: { image }, auth, sandboxConfig: sandboxConfig && wireSandboxConfig(sandboxConfig) },
      this.timeouts.pullTimeoutMs,
      opts,
    );
    return r.imageRef;
  }

  async listImages(opts?: CallOptions): Promise<Image[]> {
    const r = await this.call<{ images: WireImage[] }>('ListImages', {}, this.timeouts.readTimeoutMs, opts);
    return r.images.map(fromWireImage);
  }

  async removeImage(image: string, opts?: CallOptions): Promise<void> {
    await this.call('RemoveImage', { image: { image } }, this.timeouts.requestTimeoutMs, opts);
  }

  // ---- transport ----

  private channel(): Client {
    this.grpc ??= new Client(this.target, credentials.createInsecure(), CHANNEL_OPTIONS);
    return this.grpc;
  }

  /** One unary call with a deadline, cancelled when opts.signal aborts; rejects with CriError. */
  private call<Res>(
    name: string,
    request: object,
    defaultTimeoutMs: number,
    opts: CallOptions | undefined,
    proto = CRI_PROTO,
    metadata = new Metadata(),
  ): Promise<Res> {
    const signal = opts?.signal;
    const deadline = Date.now() + (opts?.timeoutMs ?? defaultTimeoutMs);
    return new Promise<Res>((resolve, reject) => {
      if (this.closed) return reject(new CriError('Cancelled', name, 'CRI client is closed'));
      if (signal?.aborted) {
        return reject(new CriError('Cancelled', name, 'aborted before the call was sent', undefined, { cause: signal.reason }));
      }
      let call: ReturnType<Client['makeUnaryRequest']>;
      const onAbort = (): void => call.cancel();
      try {
        const def = method(proto, name);
        call = this.channel().makeUnaryRequest<object, unknown>(
          def.path,
          def.requestSerialize,
          def.responseDeserialize,
          request,
          metadata,
          { deadline },
          (err: ServiceError | null, response?: unknown) => {
            signal?.removeEventListener('abort', onAbort);
            if (err) reject(toCriError(name, err));
            else resolve(response as Res);
          },
        );
      } catch (err) {
        return reject(toCriError(name, err));
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function ignoreNotFound(err: unknown): void {
  if (!isNotFound(err)) throw err;
}

// ---- request mapping: types.ts shapes -> proto-loader objects (camelCase field names are shared) ----

function int64Value(v: number | undefined): { value: number } | undefined {
  return v === undefined ? undefined : { value: v };
}

function wireSandboxSecurityContext(sc: LinuxSandboxSecurityContext | undefined): object | undefined {
  return sc && { ...sc, runAsUser: int64Value(sc.runAsUser), runAsGroup: int64Value(sc.runAsGroup) };
}

function wireContainerSecurityContext(sc: LinuxContainerSecurityContext | undefined): object | undefined {
  return sc && { ...sc, runAsUser: int64Value(sc.runAsUser), runAsGroup: int64Value(sc.runAsGroup) };
}

function wireSandboxConfig(c: PodSandboxConfig): object {
  return {
    ...c,
    linux: c.linux && { ...c.linux, securityContext: wireSandboxSecurityContext(c.linux.securityContext) },
  };
}

function wireContainerConfig(c: ContainerConfig): object {
  return {
    ...c,
    linux: c.linux && { ...c.linux, securityContext: wireContainerSecurityContext(c.linux.securityContext) },
  };
}

// ---- response mapping: proto-loader objects (defaults filled, unset messages null, int64 as number) -> types.ts ----

// As numbers: nanosecond timestamps lose their last digits (a double), as they would in Number(); no Long.toString per field.
type Int64 = number;

interface WireVersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

interface WireStatusResponse {
  status: { conditions: RuntimeStatus['conditions'] } | null;
  info?: Record<string, string>;
  runtimeHandlers?: { name: string; features: { recursiveReadOnlyMounts: boolean; userNamespaces: boolean } | null }[];
}

interface WireRuntimeConfigResponse {
  linux: { cgroupDriver: 'SYSTEMD' | 'CGROUPFS' | number } | null;
}

interface WirePodSandbox {
  id: string;
  metadata: PodSandboxMetadata | null;
  state: PodSandbox['state'];
  createdAt: Int64;
  labels: KeyValueMap;
  annotations: KeyValueMap;
  runtimeHandler: string;
}

interface WirePodSandboxStatusResponse {
  status:
    | (Omit<WirePodSandbox, 'runtimeHandler'> & {
        network: { ip: string; additionalIps: { ip: string }[] } | null;
      })
    | null;
  info: KeyValueMap;
}

interface WireContainer {
  id: string;
  podSandboxId: string;
  metadata: { name: string; attempt: number } | null;
  image: { image: string; annotations: KeyValueMap } | null;
  imageRef: string;
  state: Container['state'];
  createdAt: Int64;
  labels: KeyValueMap;
  annotations: KeyValueMap;
}

interface WireContainerStatusResponse {
  status:
    | (Omit<WireContainer, 'podSandboxId'> & {
        startedAt: Int64;
        finishedAt: Int64;
        exitCode: number;
        reason: string;
        message: string;
        mounts: Mount[];
        logPath: string;
        user: { linux: { uid: Int64; gid: Int64; supplementalGroups: Int64[] } | null } | null;
      })
    | null;
  info: KeyValueMap;
}

interface WireImage {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: Int64;
  uid: { value: Int64 } | null;
  username: string;
  pinned: boolean;
}

/** CRI timestamps are int64 nanoseconds since the epoch; 0 stays 0 ("not happened"). */
function nsToMs(ns: Int64): number {
  return Math.floor(ns / 1e6);
}

function sandboxMetadata(m: PodSandboxMetadata | null): PodSandboxMetadata {
  return m ?? { name: '', uid: '', namespace: '', attempt: 0 };
}

function containerMetadata(m: { name: string; attempt: number } | null): { name: string; attempt: number } {
  return m ?? { name: '', attempt: 0 };
}

function imageSpec(s: { image: string; annotations: KeyValueMap } | null): ImageSpec {
  return s ?? { image: '', annotations: {} };
}

function fromWireImage(i: WireImage): Image {
  return {
    id: i.id,
    repoTags: i.repoTags,
    repoDigests: i.repoDigests,
    size: i.size,
    uid: i.uid === null ? undefined : i.uid.value,
    username: i.username,
    pinned: i.pinned,
  };
}

type WireUInt64 = { value: Int64 } | null;

interface WireCpuUsage {
  timestamp: Int64;
  usageCoreNanoSeconds: WireUInt64;
  usageNanoCores: WireUInt64;
}

interface WireMemoryUsage {
  timestamp: Int64;
  workingSetBytes: WireUInt64;
  availableBytes: WireUInt64;
  usageBytes: WireUInt64;
  rssBytes: WireUInt64;
  pageFaults: WireUInt64;
  majorPageFaults: WireUInt64;
}

interface WireFilesystemUsage {
  timestamp: Int64;
  fsId: { mountpoint: string } | null;
  usedBytes: WireUInt64;
  inodesUsed: WireUInt64;
}

interface WireContainerStats {
  attributes: { id: string; metadata: { name: string; attempt: number } | null } | null;
  cpu: WireCpuUsage | null;
  memory: WireMemoryUsage | null;
  writableLayer: WireFilesystemUsage | null;
}

/** An optional CRI UInt64Value as an optional field: { key: n } when the runtime set it, {} when not. */
function uint64<K extends string>(key: K, v: WireUInt64): Partial<Record<K, number>> {
  return v === null ? {} : ({ [key]: v.value } as Partial<Record<K, number>>);
}

function fromWireCpu(c: WireCpuUsage): CpuUsage {
  return { timestampNs: c.timestamp, ...uint64('usageCoreNanoSeconds', c.usageCoreNanoSeconds), ...uint64('usageNanoCores', c.usageNanoCores) };
}

function fromWireMemory(m: WireMemoryUsage): MemoryUsage {
  return {
    timestampNs: m.timestamp,
    ...uint64('workingSetBytes', m.workingSetBytes),
    ...uint64('availableBytes', m.availableBytes),
    ...uint64('usageBytes', m.usageBytes),
    ...uint64('rssBytes', m.rssBytes),
    ...uint64('pageFaults', m.pageFaults),
    ...uint64('majorPageFaults', m.majorPageFaults),
  };
}

function fromWireFs(f: WireFilesystemUsage): FilesystemUsage {
  return { timestampNs: f.timestamp, mountpoint: f.fsId?.mountpoint ?? '', ...uint64('usedBytes', f.usedBytes), ...uint64('inodesUsed', f.inodesUsed) };
}

function fromWireContainerStats(s: WireContainerStats): ContainerStats {
  return {
    id: s.attributes?.id ?? '',
    metadata: containerMetadata(s.attributes?.metadata ?? null),
    ...(s.cpu ? { cpu: fromWireCpu(s.cpu) } : {}),
    ...(s.memory ? { memory: fromWireMemory(s.memory) } : {}),
    ...(s.writableLayer ? { writableLayer: fromWireFs(s.writableLayer) } : {}),
  };
}
