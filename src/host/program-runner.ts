// Runs host programs to completion with their stdin given and their output collected (CNI plugins), through the
// nodelet-spawn helper when it is installed, else with child_process.
//
// Why a helper: libuv starts every child with fork(), which copies the page tables of the whole agent while the event
// loop waits: ~2-3 ms per plugin at the agent's size, and the kernel spends as much again tearing the copy down at
// exec. The helper (src/host/spawn-helper/nodelet-spawn.c) is a ~1 MB process whose own fork/exec costs ~0.1 ms; it
// is started once, while the agent is still small.
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Logger } from '../core/log.js';

export interface ProgramRun {
  /** An absolute path: the program is not searched for. */
  path: string;
  args?: readonly string[];
  /** The program's whole environment. */
  env: Readonly<Record<string, string | undefined>>;
  input: string;
  /** Start it in a session (process group) of its own, so that stopping it also stops what it started. */
  newSession?: boolean;
  /** Aborting kills the program (its process group with newSession) with SIGKILL. */
  signal?: AbortSignal;
}

export interface ProgramExit {
  stdout: string;
  stderr: string;
  /** Undefined when the program could not be started or was ended by a signal. */
  exitCode: number | undefined;
  /** Why there is no exit code: "killed by SIGKILL", or why it could not be started. */
  message: string;
  /** Why it could not be started (code ENOENT, EACCES, ...). */
  error?: Error;
}

export interface ProgramRunner {
  run(run: ProgramRun): Promise<ProgramExit>;
  close(): void;
}

/** Where scripts/runtime.sh installs the helper. */
export const DEFAULT_SPAWN_HELPER = '/opt/nodelet/bin/nodelet-spawn';

const helperProtocolVersion = 1;
const helperStartTimeoutMs = 5_000;

function environment(env: ProgramRun['env']): string[] {
  return Object.entries(env).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
}

function exitMessage(signal: string | undefined): string {
  return signal ? `killed by ${signal}` : '';
}

/** The most of a program's stdout and of its stderr that is kept, the spawn helper's limit too. */
const MAX_PROGRAM_OUTPUT = 16 * 1024 * 1024;

