// The real kubectl as a test's client of an API server (the real control plane of test/cluster):
// commands, JSON, tables read by column, and a pod's view with waiting. It runs the kubectl that scripts/kube-build.sh
// built (`<bin dir>/kubectl`, the control plane's version), not one from PATH: a bare Debian has none.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { execa } from 'execa';
import { ensureBinaries } from '../../cluster/control-plane.js';

let builtKubectl: Promise<string> | undefined;

/** The path of the built kubectl (builds the binaries when they are missing; 20 ms when they are there). */
export function kubectlBinary(): Promise<string> {
  builtKubectl ??= ensureBinaries().then((bin) => join(bin, 'kubectl'));
  return builtKubectl;
}

/** The real kubectl as the admin, with a cache dir of the test's own (discovery is cached there, not in ~/.kube). */
export class Kubectl {
  constructor(
    readonly kubeconfig: string,
    readonly cacheDir: string,
    /** Where YAML files for `create -f` / `apply -f` are written. */
    readonly workDir: string,
    /** The kubectl binary; default: the built one (kubectlBinary()). */
    readonly binary?: string,
  ) {}

  async run(...args: string[]): Promise<string> {
    return (await this.exec(args)).stdout;
  }

  /** Runs kubectl without throwing on a non-zero exit: its exit code, stdout and stderr (warnings, errors). */
  async tryRun(...args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    const r = await this.exec(args, false);
    return { exitCode: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr };
  }

  private async exec(args: string[], reject = true) {
    const bin = this.binary ?? (await kubectlBinary());
    return execa(bin, ['--kubeconfig', this.kubeconfig, '--cache-dir', this.cacheDir, ...args], { timeout: 90_000, reject });
  }

  /** `kubectl get ARGS -o json`. */
  async get<T>(...args: string[]): Promise<T> {
    return JSON.parse(await this.run('get', ...args, '-o', 'json')) as T;
  }

  /** `kubectl get ARGS` (add `-o wide` as wanted) as rows keyed by the column headers. */
  async table(...args: string[]): Promise<Record<string, string>[]> {
    return parseTable(await this.run('get', ...args));
  }

  /** Writes the YAML to `<workDir>/<file>` and runs `kubectl <verb> -f` on it (create or apply). */
  async fromFile(verb: 'create' | 'apply', file: string, yaml: string): Promise<string> {
    const path = join(this.workDir, file);
    await writeFile(path, yaml);
    return this.run(verb, '-f', path);
  }

  /** `kubectl get pod NAME -o json`; its UID goes to `seen` (for a test's clean-up). */
  async pod(name: string, seen?: Set<string>): Promise<V1Pod> {
    const p = await this.get<V1Pod>('pod', name);
    seen?.add(p.metadata!.uid!);
    return p;
  }

  /** Polls the pod through kubectl until `ok` holds. */
  async waitForPod(name: string, what: string, ok: (p: V1Pod) => boolean, opts: { seen?: Set<string>; timeoutMs?: number } = {}): Promise<V1Pod> {
    const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
    let last: V1Pod | undefined;
    while (Date.now() < deadline) {
      last = await this.pod(name, opts.seen).catch(() => undefined);
      if (last && ok(last)) return last;
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error(`${name}: timed out waiting for ${what} (kubectl); last status: ${JSON.stringify(last?.status ?? null)}`);
  }
}

/**
 * kubectl's human-readable table: columns start where their headers start (kubectl aligns cells left under them), so
 * cells with spaces ("1 (5s ago)") and headers with spaces ("NOMINATED NODE") are read whole.
 */
export function parseTable(text: string): Record<string, string>[] {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0) return [];
  const header = lines[0]!;
  const starts: { name: string; at: number }[] = [];
  const re = /\S+(?: \S+)*/g;
  for (let m = re.exec(header); m; m = re.exec(header)) starts.push({ name: m[0], at: m.index });
  return lines.slice(1).map((line) => {
    const row: Record<string, string> = {};
    starts.forEach((c, i) => {
      const end = i + 1 < starts.length ? starts[i + 1]!.at : line.length;
      row[c.name] = line.slice(c.at, end).trim();
    });
    return row;
  });
}
