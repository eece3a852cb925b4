// The agent's local read-only API on a unix socket: the pods it runs with their status (like kubelet's /pods).
import { createServer, request, type Server } from 'node:http';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';

/** JSON as the API server writes it: timestamps in RFC 3339 with whole seconds. */
export function toApiJson(value: unknown, indent?: number): string {
  return JSON.stringify(
    value,
    function (this: Record<string, unknown>, key: string, v: unknown) {
      const raw = this[key];
      return raw instanceof Date ? raw.toISOString().replace(/\.\d{3}Z$/, 'Z') : v;
    },
    indent,
  );
}

export function podList(pods: V1Pod[]): object {
  return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: pods };
}

export class StatusApi {
  private server?: Server;

  constructor(
    private readonly socketPath: string,
    private readonly pods: () => V1Pod[],
  ) {}

  async listen(): Promise<void> {
    await mkdir(dirname(this.socketPath), { recursive: true });
    await rm(this.socketPath, { force: true });
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method === 'GET' && path === '/pods') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(toApiJson(podList(this.pods())));
      } else if (req.method === 'GET' && path === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.socketPath, () => resolve());
    });
    await chmod(this.socketPath, 0o600);
    this.server = server;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(this.socketPath, { force: true });
  }
}

/** Fetches the running agent's pods (used by `nodelet pods`, tests and the benchmark). */
export function fetchPods(socketPath: string, timeoutMs = 5000): Promise<V1Pod[]> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/pods', method: 'GET', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`nodelet answered ${res.statusCode}: ${body}`));
        try {
          resolve((JSON.parse(body) as { items: V1Pod[] }).items);
        } catch (err) {
          reject(err);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from nodelet at ${socketPath} within ${timeoutMs} ms`)));
    req.on('error', (err) => reject(new Error(`cannot reach nodelet at ${socketPath}: ${err.message}`, { cause: err })));
    req.end();
  });
}
