// A logger for prober tests that records what was logged (message and bindings) instead of printing it.
import { pino, type Logger } from 'pino';
import { Writable } from 'node:stream';

export interface LogRecord {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export function recordingLogger(): { log: Logger; records: LogRecord[] } {
  const records: LogRecord[] = [];
  const dest = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line) records.push(JSON.parse(line) as LogRecord);
      cb();
    },
  });
  return { log: pino({ level: 'debug', base: undefined }, dest), records };
}
