// The kubelet API over HTTPS (port 10250): authentication, authorization, then /healthz, /pods, /configz,
// /containerLogs, and /exec, /attach, /portForward (proxied to the runtime's streaming server) and /run.
import { access } from 'node:fs/promises';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from '../core/node-http.js';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import type { SecureContextOptions } from 'node:tls';
import type { Duplex } from 'node:stream';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { CriError, kubeletErrorText } from '../cri/errors.js';
import type { Container, RuntimeService, StreamingService } from '../cri/types.js';
import { containerNameLabel, podUidLabel } from '../core/labels.js';
import type { Authenticator } from './authn.js';
import { authorizationErrorMessage, forbiddenMessage, requestAttributes, type Authorizer } from './authz.js';
import { readCriLog, type LogStream } from './cri-log.js';
import { healthz, type HealthCheck } from './healthz.js';
import { parseCommand, parsePodLogOptions, parsePorts, parseStreamOptions, RequestError, sinceNs } from './query.js';
import { isLoopbackStreamingUrl, proxyUpgrade } from './stream-proxy.js';
import type { KubeletMetrics } from './metrics.js';
import { resourceMetrics, type Summary } from './summary.js';
import { podContainers } from '../core/pod-containers.js';

export interface KubeletServerTls {
  /** The serving certificate (PEM chain) and key; empty while a requested one is not issued yet (handshakes then fail, as kubelet's). */
  cert: string;
  key: string;
  /** PEM bundle verifying client certificates; undefined: no client certificates are asked for. */
  clientCA?: string;
  /** Node's names ('TLSv1.2'); undefined: Node's default. */
  minVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  /** OpenSSL cipher names; empty: Node's default. */
  ciphers: string[];
}

export type ServerRuntime = Pick<RuntimeService, 'listContainers' | 'containerStatus' | 'listPodSandbox' | 'execSync'> & StreamingService;

export interface KubeletServerOptions {
  nodeName: string;
  address: string;
  port: number;
  tls: KubeletServerTls;
  authenticator: Authenticator;
  authorizer: Authorizer;
  /** The pods nodelet runs, with their status (kubelet's pod manager). */
  pods: () => V1Pod[];
  runtime: ServerRuntime;
  /** The latest relist's containers (undefined before the first): the exec path finds a running container there. */
  listedContainers?: () => Container[] | undefined;
  /** The configuration /configz shows. */
  configz: () => object;
  healthChecks: HealthCheck[];
  /** /metrics and /metrics/probes. */
  metrics: Pick<KubeletMetrics, 'registry' | 'probeRegistry'>;
  /** /stats/summary and /metrics/resource. */
  stats: { summary(): Promise<Summary>; cpuAndMemory(): Promise<Summary> };
  clock: Pick<Clock, 'now'>;
  log: Logger;
}

/** A route's answer to an upgrade request: the session URL on the runtime's streaming server. */
type UpgradeTarget = URL;

const notFoundBody = '404 page not found\n';

/** Path segments of a route, decoded; undefined when malformed. */
function segments(path: string): string[] | undefined {
  try {
    return path.split('/').filter((s) => s !== '').map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

/** kube's JSON for objects holding Dates: RFC 3339 with whole seconds. */
function apiJson(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key: string, v: unknown) {
    const raw = this[key];
    return raw instanceof Date ? raw.toISOString().replace(/\.\d{3}Z$/, 'Z') : v;
  });
}

/**
 * A runtime call of an exec, attach, port-forward or run whose refusal is answered as kubelet answers it: a 500 with the
 * error's text (grpc-go's `rpc error: code = ... desc = ...`); the streaming requests answer a NotFound with 404.
 */
async function refusedAsKubelet<T>(call: Promise<T>, notFoundStatus: 404 | 500): Promise<T> {
  try {
    return await call;
  } catch (err) {
    if (!(err instanceof CriError)) throw err;
    throw new RequestError(err.kind === 'NotFound' ? notFoundStatus : 500, kubeletErrorText(err));
  }
}

function specContainer(pod: V1Pod, name: string): V1Container | undefined {
  return podContainers(pod).find((c) => c.name === name);
}

export class KubeletServer {
  private server?: Server;
  /** The serving certificate in use (replaced by setServingCertificate). */
  private serving: { cert: string; key: string };
  private readonly sockets = new Set<Socket>();
  /** Streaming sessions (exec, attach, port-forward) being proxied now. */
  private sessions = 0;

