// The agent's connection to the API server: JSON requests with a deadline each, a client-wide rate limit, typed errors,
// and watch streams.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from '../core/node-http.js';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { V1Status } from '@kubernetes/client-node';
import type { ApiServerConnection } from './kubeconfig.js';
import { TokenBucket } from './token-bucket.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * The longest watch event line read before the stream is treated as broken: kube-apiserver refuses request bodies
 * over 3 MiB, so no stored object's JSON comes near it.
 */
const MAX_WATCH_EVENT_LENGTH = 32 * 1024 * 1024;

export const mergePatch = 'application/merge-patch+json';
export const strategicMergePatch = 'application/strategic-merge-patch+json';

export interface ApiRequest {
  method: HttpMethod;
  /** Absolute API path, e.g. /api/v1/namespaces/default/pods/x/status */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Defaults to application/json; a patch names its kind. */
  contentType?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The API server answered with an error Status: the code and reason say how to react (kube's StatusReason). */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly status?: V1Status,
  ) {
    super(message);
  }
}

/** The API server could not be reached or did not answer in time: retry later. */
export class ApiUnavailableError extends Error {}

export const isNotFound = (err: unknown): boolean => err instanceof ApiError && err.code === 404;
export const isConflict = (err: unknown): boolean => err instanceof ApiError && err.code === 409 && err.reason !== 'AlreadyExists';
export const isAlreadyExists = (err: unknown): boolean => err instanceof ApiError && err.reason === 'AlreadyExists';
/** The resourceVersion asked for is older than the server keeps: list again. */
export const isGone = (err: unknown): boolean => err instanceof ApiError && (err.code === 410 || err.reason === 'Expired' || err.reason === 'Gone');

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export interface WatchRequest<T> {
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  signal: AbortSignal;
  /** A watch silent for this long (no event, no bookmark) is presumed dead and ends with ApiUnavailableError. */
  idleTimeoutMs: number;
  onEvent: (event: WatchEvent<T>) => void;
}

export interface KubeClientOptions {
  /** Deadline of a request without its own (kubelet's requests never wait forever either). */
  timeoutMs?: number;
  /** Client-wide rate limit, kubelet's kubeAPIQPS and kubeAPIBurst. */
  qps?: number;
  burst?: number;
  userAgent?: string;
  /**
   * The client certificate and key, when they rotate (kubelet's certificate manager): read for every request; when the
   * pair changed, the connections made with the old one are closed and new ones present the new pair.
   */
  clientCertificate?: ClientCertificateSource;
}

/** The client certificate in use now (PEM), for a client whose certificate is rotated while it runs. */
export interface ClientCertificateSource {
  current(): { cert: Buffer; key: Buffer };
}

