// Table test of the executor's numbered steps on the in-memory runtime: one base pod running in it, each case a small
// mutation of the pod or the runtime; the actions computed from what is observed are executed, and the CRI calls made,
// the step results and the events are asserted.
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { ProbeResult } from '../../../src/core/probe-results.js';
import type { PodRuntimeState } from '../../../src/core/runtime-state.js';
import type { StepResult } from '../../../src/core/sync-result.js';
import { computePodActions, type PodActions } from '../../../src/decisions/compute-actions.js';
import { crashBackoffKey, executePodActions, terminatePod } from '../../../src/execution/sync-pod.js';
import { lifecycleFakes, podLogsDir, testImage, type LifecycleFakes } from '../fakes/lifecycle-deps.js';
import type { CriCall } from '../fakes/in-memory-runtime.js';

const log = pino({ level: 'silent' });
const uid = 'uid-1';
const logDir = `${podLogsDir}/default_web_${uid}`;

function basePod(): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid },
    spec: {
      restartPolicy: 'Always',
      containers: [
        { name: 'app', image: testImage },
        { name: 'sidecar', image: testImage, args: ['sleep', '3600'] },
      ],
    },
  };
}

const inits = (pod: V1Pod) => {
  pod.spec!.initContainers = [
    { name: 'init-a', image: testImage, command: ['true'] },
    { name: 'init-b', image: testImage, command: ['true'] },
  ];
};

/** The fixture a case mutates: the fakes, and the id of the newest container of a name. */
interface Fixture extends LifecycleFakes {
  idOf(name: string): string;
  sandboxId(): string;
}

function fixture(): Fixture {
  const f = lifecycleFakes();
  return {
    ...f,
    idOf: (name) => [...f.runtime.peek().containers].reverse().find((c) => c.name === name)!.id,
    sandboxId: () => f.runtime.peek().sandboxes.at(-1)!.id,
  };
}

async function observe(f: Fixture): Promise<PodRuntimeState> {
  return f.observer.observePod(uid);
}

function compute(f: Fixture, pod: V1Pod, state: PodRuntimeState, liveness: Record<string, ProbeResult> = {}): PodActions {
  const byId = new Map(state.containers.map((c) => [c.id, c.name]));
  return computePodActions(pod, state, {
    now: f.clock.now(),
    backoffPolicy: f.crashBackoff.policy,
    crashBackoff: (name) => f.crashBackoff.get(crashBackoffKey(pod, name)),
    liveness: (id) => liveness[byId.get(id) ?? ''],
  });
}

/** The calls that change the runtime or pull, in a short form naming containers and sandboxes as the test knows them. */
function describeCalls(calls: readonly CriCall[], names: Map<string, string>): string[] {
  const out: string[] = [];
  for (const { method, args } of calls) {
    const name = (id: unknown) => names.get(id as string) ?? `?${String(id).slice(0, 8)}`;
    if (method === 'runPodSandbox') out.push(`runPodSandbox attempt=${String(args.attempt)}`);
    else if (method === 'createContainer') out.push(`createContainer ${String(args.name)} attempt=${String(args.attempt)}`);
    else if (method === 'startContainer' || method === 'removeContainer') out.push(`${method} ${name(args.containerId)}`);
    else if (method === 'stopContainer') out.push(`stopContainer ${name(args.containerId)} grace=${String(args.timeoutSeconds)}`);
    else if (method === 'stopPodSandbox' || method === 'removePodSandbox') out.push(`${method} ${name(args.podSandboxId)}`);
    else if (method === 'pullImage') out.push(`pullImage ${String(args.image)}`);
  }
  return out;
}

/** Container ids by name, sandbox ids as `sandbox#<attempt>`, over every object the runtime held. */
function nameIds(f: Fixture, names: Map<string, string>): void {
  const { sandboxes, containers } = f.runtime.peek();
  for (const s of sandboxes) names.set(s.id, `sandbox#${s.metadata.attempt}`);
  for (const c of containers) names.set(c.id, c.name);
}

