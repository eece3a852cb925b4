// The agent's structured logger: pino JSON lines by default, a readable one-line form on a terminal.
import { Writable } from 'node:stream';
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

export type LogFormat = 'json' | 'text';

const levelNames: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const skippedKeys = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name']);

/** Renders one pino JSON line as `HH:MM:SS.mmm LEVEL msg key=value ...` for people. */
export function formatTextLine(line: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const time = typeof rec.time === 'number' ? new Date(rec.time).toISOString().slice(11, 23) : '';
  const level = levelNames[rec.level as number] ?? String(rec.level);
  const fields = Object.entries(rec)
    .filter(([k]) => !skippedKeys.has(k))
    .map(([k, v]) => {
      if (k === 'err' && v && typeof v === 'object') {
        const err = v as { message?: string; stack?: string };
        return `err=${JSON.stringify(err.message ?? '')}`;
      }
      const s = typeof v === 'string' ? v : JSON.stringify(v);
      return `${k}=${/[\s"=]/.test(s) ? JSON.stringify(s) : s}`;
    });
  return `${time} ${level.padEnd(5)} ${String(rec.msg ?? '')}${fields.length ? ' ' + fields.join(' ') : ''}`;
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

/** Creates the root logger; `text` is chosen by default only when stderr is a terminal. */
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
