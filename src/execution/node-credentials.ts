// The node's own registry logins, as kubelet's default credential provider reads them (pkg/credentialprovider): the
// first readable `config.json` in --root-dir, the working directory, $HOME/.docker and /.docker, else the first legacy
// `.dockercfg` in --root-dir, the working directory, $HOME and /. Read again at most every 5 minutes, as kubelet caches it.
import { open } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Logger } from '../core/log.js';
import { makeKeyring, parseDockerConfigJSON, parseDockercfg, type DockerConfig, type DockerKeyring } from '../decisions/pull-credentials.js';

/** kubelet's CachingDockerConfigProvider lifetime for the docker config files. */
const cacheLifetimeMs = 5 * 60_000;
/** kubelet's maxReadLength for credential files. */
const maxConfigBytes = 10 << 20;

/** Where kubelet looks, in order: each `config.json`, then each `.dockercfg`. */
export function dockerConfigSearchPaths(rootDir: string, workingDir: string, homeDir: string): { path: string; legacy: boolean }[] {
  return [
    ...[rootDir, workingDir, join(homeDir, '.docker'), '/.docker'].map((dir) => ({ path: resolve(workingDir, dir, 'config.json'), legacy: false })),
    ...[rootDir, workingDir, homeDir, '/'].map((dir) => ({ path: resolve(workingDir, dir, '.dockercfg'), legacy: true })),
  ];
}

export interface NodeCredentialsOptions {
  rootDir: string;
  workingDir?: string;
  /** $HOME, as Go's os.UserHomeDir reads it; empty is the working directory. */
  homeDir?: string;
  now: () => number;
  log: Logger;
  read?: (path: string) => Promise<string>;
}

async function readLimited(path: string): Promise<string> {
  // Read in chunks up to the limit: a huge file (or /dev/zero) costs no more memory than that.
  const file = await open(path, 'r');
  try {
    const chunks: Buffer[] = [];
    let length = 0;
    for (;;) {
      const { bytesRead, buffer } = await file.read({ buffer: Buffer.allocUnsafe(64 << 10) });
      if (bytesRead === 0) break;
      chunks.push(buffer.subarray(0, bytesRead));
      length += bytesRead;
      if (length > maxConfigBytes) throw new Error(`larger than ${maxConfigBytes} bytes`);
    }
    return Buffer.concat(chunks, length).toString('utf8');
  } finally {
    await file.close();
  }
}

export class NodeCredentials {
  private cached?: { keyring: DockerKeyring; expires: number };
  private readonly paths: { path: string; legacy: boolean }[];
  private readonly read: (path: string) => Promise<string>;

  constructor(private readonly options: NodeCredentialsOptions) {
    const workingDir = options.workingDir ?? process.cwd();
    this.paths = dockerConfigSearchPaths(options.rootDir, workingDir, options.homeDir ?? process.env.HOME ?? '');
    this.read = options.read ?? readLimited;
  }

  /** The node's keyring: the first file found that parses (a missing or broken one is passed over, as kubelet). */
  async keyring(): Promise<DockerKeyring> {
    const now = this.options.now();
    if (this.cached && now < this.cached.expires) return this.cached.keyring;
    let config: DockerConfig = [];
    for (const { path, legacy } of this.paths) {
      let text: string;
      try {
        text = await this.read(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.options.log.debug({ path, err: (err as Error).message }, 'Docker config file not read');
        continue;
      }
      try {
        config = legacy ? parseDockercfg(text) : parseDockerConfigJSON(text);
      } catch (err) {
        this.options.log.warn({ path, err: (err as Error).message }, 'Docker config file is not valid, skipped');
        continue;
      }
      this.options.log.debug({ path }, 'Found docker config file');
      break;
    }
    const keyring = makeKeyring([config]);
    this.cached = { keyring, expires: now + cacheLifetimeMs };
    return keyring;
  }
}