function describeResults(results: StepResult[], names: Map<string, string>): string[] {
  return results.map((r) => `${r.action}${r.target ? ` ${names.get(r.target) ?? r.target}` : ''}${r.error ? `: ${r.error.code}` : ''}`);
}

interface Case {
  name: string;
  /** Start from an empty runtime instead of the base pod running. */
  fresh?: boolean;
  pod?: (pod: V1Pod) => void;
  runtime?: (f: Fixture, pod: V1Pod) => void;
  /** Liveness results by container name. */
  liveness?: Record<string, ProbeResult>;
  /** Edits the computed actions (for orders computePodActions never asks for in one sync). */
  actions?: (a: PodActions) => void;
  calls: string[];
  results: string[];
  /** Events that must be among those recorded, as `Reason[ container]: message`. */
  events?: string[];
  /** Further checks on the fixture after the sync. */
  check?: (f: Fixture) => void | Promise<void>;
}

const startBoth = ['createContainer app attempt=0', 'startContainer app', 'createContainer sidecar attempt=0', 'startContainer sidecar'];

const cases: Case[] = [
  {
    name: 'step 4, 6: nothing in the runtime: sandbox attempt 0, then every container in spec order; log directories made',
    fresh: true,
    calls: ['runPodSandbox attempt=0', ...startBoth],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer app', 'StartContainer sidecar'],
    events: ['Created app: Container created', 'Started sidecar: Container started'],
    check: (f) => {
      expect(f.files.pathsOf('makeDirs')).toEqual([logDir, `${logDir}/app`, `${logDir}/sidecar`]);
      expect(f.files.dirs.get(`${logDir}/app`)).toBe(0o755);
      expect(f.volumes.setUps).toEqual([uid]);
    },
  },
  {
    name: 'step 1, 4: the sandbox died: its running containers are killed, attempt 1 is created, the containers start again',
    runtime: (f) => f.runtime.exitSandbox(f.sandboxId()),
    calls: ['stopContainer app grace=30', 'stopContainer sidecar grace=30', 'runPodSandbox attempt=1', 'createContainer app attempt=1', 'startContainer app', 'createContainer sidecar attempt=1', 'startContainer sidecar'],
    results: ['KillContainer app', 'KillContainer sidecar', 'CreatePodSandbox sandbox#1', 'StartContainer app', 'StartContainer sidecar'],
    events: ['Killing app: Stopping container app', 'SandboxChanged: Pod sandbox changed, it will be killed and re-created.'],
  },
  {
    name: 'step 1: a container that cannot be killed ends the sync before a new sandbox',
    runtime: (f) => {
      f.runtime.exitSandbox(f.sandboxId());
      f.runtime.failNext('stopContainer', 'Unknown');
    },
    calls: ['stopContainer app grace=30', 'stopContainer sidecar grace=30'],
    results: ['KillContainer app: ErrKillContainer', 'KillContainer sidecar'],
  },
  {
    name: 'step 2: the pod\'s grace period is the kill\'s, never under 2 s',
    pod: (p) => (p.spec!.terminationGracePeriodSeconds = 0),
    liveness: { app: 'failure' },
    calls: ['stopContainer app grace=2', 'createContainer app attempt=1', 'startContainer app'],
    results: ['KillContainer app', 'StartContainer app'],
  },
  {
    name: 'step 1: nothing left to run (restartPolicy Never, all exited): the ready sandbox is stopped',
    pod: (p) => (p.spec!.restartPolicy = 'Never'),
    runtime: (f) => {
      f.runtime.exitContainer(f.idOf('app'), 0);
      f.runtime.exitContainer(f.idOf('sidecar'), 1);
    },
    calls: ['stopPodSandbox sandbox#0'],
    results: ['KillPod sandbox#0'],
  },
  {
    name: 'step 1: a sandbox that cannot be stopped is ErrKillPodSandbox',
    pod: (p) => (p.spec!.restartPolicy = 'Never'),
    runtime: (f) => {
      f.runtime.exitContainer(f.idOf('app'), 0);
      f.runtime.exitContainer(f.idOf('sidecar'), 0);
      f.runtime.failNext('stopPodSandbox', 'DeadlineExceeded');
    },
    calls: ['stopPodSandbox sandbox#0'],
    results: ['KillPod sandbox#0: ErrKillPodSandbox'],
  },
  {
    name: 'step 2: liveness failed: killed with the reason, then restarted in the same sandbox',
    liveness: { app: 'failure' },
    calls: ['stopContainer app grace=30', 'createContainer app attempt=1', 'startContainer app'],
    results: ['KillContainer app', 'StartContainer app'],
    events: ['Killing app: Container app failed liveness probe, will be restarted'],
  },
  {
    name: 'step 2: the image of a container changed: killed as "definition changed", started from the new spec',
    pod: (p) => (p.spec!.containers[1]!.image = 'localhost/nodelet/busybox:1.36'),
    calls: ['stopContainer sidecar grace=30', 'pullImage localhost/nodelet/busybox:1.36', 'createContainer sidecar attempt=1', 'startContainer sidecar'],
    results: ['KillContainer sidecar', 'StartContainer sidecar'],
    events: ['Killing sidecar: Container sidecar definition changed'],
  },
  {
    name: 'step 2: a failed kill is ErrKillContainer and does not end the sync: the restart is still tried',
    liveness: { app: 'failure' },
    runtime: (f) => f.runtime.failNext('stopContainer', 'Unknown'),
    calls: ['stopContainer app grace=30', 'createContainer app attempt=1', 'startContainer app'],
    results: ['KillContainer app: ErrKillContainer', 'StartContainer app'],
  },
  {
    name: 'step 3: a volume that cannot be set up: a MountVolume result, nothing created',
    fresh: true,
    runtime: (f) => (f.volumes.failVolume = 'data'),
    calls: [],
    results: ['MountVolume data: FailedMount'],
    events: ['FailedMount: MountVolume.SetUp failed for volume "data" : not found'],
  },
  {
    name: 'step 4: the sandbox cannot be created: ErrCreatePodSandbox, no container is tried',
    fresh: true,
    runtime: (f) => f.runtime.failNext('runPodSandbox', 'Unknown'),
    calls: ['runPodSandbox attempt=0'],
    results: ['CreatePodSandbox: ErrCreatePodSandbox'],
    events: ['FailedCreatePodSandBox: Failed to create pod sandbox: RunPodSandbox: injected Unknown failure'],
  },
  {
    name: 'step 5: a new sandbox starts only the first init container',
    fresh: true,
    pod: inits,
    calls: ['runPodSandbox attempt=0', 'createContainer init-a attempt=0', 'startContainer init-a'],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer init-a'],
  },
  {
    name: 'step 5: init containers start in order, before the app containers',
    fresh: true,
    pod: inits,
    actions: (a) => {
      a.initContainersToStart.push({ name: 'init-b', specIndex: 1, restartCount: 0, reason: '' });
      a.containersToStart.push({ name: 'app', specIndex: 0, restartCount: 0, reason: '' });
    },
    calls: ['runPodSandbox attempt=0', 'createContainer init-a attempt=0', 'startContainer init-a', 'createContainer init-b attempt=0', 'startContainer init-b', 'createContainer app attempt=0', 'startContainer app'],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer init-a', 'StartContainer init-b', 'StartContainer app'],
  },
  {
    name: 'step 5: an init container that cannot be created ends the sync',
    fresh: true,
    pod: inits,
    runtime: (f) => f.runtime.failNext('createContainer', 'Unknown'),
    actions: (a) => {
      a.initContainersToStart.push({ name: 'init-b', specIndex: 1, restartCount: 0, reason: '' });
      a.containersToStart.push({ name: 'app', specIndex: 0, restartCount: 0, reason: '' });
    },
    calls: ['runPodSandbox attempt=0', 'createContainer init-a attempt=0'],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer init-a: CreateContainerError'],
  },
  {
    name: 'step 5: a sidecar that fails to start does not end the sync',
    fresh: true,
    pod: (p) => {
      inits(p);
      p.spec!.initContainers![0]!.restartPolicy = 'Always';
    },
    runtime: (f) => f.runtime.onStart((c) => (c.name === 'init-a' ? 'exec: "true": executable file not found in $PATH' : undefined)),
    actions: (a) => a.initContainersToStart.push({ name: 'init-b', specIndex: 1, restartCount: 0, reason: '' }),
    calls: ['runPodSandbox attempt=0', 'createContainer init-a attempt=0', 'startContainer init-a', 'createContainer init-b attempt=0', 'startContainer init-b'],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer init-a: RunContainerError', 'StartContainer init-b'],
  },
  {
    name: 'step 6: an exited container restarts with the next attempt and its crash back-off starts',
    runtime: (f) => f.runtime.exitContainer(f.idOf('app'), 1),
    calls: ['createContainer app attempt=1', 'startContainer app'],
    results: ['StartContainer app'],
    check: (f) => expect(f.crashBackoff.get(`${uid}/app`)?.durationMs).toBe(10_000),
  },
  {
    name: 'step 6: CrashLoopBackOff: a container in back-off is skipped, the other one restarts',
    runtime: (f) => {
      f.runtime.exitContainer(f.idOf('app'), 1);
      f.runtime.exitContainer(f.idOf('sidecar'), 1);
      f.crashBackoff.next(`${uid}/app`, f.clock.now());
    },
    calls: ['createContainer sidecar attempt=1', 'startContainer sidecar'],
    results: ['StartContainer sidecar'],
  },
  {
    name: 'step 6: an image that cannot be pulled: ErrImagePull, the next container is still started',
    fresh: true,
    pod: (p) => (p.spec!.containers[0]!.image = 'localhost/nodelet/missing:1'),
    runtime: (f) => f.runtime.failPulls('localhost/nodelet/missing:1'),
    calls: ['runPodSandbox attempt=0', 'pullImage localhost/nodelet/missing:1', 'createContainer sidecar attempt=0', 'startContainer sidecar'],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer app: ErrImagePull', 'StartContainer sidecar'],
    events: ['Failed app: Error: ErrImagePull'],
  },
  {
    name: 'step 6: a pull in back-off is ImagePullBackOff and not tried',
    fresh: true,
    pod: (p) => (p.spec!.containers[0]!.image = 'localhost/nodelet/missing:1'),
    runtime: (f) => f.pullBackoff.next(`${uid}/localhost/nodelet/missing:1`, f.clock.now()),
    calls: ['runPodSandbox attempt=0', ...startBoth.slice(2)],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer app: ImagePullBackOff', 'StartContainer sidecar'],
    events: ['BackOff app: Back-off pulling image "localhost/nodelet/missing:1"'],
  },
  {
    name: 'step 6: image volumes are pulled once before the containers start; a container mounts the pulled image read-only',
    fresh: true,
    pod: (p) => {
      p.spec!.volumes = [{ name: 'data', image: { reference: 'localhost/nodelet/data:1', pullPolicy: 'IfNotPresent' } }];
      p.metadata!.annotations = { team: 'a' };
      p.spec!.containers[0]!.volumeMounts = [{ name: 'data', mountPath: '/data' }, { name: 'data', mountPath: '/sub', subPath: 'dir' }];
      p.spec!.containers[1]!.volumeMounts = [{ name: 'data', mountPath: '/data' }];
    },
    calls: ['runPodSandbox attempt=0', 'pullImage localhost/nodelet/data:1', ...startBoth],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer app', 'StartContainer sidecar'],
    // About the pod, not a container, as kubelet's pull of an image volume.
    events: ['Pulling: Pulling image "localhost/nodelet/data:1"'],
    check: async (f) => {
      const id = (await f.runtime.imageStatus('localhost/nodelet/data:1'))!.id;
      const image = { image: id, annotations: { team: 'a' } };
      expect(f.runtime.containerConfig(f.idOf('app')).mounts.filter((m) => m.image)).toEqual([
        { containerPath: '/data', hostPath: '', image, readonly: true },
        { containerPath: '/sub', hostPath: '', image, imageSubPath: 'dir', readonly: true },
      ]);
    },
  },
  {
    name: 'step 6: an image volume that cannot be pulled fails only the containers mounting it, with ErrImagePull',
    fresh: true,
    pod: (p) => {
      p.spec!.volumes = [{ name: 'gone', image: { reference: 'localhost/nodelet/missing:1', pullPolicy: 'IfNotPresent' } }];
      p.spec!.containers[0]!.volumeMounts = [{ name: 'gone', mountPath: '/a' }, { name: 'gone', mountPath: '/b' }];
    },
    runtime: (f) => f.runtime.failPulls('localhost/nodelet/missing:1'),
    calls: ['runPodSandbox attempt=0', 'pullImage localhost/nodelet/missing:1', ...startBoth.slice(2)],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer app: ErrImagePull', 'StartContainer sidecar'],
    // kubelet's Failed event for each mount of the volume, then the start's ErrImagePull.
    events: ['Failed app: Error: ErrImagePull', 'Failed: Failed to pull image "localhost/nodelet/missing:1": rpc error: code = NotFound desc = failed to pull and unpack image "localhost/nodelet/missing:1": failed to resolve reference "localhost/nodelet/missing:1": localhost/nodelet/missing:1: not found'],
    check: (f) => expect(f.events.events.filter((e) => e.container === 'app' && e.reason === 'Failed')).toHaveLength(2),
  },
  {
    name: 'step 6: an image volume in pull back-off: ImagePullBackOff, not pulled',
    fresh: true,
    pod: (p) => {
      p.spec!.volumes = [{ name: 'gone', image: { reference: 'localhost/nodelet/missing:1', pullPolicy: 'Always' } }];
      p.spec!.containers[1]!.volumeMounts = [{ name: 'gone', mountPath: '/a' }];
    },
    runtime: (f) => f.pullBackoff.next(`${uid}/localhost/nodelet/missing:1`, f.clock.now()),
    calls: ['runPodSandbox attempt=0', ...startBoth.slice(0, 2)],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer app', 'StartContainer sidecar: ImagePullBackOff'],
    events: ['BackOff: Back-off pulling image "localhost/nodelet/missing:1"', 'Failed sidecar: Error: ImagePullBackOff'],
  },
  {
    name: 'step 6: an image volume whose reference is no image name: InvalidImageName, nothing pulled',
    fresh: true,
    pod: (p) => {
      p.spec!.volumes = [{ name: 'bad', image: { reference: 'not a name', pullPolicy: 'IfNotPresent' } }];
      p.spec!.containers[0]!.volumeMounts = [{ name: 'bad', mountPath: '/a' }];
    },
    calls: ['runPodSandbox attempt=0', ...startBoth.slice(2)],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer app: InvalidImageName', 'StartContainer sidecar'],
    events: ['InspectFailed: Failed to apply default image tag "not a name": couldn\'t parse image name "not a name": invalid reference format', 'Failed app: Error: InvalidImageName'],
  },
  {
    name: 'step 6: CreateContainer fails: CreateContainerError, the next container is still started',
    fresh: true,
    runtime: (f) => {
      f.runtime.failNext('createContainer', 'Unknown');
    },
    calls: ['runPodSandbox attempt=0', 'createContainer app attempt=0', 'createContainer sidecar attempt=0', 'startContainer sidecar'],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer app: CreateContainerError', 'StartContainer sidecar'],
    events: ['Failed app: Error: CreateContainer: injected Unknown failure'],
  },
  {
    name: 'step 6: StartContainer fails: RunContainerError with the runtime\'s message',
    fresh: true,
    runtime: (f) => f.runtime.onStart((c) => (c.name === 'sidecar' ? 'exec: "sleep": executable file not found in $PATH' : undefined)),
    calls: ['runPodSandbox attempt=0', ...startBoth],
    results: ['CreatePodSandbox sandbox#0', 'StartContainer app', 'StartContainer sidecar: RunContainerError'],
    events: ['Failed sidecar: Error: StartContainer: exec: "sleep": executable file not found in $PATH'],
  },
];

