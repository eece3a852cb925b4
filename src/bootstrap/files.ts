// Files the bootstrap writes: kubeconfigs (kubelet's bootstrap and rotated-certificate forms) and other small files,
// each written whole or not at all.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { stringify } from 'yaml';

/** Writes `data` to a temporary file beside `file` and renames it over: readers see the old content or the new. */
export async function writeFileAtomic(file: string, data: string | Buffer, mode = 0o600): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o755 });
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, data, { mode });
  await rename(tmp, file);
}

export interface KubeconfigContent {
  server: string;
  caPem: Buffer | string;
  /** A bearer token (the bootstrap kubeconfig) or one file holding client certificate and key (kubelet-client-current.pem). */
  user: { token: string } | { certificateFile: string };
  /** Names in the file; kubelet's defaults when unset. */
  clusterName?: string;
  userName?: string;
}

/**
 * A kubeconfig with one cluster, one user and one current context. The client-certificate form is the one kubelet's
 * bootstrap writes (writeKubeconfigFromBootstrapping): the user names the current pem as certificate and key, so a
 * rotated certificate needs no new kubeconfig.
 */
export function kubeconfigYaml(c: KubeconfigContent): string {
  const cluster = c.clusterName ?? 'default-cluster';
  const user = c.userName ?? 'default-auth';
  const auth = 'token' in c.user ? { token: c.user.token } : { 'client-certificate': c.user.certificateFile, 'client-key': c.user.certificateFile };
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: cluster, cluster: { server: c.server, 'certificate-authority-data': Buffer.from(c.caPem).toString('base64') } }],
    contexts: [{ name: 'default-context', context: { cluster, namespace: 'default', user } }],
    'current-context': 'default-context',
    preferences: {},
    users: [{ name: user, user: auth }],
  });
}
