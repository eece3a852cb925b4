// Host fixtures for the CNI integration tests: a test netns, a test-only pod network, and their removal.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { pino } from 'pino';
import { loadPodNetworks, subnetCollisions, type PodNetworks } from '../../../src/cni/conflist.js';
import { hostRoutes } from '../../../src/host/routes.js';

export const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
export const silentLog = pino({ level: 'silent' });
export const isRoot = process.getuid?.() === 0;

export async function ip(args: string[]): Promise<string> {
  return (await execa('ip', args, { timeout: 10_000 })).stdout;
}

/** Runs `ip` and ignores failure (for removing things that may not exist). */
export async function ipQuiet(args: string[]): Promise<void> {
  await execa('ip', args, { timeout: 10_000, reject: false });
}

export async function createNetns(name: string): Promise<string> {
  await ipQuiet(['netns', 'del', name]);
  await ip(['netns', 'add', name]);
  return `/run/netns/${name}`;
}

/** Addresses (CIDR) of an interface inside a netns; empty when the interface does not exist. */
export async function netnsAddresses(netns: string, ifName: string): Promise<string[]> {
  const r = await execa('ip', ['netns', 'exec', netns, 'ip', '-j', 'addr', 'show', 'dev', ifName], { reject: false, timeout: 10_000 });
  if (r.exitCode !== 0) return [];
  const links = JSON.parse(r.stdout) as { addr_info?: { local: string; prefixlen: number }[] }[];
  return links.flatMap((l) => (l.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`));
}

export async function linkExists(name: string, netns?: string): Promise<boolean> {
  const args = netns ? ['netns', 'exec', netns, 'ip', 'link', 'show', 'dev', name] : ['link', 'show', 'dev', name];
  return (await execa('ip', args, { reject: false, timeout: 10_000 })).exitCode === 0;
}

export async function linkFlags(name: string, netns: string): Promise<string[]> {
  const out = await ip(['netns', 'exec', netns, 'ip', '-j', 'link', 'show', 'dev', name]);
  return (JSON.parse(out) as { flags: string[] }[])[0]?.flags ?? [];
}

export interface TestNetwork {
  networks: PodNetworks;
  bridge: string;
  subnet: string;
  ipamDataDir: string;
}

/**
 * The repository's pod network, made test-only: its own network names, bridge and subnet (via the pod CIDR
 * override), and host-local state under `root`, so it cannot touch a running agent's network.
 */
export async function testNetwork(opts: { root: string; bridge: string; subnet: string; name: string }): Promise<TestNetwork> {
  const clash = subnetCollisions(opts.subnet, await hostRoutes(), [opts.bridge]);
  if (clash.length > 0) throw new Error(`test subnet ${opts.subnet} overlaps host routes ${JSON.stringify(clash)}`);
  const ipamDataDir = join(opts.root, 'ipam');
  await mkdir(ipamDataDir, { recursive: true });
  const loaded = await loadPodNetworks(join(repoRoot, 'cni-conf'), { podCidr: opts.subnet });
  const plugins = loaded.main.plugins.map((p) =>
    p.type === 'bridge' ? { ...p, bridge: opts.bridge, ipam: { ...p.ipam!, dataDir: ipamDataDir } } : p,
  );
  return {
    networks: {
      main: { ...loaded.main, name: opts.name, plugins },
      loopback: { ...loaded.loopback, name: `${opts.name}-lo` },
    },
    bridge: opts.bridge,
    subnet: opts.subnet,
    ipamDataDir,
  };
}

/** The bridge plugin (isGateway) turns on IPv4 forwarding; tests put back what they found. */
export async function readIpForward(): Promise<string> {
  return (await readFile('/proc/sys/net/ipv4/ip_forward', 'utf8')).trim();
}

export async function restoreIpForward(value: string): Promise<void> {
  if ((await readIpForward()) !== value) await writeFile('/proc/sys/net/ipv4/ip_forward', value);
}
