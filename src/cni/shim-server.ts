// Serves the nodelet-cni shim on a unix socket: each CNI call containerd makes becomes a pod network operation.
import { chmod, lstat, mkdir, rm } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { logger as rootLogger, type Logger } from '../core/log.js';
import type { PodNetwork } from './pod-network.js';
import { convertResult, isSupportedVersion, parseCniArgs, podIdentity, SUPPORTED_CNI_VERSIONS } from './protocol.js';
import { CniError, CniErrorCode, type CniRuntimeConf } from './types.js';

export const DEFAULT_CNI_SOCKET = '/run/nodelet/cni.sock';

/** The shim stops waiting after 120 s; answering (with a timeout error) before that keeps the message useful. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 110_000;

/** A request is a few CNI_* lines and a network config; anything near this is not a shim talking. */
const MAX_REQUEST_BYTES = 4 << 20;

/** The shim writes its whole request at once; a client silent this long is gone. */
const READ_TIMEOUT_MS = 30_000;

/** What the server needs from the pod network (an interface so tests can stand in for it). */
export type ShimBackend = Pick<PodNetwork, 'setUp' | 'tearDown' | 'check'>;

export interface CniShimServerOptions {
  backend: ShimBackend;
  socketPath?: string;
  requestTimeoutMs?: number;
  log?: Logger;
}

/** A decoded shim request: the CNI_* environment the shim got, and its stdin bytes. */
export interface ShimRequest {
  env: Record<string, string>;
  stdin: Buffer;
}

/** What the shim must print on stdout, and its exit code. */
export interface ShimResponse {
  exitCode: number;
  stdout: string;
}

/** Decodes `KEY=VALUE\n` lines up to an empty line, then raw stdin bytes. Only CNI_* keys are kept. */
export function parseShimRequest(buf: Buffer): ShimRequest {
  const env: Record<string, string> = {};
  let pos = 0;
  for (;;) {
    const nl = buf.indexOf(0x0a, pos);
    if (nl < 0) throw new CniError({ code: CniErrorCode.IoFailure, msg: 'truncated shim request: the environment block has no end' });
    const line = buf.subarray(pos, nl).toString('utf8');
    pos = nl + 1;
    if (line === '') break;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new CniError({ code: CniErrorCode.IoFailure, msg: `malformed shim request line ${JSON.stringify(line.slice(0, 80))}` });
    const key = line.slice(0, eq);
    if (key.startsWith('CNI_')) env[key] = line.slice(eq + 1);
  }
  return { env, stdin: buf.subarray(pos) };
}

