// An in-memory cgroup v2 filesystem for unit tests, with the kernel's rules that matter to pod cgroups: a cgroup has
// the control files of the controllers its parent enables in cgroup.subtree_control (and no others), only
// controllers offered in a cgroup's cgroup.controllers can be enabled, a control file is never created by a write, and a
// cgroup with children cannot be removed.
import { posix } from 'node:path';
import type { CgroupFs } from '../../../src/host/cgroups.js';

function errno(code: string, op: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${op} '${path}'`), { code, path });
}

/** The files a controller puts into a cgroup, with the kernel's defaults. */
const controllerFiles: Record<string, Record<string, string>> = {
  cpu: { 'cpu.weight': '100', 'cpu.max': 'max 100000' },
  cpuset: { 'cpuset.cpus': '', 'cpuset.mems': '' },
  memory: { 'memory.max': 'max', 'memory.events': 'oom 0\noom_kill 0\n' },
  pids: { 'pids.max': 'max' },
  io: { 'io.weight': 'default 100' },
  hugetlb: {},
};

export class InMemoryCgroupFs implements CgroupFs {
  readonly dirs = new Set<string>();
  /** Values written (or set up), by path; a controller's other files read as its defaults. */
  private readonly written = new Map<string, string>();

  constructor(
    readonly mountPoint: string,
    private readonly rootControllers: string[],
  ) {
    this.dirs.add(mountPoint);
  }

  private enabled(dir: string): string[] {
    return (this.written.get(`${dir}/cgroup.subtree_control`) ?? '').split(' ').filter(Boolean);
  }

  /** The controllers a cgroup offers: the root's, else what its parent enables (the kernel derives it each time). */
  private offered(dir: string): string[] {
    return dir === this.mountPoint ? this.rootControllers : this.enabled(posix.dirname(dir));
  }

  /** A control file's content, or undefined when the cgroup has no such file. */
  read(path: string): string | undefined {
    const file = posix.normalize(path);
    const dir = posix.dirname(file);
    if (!this.dirs.has(dir)) return undefined;
    const name = posix.basename(file);
    if (name === 'cgroup.controllers') return this.offered(dir).join(' ');
    if (name === 'cgroup.subtree_control') return this.enabled(dir).join(' ');
    if (name === 'cgroup.procs') return this.written.get(file) ?? '';
    const controller = name.split('.')[0] ?? '';
    const defaults = controllerFiles[controller];
    if (dir === this.mountPoint || !defaults || !(name in defaults) || !this.offered(dir).includes(controller)) return undefined;
    return this.written.get(file) ?? defaults[name];
  }

  async mkdir(path: string): Promise<void> {
    const dir = posix.normalize(path);
    if (this.dirs.has(dir)) throw errno('EEXIST', 'mkdir', path);
    if (!this.dirs.has(posix.dirname(dir))) throw errno('ENOENT', 'mkdir', path);
    this.dirs.add(dir);
  }

  async rmdir(path: string): Promise<void> {
    const dir = posix.normalize(path);
    if (!this.dirs.has(dir)) throw errno('ENOENT', 'rmdir', path);
    if ([...this.dirs].some((d) => d.startsWith(`${dir}/`))) throw errno('EBUSY', 'rmdir', path);
    this.dirs.delete(dir);
    for (const f of [...this.written.keys()]) if (posix.dirname(f) === dir) this.written.delete(f);
  }

  async readFile(path: string): Promise<string> {
    const content = this.read(path);
    if (content === undefined) throw errno('ENOENT', 'open', path);
    return content;
  }

  async writeControl(path: string, value: string): Promise<void> {
    const file = posix.normalize(path);
    if (this.read(file) === undefined || posix.basename(file) === 'cgroup.controllers') throw errno('ENOENT', 'open', path);
    if (posix.basename(file) !== 'cgroup.subtree_control') {
      this.written.set(file, value);
      return;
    }
    const dir = posix.dirname(file);
    const offered = this.offered(dir);
    const enabled = new Set(this.enabled(dir));
    for (const token of value.split(' ').filter(Boolean)) {
      const name = token.slice(1);
      if (!offered.includes(name)) throw errno('ENOENT', 'write', path);
      if (token.startsWith('+')) enabled.add(name);
      else enabled.delete(name);
    }
    this.written.set(file, [...enabled].join(' '));
  }

  async subdirs(path: string): Promise<string[]> {
    const dir = posix.normalize(path);
    if (!this.dirs.has(dir)) throw errno('ENOENT', 'scandir', path);
    return [...this.dirs].filter((d) => d !== dir && posix.dirname(d) === dir).map((d) => posix.basename(d));
  }
}