  constructor(private readonly opts: KubeletServerOptions) {
    this.serving = { cert: opts.tls.cert, key: opts.tls.key };
  }

  /** The secure context: the serving certificate, the client CA, the protocol and cipher settings. */
  private secureContextOptions(): SecureContextOptions {
    const { tls } = this.opts;
    return {
      ...(this.serving.cert ? this.serving : {}),
      // Without a client CA no client certificate is asked for, so the context needs no trust store at all: an empty
      // list, because without one Node parses every root certificate it trusts into it and keeps them for nothing.
      ca: tls.clientCA || [],
      ...(tls.minVersion ? { minVersion: tls.minVersion } : {}),
      // Go keeps TLS 1.3's suites on whatever the list says; so does this.
      ...(tls.ciphers.length > 0 ? { ciphers: [...tls.ciphers, 'TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'].join(':') } : {}),
    };
  }

  /** Serves another certificate from the next handshake on (serverTLSBootstrap's rotation); open connections keep theirs. */
  setServingCertificate(pair: { cert: string; key: string }): void {
    this.serving = pair;
    this.server?.setSecureContext(this.secureContextOptions());
  }

  get activeSessions(): number {
    return this.sessions;
  }

  /** The port it listens on (the configured one, or the kernel's choice for port 0 in tests). */
  get port(): number {
    const address = this.server?.address();
    return typeof address === 'object' && address ? address.port : this.opts.port;
  }