export function encodeShimResponse(response: ShimResponse): Buffer {
  return Buffer.concat([Buffer.from(`${response.exitCode}\n`), Buffer.from(response.stdout)]);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export class CniShimServer {
  readonly socketPath: string;
  readonly #backend: ShimBackend;
  readonly #requestTimeoutMs: number;
  readonly #log: Logger | undefined;
  #server: Server | undefined;
  /** Connections still sending their request; closed at shutdown. */
  readonly #reading = new Set<Socket>();
  readonly #inflight = new Set<Promise<void>>();

  constructor(opts: CniShimServerOptions) {
    this.socketPath = opts.socketPath ?? DEFAULT_CNI_SOCKET;
    this.#backend = opts.backend;
    this.#requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#log = opts.log;
  }

  get #logger(): Logger {
    return this.#log ?? rootLogger;
  }

  /** Listens on the socket (owner-only), replacing a socket file left by a previous run. */
  async listen(): Promise<void> {
    if (this.#server) throw new Error('CNI shim server is already listening');
    await mkdir(dirname(this.socketPath), { recursive: true, mode: 0o755 });
    await removeStaleSocket(this.socketPath);
    // Half-open: the shim ends its side after the request and still reads the answer.
    const server = createServer({ allowHalfOpen: true }, (socket) => this.#accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (err) => this.#logger.error({ err, socket: this.socketPath }, 'CNI shim server error'));
    this.#server = server;
    await chmod(this.socketPath, 0o600);
    this.#logger.info({ socket: this.socketPath }, 'CNI shim server listening');
  }

  /** Stops accepting, drops connections that have not sent a full request, and waits for requests in progress. */
  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.#reading) socket.destroy();
    this.#reading.clear();
    await Promise.allSettled([...this.#inflight]);
    await closed;
    await rm(this.socketPath, { force: true });
  }

  #accept(socket: Socket): void {
    const chunks: Buffer[] = [];
    let size = 0;
    this.#reading.add(socket);
    socket.setTimeout(READ_TIMEOUT_MS, () => socket.destroy());
    socket.on('error', (err) => this.#logger.debug({ err }, 'CNI shim connection error'));
    socket.on('close', () => this.#reading.delete(socket));
    socket.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        socket.destroy();
        return;
      }
      chunks.push(chunk);
    });
    socket.on('end', () => {
      this.#reading.delete(socket);
      socket.setTimeout(0);
      const work = this.#respond(socket, Buffer.concat(chunks));
      this.#inflight.add(work);
      void work.finally(() => this.#inflight.delete(work));
    });
  }

  async #respond(socket: Socket, raw: Buffer): Promise<void> {
    let response: ShimResponse;
    try {
      response = await this.handle(parseShimRequest(raw), AbortSignal.timeout(this.#requestTimeoutMs));
    } catch (err) {
      response = errorResponse(err, '1.0.0');
    }
    if (!socket.destroyed) socket.end(encodeShimResponse(response));
  }

  /** Maps one CNI call to the pod network and renders what the shim must print. Never throws. */
  async handle(request: ShimRequest, signal?: AbortSignal): Promise<ShimResponse> {
    const { env } = request;
    const command = env.CNI_COMMAND ?? '';
    let cniVersion = '1.0.0';
    let log = this.#logger;
    try {
      let conf: Record<string, unknown> = {};
      if (request.stdin.length > 0 || command !== 'VERSION') {
        let parsed: unknown;
        try {
          parsed = JSON.parse(request.stdin.toString('utf8'));
        } catch (err) {
          throw new CniError({ code: CniErrorCode.DecodingFailure, msg: 'network configuration on stdin is not JSON', cause: err });
        }
        if (!isObject(parsed)) throw new CniError({ code: CniErrorCode.DecodingFailure, msg: 'network configuration on stdin is not an object' });
        conf = parsed;
      }
      if (typeof conf.cniVersion === 'string') cniVersion = conf.cniVersion;
      if (!isSupportedVersion(cniVersion)) {
        const requested = cniVersion;
        cniVersion = '1.0.0';
        throw new CniError({
          code: CniErrorCode.IncompatibleVersion,
          msg: `CNI version ${requested} is not supported`,
          details: `supported: ${SUPPORTED_CNI_VERSIONS.join(', ')}`,
        });
      }
      if (command === 'VERSION') {
        return { exitCode: 0, stdout: JSON.stringify({ cniVersion, supportedVersions: [...SUPPORTED_CNI_VERSIONS] }) };
      }
      if (command !== 'ADD' && command !== 'DEL' && command !== 'CHECK') {
        throw new CniError({
          code: CniErrorCode.InvalidEnvironment,
          msg: command ? `CNI_COMMAND ${command} is not supported` : 'CNI_COMMAND is not set',
        });
      }
      const required = command === 'DEL' ? ['CNI_CONTAINERID', 'CNI_IFNAME'] : ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'];
      const missing = required.filter((key) => !env[key]);
      if (missing.length > 0) {
        throw new CniError({ code: CniErrorCode.InvalidEnvironment, msg: `missing environment variables: ${missing.join(', ')}` });
      }
      const rt: CniRuntimeConf = {
        containerId: env.CNI_CONTAINERID ?? '',
        netns: env.CNI_NETNS ?? '',
        ifName: env.CNI_IFNAME ?? '',
        args: parseCniArgs(env.CNI_ARGS),
        // containerd put the capability args its conflist declares (e.g. portMappings) into runtimeConfig.
        capabilityArgs: isObject(conf.runtimeConfig) ? conf.runtimeConfig : {},
      };
      const pod = podIdentity(rt.args);
      log = log.child({ ...(pod ? { pod } : {}), sandboxId: rt.containerId, command });
      log.debug('CNI shim request');
      switch (command) {
        case 'ADD': {
          const result = await this.#backend.setUp(rt, signal);
          return { exitCode: 0, stdout: JSON.stringify(convertResult(result, cniVersion)) };
        }
        case 'DEL':
          await this.#backend.tearDown(rt, signal);
          return { exitCode: 0, stdout: '' };
        case 'CHECK':
          await this.#backend.check(rt, signal);
          return { exitCode: 0, stdout: '' };
      }
    } catch (err) {
      log.warn({ err, command }, 'CNI shim request failed');
      return errorResponse(err, cniVersion);
    }
  }
}

function errorResponse(err: unknown, cniVersion: string): ShimResponse {
  const cniError =
    err instanceof CniError
      ? err
      : new CniError({ code: CniErrorCode.Internal, msg: err instanceof Error ? err.message : String(err), cause: err });
  return { exitCode: 1, stdout: JSON.stringify(cniError.toCniJson(cniVersion)) };
}

/**
 * Removes a socket file left by a previous run. A socket someone still answers on, or a path that is not a
 * socket, is an error rather than something to delete.
 */
async function removeStaleSocket(path: string): Promise<void> {
  let info;
  try {
    info = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!info.isSocket()) throw new Error(`${path} exists and is not a socket; refusing to replace it`);
  const inUse = await new Promise<boolean>((resolve) => {
    const probe = createConnection(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (inUse) throw new Error(`another process is serving ${path}`);
  await rm(path, { force: true });
}