/** Starts each program with child_process.spawn: a fork of this whole process. */
export class DirectProgramRunner implements ProgramRunner {
  run(run: ProgramRun): Promise<ProgramExit> {
    return new Promise((resolve) => {
      const child = spawn(run.path, run.args ?? [], {
        env: Object.fromEntries(Object.entries(run.env).filter(([, v]) => v !== undefined)),
        detached: run.newSession ?? false,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      let spawnError: Error | undefined;
      const kill = (): void => {
        if (child.pid === undefined) return;
        try {
          process.kill(run.newSession ? -child.pid : child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      };
      run.signal?.addEventListener('abort', kill, { once: true });
      // As the spawn helper does: what a program prints beyond 16 MiB is dropped, not held in memory.
      const held = new Map<Buffer[], number>([[stdout, 0], [stderr, 0]]);
      const keep = (chunks: Buffer[], d: Buffer): void => {
        const n = held.get(chunks)!;
        if (n >= MAX_PROGRAM_OUTPUT) return;
        chunks.push(d.subarray(0, MAX_PROGRAM_OUTPUT - n));
        held.set(chunks, n + d.length);
      };
      child.stdout!.on('data', (d: Buffer) => keep(stdout, d));
      child.stderr!.on('data', (d: Buffer) => keep(stderr, d));
      child.on('error', (err) => (spawnError = err));
      // A program may exit without reading its stdin: the broken pipe is not an error.
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(run.input);
      // 'close' waits for the output pipes too, as the helper does.
      child.on('close', (code, sig) => {
        run.signal?.removeEventListener('abort', kill);
        resolve({
          stdout: Buffer.concat(stdout).toString(),
          stderr: Buffer.concat(stderr).toString(),
          exitCode: spawnError ? undefined : (code ?? undefined),
          message: spawnError ? spawnError.message : exitMessage(sig ?? undefined),
          ...(spawnError ? { error: spawnError } : {}),
        });
      });
      if (run.signal?.aborted) kill();
    });
  }

  close(): void {}
}

/** The errno names of a program that cannot be started (the helper reports the number). */
const errnoNames: Record<number, string> = { 1: 'EPERM', 2: 'ENOENT', 7: 'E2BIG', 8: 'ENOEXEC', 12: 'ENOMEM', 13: 'EACCES', 20: 'ENOTDIR', 21: 'EISDIR', 22: 'EINVAL', 24: 'EMFILE', 26: 'ETXTBSY', 40: 'ELOOP' };

function signalName(signo: number): string {
  return Object.entries(constants.signals).find(([, num]) => num === signo)?.[0] ?? `signal ${signo}`;
}

interface Pending {
  path: string;
  resolve: (exit: ProgramExit) => void;
  cleanup: () => void;
}

/** A request frame: its length, the op byte, two numbers, then each group as a count and length-prefixed strings, then
 *  the length-prefixed tail. Encoded into one buffer: a plugin's request carries the agent's whole environment. */
function requestFrame(op: 'S' | 'K', a: number, b: number, groups: readonly (readonly string[])[] = [], tail?: string): Buffer {
  let size = 4 + 1 + 8;
  for (const group of groups) {
    size += 4;
    for (const s of group) size += 4 + Buffer.byteLength(s);
  }
  if (tail !== undefined) size += 4 + Buffer.byteLength(tail);
  const frame = Buffer.allocUnsafe(size);
  let at = frame.writeUInt32LE(size - 4, 0);
  at = frame.writeUInt8(op.charCodeAt(0), at);
  at = frame.writeUInt32LE(a, at);
  at = frame.writeUInt32LE(b, at);
  const put = (s: string): void => {
    const n = frame.write(s, at + 4);
    frame.writeUInt32LE(n, at);
    at += 4 + n;
  };
  for (const group of groups) {
    at = frame.writeUInt32LE(group.length, at);
    group.forEach(put);
  }
  if (tail !== undefined) put(tail);
  return frame;
}

/** One nodelet-spawn process and the programs it runs for us. */
class SpawnHelperProcess {
  readonly #child: ChildProcess;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #received: Buffer = Buffer.alloc(0);
  #exited = false;
  readonly ready: Promise<void>;

  constructor(path: string, onExit: (why: string) => void) {
    // stderr is inherited: the helper only writes there when something is badly wrong.
    this.#child = spawn(path, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    let hello: (() => void) | undefined;
    let failed: ((err: Error) => void) | undefined;
    this.ready = new Promise<void>((resolve, reject) => {
      hello = resolve;
      failed = reject;
    });
    const timer = setTimeout(() => failed!(new Error(`${path} did not answer within ${helperStartTimeoutMs} ms`)), helperStartTimeoutMs);
    this.ready.finally(() => clearTimeout(timer)).catch(() => undefined);
    this.#child.on('error', (err) => failed!(err));
    this.#child.stdin!.on('error', () => undefined);
    this.#child.stdout!.on('data', (chunk: Buffer) => this.#receive(chunk, () => hello!(), (err) => failed!(err)));
    this.#child.on('exit', (code, sig) => {
      this.#exited = true;
      const why = `nodelet-spawn exited (${sig ? `signal ${sig}` : `code ${code}`})`;
      failed!(new Error(why));
      for (const [id, p] of this.#pending) {
        this.#pending.delete(id);
        p.cleanup();
        p.resolve({ stdout: '', stderr: '', exitCode: undefined, message: why, error: new Error(why) });
      }
      onExit(why);
    });
    this.#idle();
  }

  get usable(): boolean {
    return !this.#exited;
  }

  run(run: ProgramRun): Promise<ProgramExit> {
    const id = this.#nextId++;
    const args = [run.path, ...(run.args ?? [])];
    const env = environment(run.env);
    this.#child.stdin!.write(requestFrame('S', id, run.newSession ? 1 : 0, [args, env], run.input));
    return new Promise((resolve) => {
      const kill = (): void => void this.#child.stdin!.write(requestFrame('K', id, constants.signals.SIGKILL));
      run.signal?.addEventListener('abort', kill, { once: true });
      this.#pending.set(id, { path: run.path, resolve, cleanup: () => run.signal?.removeEventListener('abort', kill) });
      this.#child.ref();
      (this.#child.stdout as unknown as { ref(): void }).ref();
      if (run.signal?.aborted) kill();
    });
  }

  close(): void {
    this.#child.stdin!.end();
  }

  /** Lets the agent's process exit while no program runs (the helper exits with its stdin). */
  #idle(): void {
    this.#child.unref();
    (this.#child.stdout as unknown as { unref(): void }).unref();
  }


  #receive(chunk: Buffer, onHello: () => void, onBroken: (err: Error) => void): void {
    this.#received = this.#received.length ? Buffer.concat([this.#received, chunk]) : chunk;
    while (this.#received.length >= 4) {
      const len = this.#received.readUInt32LE(0);
      if (this.#received.length < 4 + len) break;
      const frame = this.#received.subarray(4, 4 + len);
      this.#received = this.#received.subarray(4 + len);
      const op = String.fromCharCode(frame[0]!);
      if (op === 'H') {
        const version = frame.readUInt32LE(1);
        if (version === helperProtocolVersion) onHello();
        else onBroken(new Error(`nodelet-spawn speaks protocol ${version}, this agent ${helperProtocolVersion}: reinstall it (scripts/runtime.sh up)`));
      } else if (op === 'E') {
        this.#finished(frame);
      }
    }
  }

  #finished(frame: Buffer): void {
    const id = frame.readUInt32LE(1);
    const kind = frame[5]!;
    const value = frame.readUInt32LE(6);
    const truncated = frame[10]!;
    const outLen = frame.readUInt32LE(11);
    const stdout = frame.toString('utf8', 15, 15 + outLen);
    const errLen = frame.readUInt32LE(15 + outLen);
    const stderr = frame.toString('utf8', 19 + outLen, 19 + outLen + errLen);
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    pending.cleanup();
    if (this.#pending.size === 0) this.#idle();
    const note = truncated ? ` (output beyond ${truncated & 1 ? 'stdout' : 'stderr'}'s 16 MiB dropped)` : '';
    if (kind === 0) {
      pending.resolve({ stdout, stderr, exitCode: value, message: note });
    } else if (kind === 1) {
      pending.resolve({ stdout, stderr, exitCode: undefined, message: exitMessage(signalName(value)) + note });
    } else {
      const code = errnoNames[value] ?? `errno ${value}`;
      // As child_process words it.
      const error = Object.assign(new Error(`spawn ${pending.path} ${code}`), { code, errno: -value, path: pending.path });
      pending.resolve({ stdout: '', stderr: '', exitCode: undefined, message: error.message, error });
    }
  }
}

/**
 * Runs programs through nodelet-spawn, restarting it when it dies; when it cannot be started, through
 * child_process, with one warning.
 */
export class SpawnHelperRunner implements ProgramRunner {
  #helper: SpawnHelperProcess | undefined;
  #starting: Promise<SpawnHelperProcess | undefined> | undefined;
  /** Set once the helper could not be started: programs then go through child_process for good. */
  #unusable = false;
  #closed = false;
  readonly #direct = new DirectProgramRunner();

  private constructor(
    readonly path: string,
    private readonly log: Logger | undefined,
  ) {}

  /** Starts the helper now, while the caller is small. */
  static async start(path: string, log?: Logger): Promise<SpawnHelperRunner> {
    const runner = new SpawnHelperRunner(path, log);
    await runner.#helperProcess();
    return runner;
  }

  /** Whether programs currently go through the helper. */
  get usingHelper(): boolean {
    return this.#helper?.usable ?? false;
  }

  async run(run: ProgramRun): Promise<ProgramExit> {
    const helper = await this.#helperProcess();
    return helper ? helper.run(run) : this.#direct.run(run);
  }

  close(): void {
    this.#closed = true;
    this.#helper?.close();
  }

  #helperProcess(): Promise<SpawnHelperProcess | undefined> {
    if (this.#helper?.usable) return Promise.resolve(this.#helper);
    if (this.#closed || this.#unusable) return Promise.resolve(undefined);
    this.#starting ??= (async () => {
      const helper = new SpawnHelperProcess(this.path, (why) => {
        if (!this.#closed) this.log?.warn({ helper: this.path, reason: why }, 'Process spawn helper stopped; restarting it for the next program');
      });
      try {
        await helper.ready;
        this.#helper = helper;
        return helper;
      } catch (err) {
        helper.close();
        this.#unusable = true;
        this.log?.warn(
          { helper: this.path, err },
          'Process spawn helper not usable; starting programs directly (each start then forks the whole agent)',
        );
        return undefined;
      } finally {
        this.#starting = undefined;
      }
    })();
    return this.#starting;
  }
}
