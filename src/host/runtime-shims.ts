// containerd's shims that containerd itself forgot. When a CRI call that ends a task loses its client (an agent killed
// inside RunPodSandbox or StopPodSandbox), containerd may delete the task's state and its bundle directory and then
// never send the shim its shutdown (containerd/containerd#7496's path; seen in 1.6 and 2.4.2): the shim runs on with
// nothing to serve, invisible over CRI. A shim of the agent's containerd is collected when its bundle (its working
// directory) is removed, it has no child process (no container process it still reaps), and its id is neither a
// sandbox nor a container, all of it in two collections in a row.
import { readdir, readFile, readlink } from 'node:fs/promises';
import { basename } from 'node:path';
import { CONTAINERD_CRI_NAMESPACE } from '../core/labels.js';

export interface ShimProcess {
  pid: number;
  /** The task (sandbox or container) id the shim was started for. */
  id: string;
  /** Its working directory, the task's bundle, is removed. */
  bundleRemoved: boolean;
  /** Some process is its child. */
  hasChildren: boolean;
}

/** A shim's command line: `containerd-shim-runc-v2 -namespace k8s.io -id <id> -address <socket>` (flag order varies). */
function shimArgs(cmdline: string): { namespace: string; id: string; address: string } | undefined {
  const argv = cmdline.split('\0');
  if (!basename(argv[0] ?? '').startsWith('containerd-shim')) return undefined;
  const flag = (name: string) => {
    const i = argv.indexOf(name);
    return i < 0 ? undefined : argv[i + 1];
  };
  const namespace = flag('-namespace');
  const id = flag('-id');
  const address = flag('-address');
  return namespace && id && address ? { namespace, id, address } : undefined;
}

/** The shims of CRI tasks of the containerd whose socket is `address`, as `procDir` (/proc) shows them. */
export async function listRuntimeShims(address: string, procDir = '/proc'): Promise<ShimProcess[]> {
  const pids = (await readdir(procDir)).filter((name) => /^\d+$/.test(name));
  const parents = new Set<number>();
  const shims: Array<Omit<ShimProcess, 'hasChildren'>> = [];
  await Promise.all(
    pids.map(async (pid) => {
      try {
        const stat = await readFile(`${procDir}/${pid}/stat`, 'utf8');
        // "<pid> (<comm>) <state> <ppid> ...": comm may hold spaces and parentheses.
        parents.add(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
        const args = shimArgs(await readFile(`${procDir}/${pid}/cmdline`, 'utf8'));
        if (args?.address !== address || args.namespace !== CONTAINERD_CRI_NAMESPACE) return;
        const cwd = await readlink(`${procDir}/${pid}/cwd`);
        shims.push({ pid: Number(pid), id: args.id, bundleRemoved: cwd.endsWith(' (deleted)') });
      } catch {
        // exited while listed
      }
    }),
  );
  return shims.map((s) => ({ ...s, hasChildren: parents.has(s.pid) }));
}

/** The shims to end now, and the suspects to look at again in the next collection. */
export function forgottenShims(
  shims: ShimProcess[],
  /** The ids of every sandbox and container the runtime lists. */
  knownIds: ReadonlySet<string>,
  /** What the previous collection suspected. */
  suspects: ReadonlySet<number>,
): { forgotten: ShimProcess[]; suspects: Set<number> } {
  const now = shims.filter((s) => s.bundleRemoved && !s.hasChildren && !knownIds.has(s.id));
  return { forgotten: now.filter((s) => suspects.has(s.pid)), suspects: new Set(now.filter((s) => !suspects.has(s.pid)).map((s) => s.pid)) };
}

/** Ends forgotten shims of one containerd; holds the suspects between collections. */
export class ForgottenShimCollector {
  private suspects = new Set<number>();

  constructor(
    /** The containerd's socket path, as its shims carry it in `-address`. */
    private readonly address: string,
    private readonly procDir = '/proc',
    private readonly kill: (pid: number) => void = (pid) => process.kill(pid, 'SIGKILL'),
  ) {}

  /** One collection; returns the shims it ended. */
  async collect(knownIds: ReadonlySet<string>): Promise<ShimProcess[]> {
    const decision = forgottenShims(await listRuntimeShims(this.address, this.procDir), knownIds, this.suspects);
    this.suspects = decision.suspects;
    const ended: ShimProcess[] = [];
    for (const shim of decision.forgotten) {
      try {
        this.kill(shim.pid);
        ended.push(shim);
      } catch {
        // exited meanwhile
      }
    }
    return ended;
  }
}
