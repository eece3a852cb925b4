// The on-disk CNI result cache in libcni's layout: <cacheDir>/results/<network>-<containerId>-<ifName>, kind cniCacheV1.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { confListJson, parseConfList } from './conflist.js';
import type { CachedAttachment, CniCacheRecord, CniResult, CniRuntimeConf, NetConfList } from './types.js';

/** kubelet's and containerd's default (libcni.CacheDir). */
export const DEFAULT_CNI_CACHE_DIR = '/var/lib/cni';

/** The `managedBy` value on records nodelet writes. */
export const CACHE_OWNER = 'nodelet';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export class ResultCache {
  readonly resultsDir: string;

  constructor(readonly cacheDir: string = DEFAULT_CNI_CACHE_DIR) {
    this.resultsDir = join(cacheDir, 'results');
  }

  path(networkName: string, containerId: string, ifName: string): string {
    return join(this.resultsDir, `${networkName}-${containerId}-${ifName}`);
  }

  /**
   * Stores the final ADD result, or without one the record of an ADD about to run (so that garbage collection finds
   * what an ADD cut short by the agent's death allocated); written to a temporary name and renamed so readers never
   * see half a file.
   */
  async write(list: NetConfList, rt: CniRuntimeConf, result?: CniResult): Promise<void> {
    const record: CniCacheRecord = {
      kind: 'cniCacheV1',
      containerId: rt.containerId,
      ifName: rt.ifName,
      networkName: list.name,
      config: Buffer.from(confListJson(list)).toString('base64'),
      netns: rt.netns,
      cniArgs: rt.args,
      capabilityArgs: rt.capabilityArgs,
      ...(result ? { result } : {}),
      managedBy: CACHE_OWNER,
    };
    const file = this.path(list.name, rt.containerId, rt.ifName);
    const tmp = join(this.resultsDir, `.${list.name}-${rt.containerId}-${rt.ifName}.${randomBytes(4).toString('hex')}.tmp`);
    await mkdir(this.resultsDir, { recursive: true, mode: 0o700 });
    try {
      await writeFile(tmp, JSON.stringify(record), { mode: 0o600 });
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  /** The cached attachment, or undefined when there is none. Throws when the file exists but is unusable. */
  async read(networkName: string, containerId: string, ifName: string): Promise<CachedAttachment | undefined> {
    const file = this.path(networkName, containerId, ifName);
    let text: string;
    let writtenAt: number;
    try {
      text = await readFile(file, 'utf8');
      writtenAt = (await stat(file)).mtimeMs;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    return decodeRecord(text, file, writtenAt);
  }

  async remove(networkName: string, containerId: string, ifName: string): Promise<void> {
    await rm(this.path(networkName, containerId, ifName), { force: true });
  }

  /**
   * Every decodable record (optionally for one container). Files that are not cniCacheV1 records are
   * reported through `onSkip` and otherwise ignored: the directory is shared with other runtimes.
   */
  async list(
    filter: { containerId?: string } = {},
    onSkip: (file: string, err: Error) => void = () => {},
  ): Promise<CachedAttachment[]> {
    let names: string[];
    try {
      names = await readdir(this.resultsDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: CachedAttachment[] = [];
    for (const name of names.sort()) {
      if (name.startsWith('.')) continue;
      if (filter.containerId && !name.includes(`-${filter.containerId}-`)) continue;
      const file = join(this.resultsDir, name);
      try {
        const text = await readFile(file, 'utf8');
        const attachment = decodeRecord(text, file, (await stat(file)).mtimeMs);
        if (filter.containerId && attachment.containerId !== filter.containerId) continue;
        out.push(attachment);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        onSkip(file, err as Error);
      }
    }
    return out;
  }
}

/** Decodes a cniCacheV1 record (ours or libcni's) into what DEL needs. */
export function decodeRecord(text: string, file: string, writtenAt: number): CachedAttachment {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: cache record is not JSON`, { cause: err });
  }
  if (!isObject(raw) || raw.kind !== 'cniCacheV1') throw new Error(`${file}: not a cniCacheV1 record`);
  const { containerId, ifName, networkName, config, result } = raw;
  if (typeof containerId !== 'string' || typeof ifName !== 'string' || typeof networkName !== 'string') {
    throw new Error(`${file}: cache record lacks containerId, ifName or networkName`);
  }
  if (typeof config !== 'string') throw new Error(`${file}: cache record lacks its config`);
  const pending = result === undefined && raw.managedBy === CACHE_OWNER;
  if (!pending && (!isObject(result) || typeof result.cniVersion !== 'string')) throw new Error(`${file}: cache record lacks a result`);
  const cniArgs = Array.isArray(raw.cniArgs)
    ? (raw.cniArgs as unknown[]).filter(
        (p): p is [string, string] => Array.isArray(p) && p.length === 2 && p.every((x) => typeof x === 'string'),
      )
    : [];
  return {
    path: file,
    containerId,
    ifName,
    networkName,
    netns: typeof raw.netns === 'string' ? raw.netns : '',
    config: parseConfList(Buffer.from(config, 'base64').toString('utf8'), `${file} (cached config)`),
    cniArgs,
    capabilityArgs: isObject(raw.capabilityArgs) ? raw.capabilityArgs : {},
    ...(pending ? {} : { result: result as CniResult }),
    managed: raw.managedBy === CACHE_OWNER,
    writtenAt,
  };
}
