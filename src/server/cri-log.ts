// Container logs in the CRI format (`<RFC3339Nano time> <stdout|stderr> <P|F>[:tags] <content>`), read as kubelet's
// kuberuntime/logs does: tail by file lines, since by timestamp, partial lines joined, a byte limit, and following the
// file (across its rotation) until the container stops.
import { open, stat, type FileHandle } from 'node:fs/promises';
import { watch, type FSWatcher } from 'node:fs';

export type LogStream = 'stdout' | 'stderr';

export interface CriLogMessage {
  /** Nanoseconds since the epoch. */
  timeNs: bigint;
  /** The timestamp as kubelet writes it out: RFC 3339 with nine fraction digits, in the line's own zone. */
  timestamp: string;
  stream: LogStream;
  /** A partial line (P): its content has no newline and the next message continues it. */
  partial: boolean;
  /** The content, with its newline for a full line. */
  content: Buffer;
}

export class CriLogParseError extends Error {}

const timestampPattern = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** Parses an RFC 3339 time with up to nine fraction digits: nanoseconds since the epoch and kubelet's output form. */
export function parseLogTimestamp(text: string): { timeNs: bigint; timestamp: string } {
  const m = timestampPattern.exec(text);
  const ms = m ? Date.parse(`${m[1]}${m[3]}`) : NaN;
  if (!m || Number.isNaN(ms)) throw new CriLogParseError(`unexpected timestamp format "${text}"`);
  const fraction = (m[2] ?? '').padEnd(9, '0');
  return { timeNs: BigInt(ms) * 1_000_000n + BigInt(fraction), timestamp: `${m[1]}.${fraction}${m[3]}` };
}

/** One line of a CRI log file (its newline included, when it has one). */
export function parseCriLogLine(line: Buffer): CriLogMessage {
  const space1 = line.indexOf(0x20);
  if (space1 < 0) throw new CriLogParseError('timestamp is not found');
  const { timeNs, timestamp } = parseLogTimestamp(line.subarray(0, space1).toString('latin1'));
  const space2 = line.indexOf(0x20, space1 + 1);
  if (space2 < 0) throw new CriLogParseError('stream type is not found');
  const stream = line.subarray(space1 + 1, space2).toString('latin1');
  if (stream !== 'stdout' && stream !== 'stderr') throw new CriLogParseError(`unexpected stream type "${stream}"`);
  const space3 = line.indexOf(0x20, space2 + 1);
  if (space3 < 0) throw new CriLogParseError('log tag is not found');
  const partial = line.subarray(space2 + 1, space3).toString('latin1').split(':')[0] === 'P';
  let content = line.subarray(space3 + 1);
  // A partial line's newline is the file's line end, not the container's output.
  if (partial && content.length > 0 && content[content.length - 1] === 0x0a) content = content.subarray(0, -1);
  return { timeNs, timestamp, stream, partial, content };
}

export interface LogReadOptions {
  /** Lines (of the file) from the end; undefined: all. */
  tailLines?: number;
  /** Stop after this many bytes of output; undefined: no limit. */
  limitBytes?: number;
  /** Skip messages older than this (ns since the epoch). */
  sinceNs?: bigint;
  timestamps: boolean;
  follow: boolean;
}

export interface LogFollowHooks {
  /** Whether the container still runs: following ends, after what is left in the file, once it does not. */
  isRunning(): Promise<boolean>;
  /** How long to wait for a change of the file before checking again (kubelet: 1 s). */
  pollMs?: number;
}

/** Where the output goes: resolves when the consumer can take more (back-pressure); rejects when it is gone. */
export type LogSink = (chunk: Buffer, stream: LogStream) => Promise<void>;

const blockSize = 64 * 1024;

/** kubelet's FindTailLineStartIndex: the offset at which the last `n` lines of the file start. */
export async function tailStartOffset(file: FileHandle, n: number | undefined): Promise<number> {
  if (n === undefined || n < 0) return 0;
  const { size } = await file.stat();
  let count = 0;
  let left = size;
  let block = Buffer.alloc(0);
  for (let right = size; right > 0 && count <= n; right -= blockSize) {
    left = Math.max(0, right - blockSize);
    block = Buffer.alloc(right - left);
    await file.read(block, 0, block.length, left);
    for (const byte of block) if (byte === 0x0a) count++;
  }
  let offset = left;
  let rest = block;
  for (; count > n; count--) {
    const idx = rest.indexOf(0x0a) + 1;
    rest = rest.subarray(idx);
    offset += idx;
  }
  return offset;
}

