// Cluster mode end to end: the real kubectl against the test API server (its tables parsed by column), and what a pod
// occupies on the node (sandbox, containers, netns, host veth, host-local reservation, pod dir) to prove it is all gone.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { execa } from 'execa';
import type { CriClient } from '../../../src/cri/client.js';
import { ipReservations, runtimeObjects, sandboxNetns } from './agent.js';

/** The real kubectl as the admin, with a cache dir of the test's own (discovery is cached there, not in ~/.kube). */
export class Kubectl {
  constructor(
    readonly kubeconfig: string,
    readonly cacheDir: string,
    /** Where YAML files for `create -f` / `apply -f` are written. */
    readonly workDir: string,
  ) {}

  async run(...args: string[]): Promise<string> {
    const { stdout } = await execa('kubectl', ['--kubeconfig', this.kubeconfig, '--cache-dir', this.cacheDir, ...args], { timeout: 90_000 });
    return stdout;
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

/** What one pod holds on the node, recorded while it runs. */
export interface PodFootprint {
  uid: string;
  podIP: string;
  sandboxes: string[];
  containers: string[];
  /** /var/run/netns/cni-... */
  netns: string;
  /** The host end of the pod's veth pair. */
  hostVeth: string;
  podDir: string;
}

/** The host interface whose index is the peer of eth0 inside the netns. */
async function hostVethOf(netnsPath: string): Promise<string> {
  const { stdout } = await execa('ip', ['-n', basename(netnsPath), '-j', 'link', 'show', 'eth0']);
  const [eth0] = JSON.parse(stdout) as { link_index?: number }[];
  if (!eth0?.link_index) throw new Error(`no veth peer of eth0 in ${netnsPath}`);
  const host = JSON.parse((await execa('ip', ['-j', 'link', 'show'])).stdout) as { ifindex: number; ifname: string }[];
  const veth = host.find((l) => l.ifindex === eth0.link_index);
  if (!veth) throw new Error(`no host interface with index ${eth0.link_index}`);
  return veth.ifname;
}

export async function podFootprint(cri: CriClient, rootDir: string, uid: string, podIP: string): Promise<PodFootprint> {
  const { sandboxes, containers } = await runtimeObjects(cri, [uid]);
  if (sandboxes.length !== 1) throw new Error(`pod ${uid} has ${sandboxes.length} sandboxes`);
  const netns = await sandboxNetns(cri, sandboxes[0]!);
  if (!netns) throw new Error(`no netns for sandbox ${sandboxes[0]}`);
  return { uid, podIP, sandboxes, containers, netns, hostVeth: await hostVethOf(netns), podDir: join(rootDir, 'pods', uid) };
}

/** What is left on the node of a footprint: an empty list when the pod is gone without a trace. */
export async function leftovers(cri: CriClient, fp: PodFootprint): Promise<string[]> {
  const left: string[] = [];
  const { sandboxes, containers } = await runtimeObjects(cri, [fp.uid]);
  left.push(...sandboxes.map((s) => `sandbox ${s}`), ...containers.map((c) => `container ${c}`));
  if (existsSync(fp.netns)) left.push(`netns ${fp.netns}`);
  const { exitCode } = await execa('ip', ['link', 'show', fp.hostVeth], { reject: false });
  if (exitCode === 0) left.push(`veth ${fp.hostVeth}`);
  if ((await ipReservations()).includes(fp.podIP)) left.push(`host-local reservation ${fp.podIP}`);
  if (existsSync(fp.podDir)) left.push(`pod dir ${fp.podDir}`);
  return left;
}

/** How many lines of the containerd log name this string (a pod UID: containerd logs every RunPodSandbox with it). */
export async function containerdLogMentions(text: string, log = '/var/log/nodelet/containerd.log'): Promise<number> {
  const content = await readFile(log, 'utf8').catch(() => '');
  return content.split('\n').filter((l) => l.includes(text)).length;
}
