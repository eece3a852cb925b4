// kubelet's healthz server (healthzBindAddress:healthzPort, 127.0.0.1:10248): plain HTTP, GET /healthz answers "ok".
// As kubelet's (cmd/kubelet/app/server.go: healthz.InstallHandler(mux) without checks), it has the ping check only.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from '../core/node-http.js';
import type { Logger } from '../core/log.js';

/** k8s.io/apiserver's healthz handler for the ping check: /healthz and /healthz/ping, `?verbose` lists the checks. */
export function healthzHandler(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const headers = { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' };
  if (url.pathname !== '/healthz' && url.pathname !== '/healthz/ping') {
    res.writeHead(404, headers).end('404 page not found\n');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { ...headers, Allow: 'GET, HEAD' }).end();
    return;
  }
  const verbose = url.pathname === '/healthz' && url.searchParams.has('verbose');
  res.writeHead(200, headers).end(verbose ? '[+]ping ok\nhealthz check passed\n' : 'ok');
}

export interface HealthzServerOptions {
  address: string;
  /** 0 disables the server, as in kubelet. */
  port: number;
  log: Logger;
  /** Wait before listening again after a failure (kubelet retries every 5 s). */
  retryMs?: number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * Serves until the signal aborts. A failure to listen (the port taken) is logged and retried, as kubelet does: the
 * node agent keeps running without its healthz.
 */
export async function runHealthzServer(opts: HealthzServerOptions, signal: AbortSignal): Promise<void> {
  if (opts.port === 0 || signal.aborted) return;
  const retryMs = opts.retryMs ?? 5_000;
  const sleep = opts.sleep ?? ((ms: number, s: AbortSignal) => new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    s.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  }));
  while (!signal.aborted) {
    const server: Server = createServer(healthzHandler);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port, opts.address, () => resolve());
      });
    } catch (err) {
      opts.log.error({ err, address: opts.address, port: opts.port }, 'Failed to start healthz server');
      server.close();
      await sleep(retryMs, signal);
      continue;
    }
    opts.log.info({ address: opts.address, port: opts.port }, 'Healthz server listening');
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }
}
