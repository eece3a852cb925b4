// Static pod file source: watches the manifest directory and reports the full set of valid pods whenever it changes.
import { watch, type BigIntStats, type FSWatcher } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { constants } from 'node:fs';
import { lstat, open, readdir, realpath, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../core/clock.js';
import { CONFIG_SEEN_ANNOTATION } from '../core/config-annotations.js';
import { parsePodManifests, type ManifestError } from './manifest.js';

export interface FilePodSourceOptions {
  /** The static pod directory (kubelet's staticPodPath); read non-recursively. */
  dir: string;
  nodeName: string;
  logger: Logger;
  /**
   * Receives the complete set of valid static pods (kubelet's SET semantics) after the first scan and after
   * every scan that changed it. Must not block; the pods are the receiver's own copies.
   */
  onPods: (pods: V1Pod[]) => void;
  /** Full rescan period, kubelet's fileCheckFrequency; watch events trigger scans in between. */
  rescanIntervalMs?: number;
  /** Times the rescans and the settle wait, and stamps the config.seen annotation. */
  clock?: Clock;
}

/**
 * A file modified this recently may be rewritten within the same timestamp tick with the same size, which its
 * stat cannot show; such files are read again (not parsed again) on the next scan.
 */
const RACY_WINDOW_MS = 2000;
/** An empty or unparsable file this young is probably still being written: keep its old pods and look again. */
const SETTLE_MS = 100;

const manifestName = /\.(ya?ml|json)$/;

/** How many of a file's errors its log line shows. */
const MAX_LOGGED_ERRORS = 10;

/** kubelet's maxConfigLength: its file source reads at most 10 MiB of a manifest. */
export const MAX_MANIFEST_BYTES = 10 * 1024 * 1024;

/** A manifest file refused before parsing; `stamp` identifies the file's version, so each is logged once. */
class ManifestFileError extends Error {
  constructor(
    readonly code: 'NotRegular' | 'OutsideDir' | 'TooLarge' | 'NotText',
    readonly stamp: string,
    message: string,
  ) {
    super(message);
  }
}

function tooLarge(size: bigint | undefined): string {
  return `is larger than ${MAX_MANIFEST_BYTES} bytes${size === undefined ? '' : ` (${size})`}, kubelet's limit for a manifest`;
}

function fileType(st: BigIntStats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isDirectory()) return 'a directory';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a file';
}

