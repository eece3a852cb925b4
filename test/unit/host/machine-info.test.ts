// Machine facts for the Node status: os-release, meminfo and architecture names as kubelet (cAdvisor, Go) reports them.
import { goArch, maxPIDFrom, parseMemTotal, parseOsReleasePrettyName, readMachineInfo } from '../../../src/host/machine-info.js';

test('osImage is os-release PRETTY_NAME without quotes, "Linux" without one', () => {
  expect(parseOsReleasePrettyName('NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')).toBe('Debian GNU/Linux 12 (bookworm)');
  expect(parseOsReleasePrettyName("PRETTY_NAME='Alpine Linux v3.20'")).toBe('Alpine Linux v3.20');
  expect(parseOsReleasePrettyName('PRETTY_NAME=Plain')).toBe('Plain');
  expect(parseOsReleasePrettyName('NAME=x\n')).toBe('Linux');
});

test('memory capacity is MemTotal in bytes', () => {
  expect(parseMemTotal('MemTotal:       24684096 kB\nMemFree: 1 kB\n')).toBe(24684096n * 1024n);
  expect(parseMemTotal('')).toBeUndefined();
});

test("architecture uses Go's names", () => {
  expect(goArch('x64')).toBe('amd64');
  expect(goArch('arm64')).toBe('arm64');
  expect(goArch('ia32')).toBe('386');
  expect(goArch('ppc64')).toBe('ppc64le');
});

test("the task limit is the smaller of kernel.pid_max and kernel.threads-max (kubelet's pidlimit), of those that parse", () => {
  expect(maxPIDFrom('4194304\n', '191581\n')).toBe(191581);
  expect(maxPIDFrom('32768\n', '191581\n')).toBe(32768);
  expect(maxPIDFrom('', '191581\n')).toBe(191581);
  expect(maxPIDFrom('', '')).toBeUndefined();
});

test('reads this machine', async () => {
  const info = await readMachineInfo('/');
  expect(info.numCores).toBeGreaterThan(0);
  expect(info.memoryCapacityBytes).toBeGreaterThan(0n);
  expect(info.rootFsCapacityBytes).toBeGreaterThan(0n);
  expect(info.kernelVersion).not.toBe('');
  expect(info.bootID).toMatch(/^[0-9a-f-]{36}$/);
  expect(info.maxPID).toBeGreaterThan(0);
});
