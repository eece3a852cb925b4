// ApiEventRecorder against a fake client: create then strategic-merge PATCH of repeats, a bounded queue that never
// blocks the caller, retries while the API server is unreachable, no retries on refusals; and the log-only recorder.
import type { V1Pod } from '@kubernetes/client-node';
import { ApiError, ApiUnavailableError, strategicMergePatch, type ApiRequest } from '../../../src/kubeapi/client.js';
import type { EventObject } from '../../../src/controllers/event-correlator.js';
import { ApiEventRecorder, LogEventRecorder } from '../../../src/controllers/event-recorder.js';
import { recordingLogger } from '../prober/fake-log.js';

const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'ns1', uid: 'uid-1' },
  spec: { containers: [{ name: 'app' }] },
};

/** Answers like the API server: creates store the event with a resourceVersion; patches update it. */
class FakeEventsApi {
  readonly requests: ApiRequest[] = [];
  readonly stored = new Map<string, EventObject>();
  /** Set to make requests hang until released, or fail. */
  gate?: Promise<void>;
  failWith?: (req: ApiRequest) => Error | undefined;
  private rv = 0;

  async request<T>(req: ApiRequest): Promise<T> {
    this.requests.push(req);
    await this.gate;
    const err = this.failWith?.(req);
    if (err) throw err;
    if (req.method === 'POST') {
      const e = req.body as EventObject;
      if (this.stored.has(e.metadata.name)) throw new ApiError(409, 'AlreadyExists', 'exists');
      const saved = { ...e, metadata: { ...e.metadata, resourceVersion: String(++this.rv) } };
      this.stored.set(e.metadata.name, saved);
      return saved as T;
    }
    const name = decodeURIComponent(req.path.split('/').at(-1)!);
    const current = this.stored.get(name);
    if (!current) throw new ApiError(404, 'NotFound', `events "${name}" not found`);
    const saved = { ...current, ...(req.body as object), metadata: { ...current.metadata, resourceVersion: String(++this.rv) } };
    this.stored.set(name, saved);
    return saved as T;
  }
}