function statusOf(body: string): V1Status | undefined {
  try {
    const parsed = JSON.parse(body) as V1Status & { kind?: string };
    return parsed && parsed.kind === 'Status' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function errorFromResponse(code: number, body: string, what: string): ApiError {
  const status = statusOf(body);
  const reason = status?.reason ?? (code === 404 ? 'NotFound' : code === 409 ? 'Conflict' : code === 410 ? 'Expired' : 'Unknown');
  const message = status?.message ?? `${what}: HTTP ${code}${body ? `: ${body.slice(0, 200)}` : ''}`;
  return new ApiError(code, reason, message, status);
}

/** Connections of one client: kubelet speaks HTTP/2, where no number of watches holds up a request; over HTTP/1.1 each open watch holds a socket. */
interface Agents {
  /** Requests, at most 16 connections at once. */
  requests: HttpAgent;
  /** Watches, one connection each and no limit: watches of configMaps and secrets (one per object pods reference) must never starve the node's lease and status updates. */
  watches: HttpAgent;
}
type AgentKind = keyof Agents;

export class KubeClient {
  private agents: Agents;
  /** The pair the agents' connections present, when it comes from a ClientCertificateSource. */
  private pair?: { cert: Buffer; key: Buffer };
  private readonly limiter: TokenBucket;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private requestCount = 0;

  constructor(
    private readonly conn: ApiServerConnection,
    opts: KubeClientOptions = {},
  ) {
    this.pair = opts.clientCertificate?.current();
    this.agents = this.newAgents();
    this.limiter = new TokenBucket(opts.qps ?? 50, opts.burst ?? 100);
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.userAgent = opts.userAgent ?? 'nodelet';
    this.certificates = opts.clientCertificate;
  }

  private readonly certificates: ClientCertificateSource | undefined;

  private newAgents(): Agents {
    return { requests: this.newAgent(16), watches: this.newAgent(Infinity) };
  }

  private newAgent(maxSockets: number): HttpAgent {
    const { conn, pair } = this;
    const cert = pair?.cert ?? conn.cert;
    const key = pair?.key ?? conn.key;
    const agentOptions = { keepAlive: true, maxSockets };
    return conn.server.protocol === 'https:'
      ? new HttpsAgent({
          ...agentOptions,
          ...(conn.ca ? { ca: conn.ca } : {}),
          ...(cert ? { cert } : {}),
          ...(key ? { key } : {}),
          ...(conn.tlsServerName ? { servername: conn.tlsServerName } : {}),
          rejectUnauthorized: !conn.insecureSkipTLSVerify,
        })
      : new HttpAgent(agentOptions);
  }

  /** A rotated client certificate: as kubelet's transport does, close every connection of the old one (watches reconnect). */
  private currentAgent(kind: AgentKind): HttpAgent {
    const next = this.certificates?.current();
    if (next && this.pair && (!next.cert.equals(this.pair.cert) || !next.key.equals(this.pair.key))) {
      const old = this.agents;
      this.pair = next;
      this.agents = this.newAgents();
      old.requests.destroy();
      old.watches.destroy();
    }
    return this.agents[kind];
  }

  /** The API server's URL, for logs. */
  get server(): string {
    return this.conn.server.origin;
  }

  /** Requests made so far (watches included). */
  get requests(): number {
    return this.requestCount;
  }

  /** One JSON request; resolves with the decoded body, rejects with ApiError or ApiUnavailableError. */
  async request<T>(req: ApiRequest): Promise<T> {
    const timeoutMs = req.timeoutMs ?? this.timeoutMs;
    const signal = req.signal ? AbortSignal.any([req.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
    await this.limiter.take(signal);
    const what = `${req.method} ${req.path}`;
    const res = await this.send('requests', req.method, req.path, req.query, req.body, req.contentType, signal, what);
    const body = await readBody(res, signal, what);
    const code = res.statusCode ?? 0;
    if (code < 200 || code >= 300) throw errorFromResponse(code, body, what);
    return (body ? JSON.parse(body) : undefined) as T;
  }

  /**
   * Streams a watch until the server ends it (resolves), the signal aborts (resolves), or it fails: an ERROR event
   * rejects with its Status as ApiError (410 Expired: list again), a broken or silent stream with ApiUnavailableError.
   */
  async watch<T>(req: WatchRequest<T>): Promise<void> {
    await this.limiter.take(req.signal);
    const controller = new AbortController();
    const signal = AbortSignal.any([req.signal, controller.signal]);
    const what = `watch ${req.path}`;
    let idle: NodeJS.Timeout | undefined;
    const armIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(() => controller.abort(new ApiUnavailableError(`${what}: no event for ${req.idleTimeoutMs} ms`)), req.idleTimeoutMs);
    };
    armIdle();
    try {
      const res = await this.send('watches', 'GET', req.path, { ...req.query, watch: 'true' }, undefined, undefined, signal, what);
      const code = res.statusCode ?? 0;
      if (code !== 200) throw errorFromResponse(code, await readBody(res, signal, what), what);
      let buffered = '';
      res.setEncoding('utf8');
      for await (const chunk of res as AsyncIterable<string>) {
        armIdle();
        buffered += chunk;
        let newline: number;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (!line) continue;
          const event = JSON.parse(line) as WatchEvent<T>;
          if (event.type === 'ERROR') {
            const status = event.object as V1Status;
            throw new ApiError(status.code ?? 500, status.reason ?? 'Unknown', status.message ?? `${what}: error event`, status);
          }
          req.onEvent(event);
        }
        // What is left is one unfinished event.
        if (buffered.length > MAX_WATCH_EVENT_LENGTH) throw new ApiUnavailableError(`${what}: an event longer than ${MAX_WATCH_EVENT_LENGTH} characters`);
      }
    } catch (err) {
      if (req.signal.aborted) return;
      if (controller.signal.aborted) throw controller.signal.reason;
      throw err;
    } finally {
      clearTimeout(idle);
    }
  }

  /** Closes idle connections (the agent is stopping). */
  close(): void {
    this.agents.requests.destroy();
    this.agents.watches.destroy();
  }

  private send(
    kind: AgentKind,
    method: HttpMethod,
    path: string,
    query: ApiRequest['query'],
    body: unknown,
    contentType: string | undefined,
    signal: AbortSignal,
    what: string,
  ): Promise<IncomingMessage> {
    this.requestCount++;
    const url = new URL(path, this.conn.server);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': this.userAgent };
    if (this.conn.token) headers.Authorization = `Bearer ${this.conn.token}`;
    if (payload) {
      headers['Content-Type'] = contentType ?? 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        req.destroy();
        reject(unavailable(what, signal.reason));
      };
      const req = send(url, { method, headers, agent: this.currentAgent(kind) }, (res) => {
        signal.removeEventListener('abort', onAbort);
        // Aborting after the headers ends the body stream, which the reader turns into the same error.
        signal.addEventListener('abort', () => res.destroy(unavailable(what, signal.reason)), { once: true });
        resolve(res);
      });
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      req.on('error', (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(signal.aborted ? unavailable(what, signal.reason) : new ApiUnavailableError(`${what}: ${err.message}`, { cause: err }));
      });
      req.end(payload);
    });
  }
}

function unavailable(what: string, reason: unknown): Error {
  if (reason instanceof ApiUnavailableError) return reason;
  const timedOut = reason instanceof DOMException && reason.name === 'TimeoutError';
  return new ApiUnavailableError(`${what}: ${timedOut ? 'timed out' : 'aborted'}`, { cause: reason });
}

async function readBody(res: IncomingMessage, signal: AbortSignal, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) chunks.push(chunk);
  } catch (err) {
    throw signal.aborted ? unavailable(what, signal.reason) : new ApiUnavailableError(`${what}: ${(err as Error).message}`, { cause: err });
  }
  return Buffer.concat(chunks).toString('utf8');
}
