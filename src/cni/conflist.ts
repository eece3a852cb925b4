// Loads and validates the agent's CNI network configuration lists (kubelet's --cni-conf-dir) and applies the pod CIDR.
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { HostRoute } from '../host/routes.js';
import { cidrsOverlap, firstHost, formatCidr, formatIp, hostBits, networkOf, parseCidr } from './cidr.js';
import { isSupportedVersion, isValidNetworkName, SUPPORTED_CNI_VERSIONS } from './protocol.js';
import { NetConfError, type NetConfList, type PluginConf } from './types.js';

/** File name endings read from a configuration directory, like libcni and containerd. */
export const CONF_EXTENSIONS = ['.conflist', '.conf', '.json'] as const;

/** The two networks every pod joins: loopback on "lo" and the main network on the runtime's interface. */
export interface PodNetworks {
  main: NetConfList;
  loopback: NetConfList;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function validatePlugin(raw: unknown, source: string, field: string): PluginConf {
  if (!isObject(raw)) throw new NetConfError(source, field, 'must be an object');
  const type = raw.type;
  if (typeof type !== 'string' || type === '') throw new NetConfError(source, `${field}.type`, 'must be a non-empty string');
  if (/[/\\]/.test(type) || type === '.' || type === '..') {
    throw new NetConfError(source, `${field}.type`, `${JSON.stringify(type)} is not a plugin file name`);
  }
  if (raw.capabilities !== undefined) {
    if (!isObject(raw.capabilities)) throw new NetConfError(source, `${field}.capabilities`, 'must be an object');
    for (const [cap, on] of Object.entries(raw.capabilities)) {
      if (typeof on !== 'boolean') throw new NetConfError(source, `${field}.capabilities.${cap}`, 'must be true or false');
    }
  }
  if (raw.ipam !== undefined) {
    if (!isObject(raw.ipam)) throw new NetConfError(source, `${field}.ipam`, 'must be an object');
    if (typeof raw.ipam.type !== 'string' || raw.ipam.type === '') {
      throw new NetConfError(source, `${field}.ipam.type`, 'must be a non-empty string');
    }
  }
  for (const reserved of ['runtimeConfig', 'args', 'prevResult']) {
    if (raw[reserved] !== undefined) {
      throw new NetConfError(source, `${field}.${reserved}`, 'is reserved for the runtime and must not be configured');
    }
  }
  return raw as PluginConf;
}

/**
 * Parses one configuration file's text. A list has "plugins"; a single plugin configuration (.conf style,
 * with "type") is wrapped into a one-plugin list as libcni does.
 */
export function parseConfList(text: string, source: string): NetConfList {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new NetConfError(source, '', `not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!isObject(raw)) throw new NetConfError(source, '', 'must be a JSON object');

  const name = raw.name;
  if (typeof name !== 'string') throw new NetConfError(source, 'name', 'must be a string');
  if (!isValidNetworkName(name)) {
    throw new NetConfError(source, 'name', `${JSON.stringify(name)} must start with a letter or digit and hold only letters, digits, "_", "." and "-"`);
  }
  const cniVersion = raw.cniVersion;
  if (typeof cniVersion !== 'string') throw new NetConfError(source, 'cniVersion', 'must be a string');
  if (!isSupportedVersion(cniVersion)) {
    throw new NetConfError(source, 'cniVersion', `${cniVersion} is not supported (supported: ${SUPPORTED_CNI_VERSIONS.join(', ')})`);
  }
  const disableCheck = raw.disableCheck ?? false;
  if (typeof disableCheck !== 'boolean') throw new NetConfError(source, 'disableCheck', 'must be true or false');

  let plugins: PluginConf[];
  if (raw.plugins !== undefined) {
    if (!Array.isArray(raw.plugins)) throw new NetConfError(source, 'plugins', 'must be a list');
    if (raw.plugins.length === 0) throw new NetConfError(source, 'plugins', 'must hold at least one plugin');
    plugins = raw.plugins.map((p, i) => validatePlugin(p, source, `plugins[${i}]`));
  } else if (raw.type !== undefined) {
    const { name: _n, cniVersion: _v, disableCheck: _d, ...plugin } = raw;
    plugins = [validatePlugin(plugin, source, 'type')];
  } else {
    throw new NetConfError(source, 'plugins', 'is missing (and there is no "type" for a single-plugin configuration)');
  }
  return { cniVersion, name, disableCheck, plugins, source };
}

/** The list as the JSON a runtime would have read from disk (what the result cache keeps). */
export function confListJson(list: NetConfList): string {
  const out: Record<string, unknown> = { cniVersion: list.cniVersion, name: list.name };
  if (list.disableCheck) out.disableCheck = true;
  out.plugins = list.plugins;
  return JSON.stringify(out);
}

/** One configuration file's path and text, as read from the directory. */
export interface ConfFile {
  path: string;
  text: string;
}

/**
 * The configuration files of a directory (libcni's ConfFiles: entries with a .conf, .conflist or .json ending that are
 * not directories), sorted by name as containerd sorts them; a missing directory has none. A file removed while it is
 * being read is skipped.
 */
export async function readConfFiles(dir: string): Promise<ConfFile[]> {
  let names: string[];
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    names = entries
      .filter((e) => !e.isDirectory() && (CONF_EXTENSIONS as readonly string[]).includes(extname(e.name)))
      .map((e) => e.name)
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const files: ConfFile[] = [];
  for (const name of names) {
    const path = join(dir, name);
    try {
      files.push({ path, text: await readFile(path, 'utf8') });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new NetConfError(path, '', `cannot be read: ${(err as Error).message}`, { cause: err });
    }
  }
  return files;
}

/** Reads every configuration file of a directory, sorted by file name; a missing directory yields none. */
export async function loadConfLists(dir: string): Promise<NetConfList[]> {
  return (await readConfFiles(dir)).map((f) => parseConfList(f.text, f.path));
}

function isLoopbackOnly(list: NetConfList): boolean {
  return list.plugins.length === 1 && list.plugins[0]?.type === 'loopback';
}

/** The loopback network used when the directory has none (containerd synthesizes one the same way). */
export const DEFAULT_LOOPBACK: NetConfList = {
  cniVersion: '1.0.0',
  name: 'nodelet-loopback',
  disableCheck: false,
  plugins: [{ type: 'loopback' }],
  source: 'built-in',
};

/**
 * Picks the pod networks from loaded lists: the first list (by file name) that is not loopback-only is the
 * main network; the first loopback-only list, or a built-in one, is the loopback network.
 */
export function selectPodNetworks(lists: NetConfList[], dir: string): PodNetworks {
  const selected = selectNetworks(lists.map((list) => ({ path: list.source, list })));
  if (selected.problem) throw selected.problem;
  if (!selected.main) throw new NetConfError(dir, '', 'holds no network configuration besides loopback');
  return { main: selected.main, loopback: selected.loopback };
}

/** What a configuration directory offers now: the pod network, or why there is none. */
export interface NetworkSelection {
  /** The network new pods join; absent while the directory offers none (the runtime's network is then not ready). */
  main?: NetConfList;
  loopback: NetConfList;
  /** Why there is no main network (no file, or the first file cannot be used), for the log. */
  problem?: string;
}

/**
 * containerd's choice (go-cni's loadFromConfDir with one network): files in name order, the first usable one is the
 * network; a file before it that cannot be parsed fails the whole load, as there. Loopback-only lists never become the
 * main network (containerd brings up "lo" itself); the first of them is the loopback network.
 */
export function selectNetworkFromFiles(files: ConfFile[], dir: string): NetworkSelection {
  const selected = selectNetworks(
    files.map((f) => {
      try {
        return { path: f.path, list: parseConfList(f.text, f.path) };
      } catch (err) {
        return { path: f.path, error: err as Error };
      }
    }),
  );
  if (selected.main) return { main: selected.main, loopback: selected.loopback };
  return { loopback: selected.loopback, problem: selected.problem?.message ?? `no network config found in ${dir}` };
}

function selectNetworks(entries: { path: string; list?: NetConfList; error?: Error }[]): { main?: NetConfList; loopback: NetConfList; problem?: Error } {
  let main: NetConfList | undefined;
  let loopback: NetConfList | undefined;
  let problem: Error | undefined;
  for (const entry of [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    if (!entry.list) {
      problem ??= main ? undefined : entry.error;
      continue;
    }
    if (isLoopbackOnly(entry.list)) loopback ??= entry.list;
    else if (!main && !problem) main = entry.list;
  }
  loopback ??= DEFAULT_LOOPBACK;
  if (main && loopback.name === main.name) {
    return { loopback, problem: new NetConfError(loopback.source, 'name', `${JSON.stringify(main.name)} is also the name of ${main.source}`) };
  }
  return main ? { main, loopback } : { loopback, ...(problem ? { problem } : {}) };
}

/**
 * Points the main network's host-local IPAM at the node's pod CIDR (kubelet's --pod-cidr): one range with
 * the subnet and its first host address as gateway. Returns a new list; the input is not changed.
 */
export function withPodCidr(list: NetConfList, podCidr: string): NetConfList {
  let cidr;
  try {
    cidr = networkOf(parseCidr(podCidr));
  } catch (err) {
    throw new NetConfError('--pod-cidr', '', (err as Error).message, { cause: err });
  }
  if (!podCidr.includes('/')) throw new NetConfError('--pod-cidr', '', `${podCidr} has no prefix length`);
  if (hostBits(cidr) < 2) throw new NetConfError('--pod-cidr', '', `${podCidr} is too small for a gateway and pods`);
  const subnet = formatCidr(cidr);
  const gateway = formatIp(firstHost(cidr));

  let found = false;
  const plugins = list.plugins.map((plugin) => {
    if (plugin.ipam?.type !== 'host-local') return plugin;
    found = true;
    // The legacy single-range keys would conflict with "ranges" in host-local, so they go.
    const { subnet: _s, gateway: _g, rangeStart: _rs, rangeEnd: _re, ranges: _r, ...ipam } = plugin.ipam;
    return { ...plugin, ipam: { ...ipam, type: 'host-local', ranges: [[{ subnet, gateway }]] } };
  });
  if (!found) {
    throw new NetConfError(list.source, 'plugins[].ipam', 'no plugin uses host-local IPAM, so --pod-cidr cannot be applied');
  }
  return { ...list, plugins };
}

/** Whether a plugin of the list allocates with host-local IPAM (only such a network can take the node's pod CIDR). */
export function usesHostLocal(list: NetConfList): boolean {
  return list.plugins.some((p) => p.ipam?.type === 'host-local');
}

/** The subnets a list's host-local ranges allocate from. */
export function hostLocalSubnets(list: NetConfList): string[] {
  const subnets: string[] = [];
  for (const plugin of list.plugins) {
    const ipam = plugin.ipam;
    if (ipam?.type !== 'host-local') continue;
    if (typeof ipam.subnet === 'string') subnets.push(ipam.subnet);
    if (Array.isArray(ipam.ranges)) {
      for (const set of ipam.ranges) {
        if (!Array.isArray(set)) continue;
        for (const range of set) {
          if (isObject(range) && typeof range.subnet === 'string') subnets.push(range.subnet);
        }
      }
    }
  }
  return subnets;
}

/** The host bridges a list's bridge plugins attach pods to (their routes are the pod subnet's own). */
export function bridgeNames(list: NetConfList): string[] {
  return list.plugins
    .filter((p) => p.type === 'bridge')
    .map((p) => (typeof p.bridge === 'string' ? p.bridge : 'cni0'));
}

/** Loads the pod networks from a configuration directory, applying the pod CIDR when one is given. */
export async function loadPodNetworks(dir: string, opts: { podCidr?: string } = {}): Promise<PodNetworks> {
  const networks = selectPodNetworks(await loadConfLists(dir), dir);
  if (opts.podCidr) networks.main = withPodCidr(networks.main, opts.podCidr);
  return networks;
}

/**
 * The host routes whose destination overlaps `subnet`: a pod subnet must not shadow a network the host
 * already reaches. Default routes never count; nor do routes through `ignoreDevices` (the pod bridge itself,
 * whose route exists after the agent's previous run), nor those through pods' host veths (ptp routes each pod's IP so).
 */
export function subnetCollisions(subnet: string, hostRoutes: HostRoute[], ignoreDevices: string[] = []): HostRoute[] {
  const pod = parseCidr(subnet);
  return hostRoutes.filter((route) => {
    if (route.dst === 'default') return false;
    if (route.dev !== undefined && (ignoreDevices.includes(route.dev) || route.dev.startsWith('veth'))) return false;
    let dst;
    try {
      dst = parseCidr(route.dst);
    } catch {
      return false;
    }
    if (dst.prefix === 0) return false;
    return cidrsOverlap(pod, dst);
  });
}
