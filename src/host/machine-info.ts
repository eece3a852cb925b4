// Reads the machine facts kubelet reports in Node.status (cAdvisor's MachineInfo and VersionInfo): ids, kernel, OS, cores, memory, hugepages, disk.
import { readdir, readFile, statfs } from 'node:fs/promises';
import { arch, cpus, release } from 'node:os';

export interface HugePageInfo {
  /** Page size in KiB, as the kernel names the pool (hugepages-2048kB). */
  pageSizeKiB: number;
  numPages: number;
}

export interface MachineInfo {
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  /** Go's GOARCH name (amd64, arm64, ...), which Kubernetes uses in labels and nodeInfo. */
  architecture: string;
  numCores: number;
  memoryCapacityBytes: bigint;
  hugePages: HugePageInfo[];
  /** Size of the filesystem holding the agent's root dir (kubelet's root filesystem: ephemeral-storage capacity). */
  rootFsCapacityBytes: bigint;
  /** The system-wide limit on tasks (kubelet's pidlimit: the smaller of kernel.pid_max and kernel.threads-max), if readable. */
  maxPID?: number;
}

/** Node's process.arch to Go's GOARCH. */
const goArchByNodeArch: Record<string, string> = {
  x64: 'amd64',
  arm64: 'arm64',
  arm: 'arm',
  ia32: '386',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
  mips: 'mips',
  mipsel: 'mipsle',
};

export function goArch(nodeArch: string = arch()): string {
  return goArchByNodeArch[nodeArch] ?? nodeArch;
}

/** PRETTY_NAME of an os-release text, as cAdvisor reports the OS image; "Linux" when absent. */
export function parseOsReleasePrettyName(text: string): string {
  for (const line of text.split('\n')) {
    const m = /^PRETTY_NAME=(.*)$/.exec(line.trim());
    if (!m) continue;
    const value = m[1]!.trim();
    return value.replace(/^(["'])(.*)\1$/, '$2');
  }
  return 'Linux';
}

/** MemTotal of a /proc/meminfo text, in bytes. */
export function parseMemTotal(text: string): bigint | undefined {
  const m = /^MemTotal:\s+(\d+)\s*kB/m.exec(text);
  return m ? BigInt(m[1]!) * 1024n : undefined;
}

/** The first readable file's trimmed content (cAdvisor's fallback lists); '' when none is readable. */
async function firstReadable(paths: string[]): Promise<string> {
  for (const path of paths) {
    try {
      // Device-tree ids end with NUL.
      return (await readFile(path, 'utf8')).replace(/\0+$/, '').trim();
    } catch {
      // Try the next one.
    }
  }
  return '';
}

async function readHugePages(dir = '/sys/kernel/mm/hugepages'): Promise<HugePageInfo[]> {
  const entries = await readdir(dir).catch(() => [] as string[]);
  const pools: HugePageInfo[] = [];
  for (const name of entries) {
    const m = /^hugepages-(\d+)kB$/.exec(name);
    if (!m) continue;
    const pages = Number((await readFile(`${dir}/${name}/nr_hugepages`, 'utf8').catch(() => '0')).trim());
    pools.push({ pageSizeKiB: Number(m[1]), numPages: Number.isFinite(pages) ? pages : 0 });
  }
  return pools.sort((a, b) => a.pageSizeKiB - b.pageSizeKiB);
}

/** kubelet's pidlimit.Stats MaxPID: the smaller of the two system-wide task limits that parse; undefined when neither does. */
export function maxPIDFrom(pidMax: string, threadsMax: string): number | undefined {
  const limits = [pidMax, threadsMax].map((t) => t.trim()).filter((t) => /^\d+$/.test(t)).map(Number);
  return limits.length > 0 ? Math.min(...limits) : undefined;
}

/** Reads the machine's facts. The ids come from the files cAdvisor reads, in its order. */
export async function readMachineInfo(rootDir: string): Promise<MachineInfo> {
  const [machineID, systemUUID, bootID, osRelease, meminfo, hugePages, fs, pidMax, threadsMax] = await Promise.all([
    firstReadable(['/etc/machine-id', '/var/lib/dbus/machine-id']),
    firstReadable(['/sys/class/dmi/id/product_uuid', '/proc/device-tree/system-id', '/proc/device-tree/vm,uuid']),
    firstReadable(['/proc/sys/kernel/random/boot_id']),
    readFile('/etc/os-release', 'utf8').catch(() => ''),
    readFile('/proc/meminfo', 'utf8').catch(() => ''),
    readHugePages(),
    statfs(rootDir, { bigint: true }),
    readFile('/proc/sys/kernel/pid_max', 'utf8').catch(() => ''),
    readFile('/proc/sys/kernel/threads-max', 'utf8').catch(() => ''),
  ]);
  const maxPID = maxPIDFrom(pidMax, threadsMax);
  return {
    machineID,
    systemUUID,
    bootID,
    kernelVersion: release(),
    osImage: parseOsReleasePrettyName(osRelease),
    architecture: goArch(),
    numCores: cpus().length,
    memoryCapacityBytes: parseMemTotal(meminfo) ?? 0n,
    hugePages,
    rootFsCapacityBytes: fs.blocks * fs.bsize,
    ...(maxPID === undefined ? {} : { maxPID }),
  };
}
