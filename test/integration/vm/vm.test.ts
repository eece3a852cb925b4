// nodelet where its users run it: a Debian 13 guest (systemd as PID 1, cgroup v2) under qemu, provisioned by
// vagrant/provision.sh as a Vagrant box is, nodelet and containerd as systemd units, then the smoke suite inside
// (test/vm/smoke.ts): pod Running and answering, cgroup limits, OOMKilled, CrashLoopBackOff, an agent restart, a reboot.
// With the systemd driver the guest's nodelet then joins the real control plane running on the host (guest-cluster.ts).
// It does not use the host's containerd. The guest's serial log, results and journals are kept when a check fails.
import { execa } from 'execa';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot } from '../helpers/agent.js';
import { GuestCluster, hostChecks } from './guest-cluster.js';

const checks = (driver: string) => [
  'first/provision',
  'first/web Running',
  'first/web answers on its IP',
  'first/container memory.max',
  'first/container cpu.max',
  'first/pod cgroup path',
  'first/pod memory.max',
  'first/pod cpu.max',
  'first/pod pids.max',
  'first/kubepods memory.max',
  'first/kubepods pids.max',
  'first/OOMKilled',
  'first/CrashLoopBackOff',
  'first/systemctl restart nodelet changes nothing',
  'rebooted/web Running after the reboot',
  'rebooted/web answers on its IP after the reboot',
  'rebooted/container memory.max',
  'rebooted/container cpu.max',
  'rebooted/pod cgroup path',
  'rebooted/pod memory.max',
  'rebooted/pod cpu.max',
  'rebooted/pod pids.max',
  'rebooted/kubepods memory.max',
  'rebooted/kubepods pids.max',
  ...(driver === 'systemd' ? ["cluster/nodelet.service with the cluster's kubeconfig", ...hostChecks.map((c) => `host/${c}`)] : []),
].map((c) => `${driver} ${c}`);

// Booting a guest needs root (qemu's 9p shares with security_model=none, the image build); nothing else is a reason to skip.
const isRoot = process.getuid?.() === 0;
if (!isRoot) console.log('VM test skipped: it needs root to build the guest image and share the project into qemu');
const describeVm = isRoot ? describe : describe.skip;

describeVm('a Debian 13 guest with systemd and cgroup v2', () => {
  // The cluster phase runs with the systemd driver only (kubeadm's default, the Vagrantfile's): the VM test stays near
  // a quarter of an hour under TCG.
  test.each(['cgroupfs', 'systemd'])('cgroupDriver %s: the smoke suite passes inside the guest', async (driver) => {
    const out = join('/var/log/nodelet/vm', `${driver}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
    await mkdir(out, { recursive: true });
    const cluster = driver === 'systemd' ? await GuestCluster.start(out, () => {}) : undefined;
    let hostLines: string[] = [];
    let run;
    try {
      const vm = execa('bash', [join(repoRoot, 'scripts/vm.sh'), 'run', out, '--cgroup-driver', driver], {
        reject: false,
        all: true,
        env: { NODELET_VM_TIMEOUT: cluster ? '1080' : '780', ...cluster?.env },
      });
      void vm.then(() => cluster?.vmDone());
      hostLines = (await cluster?.exercise()) ?? [];
      run = await vm;
    } finally {
      await cluster?.stop();
    }
    const results = await readFile(join(out, 'results'), 'utf8').catch(() => '');
    const seen = new Map(
      [...results.split('\n'), ...hostLines]
        .filter(Boolean)
        .map((line) => {
          const [verdict = '', rest = ''] = line.split(/ (.*)/s);
          return [`${driver} ${rest.slice(0, rest.indexOf(':'))}`, `${verdict} ${rest}`] as [string, string];
        }),
    );
    const report = checks(driver).map((c) => `${c}: ${seen.get(c) ?? 'MISSING'}`);
    const passed = run.exitCode === 0 && checks(driver).every((c) => seen.get(c)?.startsWith('PASS'));
    if (passed) await rm(out, { recursive: true, force: true });
    // One assertion over the whole report, so a failure shows every check and where the guest's logs were kept.
    expect({ vmExit: run.exitCode, checks: report, logs: passed ? 'removed' : out }).toEqual({
      vmExit: 0,
      checks: checks(driver).map((c) => `${c}: ${seen.get(c)?.startsWith('PASS') ? seen.get(c) : 'PASS'}`),
      logs: 'removed',
    });
  }, 1_200_000);
});
