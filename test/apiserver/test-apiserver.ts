// Starting the test API server from code (tests) and from the CLI: PKI, kubeconfigs, store, registry, HTTPS server.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenAuthenticator } from './authn.js';
import { NamespaceController } from './namespaces.js';
import { ensurePki, issueClientCert, writeKubeconfig, type Pki } from './pki.js';
import { Registry } from './registry.js';
import { ApiServer } from './server.js';
import { Store } from './store.js';
import type { ApiCredentials } from './test-client.js';

export const ADMIN_USER = { name: 'kubernetes-admin', groups: ['system:masters'] };
export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';

export interface TestApiServerOptions {
  /** State, PKI and kubeconfigs live here and survive restarts; without it a temporary dir is made (removed by stop()). */
  dir?: string;
  /** Nodes to make identities (system:node:<name> in system:nodes) and kubeconfigs for. */
  nodeNames?: string[];
  /** 0 (default) picks a free port; a restart keeps the port. */
  port?: number;
  auditLogPath?: string;
  /** Watch events kept per resource for watches from an older resourceVersion (default 1000). */
  watchWindow?: number;
  /** BOOKMARK interval of watches with allowWatchBookmarks (default 60 s, as kube). */
  bookmarkIntervalMs?: number;
  /** Length of watches that give no timeoutSeconds (default 1800 s). */
  defaultWatchTimeoutMs?: number;
}

export interface TestApiServer {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  readonly dir: string;
  readonly caPem: string;
  /** kubeconfig of kubernetes-admin (system:masters) for kubectl and clients. */
  readonly adminKubeconfig: string;
  /** Client certificate of kubernetes-admin, for test-client.ts requests. */
  readonly admin: ApiCredentials;
  /** kubeconfig of system:node:<name>; only for the nodeNames given (else throws). */
  nodeKubeconfig(name: string): string;
  /** Client certificate of system:node:<name>; only for the nodeNames given. */
  node(name: string): ApiCredentials;
  /** A kubeconfig (and credentials) for any identity. */
  identity(user: { name: string; groups: string[] }, file?: string): Promise<{ kubeconfig: string; credentials: ApiCredentials }>;
  /** The registry of the running instance (direct store access for assertions). */
  readonly registry: Registry;
  /** Stops serving (connections and watches end); the state stays in the dir. */
  suspend(): Promise<void>;
  /** Serves again after suspend(), on the same port, from the state on disk (as a restarted kube-apiserver). */
  resume(): Promise<void>;
  /** suspend() then resume(). */
  restart(): Promise<void>;
  /** Stops serving; removes the dir if it was temporary. */
  stop(): Promise<void>;
}

class Instance implements TestApiServer {
  private server: ApiServer | undefined;
  private port: number;
  private readonly nodes = new Map<string, { kubeconfig: string; credentials: ApiCredentials }>();
  url = '';
  adminKubeconfig = '';
  admin: ApiCredentials = { url: '', caPem: '' };

  constructor(
    readonly dir: string,
    private readonly pki: Pki,
    private readonly options: TestApiServerOptions,
    private readonly temporary: boolean,
  ) {
    this.port = options.port ?? 0;
  }

  get caPem(): string {
    return this.pki.caCertPem;
  }

  get registry(): Registry {
    if (!this.server) throw new Error('test API server is not running');
    return this.server.registry;
  }

  async resume(): Promise<void> {
    if (this.server) return;
    const store = new Store({ dir: join(this.dir, 'state'), windowSize: this.options.watchWindow ?? 1000 });
    const registry = new Registry(store);
    const tokens = new TokenAuthenticator({ saPublicKeyPem: this.pki.saPublicKeyPem, issuer: SERVICE_ACCOUNT_ISSUER, view: registry.view });
    new NamespaceController(registry, this.pki.caCertPem).start();
    const server = new ApiServer({
      registry,
      pki: this.pki,
      tokens,
      issuer: SERVICE_ACCOUNT_ISSUER,
      port: this.port,
      ...(this.options.auditLogPath ? { auditLogPath: this.options.auditLogPath } : {}),
      ...(this.options.bookmarkIntervalMs ? { bookmarkIntervalMs: this.options.bookmarkIntervalMs } : {}),
      ...(this.options.defaultWatchTimeoutMs ? { defaultWatchTimeoutMs: this.options.defaultWatchTimeoutMs } : {}),
    });
    this.url = await server.listen();
    this.port = Number(new URL(this.url).port);
    this.server = server;
  }

  async suspend(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.close();
  }

  async restart(): Promise<void> {
    await this.suspend();
    await this.resume();
  }

  async stop(): Promise<void> {
    await this.suspend();
    if (this.temporary) await rm(this.dir, { recursive: true, force: true });
  }

  async identity(user: { name: string; groups: string[] }, file?: string): Promise<{ kubeconfig: string; credentials: ApiCredentials }> {
    const { certPem, keyPem } = await issueClientCert(this.pki, user);
    const kubeconfig = file ?? join(this.dir, `${user.name.replace(/[^A-Za-z0-9_.-]/g, '_')}.kubeconfig`);
    await writeKubeconfig(kubeconfig, { server: this.url, caPem: this.pki.caCertPem, user: user.name, certPem, keyPem });
    return { kubeconfig, credentials: { url: this.url, caPem: this.pki.caCertPem, certPem, keyPem } };
  }

  async writeIdentities(adminFile: string, nodeFiles: (name: string) => string): Promise<void> {
    const admin = await this.identity(ADMIN_USER, adminFile);
    this.adminKubeconfig = admin.kubeconfig;
    this.admin = admin.credentials;
    for (const name of this.options.nodeNames ?? []) {
      this.nodes.set(name, await this.identity({ name: `system:node:${name}`, groups: ['system:nodes'] }, nodeFiles(name)));
    }
  }

  nodeKubeconfig(name: string): string {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no identity for node ${name}: pass it in nodeNames`);
    return node.kubeconfig;
  }

  node(name: string): ApiCredentials {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no identity for node ${name}: pass it in nodeNames`);
    return { ...node.credentials, url: this.url };
  }
}

/**
 * Starts a test API server on 127.0.0.1. Kubeconfigs: `<dir>/admin.kubeconfig` and `<dir>/node-<name>.kubeconfig`.
 * Stop it with stop() (also on test failure: put it in afterAll/finally).
 */
export async function startTestApiServer(options: TestApiServerOptions = {}): Promise<TestApiServer> {
  const temporary = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'nodelet-apiserver-')));
  try {
    const pki = await ensurePki(join(dir, 'pki'), { hosts: ['127.0.0.1', 'localhost'] });
    const instance = new Instance(dir, pki, options, temporary);
    await instance.resume();
    await instance.writeIdentities(join(dir, 'admin.kubeconfig'), (name) => join(dir, `node-${name}.kubeconfig`));
    return instance;
  } catch (err) {
    if (temporary) await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
