// A scratch directory per test (removed after it), and files written into it: stand-ins for cgroupfs and /proc.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh directory for each test of the file, named by `prefix`; `dir()` is the current test's. */
export function scratchDir(prefix: string): { dir: () => string } {
  let dir = '';
  beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), prefix))));
  afterEach(async () => rm(dir, { recursive: true, force: true }));
  return { dir: () => dir };
}

/** Writes each entry (name: text) into `base`, creating it. */
export async function files(base: string, entries: Record<string, string>): Promise<void> {
  await mkdir(base, { recursive: true });
  for (const [name, text] of Object.entries(entries)) await writeFile(join(base, name), text);
}
