// The forgotten-shim collector on the real /proc: a process that looks to it like a shim containerd forgot (a shim's
// name and flags, its working directory removed, no child) is ended on the second collection; the same process with its
// working directory in place, or with a child, is left alone. No containerd is involved: the shim is a Node process
// started under a shim's name, with a socket path no containerd serves.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForgottenShimCollector } from '../../../src/host/runtime-shims.js';

const address = `/run/nodelet-test-shims-${process.pid}/containerd.sock`;
const started: ChildProcess[] = [];

/** A Node process whose command line reads `containerd-shim-runc-v2 ... -namespace k8s.io -id <id> -address <address>`. */
function fakeShim(cwd: string, withChild: boolean): { child: ChildProcess; exited: Promise<NodeJS.Signals | null> } {
  const id = randomBytes(32).toString('hex');
  const script = withChild ? "require('child_process').spawn('sleep', ['600'], { stdio: 'ignore' }); setInterval(() => {}, 1e6)" : 'setInterval(() => {}, 1e6)';
  const child = spawn(process.execPath, ['-e', script, '--', '-namespace', 'k8s.io', '-id', id, '-address', address], {
    argv0: 'containerd-shim-runc-v2',
    cwd,
    stdio: 'ignore',
    detached: true, // a process group of its own, which afterAll ends with any child in it
  });
  started.push(child);
  return { child, exited: new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal))) };
}

const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

afterAll(() => {
  for (const child of started) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // the group is gone
    }
  }
});

test('a shim whose bundle is removed and that has no child is ended on the second collection; the others stay', async () => {
  const forgottenDir = mkdtempSync(join(tmpdir(), 'nodelet-shim-bundle-'));
  const liveDir = mkdtempSync(join(tmpdir(), 'nodelet-shim-bundle-'));
  const parentDir = mkdtempSync(join(tmpdir(), 'nodelet-shim-bundle-'));
  try {
    const forgotten = fakeShim(forgottenDir, false);
    const live = fakeShim(liveDir, false);
    const parent = fakeShim(parentDir, true);
    await new Promise((r) => setTimeout(r, 500)); // the processes up, the parent's child started
    rmSync(forgottenDir, { recursive: true });
    rmSync(parentDir, { recursive: true });
    const collector = new ForgottenShimCollector(address);
    expect(await collector.collect(new Set())).toEqual([]);
    const ended = await collector.collect(new Set());
    expect(ended.map((s) => s.pid)).toEqual([forgotten.child.pid]);
    expect(await forgotten.exited).toBe('SIGKILL');
    expect(alive(live.child)).toBe(true);
    expect(alive(parent.child)).toBe(true);
  } finally {
    rmSync(liveDir, { recursive: true, force: true });
  }
});
