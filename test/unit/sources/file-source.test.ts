// The static pod directory source against a real temp directory: SET updates on add/change/remove, logging once.
import { mkdtemp, mkdir, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { FilePodSource, type FilePodSourceOptions } from '../../../src/sources/file-source.js';
import { systemClock } from '../../../src/core/clock.js';
import { CONFIG_SEEN_ANNOTATION } from '../../../src/core/config-annotations.js';
import { writeHostileManifests } from '../../fixtures/hostile-manifests.js';

const NODE = 'node1';

function manifest(name: string, port = 8080, image = 'localhost/nodelet/busybox:1.35'): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
  - name: main
    image: ${image}
    command: [httpd, -f, -p, "${port}"]
`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntil(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(5);
  }
}

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** One running source over a fresh temp dir, recording every SET and every log line. */
class Harness {
  readonly sets: V1Pod[][] = [];
  readonly logs: LogLine[] = [];
  private readonly controller = new AbortController();
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;

  constructor(
    readonly root: string,
    readonly dir: string,
  ) {}

  start(opts: Partial<FilePodSourceOptions> = {}): void {
    const logger = pino({ level: 'debug' }, { write: (line: string) => void this.logs.push(JSON.parse(line) as LogLine) });
    const source = new FilePodSource({
      dir: this.dir,
      nodeName: NODE,
      logger,
      onPods: (pods) => {
        this.sets.push(pods);
        this.wake?.();
      },
      rescanIntervalMs: 60_000,
      ...opts,
    });
    this.running = source.run(this.controller.signal);
  }

  /** Waits until the latest SET satisfies `predicate` (pod names given sorted). */
  async waitForSet(predicate: (names: string[]) => boolean, timeoutMs = 3000): Promise<V1Pod[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const latest = this.sets.at(-1);
      if (latest && predicate(names(latest))) return latest;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching pod set; sets so far: ${JSON.stringify(this.sets.map(names))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  async waitForNames(expected: string[]): Promise<V1Pod[]> {
    return this.waitForSet((n) => JSON.stringify(n) === JSON.stringify(expected));
  }

  warnings(msgPrefix: string): LogLine[] {
    return this.logs.filter((l) => l.level === 40 && l.msg.startsWith(msgPrefix));
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await this.running;
    await rm(this.root, { recursive: true, force: true });
  }
}

function names(pods: V1Pod[]): string[] {
  return pods.map((p) => p.metadata?.name ?? '').sort();
}

let harness: Harness;

async function newHarness(subdir?: string): Promise<Harness> {
  const root = await mkdtemp(join(tmpdir(), 'nodelet-file-source-'));
  const dir = subdir ? join(root, subdir) : root;
  harness = new Harness(root, dir);
  return harness;
}

afterEach(async () => {
  await harness.stop();
});

describe('FilePodSource', () => {
  test('reports the full set on add, change and remove, promptly through the watch', async () => {
    const h = await newHarness();
    h.start();
    await h.waitForNames([]);

    await writeFile(join(h.dir, 'web.yaml'), manifest('web'));
    const first = await h.waitForNames(['web-node1']);
    const webUid = first[0]?.metadata?.uid;

    await writeFile(join(h.dir, 'api.json'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'api' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } }));
    await h.waitForNames(['api-node1', 'web-node1']);

    await writeFile(join(h.dir, 'web.yaml'), manifest('web', 9090));
    const changed = await h.waitForSet((n) => n.length === 2 && h.sets.at(-1)!.every((p) => p.metadata?.uid !== webUid));
    const web = changed.find((p) => p.metadata?.name === 'web-node1');
    expect(web?.spec?.containers[0]?.command).toEqual(['httpd', '-f', '-p', '9090']);

    await rm(join(h.dir, 'api.json'));
    await h.waitForNames(['web-node1']);

    // An atomic replace (write elsewhere, rename over) is seen like any other change.
    await writeFile(join(h.root, '.tmp'), manifest('web', 7070));
    await rename(join(h.root, '.tmp'), join(h.dir, 'web.yaml'));
    const replaced = await h.waitForSet(() => h.sets.at(-1)?.[0]?.spec?.containers[0]?.command?.[3] === '7070');
    expect(names(replaced)).toEqual(['web-node1']);
  });

  test('no SET for rescans that find nothing new, nor for dotfiles and other extensions', async () => {
    const h = await newHarness();
    await writeFile(join(h.dir, 'web.yaml'), manifest('web'));
    h.start({ rescanIntervalMs: 10 });
    await h.waitForNames(['web-node1']);
    await writeFile(join(h.dir, '.web.yaml.swp'), manifest('hidden'));
    await writeFile(join(h.dir, 'notes.txt'), manifest('notes'));
    await utimes(join(h.dir, 'web.yaml'), new Date(), new Date());
    await sleep(200);
    expect(h.sets.map(names)).toEqual([['web-node1']]);
  });

  test('an invalid manifest is logged once per content, and its valid documents still load', async () => {
    const h = await newHarness();
    const bad = `${manifest('good')}---\n${manifest('bad').replace('    image: localhost/nodelet/busybox:1.35\n', '')}`;
    await writeFile(join(h.dir, 'mixed.yaml'), bad);
    h.start({ rescanIntervalMs: 10 });
    await h.waitForNames(['good-node1']);
    await sleep(150);

    const warned = h.warnings('invalid pod manifest');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({
      file: join(h.dir, 'mixed.yaml'),
      field: 'spec.containers[0].image',
      document: 1,
      msg: 'invalid pod manifest: document 1: spec.containers[0].image: Required value',
    });

    // Touching the file re-reads it but the content is the same: no second warning.
    await utimes(join(h.dir, 'mixed.yaml'), new Date(), new Date());
    await sleep(100);
    expect(h.warnings('invalid pod manifest')).toHaveLength(1);

    // New content with another problem: logged once more.
    await writeFile(join(h.dir, 'mixed.yaml'), bad.replace('name: bad', 'name: Bad'));
    await waitUntil(() => h.warnings('invalid pod manifest').length >= 2);
    await sleep(100);
    const lines = h.warnings('invalid pod manifest');
    expect(lines.map((l) => l.field)).toEqual(['spec.containers[0].image', 'metadata.name']);
    // One line for the file, with every problem in it.
    expect(lines[1]!.msg).toMatch(/^invalid pod manifest: document 1: metadata.name: Invalid value: "Bad-node1": .*; document 1: spec.containers\[0\].image: Required value$/);
    expect(h.sets.map(names)).toEqual([['good-node1']]);
  });

  test('a YAML syntax error drops the file and is logged once', async () => {
    const h = await newHarness();
    await writeFile(join(h.dir, 'web.yaml'), manifest('web'));
    h.start({ rescanIntervalMs: 10 });
    await h.waitForNames(['web-node1']);
    await writeFile(join(h.dir, 'web.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: [web\n');
    await h.waitForNames([]);
    await sleep(100);
    const warned = h.warnings('invalid pod manifest');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ field: '', document: 0 });
    expect(warned[0]!.msg).toMatch(/line \d+, column \d+/);
  });

  test('a manifest that becomes unreadable drops its pods, logged once', async () => {
    const h = await newHarness();
    await writeFile(join(h.dir, 'web.yaml'), manifest('web'));
    await writeFile(join(h.dir, 'api.yaml'), manifest('api'));
    h.start({ rescanIntervalMs: 10 });
    await h.waitForNames(['api-node1', 'web-node1']);
    // A symlink to itself cannot be opened (ELOOP), whoever runs the test.
    await rm(join(h.dir, 'web.yaml'));
    await symlink('web.yaml', join(h.dir, 'web.yaml'));
    await h.waitForNames(['api-node1']);
    await sleep(100);
    expect(h.warnings('cannot read pod manifest')).toHaveLength(1);
    expect(h.warnings('cannot read pod manifest')[0]).toMatchObject({ file: join(h.dir, 'web.yaml') });
  });

  test('hostile files beside a good one: the good pod loads, each bad file is refused with one line naming it, once', async () => {
    const h = await newHarness('manifests');
    const hostile = await writeHostileManifests(h.dir, join(h.root, 'outside'), 'busybox');
    await writeFile(join(h.dir, 'web.yaml'), manifest('web'));
    h.start({ rescanIntervalMs: 20 });
    // Parsing 10,000 containers of YAML alone takes a second or two.
    await h.waitForSet((n) => n.includes('web-node1'), 30_000);
    // The good pod can load before the scan reaches every bad file (the 10,000-container one is slow on a loaded machine).
    await waitUntil(() => h.logs.filter((l) => l.level >= 40).length >= hostile.length, 30_000);
    // Several rescans: nothing is logged again.
    await sleep(300);
    const lines = h.logs.filter((l) => l.level >= 40);
    for (const { file, logged } of hostile) {
      const named = lines.filter((l) => l.file === join(h.dir, file));
      expect({ file, lines: named.length }).toEqual({ file, lines: 1 });
      expect(named[0]!.msg).toMatch(logged);
    }
    expect(lines).toHaveLength(hostile.length);
    expect(h.sets.map(names)).toEqual([['web-node1']]);

    // A bad file that changes is looked at, and named, again.
    await writeFile(join(h.dir, 'recursive-alias.yaml'), 'b: &b {c: *b}\n');
    await waitUntil(() => h.logs.filter((l) => l.file === join(h.dir, 'recursive-alias.yaml')).length === 2);
  });

  test('a missing directory is an empty set, logged once, and picked up when it appears', async () => {
    const h = await newHarness('manifests');
    h.start({ rescanIntervalMs: 10 });
    await h.waitForNames([]);
    await sleep(50);
    expect(h.warnings('static pod directory does not exist')).toHaveLength(1);

    await mkdir(h.dir);
    await writeFile(join(h.dir, 'web.yaml'), manifest('web'));
    await h.waitForNames(['web-node1']);

    await rm(h.dir, { recursive: true });
    await h.waitForNames([]);
    // The empty set may come from the scan after the file's removal, the warning from the one after the directory's.
    await waitUntil(() => h.warnings('static pod directory does not exist').length >= 2);
    await sleep(50);
    expect(h.warnings('static pod directory does not exist')).toHaveLength(2);
  });

  test('a pod name defined by two files loads from the first file only, with one warning', async () => {
    const h = await newHarness();
    await writeFile(join(h.dir, 'a.yaml'), manifest('web', 1111));
    await writeFile(join(h.dir, 'b.yaml'), manifest('web', 2222));
    h.start({ rescanIntervalMs: 10 });
    const pods = await h.waitForNames(['web-node1']);
    expect(pods[0]?.spec?.containers[0]?.command?.[3]).toBe('1111');
    await sleep(100);
    expect(h.warnings('static pod dropped')).toHaveLength(1);
    expect(h.warnings('static pod dropped')[0]).toMatchObject({ file: join(h.dir, 'b.yaml'), otherFile: join(h.dir, 'a.yaml') });
  });

  test('a pod keeps its first-seen time while its UID lives', async () => {
    const h = await newHarness();
    let clock = Date.parse('2024-01-01T00:00:00Z');
    await writeFile(join(h.dir, 'pods.yaml'), `${manifest('one')}---\n${manifest('two')}`);
    h.start({ clock: { ...systemClock, now: () => clock } });
    const before = await h.waitForNames(['one-node1', 'two-node1']);
    const seen = (pods: V1Pod[], name: string) => pods.find((p) => p.metadata?.name === name)?.metadata?.annotations?.[CONFIG_SEEN_ANNOTATION];
    expect(seen(before, 'one-node1')).toBe('2024-01-01T00:00:00.000Z');

    clock += 60_000;
    await writeFile(join(h.dir, 'pods.yaml'), `${manifest('one')}---\n${manifest('two', 9999)}`);
    const after = await h.waitForSet(() => seen(h.sets.at(-1)!, 'two-node1') === '2024-01-01T00:01:00.000Z');
    expect(seen(after, 'one-node1')).toBe('2024-01-01T00:00:00.000Z');
  });

  test('stops on abort: run resolves and no further SETs arrive', async () => {
    const h = await newHarness();
    h.start({ rescanIntervalMs: 5 });
    await h.waitForNames([]);
    await h.stop();
    const count = h.sets.length;
    await sleep(50);
    expect(h.sets).toHaveLength(count);
  });
});
