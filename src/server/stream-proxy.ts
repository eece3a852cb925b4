// Hands an upgraded client connection (SPDY/3.1 or WebSocket) to a session URL of the runtime's streaming server, as
// kubelet's UpgradeAwareHandler does: the client's request is replayed to that URL, then both sockets are piped, so the
// runtime's server speaks the protocol (streams, exit codes, stdin, tty, resize) and nodelet only moves bytes.
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { IncomingMessage } from 'node:http';

/** The runtime's streaming server must be on loopback: nodelet never proxies a session elsewhere. */
export function isLoopbackStreamingUrl(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return url.protocol === 'http:' && (host === 'localhost' || host === '::1' || /^127\./.test(host));
}

/** The request line and headers sent to the streaming server: the client's, for the session URL's path and host. */
export function upgradeRequestHead(req: Pick<IncomingMessage, 'method' | 'rawHeaders'>, target: URL): string {
  const lines = [`${req.method ?? 'GET'} ${target.pathname}${target.search} HTTP/1.1`, `Host: ${target.host}`];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    const lower = name.toLowerCase();
    // The client's credentials stay here; the host is the runtime's.
    if (lower === 'host' || lower === 'authorization' || lower === 'content-length' || lower === 'transfer-encoding') continue;
    lines.push(`${name}: ${req.rawHeaders[i + 1]!}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

export interface ProxyOptions {
  /** Called once when both sides are closed (for the count of open sessions). */
  onClose?: () => void;
  /** Connect timeout to the streaming server. */
  connectTimeoutMs?: number;
}

/**
 * Pipes the client's upgraded socket to the session: either side closing or failing closes the other, so a client
 * that goes away ends the session on the runtime's server (which then ends the exec or port-forward connection).
 */
export function proxyUpgrade(req: IncomingMessage, client: Duplex, head: Buffer, target: URL, opts: ProxyOptions = {}): void {
  const backend: Socket = connect({ host: target.hostname.replace(/^\[|\]$/g, ''), port: Number(target.port || 80) });
  let closed = 0;
  const closeOne = () => {
    if (++closed === 2) opts.onClose?.();
  };
  const timer = setTimeout(() => backend.destroy(new Error('timed out connecting to the runtime streaming server')), opts.connectTimeoutMs ?? 10_000);
  backend.setNoDelay(true);
  backend.once('connect', () => {
    clearTimeout(timer);
    backend.write(upgradeRequestHead(req, target));
    if (head.length > 0) backend.write(head);
    backend.pipe(client);
    client.pipe(backend);
  });
  backend.once('close', () => {
    clearTimeout(timer);
    client.destroy();
    closeOne();
  });
  client.once('close', () => {
    backend.destroy();
    closeOne();
  });
  backend.on('error', (err) => {
    if (!client.destroyed && backend.bytesRead === 0) {
      client.end(`HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nerror dialing the runtime streaming server: ${err.message}`);
    } else client.destroy();
  });
  client.on('error', () => backend.destroy());
}