  async listen(): Promise<void> {
    const server = createServer({
      ...this.secureContextOptions(),
      ...(this.opts.tls.clientCA ? { requestCert: true, rejectUnauthorized: false } : {}),
    });
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      this.handleRequest(req, res).catch((err: unknown) => {
        this.opts.log.error({ err, path: req.url }, 'kubelet API request failed');
        if (!res.headersSent) this.reply(res, 500, 'Internal Server Error');
        else res.destroy();
      });
    });
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.pause();
      this.handleUpgrade(req, socket, head).catch((err: unknown) => {
        this.opts.log.error({ err, path: req.url }, 'kubelet API upgrade request failed');
        rawReply(socket, 500, 'Internal Server Error');
      });
    });
    server.on('tlsClientError', (err, socket) => {
      this.opts.log.debug({ err: err.message, remote: socket.remoteAddress }, 'kubelet API TLS handshake failed');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port, this.opts.address, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  /** Stops listening and ends every connection, streaming sessions included. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  private reply(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
    res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), 'X-Content-Type-Options': 'nosniff' });
    res.end(body);
  }

  /** Authentication and authorization of any request: undefined when it may go on, else the refusal. */
  private async admit(req: IncomingMessage, path: string): Promise<{ status: number; body: string } | undefined> {
    const result = await this.opts.authenticator.authenticate(req);
    if (!result.user) {
      this.opts.log.debug({ path, reason: result.reason, remote: req.socket.remoteAddress }, 'kubelet API request unauthorized');
      return { status: 401, body: 'Unauthorized' };
    }
    const attrs = requestAttributes(result.user, req.method ?? '', path, this.opts.nodeName);
    for (const attr of attrs) {
      let decision;
      try {
        decision = await this.opts.authorizer.authorize(attr);
      } catch (err) {
        this.opts.log.error({ err, user: attr.user.name, verb: attr.verb, subresource: attr.subresource }, 'kubelet API authorization error');
        return { status: 500, body: authorizationErrorMessage(attr) };
      }
      if (decision.allowed) return undefined;
    }
    const subresources = attrs.map((a) => a.subresource);
    this.opts.log.debug({ user: attrs[0]!.user.name, verb: attrs[0]!.verb, subresources }, 'kubelet API request forbidden');
    return { status: 403, body: forbiddenMessage(attrs) };
  }

  private async handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://kubelet');
    const refusal = await this.admit(req, url.pathname);
    if (refusal) return this.reply(res, refusal.status, refusal.body);
    const parts = segments(url.pathname);
    if (!parts) return this.reply(res, 400, 'malformed path');
    const method = req.method ?? 'GET';
    const [root, ...rest] = parts;
    try {
      switch (root) {
        case 'healthz': {
          if (method !== 'GET' && method !== 'HEAD') return this.methodNotAllowed(res);
          const answer = healthz(this.opts.healthChecks, rest.length === 0 ? undefined : rest.join('/'), url.searchParams.has('verbose'));
          return answer ? this.reply(res, answer.status, answer.body) : this.reply(res, 404, notFoundBody);
        }
        case 'pods':
          if (rest.length > 0) break;
          if (method !== 'GET') return this.methodNotAllowed(res);
          return this.reply(res, 200, apiJson({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: this.opts.pods() }), 'application/json');
        case 'configz':
          if (rest.length > 0) break;
          if (method !== 'GET') return this.methodNotAllowed(res);
          return this.reply(res, 200, JSON.stringify(this.opts.configz()), 'application/json');
        case 'metrics':
          if (rest.length > 1) break;
          if (method !== 'GET') return this.methodNotAllowed(res);
          return await this.metrics(res, rest[0]);
        case 'stats':
          if (rest.length !== 1 || rest[0] !== 'summary') break;
          if (method !== 'GET' && method !== 'POST') return this.methodNotAllowed(res);
          return await this.statsSummary(res, url.searchParams);
        case 'containerLogs':
          if (method !== 'GET') return this.methodNotAllowed(res);
          return await this.containerLogs(req, res, rest, url.searchParams);
        case 'run':
          if (rest.length !== 3 && rest.length !== 4) break;
          if (method !== 'POST') return this.methodNotAllowed(res);
          return await this.run(res, rest, url.searchParams);
        case 'exec':
        case 'attach':
        case 'portForward':
          if (!this.streamingPathValid(root, rest)) break;
          if (method !== 'GET' && method !== 'POST') return this.methodNotAllowed(res);
          // A streaming session needs the connection upgraded (SPDY/3.1 or WebSocket); the runtime's server says so too.
          return this.reply(res, 400, 'Upgrade request required');
      }
    } catch (err) {
      if (err instanceof RequestError) return this.reply(res, err.status, err.message);
      throw err;
    }
    this.reply(res, 404, notFoundBody);
  }

  /** /metrics, /metrics/probes, /metrics/resource in the Prometheus text format. */
  private async metrics(res: ServerResponse, which: string | undefined): Promise<void> {
    const { metrics } = this.opts;
    let text: string;
    let contentType = 'text/plain; version=0.0.4; charset=utf-8';
    if (which === undefined) {
      text = await metrics.registry.metrics();
      contentType = metrics.registry.contentType;
    } else if (which === 'probes') {
      text = await metrics.probeRegistry.metrics();
      contentType = metrics.probeRegistry.contentType;
    } else if (which === 'resource') {
      // As kubelet's collector: a failed read is the scrape error gauge, not a failed scrape.
      const summary = await this.opts.stats.cpuAndMemory().catch((err: unknown) => {
        this.opts.log.error({ err }, 'Error getting summary for resourceMetric prometheus endpoint');
        return undefined;
      });
      text = resourceMetrics(summary);
    } else {
      return this.reply(res, 404, notFoundBody);
    }
    this.reply(res, 200, text, contentType);
  }

  /** /stats/summary: kubelet's statsapi Summary; only_cpu_and_memory=true keeps cpu and memory only. */
  private async statsSummary(res: ServerResponse, query: URLSearchParams): Promise<void> {
    const only = query.get('only_cpu_and_memory');
    if (only !== null && only !== 'true' && only !== 'false') throw new RequestError(400, `invalid only_cpu_and_memory: "${only}"`);
    let summary: Summary;
    try {
      summary = only === 'true' ? await this.opts.stats.cpuAndMemory() : await this.opts.stats.summary();
    } catch (err) {
      this.opts.log.error({ err }, 'Failed to get the stats summary');
      return this.reply(res, 500, `Internal Error: failed to get summary stats: ${(err as Error).message}`);
    }
    this.reply(res, 200, JSON.stringify(summary), 'application/json');
  }

  private methodNotAllowed(res: ServerResponse): void {
    this.reply(res, 405, '405: Method Not Allowed');
  }

  private streamingPathValid(root: string, rest: string[]): boolean {
    return root === 'portForward' ? rest.length === 2 || rest.length === 3 : rest.length === 3 || rest.length === 4;
  }

  private async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://kubelet');
    const refusal = await this.admit(req, url.pathname);
    if (refusal) return rawReply(socket, refusal.status, refusal.body);
    const parts = segments(url.pathname);
    const [root, ...rest] = parts ?? [];
    if (!parts || (root !== 'exec' && root !== 'attach' && root !== 'portForward') || !this.streamingPathValid(root, rest)) {
      return rawReply(socket, 404, notFoundBody);
    }
    if (req.method !== 'GET' && req.method !== 'POST') return rawReply(socket, 405, '405: Method Not Allowed');
    let target: UpgradeTarget;
    try {
      target = await this.sessionUrl(root, rest, url.searchParams);
    } catch (err) {
      if (err instanceof RequestError) return rawReply(socket, err.status, err.message);
      throw err;
    }
    if (!isLoopbackStreamingUrl(target)) {
      this.opts.log.error({ url: target.origin }, 'The runtime streaming server is not on loopback; refusing to proxy to it');
      return rawReply(socket, 500, 'the container runtime streaming server must listen on loopback');
    }
    if (socket.destroyed) return;
    this.sessions++;
    proxyUpgrade(req, socket, head, target, { onClose: () => this.sessions-- });
  }

  /** The pod by namespace and name (and UID when the path names one). */
  private pod(namespace: string, name: string, uid?: string): V1Pod | undefined {
    return this.opts.pods().find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name && (!uid || p.metadata?.uid === uid));
  }

  /** The pod's instances of a container in the runtime, newest first. */
  private async instances(pod: V1Pod, container: string): Promise<Container[]> {
    const list = await this.opts.runtime.listContainers({ labelSelector: { [podUidLabel]: pod.metadata!.uid!, [containerNameLabel]: container } });
    return list.sort((a, b) => b.createdAt - a.createdAt || b.metadata.attempt - a.metadata.attempt);
  }

  /**
   * `call` on the running instance of a container. kubelet asks the runtime at every request and looks among the running
   * containers only: an unknown container and one that is not running are both `container not found`, a 500 (its error
   * is no gRPC NotFound). The relist, at most a second old, spares the request that runtime call; when the runtime refuses
   * the instance the relist named (it stopped since, and may have been restarted), the runtime's listing decides.
   */
  private async onRunningInstance<T>(pod: V1Pod, containerName: string, call: (container: Container) => Promise<T>): Promise<T> {
    const notFound = () => new RequestError(500, `container not found ("${containerName}")`);
    if (!specContainer(pod, containerName)) throw notFound();
    const isIt = (c: Container) => c.state === 'CONTAINER_RUNNING' && c.labels[podUidLabel] === pod.metadata!.uid && c.labels[containerNameLabel] === containerName;
    const fromRuntime = async () => (await this.instances(pod, containerName)).find(isIt);
    const listed = this.opts.listedContainers?.()?.find(isIt);
    if (listed) {
      try {
        return await call(listed);
      } catch (err) {
        if (!(err instanceof CriError)) throw err;
        const running = await fromRuntime();
        if (running?.id === listed.id) throw err;
        if (!running) throw notFound();
        return call(running);
      }
    }
    const running = await fromRuntime();
    if (!running) throw notFound();
    return call(running);
  }

  /** exec / attach / portForward: the session URL the runtime gives for the request. */
  private async sessionUrl(kind: 'exec' | 'attach' | 'portForward', rest: string[], query: URLSearchParams): Promise<URL> {
    const [namespace, podName] = rest as [string, string];
    const uid = (kind === 'portForward' ? rest.length === 3 : rest.length === 4) ? rest[2] : undefined;
    const pod = this.pod(namespace, podName, uid);
    if (!pod) throw new RequestError(404, 'pod does not exist');
    if (kind === 'portForward') {
      const ports = parsePorts(query);
      const sandboxes = await this.opts.runtime.listPodSandbox({ state: 'SANDBOX_READY', labelSelector: { [podUidLabel]: pod.metadata!.uid! } });
      const sandbox = sandboxes.sort((a, b) => b.createdAt - a.createdAt)[0];
      if (!sandbox) throw new RequestError(404, `pod not found ("${podName}_${namespace}")`);
      return new URL(await refusedAsKubelet(this.opts.runtime.portForward(sandbox.id, ports), 404));
    }
    const containerName = rest[rest.length - 1]!;
    const streams = parseStreamOptions(query);
    const command = kind === 'exec' ? parseCommand(query) : [];
    const url = await refusedAsKubelet(this.onRunningInstance(pod, containerName, (running) => kind === 'exec'
      ? this.opts.runtime.exec(running.id, command, streams)
      : this.opts.runtime.attach(running.id, streams)), 404);
    return new URL(url);
  }

  /** POST /run: the command's output (stdout, then stderr) through ExecSync, as kubelet's RunInContainer. */
  private async run(res: ServerResponse, rest: string[], query: URLSearchParams): Promise<void> {
    const [namespace, podName] = rest as [string, string];
    const containerName = rest[rest.length - 1]!;
    const pod = this.pod(namespace, podName, rest.length === 4 ? rest[2] : undefined);
    if (!pod) throw new RequestError(404, 'pod does not exist');
    const cmd = (query.get('cmd') ?? '').split(/\s+/).filter(Boolean);
    if (cmd.length === 0) throw new RequestError(400, 'missing cmd');
    const result = await refusedAsKubelet(this.onRunningInstance(pod, containerName, (running) => this.opts.runtime.execSync(running.id, cmd, 0)), 500);
    if (result.exitCode !== 0) {
      return this.reply(res, 500, `command '${cmd.join(' ')}' exited with ${result.exitCode}: ${result.stderr.toString()}`);
    }
    this.reply(res, 200, Buffer.concat([result.stdout, result.stderr]).toString('latin1'), 'application/json');
  }

  /** GET /containerLogs/{namespace}/{pod}/{container}: the container's log as kubelet serves it. */
  private async containerLogs(req: IncomingMessage, res: ServerResponse, rest: string[], query: URLSearchParams): Promise<void> {
    const [namespace, podName, containerName] = rest;
    if (!namespace) throw new RequestError(400, '{"message": "Missing podNamespace."}');
    if (!podName) throw new RequestError(400, '{"message": "Missing podID."}');
    if (!containerName) throw new RequestError(400, '{"message": "Missing container name."}');
    if (rest.length > 3) return this.reply(res, 404, notFoundBody);
    const opts = parsePodLogOptions(query);
    const pod = this.pod(namespace, podName);
    if (!pod) throw new RequestError(404, `pod "${podName}" does not exist`);
    if (!specContainer(pod, containerName)) throw new RequestError(404, `container "${containerName}" not found in pod "${podName}"`);
    const instances = await this.instances(pod, containerName);
    const instance = opts.previous ? instances[1] : instances[0];
    if (!instance) {
      if (opts.previous) throw new RequestError(400, `previous terminated container "${containerName}" in pod "${podName}" not found`);
      const waiting = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.ephemeralContainerStatuses ?? [])].find((s) => s.name === containerName)?.state?.waiting;
      throw new RequestError(400, `container "${containerName}" in pod "${podName}" is waiting to start: ${waiting?.reason ?? 'ContainerCreating'}`);
    }
    const status = await this.opts.runtime.containerStatus(instance.id);
    const path = status.logPath;
    try {
      await access(path);
    } catch (err) {
      throw new RequestError(400, `failed to open log file "${path}": ${(err as Error).message}`);
    }
    const aborted = new AbortController();
    res.once('close', () => aborted.abort());
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked', 'X-Content-Type-Options': 'nosniff' });
    res.flushHeaders();
    const sink = (chunk: Buffer, _stream: LogStream): Promise<void> => {
      if (aborted.signal.aborted) return Promise.reject(new Error('client gone'));
      if (res.write(chunk)) return Promise.resolve();
      return new Promise((resolve) => {
        const done = () => {
          res.off('drain', done);
          aborted.signal.removeEventListener('abort', done);
          resolve();
        };
        res.once('drain', done);
        aborted.signal.addEventListener('abort', done, { once: true });
      });
    };
    try {
      await readCriLog(
        path,
        { ...(opts.tailLines !== undefined ? { tailLines: opts.tailLines } : {}), ...(opts.limitBytes !== undefined ? { limitBytes: opts.limitBytes } : {}), ...(sinceNs(opts, this.opts.clock.now()) !== undefined ? { sinceNs: sinceNs(opts, this.opts.clock.now())! } : {}), timestamps: opts.timestamps, follow: opts.follow },
        sink,
        aborted.signal,
        { isRunning: async () => (await this.opts.runtime.containerStatus(instance.id).catch(() => undefined))?.state === 'CONTAINER_RUNNING' },
      );
    } catch (err) {
      if (!aborted.signal.aborted) this.opts.log.warn({ err, path, remote: req.socket.remoteAddress }, 'Reading a container log failed');
    }
    res.end();
  }
}

/** An HTTP answer written straight to a socket whose request asked for an upgrade; the connection then closes. */
function rawReply(socket: Duplex, status: number, body: string): void {
  if (socket.destroyed) return;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
  );
}
