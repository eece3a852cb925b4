// The CRI (runtime.v1) messages nodelet uses, as plain TypeScript shapes independent of gRPC.
// Field names follow the proto in camelCase; int64 timestamps (nanoseconds) become milliseconds.

export type KeyValueMap = Record<string, string>;

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface DnsConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

export type Protocol = 'TCP' | 'UDP' | 'SCTP';

export interface PortMapping {
  protocol: Protocol;
  containerPort: number;
  hostPort: number;
  hostIp: string;
}

/** CRI NamespaceMode: POD = 0, CONTAINER = 1, NODE = 2, TARGET = 3. */
export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

/** CRI IDMapping: `length` IDs from `containerId` in the namespace are `hostId`... on the host. */
export interface IDMapping {
  hostId: number;
  containerId: number;
  length: number;
}

/** CRI UserNamespace: POD with the pod's mappings (hostUsers: false), or NODE (the host's, no mappings). */
export interface UserNamespace {
  mode: 'POD' | 'NODE';
  uids: IDMapping[];
  gids: IDMapping[];
}

export interface NamespaceOption {
  network: NamespaceMode;
  pid: NamespaceMode;
  ipc: NamespaceMode;
  /** The container whose namespace a TARGET mode joins (an ephemeral container's target). */
  targetId?: string;
  /** Unset: the host's user namespace. */
  usernsOptions?: UserNamespace;
}

/** CRI SecurityProfile (seccomp or AppArmor). localhostRef names the profile when profileType is Localhost. */
export interface SecurityProfile {
  profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhostRef?: string;
}

export interface LinuxSandboxSecurityContext {
  namespaceOptions?: NamespaceOption;
  runAsUser?: number;
  runAsGroup?: number;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  supplementalGroupsPolicy?: SupplementalGroupsPolicy;
  privileged?: boolean;
  seccomp?: SecurityProfile;
  apparmor?: SecurityProfile;
}

/** CRI SupplementalGroupsPolicy: the image's groups of the user added to the pod's (Merge, the default), or not (Strict). */
export type SupplementalGroupsPolicy = 'Merge' | 'Strict';

export interface LinuxPodSandboxConfig {
  cgroupParent?: string;
  securityContext?: LinuxSandboxSecurityContext;
  sysctls?: KeyValueMap;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname: string;
  logDirectory: string;
  dnsConfig?: DnsConfig;
  portMappings: PortMapping[];
  labels: KeyValueMap;
  annotations: KeyValueMap;
  linux?: LinuxPodSandboxConfig;
}

export type PodSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: number;
  labels: KeyValueMap;
  annotations: KeyValueMap;
  runtimeHandler: string;
}

export interface PodSandboxStatus {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: number;
  /** Primary IP first, then additional IPs; empty for host-network sandboxes or before networking. */
  ips: string[];
  labels: KeyValueMap;
  annotations: KeyValueMap;
  /** Verbose info (e.g. containerd's "info" JSON), only when requested. */
  info: KeyValueMap;
}

export interface PodSandboxFilter {
  id?: string;
  state?: PodSandboxState;
  labelSelector?: KeyValueMap;
}

export interface ContainerMetadata {
  name: string;
  attempt: number;
}

export interface ImageSpec {
  image: string;
  annotations?: KeyValueMap;
}

/** An environment variable; its value is the exact bytes the process gets (a Secret's data need not be UTF-8). */
export interface KeyValue {
  key: string;
  value: Buffer;
}

export type MountPropagation = 'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';

export interface Mount {
  containerPath: string;
  /** '' for an image mount. */
  hostPath: string;
  readonly?: boolean;
  selinuxRelabel?: boolean;
  propagation?: MountPropagation;
  /** The pod's user namespace mappings: the runtime mounts the volume idmapped (hostUsers: false). */
  uidMappings?: IDMapping[];
  gidMappings?: IDMapping[];
  /** Submounts read-only too (needs readonly and the handler's recursive_read_only_mounts). */
  recursiveReadOnly?: boolean;
  /** An image volume: the image (by the ID its pull returned) the runtime mounts read-only itself. */
  image?: ImageSpec;
  /** A directory inside `image` mounted instead of its root. */
  imageSubPath?: string;
}

export interface LinuxContainerResources {
  cpuPeriod?: number;
  cpuQuota?: number;
  cpuShares?: number;
  memoryLimitInBytes?: number;
  oomScoreAdj?: number;
  cpusetCpus?: string;
  cpusetMems?: string;
}