/** Formats and limits messages as kubelet's logWriter: timestamps only at the start of a joined line. */
export class LogWriter {
  private remaining: number;
  private atLineStart = true;

  constructor(
    private readonly opts: LogReadOptions,
    private readonly sink: LogSink,
  ) {
    this.remaining = opts.limitBytes ?? Number.POSITIVE_INFINITY;
  }

  /** False once the byte limit is reached: nothing more is to be written. */
  async write(msg: CriLogMessage): Promise<boolean> {
    const startsLine = this.atLineStart;
    this.atLineStart = !msg.partial;
    if (this.opts.sinceNs !== undefined && msg.timeNs < this.opts.sinceNs) return true;
    let out = msg.content;
    if (this.opts.timestamps && startsLine) out = Buffer.concat([Buffer.from(`${msg.timestamp} `), out]);
    if (out.length > this.remaining) out = out.subarray(0, this.remaining);
    this.remaining -= out.length;
    if (out.length > 0) await this.sink(out, msg.stream);
    return this.remaining > 0;
  }
}

/** Resolves at the next change of the file or directory entry, or after pollMs; the watcher is closed again. */
function waitForChange(path: string, pollMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    let watcher: FSWatcher | undefined;
    const done = () => {
      clearTimeout(timer);
      watcher?.close();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, pollMs);
    signal.addEventListener('abort', done, { once: true });
    try {
      watcher = watch(path, { persistent: false }, done);
      watcher.on('error', done);
    } catch {
      // The file is gone for the moment (rotation): the poll tries again.
    }
  });
}

/**
 * Reads the log at `path` into `sink` as kubelet serves /containerLogs. With follow, at the end of the file it waits
 * for more while the container runs; a file replaced at the same path (rotation) is read from its start once the old
 * one is drained. Ends when the signal aborts; the file and watcher are always closed.
 */
export async function readCriLog(path: string, opts: LogReadOptions, sink: LogSink, signal: AbortSignal, follow?: LogFollowHooks): Promise<void> {
  let file = await open(path, 'r');
  try {
    let position = await tailStartOffset(file, opts.tailLines);
    const writer = new LogWriter(opts, sink);
    const chunk = Buffer.alloc(blockSize);
    let pending = Buffer.alloc(0);
    let running = true;
    const emit = async (line: Buffer): Promise<boolean> => {
      let msg: CriLogMessage;
      try {
        msg = parseCriLogLine(line);
      } catch {
        return true; // kubelet logs and skips a line it cannot parse
      }
      return writer.write(msg);
    };
    while (!signal.aborted) {
      const { bytesRead } = await file.read(chunk, 0, chunk.length, position);
      if (bytesRead > 0) {
        position += bytesRead;
        pending = pending.length > 0 ? Buffer.concat([pending, chunk.subarray(0, bytesRead)]) : Buffer.from(chunk.subarray(0, bytesRead));
        let start = 0;
        for (let nl = pending.indexOf(0x0a); nl >= 0; nl = pending.indexOf(0x0a, start)) {
          if (!(await emit(pending.subarray(start, nl + 1)))) return;
          start = nl + 1;
        }
        pending = pending.subarray(start);
        continue;
      }
      // At the end of the file.
      if (!opts.follow || !follow || !running) {
        if (pending.length > 0) await emit(pending);
        return;
      }
      // Rotated: the path now names another file. What is left of this one was read above; go on with the new one.
      const current = await stat(path).catch(() => undefined);
      const own = await file.stat();
      if (current && (current.ino !== own.ino || current.dev !== own.dev)) {
        if (pending.length > 0) await emit(pending);
        pending = Buffer.alloc(0);
        const next = await open(path, 'r').catch(() => undefined);
        if (next) {
          await file.close();
          file = next;
          position = 0;
          continue;
        }
      }
      running = await follow.isRunning();
      // Not running: one more pass reads what it wrote last, then the stream ends.
      if (running) await waitForChange(path, follow.pollMs ?? 1_000, signal);
    }
  } finally {
    await file.close();
  }
}
