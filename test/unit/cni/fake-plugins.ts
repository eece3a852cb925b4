// Fake CNI plugins for tests: sh scripts that record each call (argv count, CNI_* env, stdin) and answer as told.
import { chmod, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface FakePluginBehaviour {
  /** Printed on ADD (default: a result naming the plugin). */
  addResult?: object;
  /** Fail on these commands with a CNI error JSON on stdout and exit 1. */
  failOn?: { commands: string[]; code: number; msg: string; details?: string };
  /** Fail on these commands with only a stderr message and exit 2. */
  stderrFailOn?: { commands: string[]; message: string };
  /** Print this (not JSON) on ADD. */
  garbageOnAdd?: string;
  /** Sleep this many seconds before answering. */
  sleepSeconds?: number;
}

export interface RecordedCall {
  plugin: string;
  command: string;
  argc: number;
  env: Record<string, string>;
  stdin: Record<string, unknown>;
}

export function defaultResult(plugin: string): object {
  return {
    cniVersion: '1.0.0',
    interfaces: [{ name: `${plugin}-if`, mac: '02:00:00:00:00:01', sandbox: '/run/netns/fake' }],
    ips: [{ address: '10.1.0.5/24', gateway: '10.1.0.1', interface: 0 }],
    routes: [{ dst: '0.0.0.0/0' }],
    dns: {},
  };
}

const shQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** A directory of fake plugins plus the log of their calls (shared across plugins, in call order). */
export class FakePlugins {
  readonly binDir: string;
  readonly logDir: string;

  constructor(root: string) {
    this.binDir = join(root, 'bin');
    this.logDir = join(root, 'log');
  }

  async install(name: string, behaviour: FakePluginBehaviour = {}): Promise<void> {
    await mkdir(this.binDir, { recursive: true });
    await mkdir(this.logDir, { recursive: true });
    const log = shQuote(this.logDir);
    const lines = [
      '#!/bin/sh',
      `log=${log}`,
      'n=$(cat "$log/seq" 2>/dev/null || echo 0); n=$((n+1)); echo "$n" > "$log/seq"',
      `echo "${name} $CNI_COMMAND $#" > "$log/$n.meta"`,
      'cat > "$log/$n.stdin"',
      'env | grep "^CNI_" > "$log/$n.env"',
    ];
    if (behaviour.sleepSeconds) lines.push(`sleep ${behaviour.sleepSeconds}`);
    if (behaviour.failOn) {
      const err = JSON.stringify({
        cniVersion: '1.0.0',
        code: behaviour.failOn.code,
        msg: behaviour.failOn.msg,
        ...(behaviour.failOn.details ? { details: behaviour.failOn.details } : {}),
      });
      for (const c of behaviour.failOn.commands) lines.push(`[ "$CNI_COMMAND" = ${c} ] && { echo ${shQuote(err)}; exit 1; }`);
    }
    if (behaviour.stderrFailOn) {
      for (const c of behaviour.stderrFailOn.commands) {
        lines.push(`[ "$CNI_COMMAND" = ${c} ] && { echo ${shQuote(behaviour.stderrFailOn.message)} >&2; exit 2; }`);
      }
    }
    const add = behaviour.garbageOnAdd ?? JSON.stringify(behaviour.addResult ?? defaultResult(name));
    lines.push(
      'case "$CNI_COMMAND" in',
      `  ADD) echo ${shQuote(add)} ;;`,
      `  VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.1","0.4.0","1.0.0"]}' ;;`,
      'esac',
      'exit 0',
    );
    const path = join(this.binDir, name);
    await writeFile(path, lines.join('\n') + '\n');
    await chmod(path, 0o755);
  }

  /** Every recorded call, in order. */
  async calls(): Promise<RecordedCall[]> {
    let names: string[];
    try {
      names = await readdir(this.logDir);
    } catch {
      return [];
    }
    const seqs = names
      .filter((n) => n.endsWith('.meta'))
      .map((n) => Number(n.slice(0, -5)))
      .sort((a, b) => a - b);
    const out: RecordedCall[] = [];
    for (const n of seqs) {
      const [plugin = '', command = '', argc = '0'] = (await readFile(join(this.logDir, `${n}.meta`), 'utf8')).trim().split(' ');
      const envText = await readFile(join(this.logDir, `${n}.env`), 'utf8');
      const env: Record<string, string> = {};
      for (const line of envText.split('\n')) {
        const eq = line.indexOf('=');
        if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
      }
      const stdinText = await readFile(join(this.logDir, `${n}.stdin`), 'utf8');
      out.push({ plugin, command, argc: Number(argc), env, stdin: stdinText ? (JSON.parse(stdinText) as Record<string, unknown>) : {} });
    }
    return out;
  }

  async clearCalls(): Promise<void> {
    const names = await readdir(this.logDir).catch(() => [] as string[]);
    await Promise.all(names.map((n) => rm(join(this.logDir, n), { force: true })));
  }
}
