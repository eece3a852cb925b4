// IPv4/IPv6 address and CIDR arithmetic for pod subnets: parsing, overlap tests, first host address.
import { isIPv4, isIPv6 } from 'node:net';

export type IpFamily = 4 | 6;

export interface IpAddress {
  family: IpFamily;
  value: bigint;
}

export interface Cidr {
  family: IpFamily;
  /** The address as written (host bits may be set, e.g. "10.0.0.5/24"). */
  address: bigint;
  prefix: number;
}

const bitsOf = (family: IpFamily): number => (family === 4 ? 32 : 128);

/** Parses a bare IPv4 or IPv6 address; undefined when it is not one. */
export function parseIp(text: string): IpAddress | undefined {
  if (isIPv4(text)) {
    const value = text.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
    return { family: 4, value };
  }
  if (isIPv6(text)) return { family: 6, value: parseIPv6(text) };
  return undefined;
}

function parseIPv6(text: string): bigint {
  // An embedded IPv4 tail ("::ffff:10.0.0.1") stands for the last two groups.
  let groupsText = text.replace(/%.*$/, '');
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(groupsText);
  if (v4?.[1]) {
    const n = parseIp(v4[1])!.value;
    groupsText = groupsText.slice(0, v4.index) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = groupsText.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? 0 : 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(zeros).fill('0'), ...tailGroups];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/** Formats an address; IPv6 in RFC 5952 form (longest zero run compressed). */
export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((ip.value >> shift) & 0xffn)).join('.');
  }
  const groups = Array.from({ length: 8 }, (_, i) => Number((ip.value >> BigInt((7 - i) * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i > 1) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** Parses "addr/prefix"; a bare address is a host route (/32 or /128). Throws on anything else. */
export function parseCidr(text: string): Cidr {
  const slash = text.indexOf('/');
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!ip) throw new Error(`invalid CIDR ${JSON.stringify(text)}: not an IP address`);
  const bits = bitsOf(ip.family);
  if (slash < 0) return { family: ip.family, address: ip.value, prefix: bits };
  const prefixText = text.slice(slash + 1);
  const prefix = Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > bits) {
    throw new Error(`invalid CIDR ${JSON.stringify(text)}: prefix length must be 0..${bits}`);
  }
  return { family: ip.family, address: ip.value, prefix };
}

function hostMask(c: Cidr): bigint {
  return (1n << BigInt(bitsOf(c.family) - c.prefix)) - 1n;
}

/** The network the CIDR lies in (host bits cleared). */
export function networkOf(c: Cidr): Cidr {
  return { family: c.family, address: c.address & ~hostMask(c), prefix: c.prefix };
}

export function formatCidr(c: Cidr): string {
  return `${formatIp({ family: c.family, value: c.address })}/${c.prefix}`;
}

/** Whether two CIDRs share at least one address (never across families). */
export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  if (a.family !== b.family) return false;
  const shorter = Math.min(a.prefix, b.prefix);
  const mask = ~((1n << BigInt(bitsOf(a.family) - shorter)) - 1n);
  return (a.address & mask) === (b.address & mask);
}

/** Whether `ip` lies inside `c`. */
export function cidrContains(c: Cidr, ip: IpAddress): boolean {
  return cidrsOverlap(c, { family: ip.family, address: ip.value, prefix: bitsOf(ip.family) });
}

/** The first usable host address of a network: the conventional gateway of a pod subnet. */
export function firstHost(c: Cidr): IpAddress {
  const net = networkOf(c);
  return { family: c.family, value: net.address + 1n };
}

/** Number of address bits left for hosts. */
export function hostBits(c: Cidr): number {
  return bitsOf(c.family) - c.prefix;
}
