// The status manager's pure parts: the status patch (two-way strategic merge), kubelet's merge of conditions, terminal guards, final status.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { mergePodStatus, podStatusPatch, refuseStatusUpdate, sameStatus, terminalPodStatus } from '../../../src/controllers/pod-status-patch.js';

const t0 = '2025-01-01T00:00:00Z';
const pod = (restartPolicy = 'Always', annotations: Record<string, string> = {}): V1Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u1', annotations },
  spec: { restartPolicy, containers: [{ name: 'c', image: 'busybox' }] },
});

const pending: V1PodStatus = {
  phase: 'Pending',
  conditions: [
    { type: 'PodScheduled', status: 'True', lastTransitionTime: new Date(t0) },
    { type: 'Ready', status: 'False', reason: 'ContainersNotReady', lastTransitionTime: new Date(t0) },
  ],
  containerStatuses: [{ name: 'c', ready: false, restartCount: 0, image: 'busybox', imageID: '', state: { waiting: { reason: 'ContainerCreating' } } }],
};

const running: V1PodStatus = {
  phase: 'Running',
  podIP: '10.99.0.5',
  podIPs: [{ ip: '10.99.0.5' }],
  conditions: [
    { type: 'PodScheduled', status: 'True', lastTransitionTime: new Date(t0) },
    { type: 'Ready', status: 'True', lastTransitionTime: new Date('2025-01-01T00:00:05.123Z') },
  ],
  containerStatuses: [{ name: 'c', ready: true, restartCount: 0, image: 'busybox', imageID: 'sha', state: { running: { startedAt: new Date('2025-01-01T00:00:04.900Z') } } }],
};

describe('podStatusPatch', () => {
  it('is undefined when nothing changed (times compared at second precision)', () => {
    const stored = JSON.parse(JSON.stringify(running)) as V1PodStatus;
    stored.conditions![1]!.lastTransitionTime = '2025-01-01T00:00:05Z' as unknown as Date;
    expect(podStatusPatch('u1', stored, running)).toBeUndefined();
    expect(sameStatus(stored, running)).toBe(true);
  });

  it('ignores the order of keys (kube-apiserver answers in Go struct order, not in the order the node builds)', () => {
    const reorder = (v: unknown): unknown =>
      Array.isArray(v) ? v.map(reorder) : v && typeof v === 'object' && !(v instanceof Date) ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reorder(x)])) : v;
    const stored = reorder(JSON.parse(JSON.stringify(running))) as V1PodStatus;
    expect(podStatusPatch('u1', stored, running)).toBeUndefined();
    expect(sameStatus(stored, running)).toBe(true);
  });

  it("takes kube-apiserver's `lastState: {}` for the unset lastState the node sends (no write for it)", () => {
    // The real kube-apiserver answers a container status without lastState with `lastState: {}` (a Go struct, not a pointer).
    const stored = JSON.parse(JSON.stringify(running)) as V1PodStatus;
    stored.containerStatuses![0]!.lastState = {};
    expect(sameStatus(stored, running)).toBe(true);
    expect(podStatusPatch('u1', stored, running)).toBeUndefined();
    // A real change still writes the whole list (containerStatuses is atomic).
    const restarted = { ...running, containerStatuses: [{ ...running.containerStatuses![0]!, restartCount: 1 }] };
    expect(podStatusPatch('u1', stored, restarted)?.status.containerStatuses).toEqual([expect.objectContaining({ name: 'c', restartCount: 1 })]);
  });

  it('writes nothing when the stored conditions are the same in another order (the server keeps the order of first writes)', () => {
    const stored = JSON.parse(JSON.stringify(running)) as V1PodStatus;
    stored.conditions!.reverse();
    stored.conditions![0]!.lastTransitionTime = '2025-01-01T00:00:05Z' as unknown as Date;
    expect(sameStatus(stored, running)).toBe(true);
    expect(podStatusPatch('u1', stored, running)).toBeUndefined();
    // A changed condition is still written, alone.
    const notReady = { ...running, conditions: [running.conditions![0]!, { type: 'Ready', status: 'False', lastTransitionTime: new Date(t0) }] };
    expect(sameStatus(stored, notReady)).toBe(false);
    expect(podStatusPatch('u1', stored, notReady)?.status).toEqual({ conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: t0 }] });
  });

  it('carries the UID precondition and only what changed; conditions by type, containerStatuses whole', () => {
    const patch = podStatusPatch('u1', pending, running);
    expect(patch).toEqual({
      metadata: { uid: 'u1' },
      status: {
        phase: 'Running',
        podIP: '10.99.0.5',
        podIPs: [{ ip: '10.99.0.5' }],
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2025-01-01T00:00:05Z', reason: null }],
        containerStatuses: [{ name: 'c', ready: true, restartCount: 0, image: 'busybox', imageID: 'sha', state: { running: { startedAt: '2025-01-01T00:00:04Z' } } }],
      },
    });
  });

  it('deletes fields and list elements the new status no longer has', () => {
    const patch = podStatusPatch('u1', running, { ...running, podIP: undefined, podIPs: [], conditions: [running.conditions![0]!] });
    expect(patch?.status).toEqual({ podIP: null, podIPs: [{ ip: '10.99.0.5', $patch: 'delete' }], conditions: [{ type: 'Ready', $patch: 'delete' }] });
  });
});

