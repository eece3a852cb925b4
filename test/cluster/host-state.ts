// What a cluster's kube-proxy changes on the host, and how `down` takes it back. kube-proxy (run as the addons'
// DaemonSet on a node of this host) leaves its iptables chains and its conntrack settings when it stops, as on any node.
// `up` records the host's KUBE-* chains and those settings before anything of the cluster runs (DIR/run/host.json);
// `down` runs kube-proxy's own clean-up (`kube-proxy --cleanup`, the built binary, the cluster's proxy mode), then
// removes what that leaves on purpose (its canary chains, and KUBE-FIREWALL and KUBE-MARK-MASQ, which it shares with
// kubelet) among the KUBE-* chains that were not there before, and puts the settings back.
import { execFile } from 'node:child_process';
import { appendFile, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { writeAtomic } from './pki.js';

const execFileAsync = promisify(execFile);

/** The kernel settings kube-proxy makes on its node (its conntrack settings and route_localnet for localhost NodePorts). */
export const KUBE_PROXY_SETTINGS = [
  '/proc/sys/net/netfilter/nf_conntrack_max',
  '/sys/module/nf_conntrack/parameters/hashsize',
  '/proc/sys/net/netfilter/nf_conntrack_tcp_timeout_established',
  '/proc/sys/net/netfilter/nf_conntrack_tcp_timeout_close_wait',
  '/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal',
  '/proc/sys/net/netfilter/nf_conntrack_udp_timeout',
  '/proc/sys/net/netfilter/nf_conntrack_udp_timeout_stream',
  '/proc/sys/net/ipv4/conf/all/route_localnet',
];

const FAMILIES = ['iptables', 'ip6tables'] as const;

export interface HostSnapshot {
  /** Where the cluster's binaries are (kube-proxy for its clean-up). */
  binDir: string;
  /** The cluster's kube-proxy mode (the kube-proxy ConfigMap's `mode`; empty: kube-proxy's default, iptables). */
  proxyMode?: string;
  /** Every KUBE-* chain the host had, as `<family> <table> <chain>`. */
  kubeChains: string[];
  /** KUBE_PROXY_SETTINGS' values (the ones that exist on this host). */
  settings: Record<string, string>;
}

function snapshotFile(dir: string): string {
  return join(dir, 'run', 'host.json');
}

export async function readHostSnapshot(dir: string): Promise<HostSnapshot | undefined> {
  const text = await readFile(snapshotFile(dir), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as HostSnapshot);
}

export async function writeHostSnapshot(dir: string, snapshot: HostSnapshot): Promise<void> {
  await writeAtomic(snapshotFile(dir), `${JSON.stringify(snapshot, null, 2)}\n`, 0o644);
}

/** The host as it is now: its KUBE-* chains and kube-proxy's settings. */
export async function takeHostSnapshot(binDir: string): Promise<HostSnapshot> {
  const settings: Record<string, string> = {};
  for (const f of KUBE_PROXY_SETTINGS) {
    const value = (await readFile(f, 'utf8').catch(() => undefined))?.trim();
    if (value !== undefined) settings[f] = value;
  }
  return { binDir, kubeChains: (await kubeChains()).map((c) => `${c.family} ${c.table} ${c.chain}`), settings };
}

interface Chain { family: (typeof FAMILIES)[number]; table: string; chain: string }

/** `<family>-save`'s text per family (empty when that family's tool is missing). */
async function saveAll(): Promise<Map<Chain['family'], string>> {
  const out = new Map<Chain['family'], string>();
  for (const family of FAMILIES) {
    out.set(family, await execFileAsync(`${family}-save`, [], { encoding: 'utf8', maxBuffer: 64 << 20 }).then((r) => r.stdout, () => ''));
  }
  return out;
}

/** Each table's block of a save: [table, text]. */
function tables(save: string): [string, string][] {
  return save.split(/^\*/m).slice(1).map((block) => [block.slice(0, block.indexOf('\n')), block]);
}

async function kubeChains(): Promise<Chain[]> {
  const chains: Chain[] = [];
  for (const [family, save] of await saveAll()) {
    for (const [table, block] of tables(save)) {
      for (const m of block.matchAll(/^:(KUBE-\S+) /gm)) chains.push({ family, table, chain: m[1]! });
    }
  }
  return chains;
}

/**
 * Takes back what kube-proxy did on the host since `up` recorded it (see the top of this file) and forgets the record.
 * kube-proxy's clean-up runs only on a host that had no KUBE-* chain before: it removes every chain of kube-proxy's
 * names, and would take another cluster's. Returns what it did, one line each; throws when a chain it should remove stays.
 */
export async function restoreHost(dir: string): Promise<string[]> {
  const snapshot = await readHostSnapshot(dir);
  if (!snapshot) return [];
  const done: string[] = [];
  const fresh = async () => (await kubeChains()).filter((c) => !snapshot.kubeChains.includes(`${c.family} ${c.table} ${c.chain}`));
  const added = await fresh();
  if (added.length > 0 && snapshot.kubeChains.length === 0) {
    const args = ['--cleanup', ...(snapshot.proxyMode ? [`--proxy-mode=${snapshot.proxyMode}`] : [])];
    // Its exit status says nothing here: it is 1 whenever a backend's tool is missing (ipset for IPVS, nft for nftables),
    // which it also tries. What it left is looked at below.
    const r = await execFileAsync(join(snapshot.binDir, 'kube-proxy'), args, { encoding: 'utf8', timeout: 120_000, maxBuffer: 16 << 20 })
      .then((x) => ({ code: 0, out: x.stdout + x.stderr }), (e: { code?: number; stdout?: string; stderr?: string; message: string }) =>
        ({ code: e.code ?? -1, out: `${e.stdout ?? ''}${e.stderr ?? e.message}` }));
    await appendFile(join(dir, 'logs', 'kube-proxy-cleanup.log'), `$ kube-proxy ${args.join(' ')} (exit ${r.code})\n${r.out}\n`).catch(() => undefined);
    done.push(`kube-proxy ${args.join(' ')} (exit ${r.code})`);
  }
  const left = await fresh();
  if (left.length > 0) {
    await removeChains(left);
    done.push(`removed ${left.map((c) => `${c.family} ${c.table} ${c.chain}`).join(', ')}`);
  }
  for (const [f, value] of Object.entries(snapshot.settings)) {
    const now = (await readFile(f, 'utf8').catch(() => undefined))?.trim();
    if (now !== undefined && now !== value) {
      await writeFile(f, `${value}\n`);
      done.push(`${f} back to ${value} (was ${now})`);
    }
  }
  const still = await fresh();
  if (still.length > 0) throw new Error(`KUBE-* chains the cluster made are still there: ${still.map((c) => `${c.family} ${c.table} ${c.chain}`).join(', ')}`);
  await rm(snapshotFile(dir), { force: true });
  return done;
}

/** Flushes and deletes these chains, after deleting the rules elsewhere that jump to them. */
async function removeChains(chains: Chain[]): Promise<void> {
  for (const [family, save] of await saveAll()) {
    for (const [table, block] of tables(save)) {
      const names = chains.filter((c) => c.family === family && c.table === table).map((c) => c.chain);
      if (names.length === 0) continue;
      const jumps = block.split('\n').filter((l) => l.startsWith('-A ') && !names.includes(l.split(' ')[1]!)
        && names.some((chain) => new RegExp(` -[jg] ${chain.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}( |$)`).test(l)));
      const script = [`*${table}`, ...jumps.map((l) => `-D ${l.slice(3)}`), ...names.map((c) => `-F ${c}`), ...names.map((c) => `-X ${c}`), 'COMMIT', ''];
      await new Promise<void>((resolve, reject) => {
        const child = execFile(`${family}-restore`, ['-w', '10', '--noflush'], { encoding: 'utf8' }, (err, _out, stderr) =>
          err ? reject(new Error(`${family}-restore (table ${table}) failed: ${stderr || err.message}`)) : resolve());
        child.stdin!.end(script.join('\n'));
      });
    }
  }
}
