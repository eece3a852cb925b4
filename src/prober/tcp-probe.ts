// The tcpSocket probe: success when a TCP connection opens within the timeout (kubelet's DoTCPProbe).
import { connect } from 'node:net';
import type { ProbeOutcome } from './outcome.js';

/** `host:port` as Go's net.JoinHostPort writes it (IPv6 in brackets). */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** A connection failure in the words of Go's dialer, which is what kubelet's probe output shows. */
export function dialErrorText(err: unknown, hostPort: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return `dial tcp ${hostPort}: connect: connection refused`;
    case 'EHOSTUNREACH':
      return `dial tcp ${hostPort}: connect: no route to host`;
    case 'ENETUNREACH':
      return `dial tcp ${hostPort}: connect: network is unreachable`;
    case 'ECONNRESET':
      return `read tcp ${hostPort}: connection reset by peer`;
    default:
      return err instanceof Error ? err.message : String(err);
  }
}

/** Opens and closes one connection; a refusal or timeout is a failure. Rejects only when `signal` aborts. */
export function tcpProbe(host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<ProbeOutcome> {
  const hostPort = joinHostPort(host, port);
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const finish = (outcome?: ProbeOutcome, err?: unknown) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      if (outcome) resolve(outcome);
      else reject(err);
    };
    const onAbort = () => finish(undefined, signal!.reason);
    const timer = setTimeout(() => finish({ result: 'failure', output: `dial tcp ${hostPort}: i/o timeout` }), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) return onAbort();
    socket.once('connect', () => finish({ result: 'success', output: '' }));
    socket.once('error', (err) => finish({ result: 'failure', output: dialErrorText(err, hostPort) }));
  });
}