describe('mergePodStatus', () => {
  it("keeps conditions others own and takes kubelet's from the new status", () => {
    const stored: V1PodStatus = { ...pending, conditions: [...pending.conditions!, { type: 'example.com/gate', status: 'True' }, { type: 'DisruptionTarget', status: 'True' }] };
    const merged = mergePodStatus(stored, running);
    expect(merged.conditions!.map((c) => `${c.type}=${c.status}`)).toEqual(['example.com/gate=True', 'DisruptionTarget=True', 'PodScheduled=True', 'Ready=True']);
  });

  it('keeps the published startTime and the transition times of conditions whose status did not change (an agent restart)', () => {
    const later = new Date('2025-01-01T01:00:00Z');
    const rederived: V1PodStatus = {
      ...running,
      startTime: later,
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: later },
        { type: 'Ready', status: 'True', lastTransitionTime: later },
        { type: 'ContainersReady', status: 'True', lastTransitionTime: later },
      ],
    };
    const stored: V1PodStatus = { ...running, startTime: new Date(t0), conditions: [...running.conditions!, { type: 'ContainersReady', status: 'False', lastTransitionTime: new Date(t0) }] };
    const merged = mergePodStatus(stored, rederived);
    expect(merged.startTime).toEqual(new Date(t0));
    expect(merged.conditions!.map((c) => `${c.type}@${new Date(c.lastTransitionTime!).toISOString()}`)).toEqual([
      'PodScheduled@2025-01-01T00:00:00.000Z',
      'Ready@2025-01-01T00:00:05.123Z',
      // Its status changed: the new time.
      'ContainersReady@2025-01-01T01:00:00.000Z',
    ]);
    expect(podStatusPatch('u1', running, mergePodStatus(running, { ...running, startTime: later }))?.status).toEqual({ startTime: '2025-01-01T01:00:00Z' });
  });

  it('never reports a terminal pod ready', () => {
    const merged = mergePodStatus(undefined, { ...running, phase: 'Failed' });
    expect(merged.conditions!.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'PodFailed' });
  });
});

describe('refuseStatusUpdate', () => {
  it('never writes a non-terminal phase over a terminal one', () => {
    expect(refuseStatusUpdate(pod(), { phase: 'Failed' }, running)).toMatch(/already Failed/);
    expect(refuseStatusUpdate(pod(), { phase: 'Running' }, { phase: 'Succeeded' })).toBeUndefined();
    expect(refuseStatusUpdate(pod(), { phase: 'Failed' }, { phase: 'Failed' })).toBeUndefined();
  });

  it('refuses a terminated container coming back unless the restart policy allows it', () => {
    const ended: V1PodStatus = { phase: 'Running', containerStatuses: [{ name: 'c', ready: false, restartCount: 0, image: '', imageID: '', state: { terminated: { exitCode: 1 } } }] };
    expect(refuseStatusUpdate(pod('Never'), ended, running)).toMatch(/illegal transition/);
    expect(refuseStatusUpdate(pod('OnFailure'), ended, running)).toBeUndefined();
    expect(refuseStatusUpdate(pod('Always'), ended, running)).toBeUndefined();
  });
});

describe('terminalPodStatus', () => {
  it('ends a stopped pod Failed unless every container exited 0', () => {
    const killed: V1PodStatus = { ...running, containerStatuses: [{ ...running.containerStatuses![0]!, state: { terminated: { exitCode: 137, reason: 'Error' } } }] };
    expect(terminalPodStatus(pod(), killed).phase).toBe('Failed');
    const clean: V1PodStatus = { ...running, containerStatuses: [{ ...running.containerStatuses![0]!, state: { terminated: { exitCode: 0, reason: 'Completed' } } }] };
    expect(terminalPodStatus(pod(), clean).phase).toBe('Succeeded');
  });

  it('reports containers never seen terminated as ContainerStatusUnknown (137)', () => {
    const s = terminalPodStatus(pod(), running);
    expect(s.phase).toBe('Failed');
    expect(s.containerStatuses![0]!.state).toEqual({
      terminated: { exitCode: 137, reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated' },
    });
  });

  it('leaves the phase of static pods alone', () => {
    expect(terminalPodStatus(pod('Always', { 'kubernetes.io/config.source': 'file' }), running).phase).toBe('Running');
  });
});
