// The kubelet API's query parameters, validated as kubelet decodes them: a malformed value is a 400 naming the parameter.
import type { StreamOptions } from '../cri/types.js';
import { parseLogTimestamp } from './cri-log.js';

/** A request the server refuses; `status` is the HTTP status, the message the body. */
export class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Go's strconv.ParseBool, as kube's query decoding uses it. */
export function parseBoolParam(query: URLSearchParams, name: string): boolean {
  const value = query.get(name);
  if (value === null) return false;
  if (['1', 't', 'T', 'true', 'TRUE', 'True', ''].includes(value)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value)) return false;
  throw new RequestError(400, `invalid value for query parameter "${name}": "${value}" is not a boolean`);
}

function intParam(query: URLSearchParams, name: string): number | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  if (!/^[+-]?\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new RequestError(400, `invalid value for query parameter "${name}": "${value}" is not an integer`);
  }
  return Number(value);
}

/** kube's PodLogOptions as /containerLogs takes them. */
export interface PodLogOptions {
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  limitBytes?: number;
  sinceSeconds?: number;
  /** sinceTime in nanoseconds since the epoch. */
  sinceTimeNs?: bigint;
}

/** Decodes and validates (kube's ValidatePodLogOptions) the query of /containerLogs. */
export function parsePodLogOptions(query: URLSearchParams): PodLogOptions {
  const opts: PodLogOptions = {
    follow: parseBoolParam(query, 'follow'),
    previous: parseBoolParam(query, 'previous'),
    timestamps: parseBoolParam(query, 'timestamps'),
  };
  const tailLines = intParam(query, 'tailLines');
  const limitBytes = intParam(query, 'limitBytes');
  const sinceSeconds = intParam(query, 'sinceSeconds');
  const sinceTime = query.get('sinceTime');
  if (tailLines !== undefined) {
    if (tailLines < 0) throw new RequestError(422, `tailLines: Invalid value: ${tailLines}: must be greater than or equal to 0`);
    opts.tailLines = tailLines;
  }
  if (limitBytes !== undefined) {
    if (limitBytes < 1) throw new RequestError(422, `limitBytes: Invalid value: ${limitBytes}: must be greater than 0`);
    opts.limitBytes = limitBytes;
  }
  if (sinceSeconds !== undefined) {
    if (sinceSeconds < 1) throw new RequestError(422, `sinceSeconds: Invalid value: ${sinceSeconds}: must be greater than 0`);
    opts.sinceSeconds = sinceSeconds;
  }
  if (sinceTime !== null) {
    try {
      opts.sinceTimeNs = parseLogTimestamp(sinceTime).timeNs;
    } catch {
      throw new RequestError(400, `invalid value for query parameter "sinceTime": "${sinceTime}" is not an RFC 3339 time`);
    }
  }
  if (opts.sinceSeconds !== undefined && opts.sinceTimeNs !== undefined) {
    throw new RequestError(422, 'sinceTime: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified');
  }
  return opts;
}

/** kubelet's NewLogOptions: the later of sinceSeconds before now and sinceTime. */
export function sinceNs(opts: PodLogOptions, nowMs: number): bigint | undefined {
  if (opts.sinceSeconds !== undefined) return BigInt(nowMs - opts.sinceSeconds * 1000) * 1_000_000n;
  return opts.sinceTimeNs;
}

/** remotecommand's NewOptions: input, output, error, tty ("1" is true); tty drops stderr; one stream at least. */
export function parseStreamOptions(query: URLSearchParams): StreamOptions {
  const flag = (name: string) => query.get(name) === '1';
  const tty = flag('tty');
  const streams: StreamOptions = { stdin: flag('input'), stdout: flag('output'), stderr: flag('error') && !tty, tty };
  if (!streams.stdin && !streams.stdout && !streams.stderr) throw new RequestError(400, 'you must specify at least 1 of stdin, stdout, stderr');
  return streams;
}

/** The exec command (repeated `command`). */
export function parseCommand(query: URLSearchParams): string[] {
  const command = query.getAll('command');
  if (command.length === 0) throw new RequestError(400, 'missing command');
  return command;
}

/** Port-forward's `port` parameters (WebSocket clients name them; SPDY clients name them per stream). */
export function parsePorts(query: URLSearchParams): number[] {
  return query.getAll('port').map((value) => {
    const port = Number(value);
    if (!/^\d+$/.test(value) || port < 1 || port > 65535) throw new RequestError(400, `invalid value for query parameter "port": "${value}" is not a port number`);
    return port;
  });
}