export interface Capability {
  addCapabilities?: string[];
  dropCapabilities?: string[];
}

export interface LinuxContainerSecurityContext {
  capabilities?: Capability;
  privileged?: boolean;
  namespaceOptions?: NamespaceOption;
  runAsUser?: number;
  runAsGroup?: number;
  runAsUsername?: string;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  supplementalGroupsPolicy?: SupplementalGroupsPolicy;
  noNewPrivs?: boolean;
  /**
   * Unset or empty means NOTHING is masked on containerd 1.6 (it clears its own defaults unless
   * disable_proc_mount is set); kubelet therefore always sends its default lists for unprivileged containers.
   */
  maskedPaths?: string[];
  readonlyPaths?: string[];
  seccomp?: SecurityProfile;
  apparmor?: SecurityProfile;
}

export interface Device {
  containerPath: string;
  hostPath: string;
  /** cgroup device permissions, a combination of r, w and m. */
  permissions: string;
}

export interface LinuxContainerConfig {
  resources?: LinuxContainerResources;
  securityContext?: LinuxContainerSecurityContext;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: ImageSpec;
  command: string[];
  args: string[];
  workingDir: string;
  envs: KeyValue[];
  mounts: Mount[];
  devices?: Device[];
  labels: KeyValueMap;
  annotations: KeyValueMap;
  /** Relative to the sandbox's log directory. */
  logPath: string;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  linux?: LinuxContainerConfig;
}

export type ContainerState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';

export interface Container {
  id: string;
  podSandboxId: string;
  metadata: ContainerMetadata;
  image: ImageSpec;
  imageRef: string;
  state: ContainerState;
  createdAt: number;
  labels: KeyValueMap;
  annotations: KeyValueMap;
}

export interface ContainerFilter {
  id?: string;
  state?: ContainerState;
  podSandboxId?: string;
  labelSelector?: KeyValueMap;
}

export interface ContainerStatus {
  id: string;
  metadata: ContainerMetadata;
  state: ContainerState;
  createdAt: number;
  /** 0 when the container has not started. */
  startedAt: number;
  /** 0 when the container has not finished. */
  finishedAt: number;
  exitCode: number;
  image: ImageSpec;
  imageRef: string;
  /** Short machine-readable reason from the runtime, e.g. "Completed", "Error", "OOMKilled". */
  reason: string;
  message: string;
  labels: KeyValueMap;
  annotations: KeyValueMap;
  mounts: Mount[];
  logPath: string;
  /** The identities the container's first process started with, when the runtime reports them (containerd >= 2.0). */
  user?: LinuxContainerUser;
  /** The resources the runtime last applied (ContainerStatus.resources.linux), when it reports them. */
  resources?: LinuxContainerResources;
  info: KeyValueMap;
}

