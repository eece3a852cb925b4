// CNI protocol details shared by the executor, the shim server and the DEL fallback: versions, CNI_ARGS, results.
import { boundedCopy, ObjectLimitError } from '../core/bounded-walk.js';
import { parseCidr } from './cidr.js';
import { CniError, CniErrorCode, type CniResult, type CniRuntimeConf } from './types.js';

/** Spec versions whose result shape nodelet reads and writes (0.1.0/0.2.0 used a different result layout). */
export const SUPPORTED_CNI_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] as const;

export function isSupportedVersion(version: string): boolean {
  return (SUPPORTED_CNI_VERSIONS as readonly string[]).includes(version);
}

/** Compares dotted versions numerically; negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Parses CNI_ARGS ("K=V;K=V"); empty segments are ignored, a segment without "=" is an error. */
export function parseCniArgs(text: string | undefined): [string, string][] {
  if (!text) return [];
  const pairs: [string, string][] = [];
  for (const part of text.split(';')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0) {
      throw new CniError({ code: CniErrorCode.InvalidEnvironment, msg: `CNI_ARGS: invalid pair ${JSON.stringify(part)}` });
    }
    pairs.push([part.slice(0, eq), part.slice(eq + 1)]);
  }
  return pairs;
}

export function formatCniArgs(args: [string, string][]): string {
  return args.map(([k, v]) => `${k}=${v}`).join(';');
}

/** "namespace/name" of the pod an attachment belongs to, from the K8S_POD_* args runtimes pass. */
export function podIdentity(args: [string, string][]): string | undefined {
  const get = (key: string): string | undefined => args.find(([k]) => k === key)?.[1];
  const name = get('K8S_POD_NAME');
  return name ? `${get('K8S_POD_NAMESPACE') ?? ''}/${name}` : undefined;
}

// Spec: container IDs and network names start with an alphanumeric, then alphanumerics, '_', '.', '-'.
const ID_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

export function isValidNetworkName(name: string): boolean {
  return ID_PATTERN.test(name);
}

/** Checks the attachment parameters the spec constrains; ADD and CHECK also need a netns. */
export function validateRuntimeConf(rt: CniRuntimeConf, needsNetns: boolean): void {
  const bad = (variable: string, why: string): CniError =>
    new CniError({ code: CniErrorCode.InvalidEnvironment, msg: `${variable} ${why}` });
  if (!ID_PATTERN.test(rt.containerId)) throw bad('CNI_CONTAINERID', `is invalid: ${JSON.stringify(rt.containerId)}`);
  if (
    rt.ifName === '' ||
    rt.ifName === '.' ||
    rt.ifName === '..' ||
    rt.ifName.length > 15 ||
    /[/:\s]/.test(rt.ifName)
  ) {
    throw bad('CNI_IFNAME', `is invalid: ${JSON.stringify(rt.ifName)}`);
  }
  if (needsNetns && rt.netns === '') throw bad('CNI_NETNS', 'is required');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Decodes a plugin's ADD output; the plugin name goes into the error when it is not a result. */
export function parseResult(stdout: string, plugin: string): CniResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch (err) {
    throw new CniError({
      code: CniErrorCode.DecodingFailure,
      msg: 'result is not JSON',
      details: stdout.slice(0, 500),
      plugin,
      cause: err,
    });
  }
  try {
    // The result is cached, logged and handed to the next plugin as prevResult: it must be a value those walks survive.
    parsed = boundedCopy(parsed);
  } catch (err) {
    if (!(err instanceof ObjectLimitError)) throw err;
    throw new CniError({ code: CniErrorCode.DecodingFailure, msg: `result field ${err.message}`, plugin });
  }
  if (!isObject(parsed) || typeof parsed.cniVersion !== 'string') {
    throw new CniError({
      code: CniErrorCode.DecodingFailure,
      msg: 'result is not a CNI result object with a cniVersion',
      details: stdout.slice(0, 500),
      plugin,
    });
  }
  if (parsed.ips !== undefined && !Array.isArray(parsed.ips)) {
    throw new CniError({ code: CniErrorCode.DecodingFailure, msg: 'result field ips is not a list', plugin });
  }
  if (parsed.interfaces !== undefined && !Array.isArray(parsed.interfaces)) {
    throw new CniError({ code: CniErrorCode.DecodingFailure, msg: 'result field interfaces is not a list', plugin });
  }
  return parsed as CniResult;
}

/**
 * Re-expresses a result in another supported spec version. 0.3.x/0.4.0 and 1.0.0 differ only in the
 * per-ip `version` field (removed in 1.0.0).
 */
export function convertResult(result: CniResult, toVersion: string): CniResult {
  if (!isSupportedVersion(toVersion)) {
    throw new CniError({
      code: CniErrorCode.IncompatibleVersion,
      msg: `cannot express a result in CNI version ${toVersion}`,
      details: `supported: ${SUPPORTED_CNI_VERSIONS.join(', ')}`,
    });
  }
  if (!isSupportedVersion(result.cniVersion)) {
    throw new CniError({
      code: CniErrorCode.IncompatibleVersion,
      msg: `cannot convert a result of CNI version ${result.cniVersion}`,
    });
  }
  const legacy = compareVersions(toVersion, '1.0.0') < 0;
  const ips = result.ips?.map((ip) => {
    const { version: _drop, ...rest } = ip;
    if (!legacy) return rest;
    return { ...rest, version: ip.address.includes(':') ? '6' : '4' };
  });
  const out: CniResult = { ...result, cniVersion: toVersion };
  if (ips) out.ips = ips;
  return out;
}

/**
 * The container's bare IPs from a result, IPv4 first: addresses on interfaces inside the sandbox, or all
 * addresses when the result does not say which interface holds them.
 */
export function resultPodIPs(result: CniResult): string[] {
  const interfaces = result.interfaces ?? [];
  const ips = (result.ips ?? []).filter((ip) => {
    if (ip.interface === undefined) return true;
    const itf = interfaces[ip.interface];
    return itf === undefined || Boolean(itf.sandbox);
  });
  const bare = ips
    .map((ip) => {
      try {
        const c = parseCidr(ip.address);
        return { family: c.family, text: ip.address.split('/')[0] ?? ip.address };
      } catch {
        return undefined;
      }
    })
    .filter((x): x is { family: 4 | 6; text: string } => x !== undefined);
  return [...bare.filter((x) => x.family === 4), ...bare.filter((x) => x.family === 6)].map((x) => x.text);
}
