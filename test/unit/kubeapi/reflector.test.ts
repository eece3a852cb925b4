// The reflector behind the API pod source: list + watch, relist from the last version ("" on 410), capped back-off on outages, logged once.
import { pino } from 'pino';
import type { V1Pod } from '@kubernetes/client-node';
import { ApiError, ApiUnavailableError, type ApiRequest, type WatchRequest } from '../../../src/kubeapi/client.js';
import { Reflector, type ListWatchClient } from '../../../src/kubeapi/reflector.js';
import { ApiPodSource } from '../../../src/sources/api-source.js';

type Step = { list: () => { items: V1Pod[]; rv: string } } | { watch: (req: WatchRequest<V1Pod>) => Promise<void> };

const pod = (name: string, rv: string, extra: Partial<V1Pod> = {}): V1Pod => ({
  metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: rv, ...extra.metadata },
  spec: { nodeName: 'n1', containers: [], ...extra.spec },
});

const gone = () => new ApiError(410, 'Expired', 'too old resource version: 5 (10)');
const refused = () => new ApiUnavailableError('GET /api/v1/pods: connect ECONNREFUSED 127.0.0.1:6443');

/** A scripted API server: each list or watch call takes the next step; a call out of order fails the test. */
class ScriptedApi implements Pick<ListWatchClient, 'request' | 'watch'> {
  readonly calls: { kind: 'list' | 'watch'; query: Record<string, unknown> }[] = [];
  constructor(
    private readonly steps: Step[],
    private readonly done: AbortController,
  ) {}

  request<T>(req: ApiRequest): Promise<T> {
    this.calls.push({ kind: 'list', query: { ...req.query } });
    const step = this.steps.shift();
    if (!step || !('list' in step)) return this.finish(step ? `unexpected list (${JSON.stringify(req.query)})` : 'no more steps');
    try {
      const { items, rv } = step.list();
      return Promise.resolve({ metadata: { resourceVersion: rv }, items } as T);
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  watch<T>(req: WatchRequest<T>): Promise<void> {
    this.calls.push({ kind: 'watch', query: { ...req.query } });
    const step = this.steps.shift();
    if (!step || !('watch' in step)) return this.finish(step ? 'unexpected watch' : 'no more steps');
    return step.watch(req as unknown as WatchRequest<V1Pod>);
  }

  /** Set when the reflector made a call the script did not expect. */
  unexpected?: string;

  /** The script is over (or went wrong): stop the reflector. */
  private finish(why: string): Promise<never> {
    if (why !== 'no more steps') this.unexpected = why;
    this.done.abort();
    return Promise.reject(new Error('stopped'));
  }
}

function logCollector() {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as { level: number; msg: string }) });
  return { log, warnings: () => lines.filter((l) => l.level === 40).map((l) => l.msg), infos: () => lines.filter((l) => l.level === 30).map((l) => l.msg) };
}

function setup(steps: Step[]) {
  const controller = new AbortController();
  const api = new ScriptedApi(steps, controller);
  const sets: string[][] = [];
  const sleeps: number[] = [];
  const logs = logCollector();
  const reflector = new Reflector<V1Pod>({
    client: api,
    path: '/api/v1/pods',
    fieldSelector: 'spec.nodeName=n1',
    what: 'pods',
    log: logs.log,
    onChange: (objs) => sets.push(objs.map((o) => o.metadata!.name!).sort()),
    clock: { now: () => Date.now(), sleep: async (ms) => void sleeps.push(ms) },
    random: () => 0,
    watchTimeoutSeconds: () => 300,
  });
  const run = async () => {
    await reflector.run(controller.signal);
    expect(api.unexpected).toBeUndefined();
  };
  return { run, api, sets, sleeps, logs, reflector };
}