/** The file's bytes, or undefined when it holds more than `limit` (it may have grown since its stat). */
async function readAtMost(path: string, limit: number): Promise<Buffer | undefined> {
  // O_NONBLOCK: should the file have become a FIFO since its stat, the open does not wait for a writer.
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new ManifestFileError('NotRegular', '', 'is not a regular file');
    let buf = Buffer.alloc(Math.min(limit, st.size) + 1);
    let length = 0;
    for (;;) {
      if (length === buf.length) {
        if (length > limit) return undefined;
        buf = Buffer.concat([buf, Buffer.alloc(Math.min(limit + 1, buf.length * 2) - buf.length)]);
      }
      const { bytesRead } = await fh.read(buf, length, buf.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    return length > limit ? undefined : buf.subarray(0, length);
  } finally {
    await fh.close();
  }
}

interface ManifestFile {
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  racy: boolean;
  text: string;
  pods: V1Pod[];
}

type DirState = 'unknown' | 'present' | 'missing' | 'not-a-directory' | `error:${string}`;

export class FilePodSource {
  private readonly dir: string;
  private readonly nodeName: string;
  private readonly log: Logger;
  private readonly onPods: (pods: V1Pod[]) => void;
  private readonly rescanIntervalMs: number;
  private readonly clock: Clock;

  private files = new Map<string, ManifestFile>();
  /** Last error code reported per unreadable file, so each problem is logged once. */
  private readonly unreadable = new Map<string, string>();
  private reportedConflicts = new Set<string>();
  private firstSeen = new Map<string, string>();
  private lastPublished: string | undefined;
  private dirState: DirState = 'unknown';

  private running = false;
  private stopped = false;
  private scanning = false;
  private rescanRequested = false;
  private scanDone: Promise<void> = Promise.resolve();
  private queuedScan: NodeJS.Immediate | undefined;
  private settleTimer: unknown;
  private rescanTimer: unknown;
  private dirWatch: { watcher: FSWatcher; ino: bigint } | undefined;
  private parentWatcher: FSWatcher | undefined;

  constructor(opts: FilePodSourceOptions) {
    this.dir = opts.dir;
    this.nodeName = opts.nodeName;
    this.log = opts.logger;
    this.onPods = opts.onPods;
    this.rescanIntervalMs = opts.rescanIntervalMs ?? 20_000;
    this.clock = opts.clock ?? systemClock;
  }

  /** Scans now, then on every change in the directory and every rescan interval, until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.running) throw new Error('FilePodSource.run called twice');
    this.running = true;
    if (signal.aborted) return;
    const stopped = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    this.scheduleRescan();
    this.requestScan();
    await stopped;
    this.stopped = true;
    this.clock.clearTimeout(this.rescanTimer);
    clearImmediate(this.queuedScan);
    this.clock.clearTimeout(this.settleTimer);
    this.closeWatchers();
    await this.scanDone;
  }

  /** The full rescan every rescanIntervalMs (kubelet's fileCheckFrequency), between watch events. */
  private scheduleRescan(): void {
    this.rescanTimer = this.clock.setTimeout(() => {
      this.requestScan();
      if (!this.stopped) this.scheduleRescan();
    }, this.rescanIntervalMs);
  }

  private requestScan(): void {
    if (this.stopped) return;
    if (this.scanning) {
      this.rescanRequested = true;
      return;
    }
    this.scanning = true;
    this.scanDone = this.scanUntilQuiet();
  }

  private async scanUntilQuiet(): Promise<void> {
    try {
      do {
        this.rescanRequested = false;
        try {
          await this.scan();
        } catch (err) {
          this.log.error({ err, dir: this.dir }, 'static pod directory scan failed');
        }
      } while (this.rescanRequested && !this.stopped);
    } finally {
      // No await between the loop's last check and here, so a request cannot fall in between.
      this.scanning = false;
    }
  }

  /**
   * The scan waits only for the watch events already queued (one write or rename gives several): a file still being
   * written is caught by the settle rule, so no delay is needed and manifest-to-pod stays fast.
   */
  private readonly onWatchEvent = (): void => {
    if (this.queuedScan) return;
    this.queuedScan = setImmediate(() => {
      this.queuedScan = undefined;
      this.requestScan();
    });
  };

  private async scan(): Promise<void> {
    const paths = await this.listManifests();
    if (paths === undefined) return;
    // Symbolic links in the directory may point anywhere inside it, wherever the directory itself lives.
    const realDir = paths.length === 0 ? this.dir : await realpath(this.dir).catch(() => undefined);
    if (realDir === undefined) return;
    const loaded = await Promise.all(paths.map((p) => this.loadFile(p, realDir)));
    if (this.stopped) return;
    const next = new Map<string, ManifestFile>();
    paths.forEach((p, i) => {
      const file = loaded[i];
      if (file) next.set(p, file);
    });
    const listed = new Set(paths);
    for (const [path, old] of this.files) {
      if (!listed.has(path) && old.pods.length > 0) this.log.info({ file: path }, 'static pod manifest removed');
    }
    for (const path of this.unreadable.keys()) if (!listed.has(path)) this.unreadable.delete(path);
    this.files = next;
    this.publish();
  }

  /**
   * The manifest paths in the directory, sorted; [] when the directory does not exist (kubelet reports an empty
   * set then), undefined when it cannot be read for another reason (the last set stays).
   */
  private async listManifests(): Promise<string[] | undefined> {
    let dirStat: BigIntStats;
    try {
      dirStat = await stat(this.dir, { bigint: true });
    } catch (err) {
      if (errorCode(err) !== 'ENOENT') return this.dirUnreadable(err);
      this.setDirState('missing');
      this.watchParent();
      return [];
    }
    if (!dirStat.isDirectory()) {
      this.setDirState('not-a-directory');
      this.watchParent();
      return [];
    }
    this.watchDir(dirStat.ino);
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return [];
      return this.dirUnreadable(err);
    }
    this.setDirState('present');
    // Dotfiles are editor swap files and hidden state, which kubelet ignores too.
    return names
      .filter((n) => !n.startsWith('.') && manifestName.test(n))
      .sort()
      .map((n) => join(this.dir, n));
  }

  private dirUnreadable(err: unknown): undefined {
    const state: DirState = `error:${errorCode(err) ?? 'unknown'}`;
    if (this.dirState !== state) this.log.warn({ dir: this.dir, err }, 'cannot read static pod directory; keeping the current pods');
    this.dirState = state;
    return undefined;
  }

  private setDirState(state: 'present' | 'missing' | 'not-a-directory'): void {
    if (this.dirState === state) return;
    if (state === 'missing') this.log.warn({ dir: this.dir }, 'static pod directory does not exist; watching for it to appear');
    else if (state === 'not-a-directory') this.log.warn({ dir: this.dir }, 'static pod path is not a directory; no static pods');
    else if (this.dirState !== 'unknown') this.log.info({ dir: this.dir }, 'static pod directory is present');
    this.dirState = state;
  }

  /** The file's current pods, or undefined when it is not a readable regular file (said once per change). */
  private async loadFile(path: string, realDir: string): Promise<ManifestFile | undefined> {
    try {
      return await this.readManifest(path, realDir);
    } catch (err) {
      this.reportUnreadable(path, err);
      return undefined;
    }
  }

  private async readManifest(path: string, realDir: string): Promise<ManifestFile | undefined> {
    const startedMs = this.clock.now();
    const cached = this.files.get(path);
    const st = await stat(path, { bigint: true });
    const stamp = `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    // kubelet reads only regular files: opening a FIFO would block, a device could be anything.
    if (!st.isFile()) throw new ManifestFileError('NotRegular', stamp, `is not a regular file (${fileType(st)})`);
    if (cached && !cached.racy && sameStat(cached, st)) return cached;
    const link = await lstat(path);
    if (link.isSymbolicLink()) {
      const target = await realpath(path);
      if (!target.startsWith(`${realDir}/`)) throw new ManifestFileError('OutsideDir', stamp, `is a symbolic link to ${target}, outside the static pod directory`);
    }
    if (st.size > BigInt(MAX_MANIFEST_BYTES)) throw new ManifestFileError('TooLarge', stamp, tooLarge(st.size));
    const bytes = await readAtMost(path, MAX_MANIFEST_BYTES);
    if (bytes === undefined) throw new ManifestFileError('TooLarge', stamp, tooLarge(undefined));
    if (!isUtf8(bytes)) throw new ManifestFileError('NotText', stamp, 'is not UTF-8 text');
    const text = bytes.toString('utf8');

    this.unreadable.delete(path);
    const ageMs = startedMs - Number(st.mtimeNs / 1_000_000n);
    const fileStat = { ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, racy: ageMs < RACY_WINDOW_MS };
    if (cached && cached.text === text) return { ...cached, ...fileStat };

    const { pods, errors } = parsePodManifests(path, text, this.nodeName, new Date(this.clock.now()));
    const unreadableText = text.trim() === '' || errors.some((e) => e.field === '');
    // A future mtime is clock skew, not a write in progress.
    if (unreadableText && ageMs > -SETTLE_MS && ageMs < SETTLE_MS) {
      this.scheduleSettleScan(SETTLE_MS - ageMs);
      return cached;
    }
    if (errors.length > 0) this.reportInvalid(path, errors);
    if (pods.length > 0) {
      this.log.info({ file: path, pods: pods.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`) }, 'static pod manifest loaded');
    }
    return { ...fileStat, text, pods };
  }

  /** One line per file and content, with its first errors (a hostile file may have thousands). */
  private reportInvalid(path: string, errors: ManifestError[]): void {
    const multiDoc = errors.some((e) => e.document > 0);
    const shown = errors.slice(0, MAX_LOGGED_ERRORS).map((e) => `${multiDoc ? `document ${e.document}: ` : ''}${e.field ? `${e.field}: ` : ''}${e.message}`);
    if (errors.length > shown.length) shown.push(`and ${errors.length - shown.length} more`);
    const first = errors[0]!;
    this.log.warn({ file: path, field: first.field, document: first.document, errors: errors.length }, `invalid pod manifest: ${shown.join('; ')}`);
  }

  /** Logs a file that cannot be read once, until its problem or the file changes; its pods are dropped meanwhile. */
  private reportUnreadable(path: string, err: unknown): void {
    const code = err instanceof ManifestFileError ? `${err.code}:${err.stamp}` : (errorCode(err) ?? `error:${String(err)}`);
    // A file that vanished between listing and reading is simply gone.
    if (code === 'ENOENT') return;
    if (this.unreadable.get(path) !== code) {
      if (err instanceof ManifestFileError) this.log.warn({ file: path, reason: err.code }, `cannot read pod manifest: ${path} ${err.message}; its pods are dropped`);
      else this.log.warn({ file: path, err }, `cannot read pod manifest: ${path}: ${err instanceof Error ? err.message : String(err)}; its pods are dropped`);
    }
    this.unreadable.set(path, code);
  }

  private scheduleSettleScan(delayMs: number): void {
    if (this.settleTimer || this.stopped) return;
    this.settleTimer = this.clock.setTimeout(
      () => {
        this.settleTimer = undefined;
        this.requestScan();
      },
      Math.max(1, Math.ceil(delayMs)),
    );
  }

  /** Builds the pod set in file order, drops pods whose name or UID another file already uses, reports it if changed. */
  private publish(): void {
    const pods: V1Pod[] = [];
    const owners = new Map<string, string>();
    const conflicts = new Set<string>();
    const firstSeen = new Map<string, string>();
    for (const [path, file] of this.files) {
      for (const pod of file.pods) {
        const meta = pod.metadata ?? {};
        const fullName = `${meta.namespace}/${meta.name}`;
        const uid = meta.uid ?? '';
        const owner = owners.get(`name:${fullName}`) ?? owners.get(`uid:${uid}`);
        if (owner !== undefined) {
          const key = `${path}\0${uid}\0${owner}`;
          conflicts.add(key);
          if (!this.reportedConflicts.has(key)) {
            this.log.warn({ file: path, pod: fullName, podUid: uid, otherFile: owner }, 'static pod dropped: another manifest defines the same pod name or UID');
          }
          continue;
        }
        owners.set(`name:${fullName}`, path);
        owners.set(`uid:${uid}`, path);
        // A pod keeps the time it was first seen while its UID lives, even if its file is rewritten.
        const seen = this.firstSeen.get(uid) ?? meta.annotations?.[CONFIG_SEEN_ANNOTATION] ?? '';
        firstSeen.set(uid, seen);
        pods.push(
          meta.annotations?.[CONFIG_SEEN_ANNOTATION] === seen
            ? pod
            : { ...pod, metadata: { ...meta, annotations: { ...meta.annotations, [CONFIG_SEEN_ANNOTATION]: seen } } },
        );
      }
    }
    this.reportedConflicts = conflicts;
    this.firstSeen = firstSeen;

    const fingerprint = JSON.stringify(pods);
    if (fingerprint === this.lastPublished) return;
    this.lastPublished = fingerprint;
    try {
      this.onPods(structuredClone(pods));
    } catch (err) {
      this.log.error({ err }, 'static pod consumer failed');
    }
  }

  private watchDir(ino: bigint): void {
    if (this.stopped || this.dirWatch?.ino === ino) return;
    this.closeWatchers();
    try {
      const watcher = watch(this.dir, this.onWatchEvent);
      watcher.on('error', (err) => this.onWatchError(watcher, err));
      this.dirWatch = { watcher, ino };
    } catch (err) {
      // inotify limits and the like: the periodic rescan still finds every change, only later.
      this.log.warn({ dir: this.dir, err }, 'cannot watch static pod directory; relying on the periodic rescan');
    }
  }

  /** While the directory is missing, its parent's events tell when it appears. */
  private watchParent(): void {
    if (this.dirWatch) {
      this.dirWatch.watcher.close();
      this.dirWatch = undefined;
    }
    if (this.stopped || this.parentWatcher) return;
    try {
      const watcher = watch(dirname(this.dir), this.onWatchEvent);
      watcher.on('error', (err) => this.onWatchError(watcher, err));
      this.parentWatcher = watcher;
    } catch {
      // The parent is missing as well; the periodic rescan notices when the path appears.
    }
  }

  private onWatchError(watcher: FSWatcher, err: Error): void {
    this.log.debug({ dir: this.dir, err }, 'static pod directory watch ended; rescanning');
    watcher.close();
    if (this.dirWatch?.watcher === watcher) this.dirWatch = undefined;
    if (this.parentWatcher === watcher) this.parentWatcher = undefined;
    this.requestScan();
  }

  private closeWatchers(): void {
    this.dirWatch?.watcher.close();
    this.dirWatch = undefined;
    this.parentWatcher?.close();
    this.parentWatcher = undefined;
  }
}

function sameStat(file: ManifestFile, st: BigIntStats): boolean {
  return file.ino === st.ino && file.size === st.size && file.mtimeNs === st.mtimeNs && file.ctimeNs === st.ctimeNs;
}

function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}
