// Compiles the nodelet-spawn helper from its source into a temporary directory, for tests of what runs through it.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const helperSource = fileURLToPath(new URL('../../../../src/host/spawn-helper/nodelet-spawn.c', import.meta.url));

export interface CompiledHelper {
  path: string;
  remove(): Promise<void>;
}

export async function compileSpawnHelper(): Promise<CompiledHelper> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-spawn-bin-'));
  const path = join(dir, 'nodelet-spawn');
  // -Werror: it must build warning-free with the rig's flags and more.
  await promisify(execFile)('gcc', ['-O2', '-Wall', '-Wextra', '-Werror', '-o', path, helperSource]);
  return { path, remove: () => rm(dir, { recursive: true, force: true }) };
}
