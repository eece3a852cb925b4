// Forgotten containerd shims: read from a /proc made in a temporary directory, decided over two collections.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForgottenShimCollector, forgottenShims, listRuntimeShims, type ShimProcess } from '../../../src/host/runtime-shims.js';

const SOCK = '/run/nodelet/containerd/containerd.sock';
const id = (n: number) => String(n).repeat(64).slice(0, 64);
let proc: string;

function processEntry(pid: number, ppid: number, argv: string[], cwd: string): void {
  const dir = join(proc, String(pid));
  mkdirSync(dir);
  writeFileSync(join(dir, 'stat'), `${pid} (${argv[0]?.split('/').pop()?.slice(0, 15) ?? 'x'}) S ${ppid} ${pid} ${pid} 0 -1`);
  writeFileSync(join(dir, 'cmdline'), argv.join('\0') + '\0');
  symlinkSync(cwd, join(dir, 'cwd'));
}

const shim = (taskId: string, address = SOCK, namespace = 'k8s.io') => [
  '/usr/bin/containerd-shim-runc-v2', '-namespace', namespace, '-id', taskId, '-address', address,
];
const bundle = (taskId: string) => `/run/nodelet/containerd/io.containerd.runtime.v2.task/k8s.io/${taskId}`;

beforeEach(() => {
  proc = mkdtempSync(join(tmpdir(), 'nodelet-proc-'));
  processEntry(100, 1, shim(id(1)), `${bundle(id(1))} (deleted)`); // forgotten
  processEntry(101, 1, shim(id(2)), bundle(id(2))); // serving a task
  processEntry(102, 1, shim(id(3)), `${bundle(id(3))} (deleted)`); // bundle gone, still reaping a child
  processEntry(103, 102, ['sleep', '1000'], '/');
  processEntry(104, 1, shim(id(4), '/run/containerd/containerd.sock'), `${bundle(id(4))} (deleted)`); // another containerd
  processEntry(105, 1, shim(id(5), SOCK, 'moby'), `${bundle(id(5))} (deleted)`); // not a CRI task
  processEntry(106, 1, ['/usr/bin/containerd', '--config', '/etc/x', '-id', 'y', '-address', SOCK], '/'); // not a shim
  mkdirSync(join(proc, 'self'));
});

afterEach(() => rmSync(proc, { recursive: true, force: true }));

test("lists the CRI shims of the containerd at the address, with their bundle's state and whether they have children", async () => {
  const shims = (await listRuntimeShims(SOCK, proc)).sort((a, b) => a.pid - b.pid);
  expect(shims).toEqual([
    { pid: 100, id: id(1), bundleRemoved: true, hasChildren: false },
    { pid: 101, id: id(2), bundleRemoved: false, hasChildren: false },
    { pid: 102, id: id(3), bundleRemoved: true, hasChildren: true },
  ]);
});

test('a shim is forgotten when its bundle is removed, it has no child and its id is unknown, in two collections in a row', () => {
  const candidate: ShimProcess = { pid: 100, id: id(1), bundleRemoved: true, hasChildren: false };
  const others: ShimProcess[] = [
    { pid: 101, id: id(2), bundleRemoved: false, hasChildren: false },
    { pid: 102, id: id(3), bundleRemoved: true, hasChildren: true },
    { pid: 107, id: id(7), bundleRemoved: true, hasChildren: false }, // known to the runtime
  ];
  const known = new Set([id(7)]);
  const first = forgottenShims([candidate, ...others], known, new Set());
  expect(first).toEqual({ forgotten: [], suspects: new Set([100]) });
  const second = forgottenShims([candidate, ...others], known, first.suspects);
  expect(second).toEqual({ forgotten: [candidate], suspects: new Set() });
  // Known by the second collection (a relist caught up): not forgotten.
  expect(forgottenShims([candidate], new Set([id(1)]), first.suspects).forgotten).toEqual([]);
});

test('the collector ends a forgotten shim on its second sighting, and only it', async () => {
  const killed: number[] = [];
  const collector = new ForgottenShimCollector(SOCK, proc, (pid) => void killed.push(pid));
  expect(await collector.collect(new Set())).toEqual([]);
  expect(killed).toEqual([]);
  expect((await collector.collect(new Set())).map((s) => s.pid)).toEqual([100]);
  expect(killed).toEqual([100]);
});

test('a shim that exits before the kill is not reported as ended', async () => {
  const collector = new ForgottenShimCollector(SOCK, proc, () => {
    throw Object.assign(new Error('kill ESRCH'), { code: 'ESRCH' });
  });
  await collector.collect(new Set());
  expect(await collector.collect(new Set())).toEqual([]);
});
