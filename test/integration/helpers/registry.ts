// A real image registry for integration tests: Debian's docker-registry (distribution v2.8, installed by
// scripts/runtime.sh) on 127.0.0.1 and a free port, with a TLS certificate of the test's own CA and, optionally,
// htpasswd basic auth. containerd trusts the CA through its registry host configuration
// (/etc/nodelet/containerd/certs.d/<host:port>/hosts.toml, the rig's config_path), as a node is set up for a private
// registry. stop() ends the process and removes its directory, its hosts.toml and the images pulled from it.
//
//   const registry = await startRegistry({ auth: { username: 'u', password: 'p' } });
//   afterAll(() => registry.stop());
//   const digest = await registry.push(busybox, 'nodelet/private:1');   // ctr images push, with --user when auth is on
//   await registry.upload('nodelet/big:1', await randomImageLayers(5, 10 << 20));   // a new image, by the HTTP API
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
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
  /**
   * Uploads an image of these layers (tar, uncompressed; see randomImageLayers) straight to the registry as
   * `<repository>` (a `name:tag`) through its HTTP API, so containerd's content store never holds it; returns the
   * manifest digest and the layers' digests.
   */
  upload(repository: string, layers: Buffer[]): Promise<{ digest: string; layers: string[] }>;
  /**
   * A TCP proxy on another loopback port that passes the registry's TLS through, sending its answers at most
   * `bytesPerSecond` (all connections together): a pull through `proxy.host` takes seconds, long enough to watch or to
   * stop the registry in the middle of it. containerd trusts it as the registry (its own hosts.toml, the same CA).
   */
  throttled(bytesPerSecond: number): Promise<ThrottledProxy>;
  /** The digest the registry serves for `<repository>` (a `name:tag`), as a client resolves it. */
  digest(repository: string): Promise<string>;
  stop(): Promise<void>;
}

