// IP address text in one canonical form, so that two spellings of one address compare equal.
import { isIPv4, isIPv6 } from 'node:net';

/** The address as Go prints it (IPv6 compressed and lower-case: "fd00::1"), or undefined when it is not an IP address. */
export function canonicalIP(ip: string): string | undefined {
  if (isIPv4(ip)) return ip;
  return isIPv6(ip) ? new URL(`http://[${ip}]`).hostname.slice(1, -1) : undefined;
}
