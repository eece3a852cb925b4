// The httpGet probe as kubelet sends it: GET with kube-probe's headers, TLS unverified, same-host redirects, 200..399 succeeds.
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from '../core/node-http.js';
import { request as httpsRequest } from 'node:https';
import { maxProbeOutputBytes, type ProbeOutcome } from './outcome.js';
import { dialErrorText } from './tcp-probe.js';
import type { KubeMinor } from '../core/kube-minor.js';

/**
 * The User-Agent of kubelet's HTTP and gRPC probes and HTTP hooks (pkg/probe/http request.go userAgent, pkg/probe/grpc):
 * kube-<purpose>/<major>.<minor> of kubelet's own version; nodelet's is the minor it serves (core/kube-minor.ts), not
 * the OpenAPI version of its API types (@kubernetes/client-node 1.4, v1.34).
 */
export function probeUserAgent(purpose: 'probe' | 'lifecycle', minor: KubeMinor): string {
  return `kube-${purpose}/1.${minor}`;
}

const redirectStatuses = new Set([301, 302, 303, 307, 308]);
/** Go's http.Client gives up at the 10th redirect. */
const maxRequests = 10;

export interface HttpProbeRequest {
  url: URL;
  /** httpHeaders in spec order; a name may repeat. */
  headers: { name: string; value: string }[];
  /** Sent unless the headers name one (probeUserAgent). */
  userAgent: string;
}

/** The header set kubelet's NewProbeRequest builds: User-Agent and `Accept: *\/*` unless given; an empty Accept removes it. */
export function probeRequestHeaders(headers: { name: string; value: string }[], userAgent: string): { headers: OutgoingHttpHeaders; host?: string } {
  const grouped = new Map<string, { name: string; values: string[] }>();
  for (const h of headers) {
    const key = h.name.toLowerCase();
    const entry = grouped.get(key) ?? { name: h.name, values: [] };
    entry.values.push(h.value);
    grouped.set(key, entry);
  }
  // Host is the request's authority, not a header line (Go's req.Host).
  const host = grouped.get('host')?.values[0];
  grouped.delete('host');
  if (!grouped.has('user-agent')) grouped.set('user-agent', { name: 'User-Agent', values: [userAgent] });
  const accept = grouped.get('accept');
  if (!accept) grouped.set('accept', { name: 'Accept', values: ['*/*'] });
  else if (accept.values[0] === '') grouped.delete('accept');
  const out: OutgoingHttpHeaders = {};
  for (const { name, values } of grouped.values()) out[name] = values.length === 1 ? values[0]! : values;
  return { headers: out, ...(host ? { host } : {}) };
}

function send(url: URL, headers: OutgoingHttpHeaders, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const options = { method: 'GET', headers, agent: false as const, signal, rejectUnauthorized: false };
    const req = url.protocol === 'https:' ? httpsRequest(url, options) : httpRequest(url, options);
    req.once('response', resolve);
    req.once('error', reject);
    req.end();
  });
}

/** Reads at most `limit` bytes of a body, then drops the connection (kubelet reads 10 KiB and no more). */
function readBody(response: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      response.removeAllListeners('data');
      resolve(Buffer.concat(chunks).subarray(0, limit).toString('utf8'));
    };
    response.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) {
        done();
        response.destroy();
      }
    });
    response.once('end', done);
    response.once('error', reject);
  });
}

/**
 * Runs one HTTP probe within `timeoutMs` (connection, redirects and body together, as Go's
 * Client.Timeout). Redirects are followed only while they stay on the original host name; a
 * redirect elsewhere ends the probe with a warning, which counts as success. Rejects only when
 * `signal` aborts; every network failure is a failure outcome.
 */
export async function httpProbe(probe: HttpProbeRequest, timeoutMs: number, signal?: AbortSignal): Promise<ProbeOutcome> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const { headers, host } = probeRequestHeaders(probe.headers, probe.userAgent);
  const first = probe.url;
  let url = first;
  let hostOverride = host;
  let stage = 'awaiting headers';
  try {
    for (let requests = 1; ; requests++) {
      const sent: OutgoingHttpHeaders = hostOverride ? { ...headers, Host: hostOverride } : { ...headers };
      const response = await send(url, sent, combined);
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (redirectStatuses.has(status) && location) {
        let target: URL;
        try {
          target = new URL(location, url);
        } catch (err) {
          response.destroy();
          return { result: 'failure', output: `Get "${url.href}": failed to parse Location header "${location}": ${(err as Error).message}` };
        }
        if (target.hostname === first.hostname && (target.protocol === 'http:' || target.protocol === 'https:')) {
          response.destroy();
          if (requests >= maxRequests) return { result: 'failure', output: `Get "${target.href}": stopped after ${maxRequests} redirects` };
          // Go keeps a custom Host only through a relative redirect.
          if (/^[a-z][a-z0-9+.-]*:|^\/\//i.test(location)) hostOverride = undefined;
          url = target;
          continue;
        }
      }
      stage = 'reading body';
      const body = await readBody(response, maxProbeOutputBytes);
      if (status >= 200 && status < 400) {
        if (status >= 300) return { result: 'warning', output: `Probe terminated redirects, Response body: ${body}` };
        return { result: 'success', output: body };
      }
      // kubelet keeps the body out of the failure message (it reaches events).
      return { result: 'failure', output: `HTTP probe failed with statuscode: ${status}` };
    }
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    if (timeout.aborted) {
      const why = stage === 'awaiting headers' ? 'Client.Timeout exceeded while awaiting headers' : 'Client.Timeout or context cancellation while reading body';
      return { result: 'failure', output: `Get "${url.href}": context deadline exceeded (${why})` };
    }
    // URL.hostname keeps IPv6 brackets, as Go's host:port does.
    const hostPort = `${url.hostname}:${url.port || (url.protocol === 'https:' ? 443 : 80)}`;
    return { result: 'failure', output: `Get "${url.href}": ${dialErrorText(err, hostPort)}` };
  }
}
