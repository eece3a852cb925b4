// Reads a kubeconfig file into what a connection to the API server needs (server URL, TLS material, bearer token).
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';

/** How to reach and authenticate to the API server, from the kubeconfig's current context. */
export interface ApiServerConnection {
  server: URL;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  insecureSkipTLSVerify: boolean;
  tlsServerName?: string;
  /** The kubeconfig file, for error messages. */
  source: string;
}

/** A kubeconfig nodelet cannot use; the message names the file and the field. */
export class KubeconfigError extends Error {}

type Named<T> = { name?: string } & Record<string, T>;

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function pick(list: unknown, name: string, field: string, file: string): Record<string, unknown> {
  const entries = Array.isArray(list) ? (list as Named<unknown>[]) : [];
  const entry = entries.find((e) => record(e)?.name === name);
  const body = record(entry?.[field]);
  if (!body) throw new KubeconfigError(`${file}: ${field} "${name}" (named by the current context) is not defined in ${field}s`);
  return body;
}

/** Parses a kubeconfig; relative file paths in it are relative to the file, as kubectl resolves them. */
export async function loadKubeconfig(file: string): Promise<ApiServerConnection> {
  let doc: Record<string, unknown> | undefined;
  try {
    doc = record(parse(await readFile(file, 'utf8')));
  } catch (err) {
    throw new KubeconfigError(`${file}: cannot read kubeconfig: ${(err as Error).message}`, { cause: err });
  }
  if (!doc) throw new KubeconfigError(`${file}: not a kubeconfig (expected a YAML mapping)`);
  const base = dirname(resolve(file));
  const contextName = doc['current-context'];
  if (typeof contextName !== 'string' || !contextName) throw new KubeconfigError(`${file}: current-context is not set`);
  const context = pick(doc.contexts, contextName, 'context', file);
  const cluster = pick(doc.clusters, String(context.cluster ?? ''), 'cluster', file);
  const user = context.user ? pick(doc.users, String(context.user), 'user', file) : {};

  const material = async (dataField: string, fileField: string, from: Record<string, unknown>): Promise<Buffer | undefined> => {
    const data = from[dataField];
    if (typeof data === 'string' && data) return Buffer.from(data, 'base64');
    const path = from[fileField];
    if (typeof path !== 'string' || !path) return undefined;
    try {
      return await readFile(resolve(base, path));
    } catch (err) {
      throw new KubeconfigError(`${file}: ${fileField} "${path}": ${(err as Error).message}`, { cause: err });
    }
  };

  let server: URL;
  try {
    server = new URL(String(cluster.server ?? ''));
  } catch {
    throw new KubeconfigError(`${file}: cluster "${String(context.cluster)}": server "${String(cluster.server ?? '')}" is not a URL`);
  }
  if (server.protocol !== 'https:' && server.protocol !== 'http:') {
    throw new KubeconfigError(`${file}: cluster "${String(context.cluster)}": server must be an https:// URL`);
  }
  for (const unsupported of ['exec', 'auth-provider']) {
    if (user[unsupported] !== undefined) {
      throw new KubeconfigError(`${file}: user "${String(context.user)}": ${unsupported} credentials are not supported; use a client certificate or a token`);
    }
  }
  let token = typeof user.token === 'string' && user.token ? user.token : undefined;
  const tokenFile = await material('', 'tokenFile', user);
  if (!token && tokenFile) token = tokenFile.toString('utf8').trim();

  const conn: ApiServerConnection = {
    server,
    insecureSkipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    source: file,
  };
  const ca = await material('certificate-authority-data', 'certificate-authority', cluster);
  const cert = await material('client-certificate-data', 'client-certificate', user);
  const key = await material('client-key-data', 'client-key', user);
  if (ca) conn.ca = ca;
  if (cert) conn.cert = cert;
  if (key) conn.key = key;
  if (token) conn.token = token;
  if (typeof cluster['tls-server-name'] === 'string') conn.tlsServerName = cluster['tls-server-name'];
  if (Boolean(cert) !== Boolean(key)) {
    throw new KubeconfigError(`${file}: user "${String(context.user)}": client-certificate and client-key must be given together`);
  }
  return conn;
}