describe('executePodActions', () => {
  test.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const f = fixture();
    const pod = basePod();
    if (!c.fresh) {
      const state = await observe(f);
      await executePodActions(f.deps, pod, compute(f, pod, state), state, log);
      expect(f.runtime.peek().containers.map((x) => [x.name, x.state])).toEqual([['app', 'CONTAINER_RUNNING'], ['sidecar', 'CONTAINER_RUNNING']]);
    }
    c.pod?.(pod);
    c.runtime?.(f, pod);
    const state = await observe(f);
    const actions = compute(f, pod, state, c.liveness);
    c.actions?.(actions);
    f.runtime.clearCalls();
    f.events.events.length = 0;
    f.files.operations.length = 0;
    f.volumes.setUps.length = 0;

    const results = await executePodActions(f.deps, pod, actions, state, log);

    const names = new Map<string, string>();
    nameIds(f, names);
    expect(describeCalls(f.runtime.calls, names)).toEqual(c.calls);
    expect(describeResults(results, names)).toEqual(c.results);
    const events = f.events.events.map((e) => `${e.reason}${e.container ? ` ${e.container}` : ''}: ${e.message}`);
    expect(events).toEqual(expect.arrayContaining(c.events ?? []));
    await c.check?.(f);
  });
});

describe('terminatePod', () => {
  test('stops containers, then sandboxes, reads the final status in between, removes everything and the log directory', async () => {
    const f = fixture();
    const pod = basePod();
    pod.spec!.terminationGracePeriodSeconds = 10;
    let state = await observe(f);
    await executePodActions(f.deps, pod, compute(f, pod, state), state, log);
    state = await observe(f);
    f.runtime.clearCalls();
    const seenAtAfterKill: string[] = [];
    await terminatePod(f.deps, pod, state, 10, logDir, log, undefined, async () => {
      seenAtAfterKill.push(...f.runtime.peek().containers.map((c) => `${c.name} ${c.state}`));
    });
    const names = new Map<string, string>();
    for (const s of state.sandboxes) names.set(s.id, `sandbox#${s.attempt}`);
    for (const c of state.containers) names.set(c.id, c.name);
    expect(describeCalls(f.runtime.calls, names).sort()).toEqual(
      ['stopContainer app grace=10', 'stopContainer sidecar grace=10', 'stopPodSandbox sandbox#0', 'removePodSandbox sandbox#0'].sort(),
    );
    expect(seenAtAfterKill).toEqual(['app CONTAINER_EXITED', 'sidecar CONTAINER_EXITED']);
    expect(f.runtime.peek()).toEqual({ sandboxes: [], containers: [] });
    expect(f.volumes.tearDowns).toEqual([uid]);
    expect(f.files.exists(logDir)).toBe(false);
    expect(f.files.pathsOf('removeAll')).toEqual([logDir]);
  });

  test('a container that cannot be stopped: FailedKillPod, nothing removed, the error thrown for a retry', async () => {
    const f = fixture();
    const pod = basePod();
    let state = await observe(f);
    await executePodActions(f.deps, pod, compute(f, pod, state), state, log);
    state = await observe(f);
    f.runtime.failNext('stopContainer', 'Unknown');
    f.runtime.clearCalls();
    await expect(terminatePod(f.deps, pod, state, 30, logDir, log)).rejects.toThrow(/KillContainer app: .*injected Unknown failure/);
    expect(f.runtime.callsOf('removePodSandbox')).toEqual([]);
    expect(f.volumes.tearDowns).toEqual([]);
    expect(f.events.reasons()).toContain('FailedKillPod');
  });
});