describe('Reflector', () => {
  it('refuses an object that nests too deep or contains itself, logged once per version, and keeps the others', async () => {
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 5000; i++) deep = (deep.a = {}) as Record<string, unknown>;
    const cyclic = pod('cyclic', '12');
    (cyclic.spec as unknown as Record<string, unknown>).self = cyclic.spec;
    const t = setup([
      { list: () => ({ items: [pod('a', '3'), pod('deep', '4', { spec: { containers: [], x: root } as V1Pod['spec'] })], rv: '10' }) },
      {
        watch: async (req) => {
          req.onEvent({ type: 'ADDED', object: cyclic });
          req.onEvent({ type: 'ADDED', object: pod('b', '13') });
        },
      },
      { watch: () => Promise.reject(gone()) },
      { list: () => ({ items: [pod('a', '3'), pod('deep', '4', { spec: { containers: [], x: root } as V1Pod['spec'] })], rv: '20' }) },
    ]);
    await t.run();
    expect(t.sets).toEqual([['a'], ['a'], ['a', 'b'], ['a']]);
    expect(t.logs.warnings()).toEqual([
      expect.stringMatching(/^API object refused: spec\.x(\.a)+\.\.\.: nested more than 1000 levels deep$/),
      'API object refused: spec.self: refers to itself (a recursive alias)',
    ]);
  });

  it('lists, then watches from the list version with bookmarks; a watch that ends at its timeout resumes from the last version', async () => {
    const t = setup([
      { list: () => ({ items: [pod('a', '3')], rv: '10' }) },
      {
        watch: async (req) => {
          req.onEvent({ type: 'ADDED', object: pod('b', '11') });
          req.onEvent({ type: 'MODIFIED', object: pod('a', '12') });
          req.onEvent({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '15' } } as V1Pod });
        },
      },
      { watch: async (req) => req.onEvent({ type: 'DELETED', object: pod('a', '16') }) },
    ]);
    await t.run();
    expect(t.api.calls).toEqual([
      { kind: 'list', query: { fieldSelector: 'spec.nodeName=n1', resourceVersion: '' } },
      { kind: 'watch', query: { fieldSelector: 'spec.nodeName=n1', resourceVersion: '10', allowWatchBookmarks: true, timeoutSeconds: 300 } },
      { kind: 'watch', query: { fieldSelector: 'spec.nodeName=n1', resourceVersion: '15', allowWatchBookmarks: true, timeoutSeconds: 300 } },
      { kind: 'watch', query: { fieldSelector: 'spec.nodeName=n1', resourceVersion: '16', allowWatchBookmarks: true, timeoutSeconds: 300 } },
    ]);
    expect(t.sets).toEqual([['a'], ['a', 'b'], ['a', 'b'], ['b']]);
    expect(t.reflector.hasSynced).toBe(true);
  });

  it('relists at once with resourceVersion "" when the watch expires (410), and reports the full set', async () => {
    const t = setup([
      { list: () => ({ items: [pod('a', '3'), pod('b', '4')], rv: '10' }) },
      { watch: () => Promise.reject(gone()) },
      { list: () => ({ items: [pod('b', '4'), pod('c', '20')], rv: '30' }) },
    ]);
    await t.run();
    expect(t.api.calls.map((c) => `${c.kind}:${String(c.query.resourceVersion)}`)).toEqual(['list:', 'watch:10', 'list:', 'watch:30']);
    expect(t.sleeps).toEqual([]);
    expect(t.sets).toEqual([['a', 'b'], ['b', 'c']]);
  });

  it('a 410 on an ERROR event mid-stream relists too', async () => {
    const t = setup([
      { list: () => ({ items: [pod('a', '3')], rv: '10' }) },
      {
        watch: async (req) => {
          req.onEvent({ type: 'ADDED', object: pod('b', '11') });
          throw gone();
        },
      },
      { list: () => ({ items: [pod('b', '11')], rv: '40' }) },
    ]);
    await t.run();
    expect(t.sets).toEqual([['a'], ['a', 'b'], ['b']]);
    expect(t.api.calls[2]).toEqual({ kind: 'list', query: { fieldSelector: 'spec.nodeName=n1', resourceVersion: '' } });
  });

  it('reconnects with capped exponential back-off, logs the outage once, relists after it', async () => {
    const failures = 8;
    const steps: Step[] = [{ list: () => ({ items: [pod('a', '3')], rv: '10' }) }, { watch: () => Promise.reject(refused()) }];
    for (let i = 0; i < failures; i++) steps.push({ list: () => { throw refused(); } });
    steps.push({ list: () => ({ items: [pod('a', '3'), pod('new', '50')], rv: '60' }) });
    const t = setup(steps);
    await t.run();
    expect(t.sleeps).toEqual([800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]);
    expect(t.logs.warnings()).toEqual(['Lost the API server; retrying with back-off']);
    expect(t.logs.infos()).toContain('API server reachable again; relisted');
    expect(t.sets).toEqual([['a'], ['a', 'new']]);
    expect(t.api.calls.at(-1)).toMatchObject({ kind: 'watch', query: { resourceVersion: '60' } });
  });

  it('an idle or broken stream reconnects and relists', async () => {
    const t = setup([
      { list: () => ({ items: [], rv: '10' }) },
      { watch: () => Promise.reject(new ApiUnavailableError('watch /api/v1/pods: no event for 360000 ms')) },
      { list: () => ({ items: [pod('x', '12')], rv: '12' }) },
    ]);
    await t.run();
    expect(t.sleeps).toEqual([800]);
    expect(t.sets).toEqual([[], ['x']]);
    // As client-go: the relist after a broken watch asks for "not older than" the last version seen, not a storage read.
    expect(t.api.calls.map((c) => `${c.kind}:${String(c.query.resourceVersion)}`)).toEqual(['list:', 'watch:10', 'list:10', 'watch:12']);
  });

  it('keeps backing off when every list works but every watch fails at once (a working list is no sign of recovery)', async () => {
    const steps: Step[] = [];
    for (let i = 0; i < 4; i++) steps.push({ list: () => ({ items: [], rv: '10' }) }, { watch: () => Promise.reject(refused()) });
    const t = setup(steps);
    await t.run();
    expect(t.sleeps).toEqual([800, 1600, 3200, 6400]);
  });

  it('jitters the delay by up to 20%', async () => {
    const controller = new AbortController();
    const api = new ScriptedApi([{ list: () => { throw refused(); } }, { list: () => ({ items: [], rv: '1' }) }], controller);
    const sleeps: number[] = [];
    const r = new Reflector<V1Pod>({
      client: api, path: '/api/v1/pods', what: 'pods', log: pino({ level: 'silent' }), onChange: () => undefined,
      clock: { now: () => Date.now(), sleep: async (ms) => void sleeps.push(ms) }, random: () => 0.5, watchTimeoutSeconds: () => 300,
    });
    await r.run(controller.signal);
    expect(sleeps).toEqual([880]);
  });
});

describe('ApiPodSource', () => {
  it('splits mirror pods from the pods to run and drops pods bound elsewhere', async () => {
    const controller = new AbortController();
    const mirror = pod('static-n1', '5', { metadata: { annotations: { 'kubernetes.io/config.mirror': 'hash' } } });
    const api = new ScriptedApi([{ list: () => ({ items: [pod('a', '3'), mirror, pod('other', '4', { spec: { nodeName: 'n2', containers: [] } })], rv: '10' }) }], controller);
    const seen: [string[], string[]][] = [];
    const source = new ApiPodSource({
      client: api,
      nodeName: 'n1',
      log: pino({ level: 'silent' }),
      onPods: (pods, mirrors) => seen.push([pods.map((p) => p.metadata!.name!), mirrors.map((p) => p.metadata!.name!)]),
      reflector: { clock: { now: () => Date.now(), sleep: async () => undefined }, watchTimeoutSeconds: () => 300 },
    });
    await source.run(controller.signal);
    expect(seen).toEqual([[['a'], ['static-n1']]]);
    expect(source.hasSynced).toBe(true);
  });
});
