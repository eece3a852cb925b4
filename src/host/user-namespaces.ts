// Pod user namespaces (spec.hostUsers: false) as kubelet's userns manager: every such pod gets its own range of host IDs,
// 65536 long, from the kubelet's range (the subordinate IDs of the user "kubelet" via getsubids, else every ID from 65536
// up); the range is kept in the pod's directory (<root-dir>/pods/<uid>/userns), read back at start so a restarted agent
// allocates no range twice, and released when the pod terminates or is found orphaned.
import { execFile } from 'node:child_process';
import { mkdir, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { release as kernelRelease } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import type { RuntimeHandler, UserNamespace } from '../cri/types.js';
import type { Logger } from '../core/log.js';

/** kubelet's userNsUnitLength: ranges are multiples of it. */
export const userNsUnitLength = 65536;
/** kubelet's DefaultKubeletUserNamespacesIDsPerPod. */
export const defaultIdsPerPod = 65536;
/** kubelet's mappingsFile, in the pod's directory. */
export const mappingsFileName = 'userns';
/** The user whose subordinate IDs are the kubelet's range (kubelet's kubeletUser). */
export const kubeletUser = 'kubelet';

/** A range of host IDs: `length` IDs from `firstId`. */
export interface IdRange {
  firstId: number;
  length: number;
}

/** kubelet's default range when no subordinate IDs are configured: every ID but those below idsPerPod. */
export function defaultKubeletRange(idsPerPod: number): IdRange {
  return { firstId: idsPerPod, length: 2 ** 32 - idsPerPod };
}

/** kubelet's parseGetSubIdsOutput: one line `0: kubelet <first> <count>`. */
export function parseGetSubIdsOutput(output: string): IdRange {
  const lines = output.replace(/^\n+|\n+$/g, '').split('\n');
  if (lines.length !== 1) throw new Error(`error parsing line ${JSON.stringify(output)}: it must contain only one line`);
  const parts = lines[0]!.trim().split(/\s+/);
  if (parts.length !== 4) throw new Error(`invalid line ${JSON.stringify(output)}`);
  const parse = (text: string): number => {
    if (!/^\d+$/.test(text) || Number(text) > 0xffffffff) throw new Error(`error parsing line ${JSON.stringify(output)}: invalid number ${JSON.stringify(text)}`);
    return Number(text);
  };
  return { firstId: parse(parts[2]!), length: parse(parts[3]!) };
}

/**
 * Which slots of the kubelet's range are given to which pods (kubelet's allocation bitmap and usedBy map). Pure: the
 * random choice is injected. Slot i covers the host IDs [(off + i) * idsPerPod, (off + i + 1) * idsPerPod).
 */
export class UserNamespaceAllocator {
  private readonly used: boolean[];
  private readonly byPod = new Map<string, number>();
  private readonly off: number;

  /** Throws kubelet's MakeUserNsManager messages for a range it would refuse. */
  constructor(
    range: IdRange,
    readonly idsPerPod: number,
    maxPods: number,
    private readonly random: () => number = Math.random,
  ) {
    if (idsPerPod % userNsUnitLength !== 0) throw new Error(`kubelet user namespace length ${idsPerPod} is not a multiple of ${userNsUnitLength}`);
    if (range.firstId % idsPerPod !== 0) throw new Error(`kubelet user assigned ID ${range.firstId} is not a multiple of ${idsPerPod}`);
    // ID 0 of the host is never mapped: that would give a pod the host's root.
    if (range.firstId < idsPerPod) throw new Error(`kubelet user assigned ID ${range.firstId} must be greater or equal to ${idsPerPod}`);
    if (range.length % idsPerPod !== 0) throw new Error(`kubelet user assigned IDs length ${range.length} is not a multiple of ${idsPerPod}`);
    if (Math.floor(range.length / idsPerPod) < maxPods) throw new Error(`kubelet user assigned IDs are not enough to support ${maxPods} pods`);
    this.off = range.firstId / idsPerPod;
    this.used = new Array<boolean>(range.length / idsPerPod).fill(false);
  }

  /** The first host ID of the pod's range, if it has one. */
  allocated(uid: string): number | undefined {
    return this.byPod.get(uid);
  }

  /** The pods that hold a range. */
  pods(): string[] {
    return [...this.byPod.keys()];
  }

  /** A free range for the pod, chosen as kubelet's random scan does (a random start, then the next free one). */
  allocate(uid: string): number {
    const existing = this.byPod.get(uid);
    if (existing !== undefined) return existing;
    const slots = this.used.length;
    const start = Math.floor(this.random() * slots);
    for (let i = 0; i < slots; i++) {
      const slot = (start + i) % slots;
      if (this.used[slot]) continue;
      this.used[slot] = true;
      const firstId = (slot + this.off) * this.idsPerPod;
      this.byPod.set(uid, firstId);
      return firstId;
    }
    throw new Error('could not find an empty slot to allocate a user namespace');
  }

  /** kubelet's record: a range read back from the pod's file is taken again; one that does not fit is refused. */
  record(uid: string, firstId: number, length: number): void {
    if (length !== this.idsPerPod) throw new Error(`wrong user namespace length ${length}`);
    if (firstId % this.idsPerPod !== 0) throw new Error(`wrong user namespace offset specified ${firstId}`);
    const previous = this.byPod.get(uid);
    if (previous !== undefined && previous !== firstId) throw new Error(`different user namespace range already used by pod ${JSON.stringify(uid)}`);
    const slot = firstId / this.idsPerPod - this.off;
    if (slot < 0 || slot >= this.used.length) throw new Error(`id ${firstId} is out of range`);
    if (previous === undefined && this.used[slot]) throw new Error(`range picked for pod ${JSON.stringify(uid)} already taken`);
    this.used[slot] = true;
    this.byPod.set(uid, firstId);
  }

  /** Frees the pod's range; false when it had none. */
  release(uid: string): boolean {
    const firstId = this.byPod.get(uid);
    if (firstId === undefined) return false;
    this.byPod.delete(uid);
    this.used[firstId / this.idsPerPod - this.off] = false;
    return true;
  }
}

/** kubelet's userns file: the same single mapping for UIDs and GIDs, container ID 0 at the range's first host ID. */
export function mappingsFileContent(firstId: number, length: number): string {
  const mapping = [{ hostId: firstId, containerId: 0, length }];
  return JSON.stringify({ uidMappings: mapping, gidMappings: mapping });
}

/** kubelet's parseUserNsFileAndRecord checks: the range a pod's userns file holds, or kubelet's message for a bad one. */
export function parseMappingsFile(content: string): IdRange {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch (err) {
    throw new Error(`invalid user namespace mappings file: ${(err as Error).message}`);
  }
  const file = (parsed ?? {}) as { uidMappings?: unknown; gidMappings?: unknown };
  const uids = Array.isArray(file.uidMappings) ? (file.uidMappings as Record<string, unknown>[]) : [];
  const gids = Array.isArray(file.gidMappings) ? (file.gidMappings as Record<string, unknown>[]) : [];
  if (uids.length !== 1) throw new Error('invalid user namespace configuration: no more than one mapping allowed.');
  if (uids.length !== gids.length) throw new Error('invalid user namespace configuration: GID and UID mappings should be identical.');
  const [u, g] = [uids[0]!, gids[0]!];
  const id = (m: Record<string, unknown>, key: string): number => {
    const v = m[key] ?? 0;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff) {
      throw new Error(`invalid user namespace mappings file: ${key} ${JSON.stringify(v)} is not a 32-bit unsigned integer`);
    }
    return v;
  };
  const keys = ['hostId', 'containerId', 'length'];
  if (keys.some((k) => id(u, k) !== id(g, k))) throw new Error('invalid user namespace configuration: GID and UID mapping should be identical');
  // Only files nodelet (or kubelet) wrote: root of the pod mapped.
  if (id(u, 'containerId') !== 0) throw new Error('invalid user namespace configuration: UID 0 must be mapped');
  return { firstId: id(u, 'hostId'), length: id(u, 'length') };
}