describe("the sandbox's DNS and the containers' service variables", () => {
  const services = (synced: boolean, list: V1Service[] = []) => ({ hasSynced: () => synced, list: () => list });
  const kubernetes: V1Service = { metadata: { name: 'kubernetes', namespace: 'default' }, spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] } };

  async function start(f: Fixture, pod: V1Pod) {
    const state = await observe(f);
    return executePodActions(f.deps, pod, compute(f, pod, state), state, log);
  }

  test('a new sandbox gets the pod DNS of the node settings: ClusterFirst with cluster DNS', async () => {
    const f = fixture();
    await start(f, basePod());
    expect(f.runtime.sandboxConfig(f.sandboxId()).dnsConfig).toEqual({
      servers: ['10.96.0.10'],
      searches: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
      options: ['ndots:5'],
    });
  });

  test("the host's resolv.conf is read when a sandbox is created; a file that cannot be read fails the sandbox", async () => {
    const f = fixture();
    f.deps.node = { ...f.deps.node, dns: { ...f.deps.node.dns, resolvConf: '/etc/resolv.conf' } };
    f.files.files.set('/etc/resolv.conf', 'nameserver 192.0.2.53\nsearch example.org\noptions edns0\n');
    const pod = basePod();
    pod.spec!.dnsPolicy = 'Default';
    await start(f, pod);
    expect(f.runtime.sandboxConfig(f.sandboxId()).dnsConfig).toEqual({ servers: ['192.0.2.53'], searches: ['example.org'], options: ['edns0'] });

    const g = fixture();
    g.deps.node = { ...g.deps.node, dns: { ...g.deps.node.dns, resolvConf: '/missing/resolv.conf' } };
    const results = await start(g, basePod());
    expect(results.map((r) => [r.action, r.error?.code])).toEqual([['CreatePodSandbox', 'ErrCreatePodSandbox']]);
    expect(g.events.reasons()).toEqual(['FailedCreatePodSandBox']);
  });

  test('DNSConfigForming and MissingClusterDNS reach the pod as events', async () => {
    const f = fixture();
    f.deps.node = { ...f.deps.node, dns: { ...f.deps.node.dns, clusterDNS: [] } };
    const pod = basePod();
    pod.spec!.dnsConfig = { nameservers: ['10.0.0.1', '10.0.0.2', '10.0.0.3'] };
    await start(f, pod);
    expect(f.events.reasons().filter((r) => r !== 'Pulled' && r !== 'Created' && r !== 'Started')).toEqual(['MissingClusterDNS', 'DNSConfigForming']);
  });

  test('service variables: from the Services, an API pod waits for their first list, a static pod does not', async () => {
    const f = fixture();
    f.deps.services = services(true, [kubernetes]);
    await start(f, basePod());
    const envs = f.runtime.containerConfig(f.idOf('app')).envs;
    expect(envs).toEqual(expect.arrayContaining([{ key: 'KUBERNETES_SERVICE_HOST', value: Buffer.from('10.96.0.1') }, { key: 'KUBERNETES_SERVICE_PORT_HTTPS', value: Buffer.from('443') }]));

    const g = fixture();
    g.deps.services = services(false);
    const results = await start(g, basePod());
    expect(results.filter((r) => r.error).map((r) => [r.target, r.error!.code, r.error!.message])).toEqual([
      ['app', 'CreateContainerConfigError', 'services have not yet been read at least once, cannot construct envvars'],
      ['sidecar', 'CreateContainerConfigError', 'services have not yet been read at least once, cannot construct envvars'],
    ]);

    const h = fixture();
    h.deps.services = services(false);
    const staticPod = basePod();
    staticPod.metadata!.annotations = { 'kubernetes.io/config.source': 'file' };
    expect((await start(h, staticPod)).filter((r) => r.error)).toEqual([]);
  });
});

