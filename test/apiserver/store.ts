// Object storage of the test API server: objects by storage/namespace/name, one global resourceVersion, a window of
// recent watch events per storage (as kube-apiserver's watch cache), and an optional write-through journal on disk.
import { appendFileSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { expired, tooLargeResourceVersion } from './api-errors.js';
import type { Obj } from './resources.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: WatchEventType;
  /** The object as stored after the write (for DELETED, the last state with the deletion's resourceVersion). */
  object: Obj;
  /** For MODIFIED, the object before the write (a watch with a selector turns a change of match into ADDED/DELETED). */
  prev?: Obj;
  resourceVersion: number;
}

export type StoreListener = (event: StoreEvent) => void;

export interface StoreOptions {
  /** Directory for the journal; without it the store lives in memory only. */
  dir?: string;
  /** Events kept per storage for watches from an older resourceVersion (kube's watch cache capacity). */
  windowSize?: number;
}

interface JournalLine {
  rv: number;
  /** 'rv' records the resourceVersion a compacted journal continues from. */
  op: 'put' | 'del' | 'rv';
  storage: string;
  key: string;
  object?: Obj;
}

const JOURNAL = 'store.jsonl';

export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function meta(obj: Obj): Obj {
  return obj.metadata as Obj;
}

/**
 * The storage. Objects handed out are copies; objects handed in are copied. Writes are synchronous, so a write and
 * the notification of every watcher happen in one turn of the event loop, in resourceVersion order.
 */
export class Store {
  private readonly objects = new Map<string, Map<string, Obj>>();
  private readonly windows = new Map<string, StoreEvent[]>();
  /** Per storage: every event with a resourceVersion above this is still in the window. */
  private readonly windowStart = new Map<string, number>();
  private readonly listeners = new Map<string, Set<StoreListener>>();
  private readonly windowSize: number;
  private readonly journalPath: string | undefined;
  private rv = 0;
  /** The resourceVersion at start: nothing older can be watched from (the watch cache starts empty). */
  private startRv = 0;

  constructor(options: StoreOptions = {}) {
    this.windowSize = options.windowSize ?? 1000;
    if (options.dir) {
      mkdirSync(options.dir, { recursive: true });
      this.journalPath = join(options.dir, JOURNAL);
      this.load();
    }
  }

  /** The newest resourceVersion the store has written (as a number). */
  get resourceVersion(): number {
    return this.rv;
  }

  get(storage: string, namespace: string, name: string): Obj | undefined {
    const obj = this.objects.get(storage)?.get(objectKey(namespace, name));
    return obj ? structuredClone(obj) : undefined;
  }

  /** The objects of a storage in key order, optionally of one namespace, and the store's resourceVersion. */
  list(storage: string, namespace?: string): { items: Obj[]; resourceVersion: number } {
    const all = this.objects.get(storage);
    const items: Obj[] = [];
    if (all) {
      const keys = [...all.keys()].sort();
      for (const key of keys) {
        const obj = all.get(key) as Obj;
        if (namespace !== undefined && namespace !== '' && meta(obj).namespace !== namespace) continue;
        items.push(structuredClone(obj));
      }
    }
    return { items, resourceVersion: this.rv };
  }

  /** Number of objects of a storage (cheap, for checks such as "namespace still has pods"). */
  count(storage: string, namespace: string): number {
    let n = 0;
    for (const obj of this.objects.get(storage)?.values() ?? []) if (meta(obj).namespace === namespace) n++;
    return n;
  }

  /** Stores a new object (the caller has checked it does not exist) and returns it with its resourceVersion. */
  create(storage: string, obj: Obj): Obj {
    return this.put(storage, obj, 'ADDED');
  }

  /** Replaces an existing object and returns it with its new resourceVersion. */
  update(storage: string, obj: Obj): Obj {
    return this.put(storage, obj, 'MODIFIED');
  }