/** The CRI user namespace of a pod with its own range. */
export function podUserNamespace(firstId: number, length: number): UserNamespace {
  const mapping = [{ hostId: firstId, containerId: 0, length }];
  return { mode: 'POD', uids: mapping, gids: mapping.map((m) => ({ ...m })) };
}

/** Whether the pod asks for its own user namespace (hostUsers defaults to true). */
export function wantsUserNamespace(pod: V1Pod): boolean {
  return pod.spec?.hostUsers === false;
}

/**
 * Linux mounts tmpfs idmapped from 6.3; pods' secrets, projected tokens, downward API files and memory emptyDirs are
 * tmpfs, and runc refuses the whole container where one cannot be (kubelet needs 6.3 and leaves the failure to the runtime).
 */
export function kernelSupportsTmpfsIdmap(release: string): boolean {
  const m = /^(\d+)\.(\d+)/.exec(release);
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major > 6 || (major === 6 && minor >= 3);
}

/** kubelet's refusal of hostUsers false on a runtime handler (the default one: '') that cannot. */
function unsupportedMessage(handler: string): string {
  return handler === ''
    ? "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
    : `can't set \`spec.hostUsers: false\`, RuntimeClass handler ${JSON.stringify(handler)} does not support user namespaces`;
}

/**
 * kubelet's HandlerSupportsUserNamespaces, with the kernel's tmpfs idmap as nodelet adds it: undefined when the pod may
 * have its user namespace, else why not (kubelet's refusal message).
 */