describe("the containers' managed /etc/hosts", () => {
  async function start(f: Fixture, pod: V1Pod) {
    const state = await observe(f);
    return executePodActions(f.deps, pod, compute(f, pod, state), state, log);
  }
  const hostsMount = (f: Fixture, name: string) => f.runtime.containerConfig(f.idOf(name)).mounts?.find((m) => m.containerPath === '/etc/hosts');

  test("each container mounts the pod's hosts file, with the pod IP, its hostname and its aliases; one mounting /etc/hosts itself does not", async () => {
    const f = fixture();
    const pod = basePod();
    pod.spec!.hostAliases = [{ ip: '123.45.67.89', hostnames: ['foo', 'bar'] }];
    pod.spec!.volumes = [{ name: 'hosts', hostPath: { path: '/etc/hosts' } }];
    pod.spec!.containers[1]!.volumeMounts = [{ name: 'hosts', mountPath: '/etc/hosts' }];
    await start(f, pod);
    expect(hostsMount(f, 'app')).toEqual({ containerPath: '/etc/hosts', hostPath: `/var/lib/nodelet/pods/${uid}/etc-hosts` });
    expect(hostsMount(f, 'sidecar')).toBeUndefined();
    // The file's format is etc-hosts.test's; here, that the sandbox's IP and the pod's aliases reached it.
    const hosts = f.volumes.etcHosts.get(uid);
    expect(hosts).toMatch(/^# Kubernetes-managed hosts file\.\n/);
    expect(hosts).toContain('\n10.88.0.2\tweb\n');
    expect(hosts).toContain('\n123.45.67.89\tfoo\tbar\n');
  });

  test("a host-network pod's file is the node's hosts file under its own header", async () => {
    const f = fixture();
    const pod = basePod();
    pod.spec!.hostNetwork = true;
    await start(f, pod);
    expect(hostsMount(f, 'app')?.hostPath).toBe(`/var/lib/nodelet/pods/${uid}/etc-hosts`);
    // The node's hosts file (the fixture's) under the host-network header.
    expect(f.volumes.etcHosts.get(uid)).toMatch(/^# Kubernetes-managed hosts file \(host network\)\.\n[^]*127\.0\.1\.1\tnode-1\n$/);
  });
});

describe('a preStop httpGet hook aimed at another host', () => {
  test("is refused without a connection when the host is neither this node's pods nor the host", async () => {
    const { runLifecycleHook } = await import('../../../src/execution/lifecycle-hooks.js');
    const refused = await runLifecycleHook('PreStop', { httpGet: { host: '10.1.0.7', port: 8080, path: '/echo' } }, {
      pod: basePod(), container: { name: 'app' }, containerId: 'c1', podIPs: ['10.88.0.2'], hostIPs: ['192.0.2.2'], podSubnets: ['10.88.0.0/24'], kubeMinor: 37,
      runtime: { execSync: () => Promise.reject(new Error('no exec')) }, timeoutSeconds: 1, clock: { sleep: () => Promise.resolve() },
    }).catch((e: Error) => e.message);
    expect(refused).toMatch(/host "10.1.0.7" is neither a pod of this node nor an address of this host; nodelet probes nothing else/);
  });
});

test("an httpGet hook's User-Agent is kubelet's kube-lifecycle/<version> of the minor served", async () => {
  const { runLifecycleHook } = await import('../../../src/execution/lifecycle-hooks.js');
  const { createServer } = await import('node:http');
  let agent: string | undefined;
  const server = createServer((req, res) => ((agent = req.headers['user-agent']), res.end('ok')));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as { port: number }).port;
    await runLifecycleHook('PostStart', { httpGet: { port, path: '/started' } }, {
      pod: basePod(), container: { name: 'app' }, containerId: 'c1', podIPs: ['127.0.0.1'], hostIPs: ['192.0.2.2'], podSubnets: [], kubeMinor: 35,
      runtime: { execSync: () => Promise.reject(new Error('no exec')) }, timeoutSeconds: 2, clock: { sleep: () => Promise.resolve() },
    });
    expect(agent).toBe('kube-lifecycle/1.35');
  } finally {
    server.close();
  }
});
