// Cluster mode's pod config: both sources before cleanup, admission in creation order, deletion grace, final deletion after the runtime is clear.
import { pino } from 'pino';
import type { V1Node, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { PodConfig, deletionGracePeriodSeconds, type PodConfigOptions } from '../../../src/podconfig/pod-config.js';
import type { NodeRuntimeSnapshot } from '../../../src/lifecycle/runtime-observer.js';

const node: V1Node = { metadata: { name: 'n1', labels: {} }, status: { allocatable: { cpu: '1', memory: '1Gi', pods: '110' } } };

const pod = (name: string, created: string, cpu?: string, meta: Partial<NonNullable<V1Pod['metadata']>> = {}, status?: V1PodStatus): V1Pod => ({
  metadata: { name, namespace: 'default', uid: `uid-${name}`, creationTimestamp: new Date(created), ...meta },
  spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox', ...(cpu ? { resources: { requests: { cpu } } } : {}) }] },
  ...(status ? { status } : {}),
});
const staticPod = (name: string) => pod(name, '2025-01-01T00:00:00Z', undefined, { annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': 'h' } });

function setup(sources: ('file' | 'api')[] = ['file', 'api'], now?: () => number) {
  const desired: { names: string[]; ready: boolean; pods: V1Pod[]; ended: string[] }[] = [];
  const terminated: [string, number][] = [];
  const statuses: [string, V1PodStatus][] = [];
  const finished: string[] = [];
  const known = new Set<string>();
  const mirrors: [string[], string[]][] = [];
  const events: string[] = [];
  const config = new PodConfig({
    sources,
    events: { event: (_ref: unknown, _type: string, reason: string) => void events.push(reason) } as unknown as PodConfigOptions['events'],
    node: () => node,
    log: pino({ level: 'silent' }),
    ...(now ? { now } : {}),
    workers: {
      setDesiredPods: (pods, ready, ended) => desired.push({ names: pods.map((p) => p.metadata!.name!), ready, pods, ended: ended.map((p) => p.metadata!.name!) }),
      terminatePod: (uid, grace) => terminated.push([uid, grace]),
      isKnown: (uid) => known.has(uid),
      hasWorker: (uid) => known.has(uid),
    },
    status: {
      setApiPods: () => undefined,
      setStatus: (p, s) => statuses.push([p.metadata!.name!, s]),
      podTerminated: (p) => finished.push(p.metadata!.name!),
      forget: () => undefined,
    },
    mirrors: { sync: (s, m) => mirrors.push([s.map((p) => p.metadata!.name!), m.map((p) => p.metadata!.name!)]) },
  });
  return { config, desired, terminated, statuses, finished, known, mirrors, events };
}

const snapshot = (uids: string[]): NodeRuntimeSnapshot =>
  ({ sandboxes: uids.map((uid) => ({ id: `sb-${uid}`, labels: { 'io.kubernetes.pod.uid': uid } })), containers: [] }) as unknown as NodeRuntimeSnapshot;

describe('PodConfig', () => {
  it("gives the workers API pods annotated as kubelet's pod config does: config.source api, config.seen at first sight", () => {
    let now = Date.parse('2026-01-02T03:04:05.678Z');
    const t = setup(['api'], () => now);
    const web = pod('web', '2025-01-01T00:00:01Z', undefined, { annotations: { team: 'a' } });
    t.config.setApiPods([web], []);
    const annotations = () => t.desired.at(-1)!.pods[0]!.metadata!.annotations;
    expect(annotations()).toEqual({ team: 'a', 'kubernetes.io/config.source': 'api', 'kubernetes.io/config.seen': '2026-01-02T03:04:05.678Z' });
    now += 60_000;
    t.config.setApiPods([{ ...web, metadata: { ...web.metadata, annotations: { team: 'b' } } }], []);
    expect(annotations()).toEqual({ team: 'b', 'kubernetes.io/config.source': 'api', 'kubernetes.io/config.seen': '2026-01-02T03:04:05.678Z' });
    expect(web.metadata!.annotations).toEqual({ team: 'a' });
  });

  it('runs static pods at once but declares the desired set complete only when both sources have spoken', () => {
    const t = setup();
    t.config.setStaticPods([staticPod('etcd-n1')]);
    expect(t.desired.at(-1)).toMatchObject({ names: ['etcd-n1'], ready: false });
    expect(t.mirrors).toEqual([]);
    t.config.setApiPods([pod('web', '2025-01-01T00:00:01Z')], []);
    expect(t.desired.at(-1)).toMatchObject({ names: ['etcd-n1', 'web'], ready: true });
    expect(t.mirrors).toEqual([[['etcd-n1'], []]]);
  });

  it('admits new pods in creation order against the admitted ones and rejects what does not fit', () => {
    const t = setup(['api']);
    t.config.setApiPods([pod('late', '2025-01-01T00:00:02Z', '600m'), pod('early', '2025-01-01T00:00:01Z', '600m')], []);
    expect(t.desired.at(-1)!.names).toEqual(['early']);
    expect(t.statuses).toHaveLength(1);
    expect(t.events).toEqual(['OutOfcpu']);
    const [name, status] = t.statuses[0]!;
    expect(name).toBe('late');
    expect(status).toMatchObject({
      phase: 'Failed',
      reason: 'OutOfcpu',
      message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000",
    });
    // A rejected pod stays rejected, an admitted one admitted, whatever comes later.
    t.config.setApiPods([pod('late', '2025-01-01T00:00:02Z', '600m'), pod('early', '2025-01-01T00:00:01Z', '600m')], []);
    expect(t.statuses).toHaveLength(1);
    expect(t.desired.at(-1)!.names).toEqual(['early']);
  });

  it('a pod that makes admission throw is rejected alone (UnexpectedAdmissionError); the others run', () => {
    const t = setup(['api']);
    // No API server sends this shape; a broken one (or a bug in admission) must still cost only this pod.
    const odd = pod('odd', '2025-01-01T00:00:01Z');
    (odd.spec!.containers[0] as unknown as { ports: unknown }).ports = 5;
    t.config.setApiPods([odd, pod('fine', '2025-01-01T00:00:02Z', '100m')], []);
    expect(t.desired.at(-1)!.names).toEqual(['fine']);
    expect(t.events).toEqual(['UnexpectedAdmissionError']);
    expect(t.statuses).toEqual([['odd', expect.objectContaining({ phase: 'Failed', reason: 'UnexpectedAdmissionError', message: expect.stringMatching(/^Pod was rejected: Admission failed unexpectedly: /) })]]);
  });

  it('counts a pod being deleted against new pods until its worker has stopped it (kubelet: filterOutInactivePods)', () => {
    const t = setup(['api']);
    const old = pod('old', '2025-01-01T00:00:01Z', '600m');
    t.config.setApiPods([old], []);
    t.known.add('uid-old');
    const deleting = { ...old, metadata: { ...old.metadata, deletionTimestamp: new Date() } };
    t.config.setApiPods([deleting, pod('new', '2025-01-01T00:00:02Z', '600m')], []);
    expect(t.events).toEqual(['OutOfcpu']);
    t.known.delete('uid-old');
    t.config.setApiPods([deleting, pod('newer', '2025-01-01T00:00:03Z', '600m')], []);
    expect(t.desired.at(-1)!.names).toEqual(['newer']);
  });

  it('does not run pods the API reports terminal, nor mirror pods; ended pods not deleted keep their content', () => {
    const t = setup(['api']);
    const deleted = pod('gone', '2025-01-01T00:00:01Z', undefined, { deletionTimestamp: new Date() }, { phase: 'Failed' });
    t.config.setApiPods([pod('done', '2025-01-01T00:00:01Z', undefined, {}, { phase: 'Succeeded' }), deleted], [pod('static-n1', '2025-01-01T00:00:01Z')]);
    expect(t.desired.at(-1)).toMatchObject({ names: [], ended: ['done'] });
  });

  it('counts an ended pod against admission only while its worker stops it, not while its content is kept', () => {
    const t = setup(['api']);
    const done = pod('done', '2025-01-01T00:00:01Z', '800m', {}, { phase: 'Succeeded' });
    t.config.setApiPods([pod('done', '2025-01-01T00:00:01Z', '800m')], []);
    t.known.add('uid-done');
    t.config.setApiPods([done, pod('next', '2025-01-01T00:00:02Z', '800m')], []);
    expect(t.statuses.map(([name, s]) => [name, s.reason])).toEqual([['next', 'OutOfcpu']]);
    t.known.delete('uid-done'); // its worker is done: stopped, content kept
    t.config.setApiPods([done, pod('later', '2025-01-01T00:00:03Z', '800m')], []);
    expect(t.desired.at(-1)).toMatchObject({ names: ['later'], ended: ['done'] });
  });

  it('terminates a pod marked for deletion with min(pod grace, deletion grace) and finishes it once gone from the node', () => {
    const t = setup(['api']);
    const web = pod('web', '2025-01-01T00:00:01Z');
    web.spec!.terminationGracePeriodSeconds = 5;
    t.config.setApiPods([web], []);
    t.known.add('uid-web');
    const deleting = { ...web, metadata: { ...web.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30 } };
    t.config.setApiPods([deleting], []);
    expect(t.terminated).toEqual([['uid-web', 5]]);
    expect(t.desired.at(-1)!.names).toEqual([]);
    t.config.onRelist(snapshot(['uid-web']));
    expect(t.finished).toEqual([]);
    t.known.delete('uid-web');
    t.config.onRelist(snapshot(['uid-web']));
    expect(t.finished).toEqual([]);
    t.config.onRelist(snapshot([]));
    t.config.onRelist(snapshot([]));
    expect(t.finished).toEqual(['web']);
  });

  it('passes a shorter grace period of a second DELETE to the worker, never a longer one', () => {
    const t = setup(['api']);
    const web = pod('web', '2025-01-01T00:00:01Z');
    t.config.setApiPods([web], []);
    const deleted = (grace: number) => ({ ...web, metadata: { ...web.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: grace } });
    t.config.setApiPods([deleted(20)], []);
    t.config.setApiPods([deleted(20)], []);
    t.config.setApiPods([deleted(1)], []);
    t.config.setApiPods([deleted(10)], []);
    expect(t.terminated).toEqual([
      ['uid-web', 20],
      ['uid-web', 1],
    ]);
  });

  it('finishes a pod deleted while the agent was down once a relist shows nothing of it', () => {
    const t = setup(['api']);
    t.config.onRelist(snapshot([]));
    t.config.setApiPods([pod('gone', '2025-01-01T00:00:01Z', undefined, { deletionTimestamp: new Date() })], []);
    expect(t.finished).toEqual([]);
    t.config.onRelist(snapshot([]));
    expect(t.finished).toEqual(['gone']);
  });

  it('computes the deletion grace period', () => {
    expect(deletionGracePeriodSeconds(pod('a', '2025-01-01T00:00:00Z'))).toBe(30);
    expect(deletionGracePeriodSeconds(pod('a', '2025-01-01T00:00:00Z', undefined, { deletionGracePeriodSeconds: 0 }))).toBe(0);
  });
});

test('standalone (no node admission, no status manager): every static pod is admitted and handed to the workers', () => {
  const desired: string[][] = [];
  const config = new PodConfig({
    sources: ['file'],
    events: { event: () => undefined, nodeEvent: () => undefined },
    log: pino({ level: 'silent' }),
    workers: { setDesiredPods: (pods) => desired.push(pods.map((p) => p.metadata!.name!)), terminatePod: () => undefined, isKnown: () => true, hasWorker: () => true },
  });
  // More cpu than any node has: node admission would refuse it; standalone its worker decides what runs.
  config.setStaticPods([staticPod('a'), pod('huge', '2025-01-01T00:00:00Z', '1000', { annotations: { 'kubernetes.io/config.source': 'file' } })]);
  expect(desired).toEqual([['a', 'huge']]);
  expect(config.allSourcesReady).toBe(true);
  config.podStatus(staticPod('a'), { phase: 'Running' }, false);
  config.onRelist({ sandboxes: [], containers: [] });
  config.setStaticPods([staticPod('a')]);
  expect(desired).toEqual([['a', 'huge'], ['a']]);
});