export interface ThrottledProxy {
  host: string;
  /** Closes the proxy and its connections, removes its hosts.toml and the images pulled through it. */
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
function registryRequest(
  host: string,
  ca: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: Buffer,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  const [hostname, port] = host.split(':');
  return new Promise((resolve, reject) => {
    // No keep-alive agent: nothing stays open after the test.
    const req = request({ hostname, port: Number(port), method, path, ca, headers, timeout: 30_000, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} https://${host}${path} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** A tar stream (uncompressed, files owned by root) of a directory's contents, as an image layer. */
export async function layerOf(dir: string): Promise<Buffer> {
  const { stdout } = await execa('tar', ['-C', dir, '--numeric-owner', '--owner=0', '--group=0', '-cf', '-', '.'], { encoding: 'buffer', maxBuffer: 1 << 30 });
  return Buffer.from(stdout);
}

const sha256 = (data: Buffer | string) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/**
 * The layers of a runnable image that no one has pulled before: the host's static busybox (`sh`, `sleep`, ...) and
 * `randomLayers` layers of `layerBytes` random bytes each (random, so neither containerd nor a compressor has them).
 */
export async function randomImageLayers(randomLayers: number, layerBytes: number): Promise<Buffer[]> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-image-'));
  try {
    const rootfs = join(dir, 'rootfs');
    await mkdir(join(rootfs, 'bin'), { recursive: true });
    await execa('install', ['-m', '755', '/bin/busybox', join(rootfs, 'bin/busybox')]);
    for (const applet of ['sh', 'sleep', 'true', 'cat']) await symlink('busybox', join(rootfs, 'bin', applet));
    const layers = [await layerOf(rootfs)];
    for (let i = 0; i < randomLayers; i++) {
      const data = join(dir, `data${i}`);
      await mkdir(data);
      await writeFile(join(data, `random-${i}.bin`), randomBytes(layerBytes));
      layers.push(await layerOf(data));
      await rm(data, { recursive: true });
    }
    return layers;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** One image layer (uncompressed tar) holding just these files, path to content: an image of data, as an image volume's. */
export async function fileLayer(files: Record<string, string>): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-layer-'));
  try {
    // mkdtemp's 0700 would become the image's root directory.
    await chmod(dir, 0o755);
    for (const [path, content] of Object.entries(files)) {
      await mkdir(join(dir, path, '..'), { recursive: true });
      await writeFile(join(dir, path), content);
    }
    return await layerOf(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** containerd's trust of a registry host (hosts.toml under the rig's config_path): its CA on the server and on its [host] tree. */
async function trustRegistryHost(host: string, caFile: string): Promise<void> {
  const hostsDir = join(registryHostsDir, host);
  await mkdir(hostsDir, { recursive: true });
  // containerd 1.6 requires a [host] tree and falls back from it (after a 404, say) to `server`: both get the CA, so a
  // missing tag reads "not found", not a TLS error.
  const trust = `capabilities = ["pull", "resolve", "push"]\nca = "${caFile}"\n`;
  await writeFile(join(hostsDir, 'hosts.toml'), `server = "https://${host}"\n${trust}\n[host."https://${host}"]\n${trust}`);
}

/**
 * What the registries of a killed test run left (each keeps its hosts.toml and the images pulled from it until its
 * stop()): removed, so that no test meets their references to images it also uses (containerd reports a container's
 * image by the image's first repo digest, which would then be the registry's). Returns the hosts it removed.
 */
export async function forgetLeftoverRegistries(): Promise<string[]> {
  // The VM test alone runs without the rig: nothing of it is touched then.
  if (!existsSync(containerdSocket)) return [];
  const hosts = (await readdir(registryHostsDir).catch(() => [] as string[])).filter((h) => h.startsWith('127.0.0.1:'));
  for (const host of hosts) await forgetRegistryHost(host);
  return hosts;
}

/** Removes what containerd holds of a registry host: the images pulled from it, and its hosts.toml. */
async function forgetRegistryHost(host: string): Promise<void> {
  const { stdout } = await ctr('images', 'ls', '-q').catch(() => ({ stdout: '' }));
  const pulled = stdout.split('\n').filter((name) => name.startsWith(`${host}/`));
  if (pulled.length > 0) await ctr('images', 'rm', ...pulled);
  await rm(join(registryHostsDir, host), { recursive: true, force: true });
}

async function throttledProxy(upstreamHost: string, caFile: string, bytesPerSecond: number): Promise<ThrottledProxy> {
  const [, upstreamPort] = upstreamHost.split(':');
  const sockets = new Set<Socket>();
  const started = Date.now();
  let sent = 0;
  const server = createServer((client) => {
    const upstream = connect(Number(upstreamPort), '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      // Either side gone (the registry stopped, containerd cancelled): the other is closed too, as a network would.
      s.once('error', () => undefined);
      s.once('close', () => (s === client ? upstream : client).destroy());
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      client.write(chunk);
      sent += chunk.length;
      const aheadMs = (sent / bytesPerSecond) * 1000 - (Date.now() - started);
      if (aheadMs > 0) {
        upstream.pause();
        setTimeout(() => upstream.resume(), aheadMs);
      }
    });
  });
  await new Promise<void>((resolve, reject) => server.listen(0, '127.0.0.1', resolve).once('error', reject));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  await trustRegistryHost(host, caFile);
  return {
    host,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
      await forgetRegistryHost(host);
    },
  };
}

export async function startRegistry(opts: { auth?: RegistryCredentials } = {}): Promise<Registry> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-registry-'));
  const [port] = await freePorts(1);
  const host = `127.0.0.1:${port}`;
  let proc: ChildProcess | undefined;
  let out: WriteStream | undefined;
  const stop = async () => {
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc!.once('exit', r));
      proc.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((r) => { timer = setTimeout(r, 10_000); })]);
      // Not left pending: Jest would wait for it after the last test.
      clearTimeout(timer);
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGKILL');
        await exited;
      }
    }
    // The images the tests pulled from it, so containerd keeps nothing of the registry.
    await forgetRegistryHost(host);
    out?.end();
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
    await trustRegistryHost(host, join(dir, 'ca.crt'));
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
      async upload(repository, layers) {
        const slash = repository.lastIndexOf(':');
        const [name, tag] = [repository.slice(0, slash), repository.slice(slash + 1)];
        const blob = async (data: Buffer) => {
          const digest = sha256(data);
          // distribution's monolithic upload: POST opens the session, PUT with the digest sends it whole.
          const opened = await registryRequest(host, ca, 'POST', `/v2/${name}/blobs/uploads/`, { ...authorization, 'content-length': '0' });
          const location = String(opened.headers.location ?? '');
          if (opened.status !== 202 || !location) throw new Error(`upload of ${digest} to ${host}/${name}: POST answered ${opened.status}`);
          const url = new URL(location, `https://${host}`);
          url.searchParams.set('digest', digest);
          const put = await registryRequest(host, ca, 'PUT', url.pathname + url.search, { ...authorization, 'content-type': 'application/octet-stream', 'content-length': String(data.length) }, data);
          if (put.status !== 201) throw new Error(`upload of ${digest} to ${host}/${name}: PUT answered ${put.status}`);
          return { digest, size: data.length };
        };
        const layerBlobs = [];
        for (const layer of layers) layerBlobs.push(await blob(layer));
        const config = Buffer.from(JSON.stringify({
          architecture: process.arch === 'arm64' ? 'arm64' : 'amd64',
          os: 'linux',
          config: { Cmd: ['sh'], Env: ['PATH=/bin'] },
          rootfs: { type: 'layers', diff_ids: layerBlobs.map((l) => l.digest) },
        }));
        const configBlob = await blob(config);
        const manifest = Buffer.from(JSON.stringify({
          schemaVersion: 2,
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...configBlob },
          layers: layerBlobs.map((l) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...l })),
        }));
        const put = await registryRequest(host, ca, 'PUT', `/v2/${name}/manifests/${tag}`, { ...authorization, 'content-type': 'application/vnd.oci.image.manifest.v1+json', 'content-length': String(manifest.length) }, manifest);
        if (put.status !== 201) throw new Error(`manifest of ${host}/${repository}: PUT answered ${put.status}`);
        return { digest: sha256(manifest), layers: layerBlobs.map((l) => l.digest) };
      },
      digest,
      throttled: (bytesPerSecond) => throttledProxy(host, join(dir, 'ca.crt'), bytesPerSecond),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
