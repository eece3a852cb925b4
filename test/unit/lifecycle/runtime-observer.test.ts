// The runtime observer asks CRI only for what it cannot know or has not cached.
import type { Container, ContainerStatus, PodSandbox, PodSandboxStatus, RuntimeService } from '../../../src/cri/types.js';
import { podUidLabel } from '../../../src/core/labels.js';
import { RuntimeObserver } from '../../../src/lifecycle/runtime-observer.js';
import { hostFilesystem } from '../../../src/host/filesystem.js';

const sandbox = (id: string): PodSandbox => ({
  id,
  metadata: { name: 'p', namespace: 'default', uid: 'u1', attempt: 0 },
  state: 'SANDBOX_READY',
  createdAt: 1,
  labels: { [podUidLabel]: 'u1' },
  annotations: {},
  runtimeHandler: '',
});

function fakeRuntime(sandboxes: PodSandbox[], statusIPs: Record<string, string[]>) {
  const calls: string[] = [];
  const runtime = {
    listPodSandbox: async () => sandboxes,
    listContainers: async (): Promise<Container[]> => [],
    containerStatus: async (): Promise<ContainerStatus> => {
      throw new Error('no containers');
    },
    podSandboxStatus: async (id: string): Promise<PodSandboxStatus> => {
      calls.push(id);
      return { ...sandboxes.find((s) => s.id === id)!, ips: statusIPs[id] ?? [], info: {} };
    },
  } as unknown as RuntimeService;
  return { runtime, calls };
}

test('IPs come from the agent\'s pod network first; otherwise the runtime is asked once per sandbox, even for none', async () => {
  const { runtime, calls } = fakeRuntime([sandbox('cni'), sandbox('host'), sandbox('other')], { other: ['10.99.0.9'] });
  const observer = new RuntimeObserver(runtime, { podIPs: (id) => (id === 'cni' ? ['10.99.0.5'] : undefined) }, hostFilesystem);
  for (let i = 0; i < 3; i++) {
    const state = await observer.observePod('u1');
    expect(Object.fromEntries(state.sandboxes.map((s) => [s.id, s.ips]))).toEqual({ cni: ['10.99.0.5'], host: [], other: ['10.99.0.9'] });
  }
  expect(calls.sort()).toEqual(['host', 'other']);
});

test('a pod no worker synced yet: no runtime call when the latest relist did not list it; asked when it did or before any relist', async () => {
  let lists = 0;
  const runtime = {
    listPodSandbox: async (filter?: { labelSelector?: Record<string, string> }) => {
      lists++;
      const uid = filter?.labelSelector?.[podUidLabel];
      return [sandbox('sb1')].filter((s) => uid === undefined || s.labels[podUidLabel] === uid);
    },
    listContainers: async (): Promise<Container[]> => (lists++, []),
    containerStatus: async (): Promise<ContainerStatus> => {
      throw new Error('no containers');
    },
  } as unknown as RuntimeService;
  const observer = new RuntimeObserver(runtime, { podIPs: () => ['10.99.0.5'] }, hostFilesystem);

  // Before any relist nothing is known: the runtime is asked.
  expect((await observer.observeNewPod('new')).sandboxes).toEqual([]);
  expect(lists).toBe(2);

  await observer.snapshot();
  lists = 0;
  expect(await observer.observeNewPod('new')).toEqual({ uid: 'new', sandboxes: [], containers: [] });
  expect(lists).toBe(0);
  // u1 has a sandbox in the relist (e.g. left by the agent before a restart): it is observed, to be adopted.
  expect((await observer.observeNewPod('u1')).sandboxes.map((s) => s.id)).toEqual(['sb1']);
  expect(lists).toBe(2);
});

test('statuses of just-started containers are asked alongside the lists, and again if the list saw a later state', async () => {
  const order: string[] = [];
  let listedState: Container['state'] = 'CONTAINER_RUNNING';
  let statusState: ContainerStatus['state'] = 'CONTAINER_RUNNING';
  const container: Container = {
    id: 'c1', podSandboxId: 'sb1', metadata: { name: 'main', attempt: 0 }, image: { image: 'busybox' }, imageRef: 'sha256:1',
    state: 'CONTAINER_RUNNING', createdAt: 1, labels: { [podUidLabel]: 'u1' }, annotations: {},
  };
  const runtime = {
    listPodSandbox: async () => (order.push('list'), [sandbox('sb1')]),
    listContainers: async (): Promise<Container[]> => [{ ...container, state: listedState }],
    containerStatus: async (id: string): Promise<ContainerStatus> => {
      order.push(`status ${id}`);
      return { ...container, state: statusState, startedAt: 5, finishedAt: 0, exitCode: 0, image: { image: 'busybox' }, imageRef: 'sha256:1', reason: '', message: '', mounts: [] } as unknown as ContainerStatus;
    },
  } as unknown as RuntimeService;

  const observer = new RuntimeObserver(runtime, { podIPs: () => ['10.99.0.5'] }, hostFilesystem);
  const state = await observer.observePod('u1', undefined, ['c1']);
  expect(order).toEqual(['status c1', 'list']);
  expect(state.containers.map((c) => [c.id, c.state, c.startedAt])).toEqual([['c1', 'running', 5]]);

  // The container exited between the early status and the list: the list's state wins and the status is asked again.
  const fresh = new RuntimeObserver(runtime, { podIPs: () => ['10.99.0.5'] }, hostFilesystem);
  order.length = 0;
  listedState = 'CONTAINER_EXITED';
  const asked = fresh.observePod('u1', undefined, ['c1']);
  statusState = 'CONTAINER_EXITED';
  const later = await asked;
  expect(order).toEqual(['status c1', 'list', 'status c1']);
  expect(later.containers[0]!.state).toBe('exited');
});
