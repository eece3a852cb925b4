// The agent never loads Node's bundled undici (fetch, WebSocket): an ES import of node:http loads it through that
// module's lazy WebSocket getters, about 1 MB of source, a WASM HTTP parser and their compiled code in every agent.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const distSrc = fileURLToPath(new URL('../../../src', import.meta.url));

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? modules(join(dir, e.name)) : e.name.endsWith('.js') ? [join(dir, e.name)] : []));
}

test("no module of the agent loads Node's bundled undici", async () => {
  const { execa } = await import('execa');
  // The two programs (the CLI, the CNI shim's DEL fallback, which reads stdin) run when imported; every other module
  // only defines things.
  const programs = [join('cli', 'main.js'), join('cni', 'local-del.js')];
  const files = modules(distSrc).filter((f) => !programs.some((p) => f.endsWith(p)));
  expect(files.length).toBeGreaterThan(100);
  const script = `for (const f of ${JSON.stringify(files)}) await import(f);
process.stdout.write(JSON.stringify(process.moduleLoadList.filter((m) => m.includes('undici'))), () => process.exit(0));`;
  // The Node bin/nodelet.js runs, whose node:http has those getters.
  const node = fileURLToPath(new URL('../../../../node_modules/node/bin/node', import.meta.url));
  const { stdout } = await execa(node, ['--input-type=module', '-e', script], { stdin: 'ignore', timeout: 60_000 });
  expect(JSON.parse(stdout)).toEqual([]);
});
