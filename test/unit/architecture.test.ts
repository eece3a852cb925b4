// The layering of src/: every import from one folder to another goes down the layer table, and no files import each
// other, directly or round a longer cycle. The README's "Source layout" explains the layers.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Each folder of src/ and its layer, bottom up. A file may import any file of its own folder and of folders in lower
 * layers; folders that share a layer are peers and never import each other.
 */
const layers: Record<string, number> = {
  core: 0,
  cri: 1,
  kubeapi: 1,
  host: 2,
  bootstrap: 2,
  cni: 3,
  volume: 3,
  decisions: 4,
  prober: 5,
  execution: 6,
  lifecycle: 7,
  controllers: 7,
  sources: 8,
  podconfig: 8,
  server: 9,
  agent: 10,
  cli: 11,
};

/** File (relative to src/, e.g. `core/clock.ts`) -> the src files it imports. */
type ImportGraph = Map<string, string[]>;

/** Every relative module specifier of a TypeScript source: static imports and re-exports (type-only ones too), dynamic imports. */
export function importSpecifiers(source: string): string[] {
  const specifiers: string[] = [];
  const patterns = [/\b(?:import|export)\s[^'";]*?\bfrom\s*'(\.[^']*)'/g, /\bimport\s*'(\.[^']*)'/g, /\bimport\s*\(\s*'(\.[^']*)'\s*\)/g];
  for (const re of patterns) for (const m of source.matchAll(re)) specifiers.push(m[1]!);
  return specifiers;
}

function sourceFiles(dir: string, root: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path, root);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [relative(root, path).split('\\').join('/')] : [];
  });
}

function importGraph(root: string): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of sourceFiles(root, root)) {
    const text = readFileSync(join(root, file), 'utf8');
    graph.set(
      file,
      importSpecifiers(text).map((s) => posix.normalize(posix.join(posix.dirname(file), s)).replace(/\.js$/, '.ts')),
    );
  }
  return graph;
}

const folderOf = (file: string) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '');

/** Imports that leave their folder for one that is not in a lower layer, and files outside every layer. */
function layerViolations(graph: ImportGraph, table: Record<string, number>): string[] {
  const violations: string[] = [];
  for (const [file, imports] of graph) {
    const from = folderOf(file);
    if (table[from] === undefined) {
      violations.push(`${file}: folder "${from}" has no layer`);
      continue;
    }
    for (const target of imports) {
      const to = folderOf(target);
      if (to === from) continue;
      if (table[to] === undefined) violations.push(`${file} -> ${target}: folder "${to}" has no layer`);
      else if (table[to]! >= table[from]!) violations.push(`${file} -> ${target}: layer ${table[from]} (${from}) imports layer ${table[to]} (${to})`);
    }
  }
  return violations;
}

/** The import cycles: each strongly connected group of files that import each other (Tarjan's algorithm). */
function importCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1 || (graph.get(file) ?? []).includes(file)) cycles.push(group.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return cycles;
}

describe('the checks themselves, on synthetic import graphs', () => {
  const graph = (edges: Record<string, string[]>): ImportGraph => new Map(Object.entries(edges));

  test('an import down the layers, or within a folder, passes', () => {
    const g = graph({ 'agent/a.ts': ['lifecycle/w.ts', 'agent/b.ts'], 'agent/b.ts': [], 'lifecycle/w.ts': ['core/c.ts'], 'core/c.ts': [] });
    expect(layerViolations(g, layers)).toEqual([]);
    expect(importCycles(g)).toEqual([]);
  });

  test('an import up the layers fails', () => {
    expect(layerViolations(graph({ 'core/c.ts': ['agent/a.ts'], 'agent/a.ts': [] }), layers)).toEqual([
      'core/c.ts -> agent/a.ts: layer 0 (core) imports layer 10 (agent)',
    ]);
  });

  test('an import between peers of one layer fails', () => {
    expect(layerViolations(graph({ 'lifecycle/w.ts': ['controllers/s.ts'], 'controllers/s.ts': [] }), layers)).toEqual([
      'lifecycle/w.ts -> controllers/s.ts: layer 7 (lifecycle) imports layer 7 (controllers)',
    ]);
  });

  test('a file outside every layer fails', () => {
    expect(layerViolations(graph({ 'misc.ts': [], 'extra/x.ts': ['core/c.ts'], 'core/c.ts': [] }), layers)).toEqual([
      'misc.ts: folder "" has no layer',
      'extra/x.ts: folder "extra" has no layer',
    ]);
  });

  test('two files importing each other, a longer cycle and a self-import are cycles', () => {
    const g = graph({
      'agent/a.ts': ['agent/b.ts'],
      'agent/b.ts': ['agent/a.ts'],
      'decisions/x.ts': ['decisions/y.ts'],
      'decisions/y.ts': ['decisions/z.ts'],
      'decisions/z.ts': ['decisions/x.ts', 'core/c.ts'],
      'core/c.ts': ['core/c.ts'],
    });
    expect(importCycles(g).sort()).toEqual([['agent/a.ts', 'agent/b.ts'], ['core/c.ts'], ['decisions/x.ts', 'decisions/y.ts', 'decisions/z.ts']]);
  });

  test('the parser sees static, type-only, re-exported, side-effect and dynamic imports', () => {
    const source = [
      "import { a } from './a.js';",
      "import type { B } from '../core/b.js';",
      "export { c } from './c.js';",
      "import './d.js';",
      "const e = await import('./e.js');",
      "import { readFile } from 'node:fs/promises';",
      '// "from \'./comment.js\'" in prose is not an import',
    ].join('\n');
    expect(importSpecifiers(source).sort()).toEqual(['../core/b.js', './a.js', './c.js', './d.js', './e.js']);
  });
});

describe('src/', () => {
  const graph = importGraph(join(dirname(fileURLToPath(import.meta.url)), '../../../src'));

  test('is parsed', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('lifecycle/pod-worker.ts')).toContain('decisions/compute-actions.ts');
  });

  test('imports only down the layers', () => {
    expect(layerViolations(graph, layers)).toEqual([]);
  });

  test('has no import cycles', () => {
    expect(importCycles(graph)).toEqual([]);
  });
});
