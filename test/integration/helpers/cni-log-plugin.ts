// A CNI plugin for tests, placed last in a chain: it appends what the runtime called the chain with (the CNI_*
// environment and the network configuration without prevResult) as one JSON line to the file its configuration names
// (`logFile`), and passes the previous result on unchanged, so the chain works as without it.
// Run through a wrapper script (installCniLogPlugin) that starts this file with the test's Node binary.
import { appendFileSync, readFileSync } from 'node:fs';
import { chmod, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** One call of the chain as the plugin saw it. */
export interface CniCall {
  env: Record<string, string>;
  conf: Record<string, unknown>;
}

/** The plugin's type in a conflist. */
export const cniLogPluginType = 'nodelet-test-cni-log';

/** Writes the executable `<dir>/<cniLogPluginType>` that runs this plugin. */
export async function installCniLogPlugin(dir: string): Promise<string> {
  const path = `${dir}/${cniLogPluginType}`;
  await writeFile(path, `#!/bin/sh\nexec '${process.execPath}' '${fileURLToPath(import.meta.url)}' "$@"\n`);
  await chmod(path, 0o755);
  return path;
}

/** The plugin's entry in a chain: it receives the capability args the chain's portmap receives. */
export function cniLogPluginConf(logFile: string): Record<string, unknown> {
  return { type: cniLogPluginType, logFile, capabilities: { portMappings: true } };
}

/** The calls logged to `logFile` so far. */
export function readCniCalls(logFile: string): CniCall[] {
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as CniCall);
}

function main(): void {
  const command = process.env['CNI_COMMAND'] ?? '';
  const input = readFileSync(0, 'utf8');
  const conf = (input.trim() ? JSON.parse(input) : {}) as Record<string, unknown>;
  if (command === 'VERSION') {
    process.stdout.write(JSON.stringify({ cniVersion: conf['cniVersion'] ?? '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] }));
    return;
  }
  const { prevResult, ...rest } = conf;
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('CNI_') && e[1] !== undefined));
  appendFileSync(String(conf['logFile']), JSON.stringify({ env, conf: rest } satisfies CniCall) + '\n');
  if (command === 'ADD') process.stdout.write(JSON.stringify({ ...(prevResult as object | undefined), cniVersion: conf['cniVersion'] }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