/** CRI LinuxContainerUser: the uid, gid and supplemental groups a container's first process started with. */
export interface LinuxContainerUser {
  uid: number;
  gid: number;
  supplementalGroups: number[];
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

/** CRI RuntimeHandler: a runtime handler ('' the default one) and what it supports. */
export interface RuntimeHandler {
  name: string;
  recursiveReadOnlyMounts: boolean;
  userNamespaces: boolean;
}

export interface RuntimeStatus {
  conditions: RuntimeCondition[];
  /** The runtime handlers and what each supports (the one named '' is the default handler); none when it lists none. */
  handlers?: RuntimeHandler[];
  /** What the runtime supports whatever the handler; undefined when it does not say (a runtime before CRI 1.31). */
  features?: RuntimeFeatures;
}

export interface RuntimeFeatures {
  supplementalGroupsPolicy: boolean;
}

export interface VersionInfo {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

/**
 * CRI RuntimeConfig's answer: the runtime's Linux configuration, when it sent one. The cgroup driver is the enum's name,
 * or its number when this API does not know the value.
 */
export interface RuntimeConfig {
  linux?: { cgroupDriver: 'SYSTEMD' | 'CGROUPFS' | number };
}

export interface ExecSyncResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  /** Numeric uid the image runs as, when the image names one. */
  uid?: number;
  username: string;
  /** The runtime keeps it: garbage collection must not remove it (the sandbox image, for one). */
  pinned?: boolean;
}

/** Per-call options: every call has a deadline; a signal cancels it early. */
export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The CRI RuntimeService as nodelet uses it. Implementations map gRPC errors to CriError. */
export interface RuntimeService {
  version(opts?: CallOptions): Promise<VersionInfo>;
  status(opts?: CallOptions): Promise<RuntimeStatus>;
  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string, opts?: CallOptions): Promise<string>;
  /** Idempotent: stopping a stopped sandbox succeeds. */
  stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void>;
  /** Idempotent: removing an absent sandbox succeeds. Removes the sandbox's containers too. */
  removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void>;
  podSandboxStatus(podSandboxId: string, verbose?: boolean, opts?: CallOptions): Promise<PodSandboxStatus>;
  listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]>;
  createContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig, opts?: CallOptions): Promise<string>;
  startContainer(containerId: string, opts?: CallOptions): Promise<void>;
  /** Sends the stop signal, then SIGKILL after timeoutSeconds. The call deadline must exceed the timeout. */
  stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void>;
  removeContainer(containerId: string, opts?: CallOptions): Promise<void>;
  listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]>;
  containerStatus(containerId: string, verbose?: boolean, opts?: CallOptions): Promise<ContainerStatus>;
  execSync(containerId: string, cmd: string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecSyncResult>;
  /** In-place resize of a container's cgroup (a created container gets them at start). */
  updateContainerResources(containerId: string, resources: LinuxContainerResources, opts?: CallOptions): Promise<void>;
  /** Tells the runtime a sandbox's new total resources; kubelet takes Unimplemented as success (best effort). */
  updatePodSandboxResources(podSandboxId: string, resources: LinuxContainerResources, opts?: CallOptions): Promise<void>;
}

/** What an interactive session streams (CRI ExecRequest / AttachRequest); tty merges stderr into stdout. */
export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/**
 * The CRI's streaming calls: each returns the URL of a session on the runtime's own streaming server, which the
 * client's upgraded connection (SPDY/3.1 or WebSocket) is then handed to.
 */
export interface StreamingService {
  exec(containerId: string, cmd: string[], streams: StreamOptions, opts?: CallOptions): Promise<string>;
  attach(containerId: string, streams: StreamOptions, opts?: CallOptions): Promise<string>;
  /** Ports may be empty: the client names them in its streams. */
  portForward(podSandboxId: string, ports: number[], opts?: CallOptions): Promise<string>;
}

/** CRI AuthConfig: the registry credentials of one pull (kubelet sends the username and password of a pull secret). */
export interface AuthConfig {
  username?: string;
  password?: string;
  /** base64 of `username:password`, as a docker config's `auth` holds it. */
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

/** The CRI ImageService as nodelet uses it. */
export interface ImageService {
  /** Undefined when the image is not present. */
  imageStatus(image: string, opts?: CallOptions): Promise<Image | undefined>;
  /** Returns the image reference (digest or id) the runtime stored; `auth` are the registry credentials, if any. */
  pullImage(image: string, sandboxConfig?: PodSandboxConfig, opts?: CallOptions, auth?: AuthConfig): Promise<string>;
  listImages(opts?: CallOptions): Promise<Image[]>;
  removeImage(image: string, opts?: CallOptions): Promise<void>;
}

// ---- stats (ListContainerStats, ImageFsInfo) ----
// Timestamps stay in nanoseconds here (statsapi reports them); a value the runtime left unset is undefined.

export interface CpuUsage {
  timestampNs: number;
  usageCoreNanoSeconds?: number;
  usageNanoCores?: number;
}

export interface MemoryUsage {
  timestampNs: number;
  workingSetBytes?: number;
  availableBytes?: number;
  usageBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface FilesystemUsage {
  timestampNs: number;
  mountpoint: string;
  usedBytes?: number;
  inodesUsed?: number;
}

export interface ContainerStats {
  id: string;
  metadata: ContainerMetadata;
  cpu?: CpuUsage;
  memory?: MemoryUsage;
  writableLayer?: FilesystemUsage;
}

export interface ImageFsInfo {
  imageFilesystems: FilesystemUsage[];
  containerFilesystems: FilesystemUsage[];
}

/** The CRI's resource usage calls (kubelet's CRI stats provider). */
export interface StatsService {
  listContainerStats(filter?: { id?: string; podSandboxId?: string; labelSelector?: KeyValueMap }, opts?: CallOptions): Promise<ContainerStats[]>;
  imageFsInfo(opts?: CallOptions): Promise<ImageFsInfo>;
}
