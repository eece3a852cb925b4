// Summaries of the agent's V8 CPU and sampling heap profiles: time and live bytes by module, by function, under nodelet's code.
import { basename } from 'node:path';
import { round1, round2 } from './util.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

/** A function as the summaries name it: its name, its file (from dist/ for nodelet's, from node_modules/ for a package's) and line. */
function frameKey({ functionName, url, lineNumber }: CallFrame): string {
  if (!url) return functionName || '(anonymous)';
  const at = url.indexOf('/dist/src/') >= 0 ? url.slice(url.indexOf('/dist/src/') + '/dist/'.length) : url.replace(/^.*\/node_modules\//, '');
  return `${functionName || '(anonymous)'} ${at}:${lineNumber + 1}`;
}

export interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface TimeShare {
  name: string;
  ms: number;
  /** Of the profile's busy (non-idle) time. */
  pct: number;
}

/** Where a script belongs: an npm package, a folder of nodelet's code, a part of Node's own library. */
function profileModule(url: string, functionName: string): string {
  if (!url) return functionName || '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return `npm ${parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  const src = url.indexOf('/dist/src/');
  if (src >= 0) return `nodelet src/${url.slice(src + '/dist/src/'.length)}`;
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  return basename(url);
}

/** Self time by module and by function, and nodelet functions by inclusive time (each counted once per stack). */
export function profileSummary(profile: CpuProfile, top = 15) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const selfUs = new Map<number, number>();
  // A sample stands for the time until the next one.
  for (let i = 0; i < samples.length; i++) selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + Math.max(0, deltas[i + 1] ?? 0));
  const fnKey = (id: number) => frameKey(byId.get(id)!.callFrame);
  let idleUs = 0;
  let totalUs = 0;
  const modules = new Map<string, number>();
  const fns = new Map<string, number>();
  for (const [id, us] of selfUs) {
    totalUs += us;
    const { functionName, url } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const m = profileModule(url, functionName);
    modules.set(m, (modules.get(m) ?? 0) + us);
    fns.set(fnKey(id), (fns.get(fnKey(id)) ?? 0) + us);
  }
  // Inclusive time of nodelet's own functions: which of its code paths the busy time is spent under.
  const inclusive = new Map<string, number>();
  const walk = (id: number, onStack: Set<string>): number => {
    const node = byId.get(id)!;
    const key = fnKey(id);
    const ours = node.callFrame.url.includes('/dist/src/') && !onStack.has(key);
    if (ours) onStack.add(key);
    let us = node.callFrame.functionName === '(idle)' ? 0 : (selfUs.get(id) ?? 0);
    for (const c of node.children ?? []) us += walk(c, onStack);
    if (ours) {
      onStack.delete(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
    return us;
  };
  const root = profile.nodes[0];
  if (root) walk(root.id, new Set());
  const busyUs = totalUs - idleUs;
  const list = (m: Map<string, number>): TimeShare[] =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([name, us]) => ({ name, ms: round1(us / 1000), pct: round1((us / Math.max(busyUs, 1)) * 100) }));
  return {
    sampledMs: round1(totalUs / 1000),
    busyMs: round1(busyUs / 1000),
    samples: samples.length,
    selfByModule: list(modules),
    selfByFunction: list(fns),
    nodeletInclusive: list(inclusive),
  };
}

export interface HeapProfileNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapProfileNode[];
}

/** Live bytes of a sampling heap profile by module and function where allocated, and under nodelet's functions. */
export function heapProfileSummary(head: HeapProfileNode, top = 15) {
  const modules = new Map<string, number>();
  const fns = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  const walk = (n: HeapProfileNode, onStack: Set<string>): number => {
    const k = frameKey(n.callFrame);
    total += n.selfSize;
    if (n.selfSize > 0) {
      const m = profileModule(n.callFrame.url, n.callFrame.functionName);
      modules.set(m, (modules.get(m) ?? 0) + n.selfSize);
      fns.set(k, (fns.get(k) ?? 0) + n.selfSize);
    }
    const ours = n.callFrame.url.includes('/dist/src/') && !onStack.has(k);
    if (ours) onStack.add(k);
    let bytes = n.selfSize;
    for (const c of n.children) bytes += walk(c, onStack);
    if (ours) {
      onStack.delete(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + bytes);
    }
    return bytes;
  };
  walk(head, new Set());
  const list = (m: Map<string, number>) =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([name, bytes]) => ({ name, kB: Math.round(bytes / 1024), pct: round1((bytes / Math.max(total, 1)) * 100) }));
  return { liveMB: round2(total / 1048576), byModule: list(modules), byFunction: list(fns), nodeletInclusive: list(inclusive) };
}

/**
 * The bursts of a function's inclusive time in a profile: its samples (the function anywhere on the stack) grouped
 * where less than `gapMs` apart, each with its start (ms into the profile) and CPU time. A periodic loop's rounds,
 * such as the stats housekeeping's, stand out from the calls between them.
 */
export function functionBursts(profile: CpuProfile, frame: (f: CallFrame) => boolean, gapMs: number): { atMs: number; ms: number }[] {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const under = new Map<number, boolean>();
  const isUnder = (id: number): boolean => {
    let known = under.get(id);
    if (known === undefined) {
      const up = parent.get(id);
      known = frame(byId.get(id)!.callFrame) || (up !== undefined && isUnder(up));
      under.set(id, known);
    }
    return known;
  };
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const bursts: { atMs: number; ms: number; lastUs: number }[] = [];
  let t = profile.startTime;
  for (let i = 0; i < samples.length; i++) {
    t += deltas[i] ?? 0;
    if (!isUnder(samples[i]!)) continue;
    const us = Math.max(0, deltas[i + 1] ?? 0);
    const last = bursts[bursts.length - 1];
    if (last && t - last.lastUs < gapMs * 1000) {
      last.ms += us / 1000;
      last.lastUs = t;
    } else bursts.push({ atMs: (t - profile.startTime) / 1000, ms: us / 1000, lastUs: t });
  }
  return bursts.map((b) => ({ atMs: round1(b.atMs), ms: round1(b.ms) }));
}
