// nodelet's own version (package.json), and the kubeletVersion it reports for its Node.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { kubeletVersionOf, type KubeMinor } from '../core/kube-minor.js';

// dist/src/agent/version.js -> <repo>/package.json
const packageJsonPath = fileURLToPath(new URL('../../../package.json', import.meta.url));

let cached: string | undefined;

/** The version in nodelet's package.json (read once). */
export function nodeletVersion(): string {
  cached ??= (JSON.parse(readFileSync(packageJsonPath, 'utf8')) as { version: string }).version;
  return cached;
}

/** Node.status.nodeInfo.kubeletVersion of this build serving `minor`, e.g. v1.36.0+nodelet.0.1.0. */
export function kubeletVersion(minor: KubeMinor): string {
  return kubeletVersionOf(minor, nodeletVersion());
}
