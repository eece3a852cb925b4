// The pod lifecycle's dependencies wired to in-memory fakes: the in-memory CRI runtime, the in-memory filesystem,
// the manual clock, recorded events, a recorded prober and a volume manager that touches nothing.
import type { V1Container, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { EventRecorder, EventType, PodEventRef } from '../../../src/core/events.js';
import type { ProbeResult, ProbeType } from '../../../src/core/probe-results.js';
import type { PodRuntimeState } from '../../../src/core/runtime-state.js';
import { Backoff } from '../../../src/decisions/backoff.js';
import { ImageManager } from '../../../src/execution/images.js';
import type { NodeRuntimeSettings } from '../../../src/execution/runtime-config.js';
import type { SyncDeps } from '../../../src/execution/sync-pod.js';
import type { PodWorkerDeps } from '../../../src/lifecycle/pod-worker.js';
import { RuntimeObserver } from '../../../src/lifecycle/runtime-observer.js';
import type { PodProber } from '../../../src/prober/manager.js';
import { VolumeSetUpError, type PodVolumeManager } from '../../../src/volume/pod-volumes.js';
import type { ImageVolumePulls } from '../../../src/volume/image-volumes.js';
import type { Mount } from '../../../src/cri/types.js';
import { defaultIdsPerPod, defaultKubeletRange, UserNamespaceManager, type MappingsStore } from '../../../src/host/user-namespaces.js';
import { FakeClock } from '../core/fake-clock.js';
import { InMemoryFilesystem } from './in-memory-filesystem.js';
import { InMemoryRuntime } from './in-memory-runtime.js';

export const testImage = 'localhost/nodelet/busybox:1.35';
export const podLogsDir = '/var/log/pods';

export const nodeSettings: NodeRuntimeSettings = {
  podLogsDir,
  dns: { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', resolvConf: '', nodeIPs: ['10.0.0.1'] },
  memoryCapacityBytes: 8n << 30n,
};

export interface RecordedEvent {
  container?: string;
  type: EventType;
  reason: string;
  message: string;
}

/** The pods' userns files, in memory (a pod "has a directory" once a file was written for it). */
export class InMemoryMappingsStore implements MappingsStore {
  readonly files = new Map<string, string>();
  readonly dirs = new Set<string>();
  async read(uid: string) {
    return this.files.get(uid);
  }
  async write(uid: string, content: string) {
    this.dirs.add(uid);
    this.files.set(uid, content);
  }
  async remove(uid: string) {
    this.files.delete(uid);
  }
  async pods() {
    return [...this.dirs];
  }
}

export class RecordedEvents implements EventRecorder {
  readonly events: RecordedEvent[] = [];
  event(ref: PodEventRef, type: EventType, reason: string, message: string): void {
    this.events.push({ ...(ref.containerName ? { container: ref.containerName } : {}), type, reason, message });
  }
  nodeEvent(): void {}
  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}

/** A prober without probes: records what the worker tells it, answers results the test sets. */
export class RecordedProber implements PodProber {
  readonly updates: string[] = [];
  readonly removed: string[] = [];
  readonly results = new Map<string, ProbeResult>();
  update(pod: V1Pod, _state: PodRuntimeState, _wake: () => void): void {
    this.updates.push(pod.metadata!.uid!);
  }
  removePod(uid: string): void {
    this.removed.push(uid);
  }
  result(type: ProbeType, containerId: string): ProbeResult | undefined {
    return this.results.get(`${type}/${containerId}`);
  }
}

/** The volume manager's part the lifecycle uses, in memory: set-ups and tear-downs recorded, a set-up can be made to fail. */
export class FakeVolumes {
  readonly setUps: string[] = [];
  readonly tearDowns: string[] = [];
  /** When set, set-ups fail with this volume's FailedMount. */
  failVolume?: string;
  /** When set, set-ups wait for it to resolve. */
  hold?: Promise<void>;
  async setUp(pod: V1Pod): Promise<void> {
    this.setUps.push(pod.metadata!.uid!);
    await this.hold;
    if (this.failVolume) {
      const message = `MountVolume.SetUp failed for volume "${this.failVolume}" : not found`;
      throw new VolumeSetUpError(message, undefined, [{ volume: this.failVolume, message }]);
    }
  }
  /** Only image volumes' mounts, as the real manager makes them: read-only, naming the pulled image. */
  async containerMounts(_pod: V1Pod, c: V1Container, _env: unknown, imageVolumes: ImageVolumePulls): Promise<Mount[]> {
    const mounts: Mount[] = [];
    for (const m of c.volumeMounts ?? []) {
      const pull = imageVolumes.get(m.name);
      if (pull && 'image' in pull) mounts.push({ containerPath: m.mountPath, hostPath: '', image: pull.image, ...(m.subPath ? { imageSubPath: m.subPath } : {}), readonly: true });
    }
    return mounts;
  }
  async terminationMessageFile(uid: string, name: string): Promise<string> {
    return `/var/lib/nodelet/pods/${uid}/containers/${name}/message`;
  }
  /** The managed hosts file of each pod, as last written. */
  readonly etcHosts = new Map<string, string>();
  async etcHostsFile(uid: string, content: string): Promise<string> {
    this.etcHosts.set(uid, content);
    return `/var/lib/nodelet/pods/${uid}/etc-hosts`;
  }
  async nodeAllocatable(): Promise<{ cpu: number; memory: number }> {
    return { cpu: 4, memory: 8 << 30 };
  }
  async tearDown(uid: string): Promise<void> {
    this.tearDowns.push(uid);
  }
}

export interface LifecycleFakes {
  clock: FakeClock;
  runtime: InMemoryRuntime;
  files: InMemoryFilesystem;
  events: RecordedEvents;
  prober: RecordedProber;
  volumes: FakeVolumes;
  crashBackoff: Backoff;
  /** The image manager's pull back-off, keyed `<pod uid>/<image>`. */
  pullBackoff: Backoff;
  observer: RuntimeObserver;
  statuses: { uid: string; status: V1PodStatus; final: boolean }[];
  /** The pods' userns files the user namespace manager keeps. */
  usernsStore: InMemoryMappingsStore;
  deps: PodWorkerDeps;
}

/** Fresh fakes, with the test image present; `deps` is both a SyncDeps and a PodWorkerDeps. */
export function lifecycleFakes(): LifecycleFakes {
  const clock = new FakeClock(1_700_000_000_000);
  const runtime = new InMemoryRuntime({ now: () => clock.now(), images: [testImage] });
  const files = new InMemoryFilesystem();
  // The node's hosts file, which a host-network pod's /etc/hosts copies.
  files.files.set('/etc/hosts', '127.0.0.1\tlocalhost\n127.0.1.1\tnode-1\n');
  const events = new RecordedEvents();
  const prober = new RecordedProber();
  const volumes = new FakeVolumes();
  const crashBackoff = new Backoff();
  const pullBackoff = new Backoff();
  const observer = new RuntimeObserver(runtime, { podIPs: () => undefined }, files);
  const statuses: LifecycleFakes['statuses'] = [];
  const usernsStore = new InMemoryMappingsStore();
  const userNamespaces = new UserNamespaceManager({
    store: usernsStore,
    range: defaultKubeletRange(defaultIdsPerPod),
    idsPerPod: defaultIdsPerPod,
    maxPods: 110,
    handlers: async () => (await runtime.status()).handlers,
    now: () => clock.now(),
    log: pino({ level: 'silent' }),
    kernelRelease: '6.12.0',
  });
  const sync: SyncDeps = {
    runtime,
    hostIP: () => '192.168.1.10',
    podIPs: () => ['10.88.0.2'],
    podSubnets: () => ['10.88.0.0/24'],
    kubeMinor: 37,
    images: new ImageManager({ images: runtime, pullBackoff, now: () => clock.now(), events }),
    crashBackoff,
    node: nodeSettings,
    clock,
    files,
    volumes: volumes as unknown as PodVolumeManager,
    userNamespaces,
    events,
  };
  const deps: PodWorkerDeps = {
    ...sync,
    observer,
    runtimeName: () => 'containerd',
    resyncIntervalMs: 60_000,
    errorRetryMs: 1_000,
    log: pino({ level: 'silent' }),
    prober,
    onStatus: (pod, status, final) => statuses.push({ uid: pod.metadata!.uid!, status, final }),
  };
  return { clock, runtime, files, events, prober, volumes, crashBackoff, pullBackoff, observer, statuses, usernsStore, deps };
}
