// A small HTTPS client for tests that talk to the test API server directly: one request, or a watch stream of events.
import { request as httpsRequest } from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';

/** Where and as whom: the server URL, its CA, and a client certificate or a bearer token. */
export interface ApiCredentials {
  url: string;
  caPem: string;
  certPem?: string;
  keyPem?: string;
  token?: string;
}

export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  headers: IncomingHttpHeaders;
  /** Parsed JSON when the answer is JSON, else undefined (see `text`). */
  body: T;
  text: string;
}

export interface RequestOptions {
  /** A string or Buffer goes as is, anything else as JSON. */
  body?: unknown;
  contentType?: string;
  accept?: string;
  timeoutMs?: number;
}

function open(creds: ApiCredentials, method: string, path: string, options: RequestOptions): Promise<IncomingMessage> {
  const headers: Record<string, string> = { Accept: options.accept ?? 'application/json' };
  const payload = options.body === undefined ? undefined : typeof options.body === 'string' || Buffer.isBuffer(options.body) ? options.body : JSON.stringify(options.body);
  if (payload !== undefined) {
    headers['Content-Type'] = options.contentType ?? 'application/json';
    headers['Content-Length'] = String(Buffer.byteLength(payload));
  }
  if (creds.token) headers.Authorization = `Bearer ${creds.token}`;
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      new URL(path, creds.url),
      {
        method,
        headers,
        // A connection per request: a pooled one may be the dead end of a server that restarted.
        agent: false,
        ca: creds.caPem,
        ...(creds.certPem ? { cert: creds.certPem } : {}),
        ...(creds.keyPem ? { key: creds.keyPem } : {}),
        timeout: options.timeoutMs ?? 10_000,
      },
      resolve,
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** One request; resolves with the status and the parsed body whatever the status. */
export async function apiRequest<T = Record<string, unknown>>(creds: ApiCredentials, method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
  const res = await open(creds, method, path, options);
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  let body: unknown;
  if (String(res.headers['content-type'] ?? '').startsWith('application/json') && text !== '') body = JSON.parse(text);
  return { status: res.statusCode ?? 0, headers: res.headers, body: body as T, text };
}

export interface WatchEvent {
  type: string;
  object: Record<string, unknown>;
}

/** An open watch: events as they come, `next()` waits for the next one; `close()` ends it. */
export interface WatchStream {
  status: number;
  next(timeoutMs?: number): Promise<WatchEvent | undefined>;
  /** Events received so far and not yet taken by next(). */
  readonly pending: WatchEvent[];
  /** Resolves when the server ended the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

/** Opens a watch (`path` should carry `watch=true` and any selectors/resourceVersion). */
export async function openWatch(creds: ApiCredentials, path: string, options: RequestOptions = {}): Promise<WatchStream> {
  const res = await open(creds, 'GET', path, { ...options, timeoutMs: options.timeoutMs ?? 600_000 });
  const pending: WatchEvent[] = [];
  const waiters: ((e: WatchEvent | undefined) => void)[] = [];
  let buffer = '';
  let done = false;
  const ended = new Promise<void>((resolve) => {
    const finish = (): void => {
      done = true;
      for (const w of waiters.splice(0)) w(undefined);
      resolve();
    };
    res.on('end', finish);
    res.on('close', finish);
    res.on('error', finish);
  });
  res.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (!line) continue;
      const event = JSON.parse(line) as WatchEvent;
      const waiter = waiters.shift();
      if (waiter) waiter(event);
      else pending.push(event);
    }
  });
  return {
    status: res.statusCode ?? 0,
    pending,
    ended,
    next(timeoutMs = 5000) {
      const queued = pending.shift();
      if (queued) return Promise.resolve(queued);
      if (done) return Promise.resolve(undefined);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          const i = waiters.indexOf(deliver);
          if (i >= 0) waiters.splice(i, 1);
          reject(new Error(`no watch event within ${timeoutMs} ms`));
        }, timeoutMs);
        const deliver = (e: WatchEvent | undefined): void => {
          clearTimeout(timer);
          resolve(e);
        };
        waiters.push(deliver);
      });
    },
    close() {
      res.destroy();
    },
  };
}
