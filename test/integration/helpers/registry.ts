// A real image registry for integration tests: Debian's docker-registry (distribution v2.8, installed by
// scripts/runtime.sh) on 127.0.0.1 and a free port, with a TLS certificate of the test's own CA and, optionally,
// htpasswd basic auth. containerd trusts the CA through its registry host configuration
// (/etc/nodelet/containerd/certs.d/<host:port>/hosts.toml, the rig's config_path), as a node is set up for a private
// registry. stop() ends the process and removes its directory, its hosts.toml and the images pulled from it.
//
//   const registry = await startRegistry({ auth: { username: 'u', password: 'p' } });
//   afterAll(() => registry.stop());
//   const digest = await registry.push(busybox, 'nodelet/private:1');   // ctr images push, with --user when auth is on
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { criEndpoint, waitFor } from './agent.js';
import { freePorts } from './real-cluster.js';

/** containerd's registry host configuration directory (config_path in scripts/runtime.sh's config). */
export const registryHostsDir = '/etc/nodelet/containerd/certs.d';
const containerdSocket = criEndpoint.replace(/^unix:\/\//, '');

export interface RegistryCredentials {
  username: string;
  password: string;
}

export interface Registry {
  /** `127.0.0.1:<port>`: the registry part of image names. */
  host: string;
  /** The test CA's certificate (PEM). */
  ca: string;
  /** The registry's own log (one access log line per request). */
  log(): Promise<string>;
  /** Tags a local image (in containerd's k8s.io namespace) as `<host>/<repository>`, pushes it and drops the tag; returns the manifest digest. */
  push(localImage: string, repository: string): Promise<string>;
  /** The digest the registry serves for `<repository>` (a `name:tag`), as a client resolves it. */
  digest(repository: string): Promise<string>;
  stop(): Promise<void>;
}

const ctr = (...args: string[]) => execa('ctr', ['-a', containerdSocket, '-n', 'k8s.io', '--timeout', '60s', ...args]);

async function makeCertificates(dir: string): Promise<void> {
  const openssl = (...args: string[]) => execa('openssl', args, { cwd: dir });
  await openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=nodelet test registry CA');
  await openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'registry.key', '-out', 'registry.csr', '-subj', '/CN=127.0.0.1');
  await writeFile(join(dir, 'registry.ext'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  await openssl('x509', '-req', '-in', 'registry.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'registry.crt', '-days', '1', '-extfile', 'registry.ext');
}

function registryConfig(dir: string, host: string, auth: boolean): string {
  return `version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: ${join(dir, 'data')}
  delete:
    enabled: true
http:
  addr: ${host}
  tls:
    certificate: ${join(dir, 'registry.crt')}
    key: ${join(dir, 'registry.key')}
${auth ? `auth:\n  htpasswd:\n    realm: nodelet-test\n    path: ${join(dir, 'htpasswd')}\n` : ''}`;
}

/** An HTTPS request to the registry trusting only the test CA; resolves with the status and headers. */
function registryRequest(host: string, ca: string, method: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  const [hostname, port] = host.split(':');
  return new Promise((resolve, reject) => {
    // No keep-alive agent: nothing stays open after the test.
    const req = request({ hostname, port: Number(port), method, path, ca, headers, timeout: 5_000, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} https://${host}${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

export async function startRegistry(opts: { auth?: RegistryCredentials } = {}): Promise<Registry> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-registry-'));
  const [port] = await freePorts(1);
  const host = `127.0.0.1:${port}`;
  const hostsDir = join(registryHostsDir, host);
  let proc: ChildProcess | undefined;
  let out: WriteStream | undefined;
  const stop = async () => {
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc!.once('exit', r));
      proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGKILL');
        await exited;
      }
    }
    // The images the tests pulled from it, so containerd keeps nothing of the registry.
    const { stdout } = await ctr('images', 'ls', '-q').catch(() => ({ stdout: '' }));
    const pulled = stdout.split('\n').filter((name) => name.startsWith(`${host}/`));
    if (pulled.length > 0) await ctr('images', 'rm', ...pulled);
    out?.end();
    await rm(hostsDir, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await makeCertificates(dir);
    const ca = await readFile(join(dir, 'ca.crt'), 'utf8');
    if (opts.auth) {
      // bcrypt: the only hash distribution's htpasswd accepts.
      const { stdout } = await execa('htpasswd', ['-nbB', opts.auth.username, opts.auth.password]);
      await writeFile(join(dir, 'htpasswd'), `${stdout.trim()}\n`);
    }
    await writeFile(join(dir, 'config.yml'), registryConfig(dir, host, opts.auth !== undefined));
    await mkdir(hostsDir, { recursive: true });
    // containerd 1.6 requires a [host] tree and falls back from it (after a 404, say) to `server`: both get the CA, so a
    // missing tag reads "not found", not a TLS error.
    const trust = `capabilities = ["pull", "resolve", "push"]\nca = "${join(dir, 'ca.crt')}"\n`;
    await writeFile(join(hostsDir, 'hosts.toml'), `server = "https://${host}"\n${trust}\n[host."https://${host}"]\n${trust}`);
    const logFile = join(dir, 'registry.log');
    out = createWriteStream(logFile);
    await new Promise((r) => out!.once('open', r));
    proc = spawn('docker-registry', ['serve', join(dir, 'config.yml')], { stdio: ['ignore', out, out] });
    const running = proc;
    await waitFor(`the registry on ${host}`, async () => {
      if (running.exitCode !== null) throw new Error(`docker-registry exited (${running.exitCode}): ${await readFile(logFile, 'utf8')}`);
      const answer = await registryRequest(host, ca, 'GET', '/v2/').catch(() => undefined);
      return answer && (answer.status === 200 || answer.status === 401) ? true : undefined;
    }, 30_000, 200);
    const authorization: Record<string, string> = opts.auth ? { authorization: `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64')}` } : {};
    const digest = async (repository: string) => {
      const slash = repository.lastIndexOf(':');
      const path = `/v2/${repository.slice(0, slash)}/manifests/${repository.slice(slash + 1)}`;
      const answer = await registryRequest(host, ca, 'HEAD', path, {
        ...authorization,
        accept: 'application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json',
      });
      const value = answer.headers['docker-content-digest'];
      if (answer.status !== 200 || typeof value !== 'string') throw new Error(`HEAD https://${host}${path}: ${answer.status}`);
      return value;
    };
    return {
      host,
      ca,
      log: () => readFile(logFile, 'utf8'),
      async push(localImage, repository) {
        const target = `${host}/${repository}`;
        await ctr('images', 'tag', '--force', localImage, target);
        try {
          await ctr('images', 'push', '--hosts-dir', registryHostsDir, ...(opts.auth ? ['--user', `${opts.auth.username}:${opts.auth.password}`] : []), target);
        } finally {
          // The pull under test has to fetch the name from the registry, not find it tagged here.
          await ctr('images', 'rm', target);
        }
        return digest(repository);
      },
      digest,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
