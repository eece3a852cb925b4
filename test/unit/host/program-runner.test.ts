// Both ways of running host programs (the nodelet-spawn helper, compiled from its source, and child_process) give the
// same outcomes: input, output, exit, environment, inherited state, kills of a whole session; plus the helper's own
// failure handling.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { DirectProgramRunner, SpawnHelperRunner, type ProgramRunner } from '../../../src/host/program-runner.js';
import { compileSpawnHelper, type CompiledHelper } from './spawn-helper-binary.js';

const log = pino({ level: 'silent' });
const env = { PATH: '/usr/bin:/bin', GREETING: 'hello there' };

let helper: CompiledHelper;
let dir: string;

beforeAll(async () => {
  helper = await compileSpawnHelper();
}, 60_000);

afterAll(async () => {
  await helper.remove();
});

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-programs-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A killed process whose parent died stays a zombie until init reaps it: that counts as gone. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

const runners: [string, () => Promise<ProgramRunner>][] = [
  ['nodelet-spawn', () => SpawnHelperRunner.start(helper.path, log)],
  ['child_process', async () => new DirectProgramRunner()],
];

describe.each(runners)('through %s', (_name, create) => {
  let runner: ProgramRunner;

  beforeAll(async () => {
    runner = await create();
  });

  afterAll(() => runner.close());

  test('feeds stdin and collects stdout, stderr and the exit code', async () => {
    const r = await runner.run({ path: '/bin/sh', args: ['-c', 'cat; echo " $GREETING"; echo oops >&2; exit 3'], env, input: 'from stdin' });
    expect(r).toEqual({ stdout: 'from stdin hello there\n', stderr: 'oops\n', exitCode: 3, message: '' });
  });

  test('round-trips a megabyte each way, and many programs at once each get their own answer', async () => {
    const big = 'x'.repeat(1 << 20);
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => runner.run({ path: '/bin/cat', env, input: `${i}:${i === 0 ? big : ''}` })),
    );
    results.forEach((r, i) => expect(r.stdout).toBe(`${i}:${i === 0 ? big : ''}`));
  });

  test('keeps at most 16 MiB of each output stream', async () => {
    const r = await runner.run({ path: '/bin/sh', args: ['-c', 'head -c 17000000 /dev/zero; head -c 100 /dev/zero >&2'], env, input: '' });
    expect(r.stdout.length).toBe(16 * 1024 * 1024);
    expect(r.stderr.length).toBe(100);
    expect(r.exitCode).toBe(0);
  });

  test('gives the program exactly the environment asked for', async () => {
    const r = await runner.run({ path: '/usr/bin/env', env: { ONLY: 'this', EMPTY: '', UNSET: undefined }, input: '' });
    expect(r.stdout.split('\n').filter(Boolean).sort()).toEqual(['EMPTY=', 'ONLY=this']);
  });

  test('starts the program with default signal handling and nothing blocked', async () => {
    const status = await runner.run({ path: '/bin/grep', args: ['-E', '^Sig(Blk|Ign)', '/proc/self/status'], env, input: '' });
    expect(status.stdout).toMatch(/^SigBlk:\s+0+$/m);
    expect(status.stdout).toMatch(/^SigIgn:\s+0+$/m);
  });

  test('a program that ignores its stdin is no error', async () => {
    const r = await runner.run({ path: '/bin/true', env, input: 'y'.repeat(1 << 20) });
    expect(r.exitCode).toBe(0);
  });

  test('waits for output a grandchild still writes after the program exited', async () => {
    const r = await runner.run({ path: '/bin/sh', args: ['-c', '(sleep 0.2; echo late) & echo early'], env, input: '' });
    expect(r.stdout).toBe('early\nlate\n');
  });

  test('a missing or non-executable program is reported as not started, naming it', async () => {
    const missing = join(dir, 'missing');
    const r = await runner.run({ path: missing, env, input: '' });
    expect(r.exitCode).toBeUndefined();
    expect((r.error as NodeJS.ErrnoException | undefined)?.code).toBe('ENOENT');
    expect(r.message).toContain(missing);
    const plain = join(dir, 'plain');
    await writeFile(plain, 'not a program');
    await chmod(plain, 0o644);
    const denied = await runner.run({ path: plain, env, input: '' });
    expect((denied.error as NodeJS.ErrnoException | undefined)?.code).toBe('EACCES');
  });

  test('a program killed by a signal has no exit code and says which signal', async () => {
    const r = await runner.run({ path: '/bin/sh', args: ['-c', 'kill -TERM $$'], env, input: '' });
    expect(r.exitCode).toBeUndefined();
    expect(r.message).toBe('killed by SIGTERM');
  });

  test('aborting kills the whole session of a program started in its own', async () => {
    const pidFile = join(dir, 'grandchild.pid');
    const abort = new AbortController();
    const running = runner.run({
      path: '/bin/sh',
      args: ['-c', `sleep 30 & echo $! > ${pidFile}; wait`],
      env,
      input: '',
      newSession: true,
      signal: abort.signal,
    });
    let grandchild = NaN;
    for (let i = 0; i < 200 && Number.isNaN(grandchild); i++) {
      await new Promise((r) => setTimeout(r, 10));
      grandchild = Number.parseInt(await readFile(pidFile, 'utf8').catch(() => ''), 10);
    }
    expect(alive(grandchild)).toBe(true);
    const started = Date.now();
    abort.abort();
    const r = await running;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(r.message).toBe('killed by SIGKILL');
    for (let i = 0; i < 100 && alive(grandchild); i++) await new Promise((res) => setTimeout(res, 10));
    expect(alive(grandchild)).toBe(false);
  });

  test('an already aborted signal kills the program at once', async () => {
    const r = await runner.run({ path: '/bin/sleep', args: ['30'], env, input: '', newSession: true, signal: AbortSignal.abort() });
    expect(r.message).toBe('killed by SIGKILL');
  });
});