async function until(cond: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

function setup(opts: { maxQueued?: number; maxTries?: number } = {}) {
  const api = new FakeEventsApi();
  const { log, records } = recordingLogger();
  const recorder = new ApiEventRecorder({ client: api, nodeName: 'node-a', log, retryIntervalMs: 20, random: () => 0.5, ...opts });
  return { api, recorder, records };
}

describe('ApiEventRecorder', () => {
  let stop: (() => void) | undefined;
  afterEach(() => stop?.());

  test('creates an event in the pod namespace, then patches its count for a repeat', async () => {
    const { api, recorder } = setup();
    stop = () => recorder.stop();
    recorder.event({ pod, containerName: 'app' }, 'Warning', 'BackOff', 'Back-off restarting failed container app in pod web_ns1(uid-1)');
    recorder.event({ pod, containerName: 'app' }, 'Warning', 'BackOff', 'Back-off restarting failed container app in pod web_ns1(uid-1)');
    recorder.event({ pod, containerName: 'app' }, 'Warning', 'BackOff', 'Back-off restarting failed container app in pod web_ns1(uid-1)');
    await until(() => api.requests.length === 3);
    const [create, patch1, patch2] = api.requests;
    expect(create).toMatchObject({ method: 'POST', path: '/api/v1/namespaces/ns1/events' });
    const body = create!.body as EventObject;
    expect(body).toMatchObject({ apiVersion: 'v1', kind: 'Event', count: 1, involvedObject: { kind: 'Pod', name: 'web', fieldPath: 'spec.containers{app}' } });
    expect(body.metadata).not.toHaveProperty('resourceVersion');
    expect(patch1).toMatchObject({ method: 'PATCH', path: `/api/v1/namespaces/ns1/events/${body.metadata.name}`, contentType: strategicMergePatch });
    expect(Object.keys(patch1!.body as object).sort()).toEqual(['count', 'lastTimestamp', 'message']);
    expect(patch2!.body).toMatchObject({ count: 3 });
    await until(() => api.stored.get(body.metadata.name)?.count === 3);
    expect(api.stored.size).toBe(1);
  });

  test('a node event goes to "default" about the Node named after the node, with the name as UID', async () => {
    const { api, recorder } = setup();
    stop = () => recorder.stop();
    recorder.nodeEvent('Normal', 'Starting', 'Starting kubelet.');
    await until(() => api.requests.length === 1);
    expect(api.requests[0]!.path).toBe('/api/v1/namespaces/default/events');
    expect(api.requests[0]!.body).toMatchObject({ involvedObject: { kind: 'Node', name: 'node-a', uid: 'node-a' }, reason: 'Starting', source: { component: 'kubelet', host: 'node-a' } });
  });

  test('a patch of an event gone from the server creates it again', async () => {
    const { api, recorder } = setup();
    stop = () => recorder.stop();
    recorder.event({ pod }, 'Normal', 'SandboxChanged', 'Pod sandbox changed, it will be killed and re-created.');
    await until(() => api.stored.size === 1);
    api.stored.clear();
    recorder.event({ pod }, 'Normal', 'SandboxChanged', 'Pod sandbox changed, it will be killed and re-created.');
    await until(() => api.stored.size === 1);
    expect(api.requests.map((r) => r.method)).toEqual(['POST', 'PATCH', 'POST']);
    expect((api.requests[2]!.body as EventObject).metadata).not.toHaveProperty('resourceVersion');
  });

  test('event() returns at once while the server hangs; beyond the queue bound events are dropped with a log', async () => {
    const { api, recorder, records } = setup({ maxQueued: 5 });
    stop = () => recorder.stop();
    let release!: () => void;
    api.gate = new Promise((r) => (release = r));
    const began = Date.now();
    for (let i = 0; i < 20; i++) recorder.event({ pod }, 'Normal', `Reason${i}`, `message ${i}`);
    expect(Date.now() - began).toBeLessThan(100);
    // One in flight, five waiting; the rest dropped and said so once.
    expect(records.filter((r) => r.msg === 'Too many queued events; dropping events')).toHaveLength(1);
    release();
    await until(() => api.stored.size === 6);
    await new Promise((r) => setTimeout(r, 50));
    expect(api.stored.size).toBe(6);
  });

  test('an unreachable server is retried; the events behind wait their turn', async () => {
    const { api, recorder } = setup();
    stop = () => recorder.stop();
    let failures = 3;
    api.failWith = () => (failures-- > 0 ? new ApiUnavailableError('connect ECONNREFUSED') : undefined);
    recorder.event({ pod }, 'Normal', 'First', 'first');
    recorder.event({ pod }, 'Normal', 'Second', 'second');
    await until(() => api.stored.size === 2);
    expect(api.requests.map((r) => (r.body as EventObject).reason)).toEqual(['First', 'First', 'First', 'First', 'Second']);
  });

  test('retries stop at the limit, and a refusal is not retried', async () => {
    const { api, recorder, records } = setup({ maxTries: 3 });
    stop = () => recorder.stop();
    api.failWith = (req) => ((req.body as EventObject).reason === 'Down' ? new ApiUnavailableError('timed out') : new ApiError(422, 'Invalid', 'bad event'));
    recorder.event({ pod }, 'Normal', 'Down', 'x');
    recorder.event({ pod }, 'Normal', 'Refused', 'y');
    await until(() => records.some((r) => r.msg === 'Server rejected event (will not retry)'));
    expect(api.requests.map((r) => (r.body as EventObject).reason)).toEqual(['Down', 'Down', 'Down', 'Refused']);
    expect(records.some((r) => r.msg === 'Unable to write event (retry limit exceeded)')).toBe(true);
  });

  test('an event about a container the pod spec does not have is not sent', async () => {
    const { api, recorder } = setup();
    stop = () => recorder.stop();
    recorder.event({ pod, containerName: 'ghost' }, 'Normal', 'Killing', 'Stopping container ghost');
    recorder.event({ pod }, 'Normal', 'Marker', 'sent');
    await until(() => api.requests.length === 1);
    expect((api.requests[0]!.body as EventObject).reason).toBe('Marker');
  });

  test('stop() drops what is queued and ends a retry wait', async () => {
    const { api, recorder } = setup();
    api.failWith = () => new ApiUnavailableError('down');
    recorder.event({ pod }, 'Normal', 'A', 'a');
    recorder.event({ pod }, 'Normal', 'B', 'b');
    await until(() => api.requests.length >= 1);
    recorder.stop();
    const seen = api.requests.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(api.requests.length).toBe(seen);
    recorder.event({ pod }, 'Normal', 'C', 'c');
    await new Promise((r) => setTimeout(r, 50));
    expect(api.requests.length).toBe(seen);
  });
});

describe('LogEventRecorder', () => {
  test('logs events at debug with the pod, its UID and the field path', () => {
    const { log, records } = recordingLogger();
    const recorder = new LogEventRecorder(log, 'node-a');
    recorder.event({ pod, containerName: 'app' }, 'Normal', 'Pulled', 'Container image "busybox" already present on machine');
    recorder.nodeEvent('Normal', 'Starting', 'Starting kubelet.');
    expect(records).toEqual([
      expect.objectContaining({ level: 20, msg: 'Container image "busybox" already present on machine', pod: 'ns1/web', podUid: 'uid-1', fieldPath: 'spec.containers{app}', eventType: 'Normal', reason: 'Pulled' }),
      expect.objectContaining({ level: 20, msg: 'Starting kubelet.', object: 'Node/node-a', reason: 'Starting' }),
    ]);
  });
});