export function userNamespaceRefusal(handlers: RuntimeHandler[] | undefined, handler: string, release: string): string | undefined {
  const refusal = unsupportedMessage(handler);
  // No handlers: a runtime too old to tell.
  if (!handlers || handlers.length === 0) return refusal;
  const found = handlers.find((h) => h.name === handler);
  if (!found) return `${refusal}: the handler ${JSON.stringify(handler)} is not known`;
  if (!found.userNamespaces) return refusal;
  if (!kernelSupportsTmpfsIdmap(release)) return `${refusal}: the kernel ${release} cannot mount tmpfs idmapped (Linux 6.3 or newer can)`;
  return undefined;
}

/** Where the pods' userns files are kept: one per pod directory. */
export interface MappingsStore {
  /** The file's content, or undefined when the pod has none. */
  read(uid: string): Promise<string | undefined>;
  /** Written whole and durably (the range must not be forgotten by a crash after the sandbox was created with it). */
  write(uid: string, content: string): Promise<void>;
  remove(uid: string): Promise<void>;
  /** The pods with a directory. */
  pods(): Promise<string[]>;
}

/** The store in <root-dir>/pods/<uid>/userns, as kubelet keeps it. */
export function podDirMappingsStore(podsDir: string): MappingsStore {
  const file = (uid: string) => join(podsDir, uid, mappingsFileName);
  return {
    async read(uid) {
      return readFile(file(uid), 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      });
    },
    async write(uid, content) {
      const dir = join(podsDir, uid);
      const tmp = join(dir, `.${mappingsFileName}.tmp`);
      await mkdir(dir, { recursive: true, mode: 0o750 });
      await writeFile(tmp, content, { mode: 0o644, flush: true });
      await rename(tmp, file(uid));
      // The rename is durable only once the directory is synced.
      const handle = await open(dir, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    },
    async remove(uid) {
      await rm(file(uid), { force: true });
    },
    async pods() {
      const entries = await readdir(podsDir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return [];
        throw err;
      });
      return entries.filter((e) => e.isDirectory()).map((e) => e.name);
    },
  };
}

/**
 * kubelet's getKubeletMappings: the subordinate IDs of the user "kubelet" when it exists and getsubids is installed
 * (the same range for UIDs and GIDs), else the default range.
 */
export async function kubeletMappings(idsPerPod: number, log: Logger): Promise<IdRange> {
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  if (!passwd.split('\n').some((line) => line.split(':')[0] === kubeletUser)) {
    log.debug({ user: kubeletUser }, 'user namespaces: user not found, using default mappings');
    return defaultKubeletRange(idsPerPod);
  }
  const run = promisify(execFile);
  let uids: string;
  try {
    uids = (await run('getsubids', [kubeletUser])).stdout;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      log.info({ executable: 'getsubids' }, 'user namespaces: executable not found, using default mappings');
      return defaultKubeletRange(idsPerPod);
    }
    throw new Error(`error retrieving additional uids for user ${JSON.stringify(kubeletUser)}: ${(err as Error).message}`);
  }
  const gids = await run('getsubids', ['-g', kubeletUser]).then(
    (r) => r.stdout,
    () => {
      throw new Error(`error retrieving additional gids for user ${JSON.stringify(kubeletUser)}`);
    },
  );
  if (uids !== gids) throw new Error(`mismatched subuids and subgids for user ${JSON.stringify(kubeletUser)}`);
  log.debug({ user: kubeletUser }, 'user namespaces: user found, using mappings from getsubids');
  return parseGetSubIdsOutput(uids);
}

/** kubelet's runtime status period: the handlers' features are asked again after this long. */
const handlersMaxAgeMs = 5_000;

export interface UserNamespaceManagerOptions {
  store: MappingsStore;
  range: IdRange;
  idsPerPod: number;
  maxPods: number;
  /** The runtime's handlers (CRI Status runtime_handlers). */
  handlers: () => Promise<RuntimeHandler[] | undefined>;
  now: () => number;
  log: Logger;
  /** The kernel's release (uname -r); this host's by default. */
  kernelRelease?: string;
  random?: () => number;
}

/** kubelet's UsernsManager: the pods' ranges, their files, and the CRI user namespace each sandbox and container gets. */
export class UserNamespaceManager {
  private handlersRead: { at: number; handlers: Promise<RuntimeHandler[] | undefined> } | undefined;
  /** kubelet's lock: an allocation and its file, a release, or an orphan sweep happen one at a time. */
  private lock: Promise<unknown> = Promise.resolve();

