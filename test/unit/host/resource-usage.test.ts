// Reading cgroup usage (v1 and v2 layouts in a scratch directory), /proc/net/dev and a directory's disk usage.
import { join } from 'node:path';
import { CgroupUsageReader, diskUsage, parseNetDev } from '../../../src/host/resource-usage.js';
import { files, scratchDir } from '../fakes/scratch-dir.js';

const scratch = scratchDir('usage-');

test('cgroup v1: cpuacct usage, working set without inactive file pages, an unlimited limit left out', async () => {
  await files(join(scratch.dir(), 'cpu,cpuacct/kubepods/podx'), { 'cpuacct.usage': '123456789\n' });
  await files(join(scratch.dir(), 'memory/kubepods/podx'), {
    'memory.usage_in_bytes': '1000000\n',
    'memory.stat': 'cache 5\ntotal_inactive_file 250000\ntotal_rss 600000\ntotal_pgfault 40\ntotal_pgmajfault 2\n',
    'memory.limit_in_bytes': '9223372036854771712\n',
    'cgroup.procs': '12\n34\n',
  });
  const reader = new CgroupUsageReader([
    { mountPoint: join(scratch.dir(), 'cpu,cpuacct'), version: 1, controllers: ['cpu', 'cpuacct'] },
    { mountPoint: join(scratch.dir(), 'memory'), version: 1, controllers: ['memory'] },
  ]);
  expect(await reader.read('/kubepods/podx')).toEqual({
    cpuUsageNs: 123456789,
    memory: { usageBytes: 1000000, workingSetBytes: 750000, rssBytes: 600000, pageFaults: 40, majorPageFaults: 2 },
  });
  expect(await reader.pids('/kubepods/podx')).toEqual([12, 34]);
  expect(await reader.read('/kubepods/gone')).toBeUndefined();
});

test('cgroup v2: cpu.stat usage_usec, memory.current, memory.max', async () => {
  await files(join(scratch.dir(), 'unified/kubepods/podx'), {
    'cpu.stat': 'usage_usec 2000\nuser_usec 1500\n',
    'memory.current': '4096\n',
    'memory.stat': 'anon 1024\ninactive_file 1000\npgfault 3\npgmajfault 0\n',
    'memory.max': '65536\n',
  });
  const reader = new CgroupUsageReader([{ mountPoint: join(scratch.dir(), 'unified'), version: 2, controllers: [] }]);
  expect(await reader.read('/kubepods/podx')).toEqual({
    cpuUsageNs: 2_000_000,
    memory: { usageBytes: 4096, workingSetBytes: 3096, rssBytes: 1024, pageFaults: 3, majorPageFaults: 0, limitBytes: 65536 },
  });
});

test('/proc/net/dev', () => {
  const text = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0
  eth0:    5000      40    3    0    0     0          0         0     7000      50    4    0    0     0       0          0
`;
  expect(parseNetDev(text)).toEqual([
    { name: 'lo', rxBytes: 100, rxErrors: 0, txBytes: 100, txErrors: 0 },
    { name: 'eth0', rxBytes: 5000, rxErrors: 3, txBytes: 7000, txErrors: 4 },
  ]);
});

test('disk usage counts every inode once, hard links too', async () => {
  await files(join(scratch.dir(), 'vol/sub'), { a: 'x'.repeat(10_000) });
  const { link } = await import('node:fs/promises');
  await link(join(scratch.dir(), 'vol/sub/a'), join(scratch.dir(), 'vol/b'));
  const usage = await diskUsage(join(scratch.dir(), 'vol'));
  // vol, sub and one file.
  expect(usage?.inodes).toBe(3);
  expect(usage?.bytes).toBeGreaterThanOrEqual(10_000);
  expect(await diskUsage(join(scratch.dir(), 'none'))).toBeUndefined();
});
