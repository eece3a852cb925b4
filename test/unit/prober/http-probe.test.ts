// The httpGet probe against local servers on 127.0.0.1: status ranges, kubelet's headers, redirects, body limit, timeouts, TLS.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type RequestListener, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { httpProbe, probeUserAgent } from '../../../src/prober/http-probe.js';
import { probeUrl } from '../../../src/prober/run-probe.js';

const servers: Server[] = [];

async function serve(handler: RequestListener, tls = false): Promise<number> {
  const fixture = (f: string) => readFileSync(new URL(`../../../../test/fixtures/probe-tls/${f}`, import.meta.url));
  const server = tls ? createTlsServer({ cert: fixture('cert.pem'), key: fixture('key.pem') }, handler) : createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => (s.closeAllConnections(), s.close(r)))));
});

const url = (port: number, path = '/healthz', scheme = 'http') => probeUrl(scheme, '127.0.0.1', port, path);

const ua = probeUserAgent('probe', 37);

test("the User-Agent names the minor served, as a kubelet of that minor's own version", () => {
  expect(probeUserAgent('probe', 35)).toBe('kube-probe/1.35');
  expect(probeUserAgent('lifecycle', 36)).toBe('kube-lifecycle/1.36');
});

describe('httpProbe', () => {
  test('200 succeeds with the body; kubelet headers are sent, custom ones added', async () => {
    let seen: IncomingHttpHeaders = {};
    let seenUrl = '';
    const port = await serve((req, res) => {
      seen = req.headers;
      seenUrl = req.url ?? '';
      res.end('ok');
    });
    const out = await httpProbe({ url: url(port, '/healthz?full=1'), headers: [{ name: 'X-Custom', value: 'a' }, { name: 'X-Custom', value: 'b' }], userAgent: ua }, 1_000);
    expect(out).toEqual({ result: 'success', output: 'ok' });
    expect(seenUrl).toBe('/healthz?full=1');
    expect(seen['user-agent']).toBe('kube-probe/1.37');
    expect(seen.accept).toBe('*/*');
    expect(seen['x-custom']).toBe('a, b');
    expect(seen.connection).toBe('close');
    expect(seen.host).toBe(`127.0.0.1:${port}`);
  });

  test('given User-Agent and Host win, an empty Accept removes the header', async () => {
    let seen: IncomingHttpHeaders = {};
    const port = await serve((req, res) => ((seen = req.headers), res.end()));
    const headers = [{ name: 'user-agent', value: 'mine' }, { name: 'Accept', value: '' }, { name: 'Host', value: 'app.example' }];
    expect((await httpProbe({ url: url(port), headers, userAgent: ua }, 1_000)).result).toBe('success');
    expect(seen['user-agent']).toBe('mine');
    expect(seen.accept).toBeUndefined();
    expect(seen.host).toBe('app.example');
  });

  test('399 succeeds, 400 and 500 fail without the body in the output', async () => {
    let status = 399;
    const port = await serve((_req, res) => ((res.statusCode = status), res.end('secret body')));
    expect((await httpProbe({ url: url(port), headers: [], userAgent: ua }, 1_000)).result).toBe('warning');
    status = 204;
    expect((await httpProbe({ url: url(port), headers: [], userAgent: ua }, 1_000)).result).toBe('success');
    for (status of [400, 500]) {
      expect(await httpProbe({ url: url(port), headers: [], userAgent: ua }, 1_000)).toEqual({ result: 'failure', output: `HTTP probe failed with statuscode: ${status}` });
    }
  });

  test('redirects on the same host are followed, with the probe headers', async () => {
    const paths: string[] = [];
    const agents: string[] = [];
    const port = await serve((req, res) => {
      paths.push(req.url!);
      agents.push(String(req.headers['x-probe']));
      if (req.url === '/old') res.writeHead(301, { Location: '/new' }).end();
      else if (req.url === '/new') res.writeHead(307, { Location: `http://127.0.0.1:${(req.socket.localPort)}/final` }).end();
      else res.end('landed');
    });
    const out = await httpProbe({ url: url(port, '/old'), headers: [{ name: 'X-Probe', value: 'yes' }], userAgent: ua }, 1_000);
    expect(out).toEqual({ result: 'success', output: 'landed' });
    expect(paths).toEqual(['/old', '/new', '/final']);
    expect(agents).toEqual(['yes', 'yes', 'yes']);
  });

  test('a redirect to another host is not followed: a warning, which counts as success', async () => {
    const port = await serve((_req, res) => res.writeHead(302, { Location: 'http://elsewhere.invalid/' }).end('moved'));
    expect(await httpProbe({ url: url(port), headers: [], userAgent: ua }, 1_000)).toEqual({ result: 'warning', output: 'Probe terminated redirects, Response body: moved' });
  });

  test('a redirect loop fails after 10 requests', async () => {
    let requests = 0;
    const port = await serve((_req, res) => (requests++, res.writeHead(302, { Location: '/again' }).end()));
    const out = await httpProbe({ url: url(port), headers: [], userAgent: ua }, 2_000);
    expect(out.result).toBe('failure');
    expect(out.output).toMatch(/stopped after 10 redirects$/);
    expect(requests).toBe(10);
  });

  test('the body is read up to 10 KiB only', async () => {
    const port = await serve((_req, res) => {
      res.write('x'.repeat(8 * 1024));
      res.write('y'.repeat(8 * 1024));
      // Never ends: the probe must not wait for the rest.
    });
    const out = await httpProbe({ url: url(port), headers: [], userAgent: ua }, 2_000);
    expect(out.result).toBe('success');
    expect(out.output).toHaveLength(10 * 1024);
  });

  test('no answer within the timeout fails like Go\'s client', async () => {
    const port = await serve(() => undefined);
    const out = await httpProbe({ url: url(port), headers: [], userAgent: ua }, 200);
    expect(out).toEqual({
      result: 'failure',
      output: `Get "http://127.0.0.1:${port}/healthz": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    });
  });

  test('a refused connection fails with the dial error', async () => {
    const port = await serve(() => undefined);
    await new Promise((r) => servers.pop()!.close(r));
    const out = await httpProbe({ url: url(port), headers: [], userAgent: ua }, 1_000);
    expect(out).toEqual({ result: 'failure', output: `Get "http://127.0.0.1:${port}/healthz": dial tcp 127.0.0.1:${port}: connect: connection refused` });
  });

  test('HTTPS is probed without verifying the certificate', async () => {
    const port = await serve((_req, res) => res.end('tls ok'), true);
    expect(await httpProbe({ url: url(port, '/', 'https'), headers: [], userAgent: ua }, 1_000)).toEqual({ result: 'success', output: 'tls ok' });
  });

  test('an abort from the caller rejects instead of reporting a failure', async () => {
    const port = await serve(() => undefined);
    const controller = new AbortController();
    const run = httpProbe({ url: url(port), headers: [], userAgent: ua }, 5_000, controller.signal);
    controller.abort(new Error('worker stopped'));
    await expect(run).rejects.toThrow('worker stopped');
  });
});