  /** Removes an object; returns its last state carrying the deletion's resourceVersion. */
  delete(storage: string, namespace: string, name: string): Obj | undefined {
    const key = objectKey(namespace, name);
    const current = this.objects.get(storage)?.get(key);
    if (!current) return undefined;
    const rv = ++this.rv;
    const last = structuredClone(current);
    meta(last).resourceVersion = String(rv);
    this.objects.get(storage)?.delete(key);
    this.journal({ rv, op: 'del', storage, key });
    this.emit(storage, { type: 'DELETED', object: last, resourceVersion: rv });
    return structuredClone(last);
  }

  /**
   * Starts a watch of a storage from a resourceVersion: replays the window's later events, then every new one.
   * Throws 410 Expired when the window no longer reaches back that far, as the watch cache does.
   */
  watch(storage: string, fromRv: number, listener: StoreListener): () => void {
    if (fromRv > this.rv) throw tooLargeResourceVersion(fromRv, this.rv);
    const start = this.windowStart.get(storage) ?? this.startRv;
    if (fromRv < start) throw expired(`too old resource version: ${fromRv} (${start})`);
    for (const event of this.windows.get(storage) ?? []) {
      if (event.resourceVersion > fromRv) listener(event);
    }
    let set = this.listeners.get(storage);
    if (!set) this.listeners.set(storage, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  }

  private put(storage: string, obj: Obj, type: WatchEventType): Obj {
    const rv = ++this.rv;
    const stored = structuredClone(obj);
    meta(stored).resourceVersion = String(rv);
    const key = objectKey(String(meta(stored).namespace ?? ''), String(meta(stored).name));
    let all = this.objects.get(storage);
    if (!all) this.objects.set(storage, (all = new Map()));
    const prev = all.get(key);
    all.set(key, stored);
    this.journal({ rv, op: 'put', storage, key, object: stored });
    this.emit(storage, prev && type === 'MODIFIED' ? { type, object: stored, prev, resourceVersion: rv } : { type, object: stored, resourceVersion: rv });
    return structuredClone(stored);
  }

  private emit(storage: string, event: StoreEvent): void {
    let window = this.windows.get(storage);
    if (!window) this.windows.set(storage, (window = []));
    window.push(event);
    while (window.length > this.windowSize) {
      const dropped = window.shift() as StoreEvent;
      this.windowStart.set(storage, dropped.resourceVersion);
    }
    for (const listener of [...(this.listeners.get(storage) ?? [])]) listener(event);
  }

  private journal(line: JournalLine): void {
    if (!this.journalPath) return;
    appendFileSync(this.journalPath, JSON.stringify(line) + '\n');
  }

  /** Replays the journal, then compacts it to one line per object (the first line records the resourceVersion). */
  private load(): void {
    const path = this.journalPath as string;
    if (existsSync(path)) {
      for (const text of readFileSync(path, 'utf8').split('\n')) {
        if (text.trim() === '') continue;
        let line: JournalLine;
        try {
          line = JSON.parse(text) as JournalLine;
        } catch {
          // A line cut short by a crash mid-append: everything before it was written whole.
          break;
        }
        this.rv = Math.max(this.rv, line.rv);
        if (line.op === 'put' && line.object) {
          let all = this.objects.get(line.storage);
          if (!all) this.objects.set(line.storage, (all = new Map()));
          all.set(line.key, line.object);
        } else if (line.op === 'del') {
          this.objects.get(line.storage)?.delete(line.key);
        }
      }
    }
    this.startRv = this.rv;
    const tmp = `${path}.tmp`;
    const fd = openSync(tmp, 'w');
    writeSync(fd, JSON.stringify({ rv: this.rv, op: 'rv', storage: '', key: '' }) + '\n');
    for (const [storage, all] of this.objects) {
      for (const [key, object] of all) {
        writeSync(fd, JSON.stringify({ rv: Number(meta(object).resourceVersion), op: 'put', storage, key, object }) + '\n');
      }
    }
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, path);
  }
}
