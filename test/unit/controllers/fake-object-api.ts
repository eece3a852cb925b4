// An in-memory stand-in for the API server's list + watch of namespaced objects (configmaps, secrets), with outages, for object manager tests.
import { ApiUnavailableError, type ApiRequest, type WatchEvent, type WatchRequest } from '../../../src/kubeapi/client.js';

interface Obj {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
  [k: string]: unknown;
}

interface Watcher {
  resource: string;
  namespace: string;
  name: string;
  onEvent: (e: WatchEvent<Obj>) => void;
  end: (err?: Error) => void;
}

const parsePath = (path: string) => {
  const m = /^\/api\/v1\/namespaces\/([^/]+)\/([^/]+)$/.exec(path);
  if (!m) throw new Error(`unexpected path ${path}`);
  return { namespace: decodeURIComponent(m[1]!), resource: m[2]! };
};
const nameOf = (fieldSelector: unknown) => String(fieldSelector ?? '').replace(/^metadata\.name=/, '');

export class FakeObjectApi {
  private readonly objects = new Map<string, Obj>();
  private readonly watchers = new Set<Watcher>();
  private rv = 100;
  private uid = 0;
  down = false;
  lists = 0;
  /** Requests other than lists (e.g. TokenRequest) are answered by this. */
  onOther?: (req: ApiRequest) => Promise<unknown>;

  get openWatches(): number {
    return this.watchers.size;
  }

  put(resource: string, namespace: string, name: string, fields: Record<string, unknown>): void {
    const k = `${resource}/${namespace}/${name}`;
    const existed = this.objects.get(k);
    const obj: Obj = { ...fields, metadata: { name, namespace, uid: existed?.metadata?.uid ?? `uid-${++this.uid}`, resourceVersion: String(++this.rv) } };
    this.objects.set(k, obj);
    this.notify(resource, namespace, name, { type: existed ? 'MODIFIED' : 'ADDED', object: obj });
  }

  delete(resource: string, namespace: string, name: string): void {
    const k = `${resource}/${namespace}/${name}`;
    const obj = this.objects.get(k);
    if (!obj) return;
    this.objects.delete(k);
    this.notify(resource, namespace, name, { type: 'DELETED', object: { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.rv) } } });
  }

  /** The API server goes away: open watches break, new requests fail until `up()`. */
  goDown(): void {
    this.down = true;
    for (const w of [...this.watchers]) w.end(new ApiUnavailableError('connection reset'));
  }

  up(): void {
    this.down = false;
  }

  readonly client = {
    request: async <T>(req: ApiRequest): Promise<T> => {
      if (this.down) throw new ApiUnavailableError(`${req.method} ${req.path}: connect ECONNREFUSED`);
      if (req.method !== 'GET') return (await this.onOther!(req)) as T;
      const { namespace, resource } = parsePath(req.path);
      const name = nameOf(req.query?.fieldSelector);
      this.lists++;
      const obj = this.objects.get(`${resource}/${namespace}/${name}`);
      return { metadata: { resourceVersion: String(this.rv) }, items: obj ? [obj] : [] } as T;
    },
    watch: <T>(req: WatchRequest<T>): Promise<void> => {
      if (req.signal.aborted) return Promise.resolve();
      if (this.down) return Promise.reject(new ApiUnavailableError(`watch ${req.path}: connect ECONNREFUSED`));
      const { namespace, resource } = parsePath(req.path);
      return new Promise<void>((resolve, reject) => {
        const w: Watcher = {
          resource,
          namespace,
          name: nameOf(req.query?.fieldSelector),
          onEvent: req.onEvent as unknown as (e: WatchEvent<Obj>) => void,
          end: (err) => {
            this.watchers.delete(w);
            if (err) reject(err);
            else resolve();
          },
        };
        this.watchers.add(w);
        req.signal.addEventListener('abort', () => w.end(), { once: true });
      });
    },
  };

  private notify(resource: string, namespace: string, name: string, event: WatchEvent<Obj>): void {
    for (const w of this.watchers) if (w.resource === resource && w.namespace === namespace && w.name === name) w.onEvent(event);
  }
}

export async function until(what: string, cond: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