  private readonly allocator: UserNamespaceAllocator;

  /** Throws kubelet's messages for a range it would refuse. Before any pod is synced, `recover` takes the pods' ranges again. */
  constructor(private readonly opts: UserNamespaceManagerOptions) {
    this.allocator = new UserNamespaceAllocator(opts.range, opts.idsPerPod, opts.maxPods, opts.random);
    opts.log.debug({ firstId: opts.range.firstId, length: opts.range.length, idsPerPod: opts.idsPerPod }, 'User namespace manager mapping');
  }

  /** Every range the pods' files hold is taken again (a file that cannot be taken fails the start, as in kubelet). */
  async recover(): Promise<void> {
    for (const uid of await this.opts.store.pods()) {
      const content = await this.opts.store.read(uid);
      if (!content) continue;
      try {
        const { firstId, length } = parseMappingsFile(content);
        this.allocator.record(uid, firstId, length);
      } catch (err) {
        throw new Error(`record pod mappings for existing pod ${JSON.stringify(uid)}: ${(err as Error).message}`, { cause: err });
      }
    }
  }

  /**
   * kubelet's GetOrCreateUserNamespaceMappings: undefined for a pod in the host's user namespace; for hostUsers false its
   * range (allocated and written to its directory the first time), or kubelet's refusal when the runtime cannot.
   */
  async forPod(pod: V1Pod, runtimeHandler = ''): Promise<UserNamespace | undefined> {
    if (!wantsUserNamespace(pod)) return undefined;
    const uid = pod.metadata?.uid ?? '';
    let handlers: RuntimeHandler[] | undefined;
    try {
      handlers = await this.runtimeHandlers();
    } catch (err) {
      throw new Error(`${unsupportedMessage(runtimeHandler)}: ${(err as Error).message}`, { cause: err });
    }
    const refusal = userNamespaceRefusal(handlers, runtimeHandler, this.opts.kernelRelease ?? kernelRelease());
    if (refusal) throw new Error(refusal);
    return this.locked(() => this.getOrCreate(uid));
  }

  private async getOrCreate(uid: string): Promise<UserNamespace> {
    const { idsPerPod } = this.allocator;
    const existing = this.allocator.allocated(uid);
    if (existing !== undefined) return podUserNamespace(existing, idsPerPod);
    let firstId: number;
    try {
      firstId = this.allocator.allocate(uid);
    } catch (err) {
      throw new Error(`create user namespace: ${(err as Error).message}`, { cause: err });
    }
    try {
      await this.opts.store.write(uid, mappingsFileContent(firstId, idsPerPod));
    } catch (err) {
      this.allocator.release(uid);
      throw new Error(`create user namespace: ${(err as Error).message}`, { cause: err });
    }
    this.opts.log.info({ podUid: uid, firstId, length: idsPerPod }, 'Allocated the pod user namespace');
    return podUserNamespace(firstId, idsPerPod);
  }

  /** kubelet's Release: the pod's range is free again and its file gone. */
  release(uid: string): Promise<void> {
    return this.locked(() => this.releaseLocked(uid));
  }

  private async releaseLocked(uid: string): Promise<void> {
    if (this.allocator.allocated(uid) === undefined) return;
    // The file first: one left behind while its range went to another pod would fail the next start's recovery.
    await this.opts.store.remove(uid);
    this.allocator.release(uid);
    this.opts.log.info({ podUid: uid }, 'Released the pod user namespace');
  }

  /**
   * kubelet's CleanupOrphanedPodUsernsAllocations: the ranges of pods neither known nor with a directory any more are
   * released. Returns their UIDs.
   */
  releaseOrphans(isKnown: (uid: string) => boolean): Promise<string[]> {
    return this.locked(async () => {
      const onDisk = new Set(await this.opts.store.pods());
      const orphans = this.allocator.pods().filter((uid) => !isKnown(uid) || !onDisk.has(uid));
      for (const uid of orphans) await this.releaseLocked(uid);
      return orphans;
    });
  }

  private locked<T>(run: () => Promise<T>): Promise<T> {
    const result = this.lock.then(run);
    this.lock = result.catch(() => undefined);
    return result;
  }

  private runtimeHandlers(): Promise<RuntimeHandler[] | undefined> {
    const now = this.opts.now();
    if (!this.handlersRead || now - this.handlersRead.at >= handlersMaxAgeMs) {
      const handlers = this.opts.handlers();
      this.handlersRead = { at: now, handlers };
      // A failed answer is not kept.
      handlers.catch(() => {
        if (this.handlersRead?.handlers === handlers) this.handlersRead = undefined;
      });
    }
    return this.handlersRead.handlers;
  }
}