describe('the nodelet-spawn helper', () => {
  test('gives the program only stdin, stdout and stderr, whatever its parent leaked to it', async () => {
    // Jest's worker hands its children a descriptor without close-on-exec, so child_process passes it on; the helper not.
    const runner = await SpawnHelperRunner.start(helper.path, log);
    try {
      // ls opens the directory itself as fd 3.
      const fds = await runner.run({ path: '/bin/ls', args: ['/proc/self/fd'], env, input: '' });
      expect(fds.stdout.split('\n').filter(Boolean)).toEqual(['0', '1', '2', '3']);
    } finally {
      runner.close();
    }
  });

  test('cuts output beyond 16 MiB and says so', async () => {
    const runner = await SpawnHelperRunner.start(helper.path, log);
    try {
      const r = await runner.run({ path: '/usr/bin/head', args: ['-c', String(17 * 1024 * 1024), '/dev/zero'], env, input: '' });
      expect(r.exitCode).toBe(0);
      expect(r.stdout.length).toBe(16 * 1024 * 1024);
      expect(r.message).toContain("stdout's 16 MiB");
    } finally {
      runner.close();
    }
  });

  test('when it dies, the programs in flight fail with the reason and the next program starts a new helper', async () => {
    // Helpers of earlier tests may still be exiting: this runner's is the one that was not there before it started.
    const helpers = (): number[] => {
      const out = spawnSync('pgrep', ['-P', String(process.pid), '-x', 'nodelet-spawn'], { encoding: 'utf8' }).stdout;
      return out.split('\n').filter(Boolean).map(Number);
    };
    const before = new Set(helpers());
    const runner = await SpawnHelperRunner.start(helper.path, log);
    const pidFile = join(dir, 'sleeper.pid');
    try {
      const inFlight = runner.run({ path: '/bin/sh', args: ['-c', `echo $$ > ${pidFile}; exec sleep 30`], env, input: '', newSession: true });
      for (let i = 0; i < 200 && !(await readFile(pidFile, 'utf8').catch(() => '')); i++) await new Promise((r) => setTimeout(r, 10));
      const ours = helpers().filter((pid) => !before.has(pid));
      expect(ours).toHaveLength(1);
      process.kill(ours[0]!, 'SIGKILL');
      const r = await inFlight;
      expect(r.exitCode).toBeUndefined();
      expect(r.message).toMatch(/nodelet-spawn exited \(signal SIGKILL\)/);
      const next = await runner.run({ path: '/bin/echo', args: ['again'], env, input: '' });
      expect(next.stdout).toBe('again\n');
      expect(runner.usingHelper).toBe(true);
    } finally {
      runner.close();
      // The program outlives its helper (its own session): not past this test.
      const sleeper = Number.parseInt(await readFile(pidFile, 'utf8').catch(() => ''), 10);
      if (sleeper > 0) process.kill(sleeper, 'SIGKILL');
    }
  });

  test('a helper that cannot start leaves programs to child_process, with a warning', async () => {
    const warnings: string[] = [];
    const recording = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const runner = await SpawnHelperRunner.start(join(dir, 'no-such-helper'), recording);
    try {
      expect(runner.usingHelper).toBe(false);
      expect((await runner.run({ path: '/bin/echo', args: ['direct'], env, input: '' })).stdout).toBe('direct\n');
      expect(warnings.join('')).toContain('Process spawn helper not usable');
    } finally {
      runner.close();
    }
  });

  test('a helper speaking another protocol version is not used', async () => {
    const impostor = join(dir, 'old-helper');
    // A frame 'H' with version 99, then wait for stdin to close.
    await writeFile(impostor, "#!/bin/sh\nprintf '\\005\\000\\000\\000H\\143\\000\\000\\000'\ncat >/dev/null\n");
    await chmod(impostor, 0o755);
    const warnings: string[] = [];
    const runner = await SpawnHelperRunner.start(impostor, pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) }));
    try {
      expect(runner.usingHelper).toBe(false);
      expect(warnings.join('')).toContain('speaks protocol 99');
    } finally {
      runner.close();
    }
  });
});
