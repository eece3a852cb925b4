// The agent's structured logger: pino JSON lines, or kubelet's (klog's) readable text, by default on a terminal.
import { Writable } from 'node:stream';
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

export type LogFormat = 'json' | 'text';

// klog's severity letters: kubelet's text log has no debug or trace severity, only verbosity levels of Info.
const severities: Record<number, string> = { 10: 'I', 20: 'I', 30: 'I', 40: 'W', 50: 'E', 60: 'F' };
const skippedKeys = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name']);

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** A value as klog's structured text shows it: strings quoted, numbers and booleans bare, anything else as JSON. */
function klogValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined) return '<nil>';
  return JSON.stringify(v) ?? String(v);
}

/**
 * Renders one pino JSON line in klog's text format, as kubelet prints it:
 * `I1126 10:00:00.000000    1234 nodelet] "message" pod="ns/name" err="..."` (severity, local date and time in
 * microseconds, process id, the logger's name where klog has the source file, then the message and key/value pairs).
 */
export function formatTextLine(line: string, pid: number = process.pid): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const d = new Date(typeof rec.time === 'number' ? rec.time : Date.now());
  const header =
    `${severities[rec.level as number] ?? 'I'}${pad(d.getMonth() + 1)}${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}000 ` +
    `${String(pid).padStart(7)} ${typeof rec.name === 'string' ? rec.name : 'nodelet'}]`;
  const fields = Object.entries(rec)
    .filter(([k]) => !skippedKeys.has(k))
    .map(([k, v]) => {
      if (k === 'err' && v && typeof v === 'object') return `err=${JSON.stringify((v as { message?: string }).message ?? '')}`;
      return `${k}=${klogValue(v)}`;
    });
  return [header, JSON.stringify(String(rec.msg ?? '')), ...fields].join(' ');
}

function textDestination(out: NodeJS.WritableStream): DestinationStream {
  let pending = '';
  return new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      pending += chunk.toString();
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        out.write(formatTextLine(pending.slice(0, nl)) + '\n');
        pending = pending.slice(nl + 1);
      }
      cb();
    },
  });
}

/** Errors as type, message and their classification; a stack only for errors that are not typed (likely bugs). */
function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const e = err as Error & { kind?: string; code?: unknown };
  const typed = e.kind !== undefined || e.code !== undefined;
  return {
    type: e.name,
    message: e.message,
    ...(e.kind !== undefined ? { kind: e.kind } : {}),
    ...(e.code !== undefined ? { code: e.code } : {}),
    ...(typed ? {} : { stack: e.stack }),
  };
}

export interface LoggerOptions {
  format?: LogFormat;
  level?: string;
}

/** Creates the root logger; `text` is the default when the log's stream (stderr, as kubelet's) is a terminal. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const format = opts.format ?? (process.stderr.isTTY ? 'text' : 'json');
  const level = opts.level ?? process.env.NODELET_LOG_LEVEL ?? 'info';
  const dest = format === 'text' ? textDestination(process.stderr) : pino.destination({ fd: 2, sync: true });
  return pino({ name: 'nodelet', level, base: undefined, serializers: { err: serializeError } }, dest);
}

/** The process-wide logger; the CLI replaces its settings at start through configureLogger. */
export let logger: Logger = createLogger();

export function configureLogger(opts: LoggerOptions): Logger {
  logger = createLogger(opts);
  return logger;
}
