// Resources and security contexts checked where they take effect: pod and container cgroups, OOM scores, /proc of the container's process.
import { existsSync } from 'node:fs';
import { readFile, readlink, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { qosCgroups } from '../../../src/host/cgroups.js';
import { busybox, containerPid, runtimeObjects, staticName, waitFor, waitForRuntimeGone, testAgent } from '../helpers/agent.js';

const { agent, cri, uids: seenUids } = await testAgent();
const cgroupRoot = '/sys/fs/cgroup';
const mi = 1024 * 1024;
/** The agent's podPidsLimit: every pod cgroup's pids.max (the pods here run a handful of processes each). */
const podPidsLimit = 64;

/** A one-container busybox pod; `spec` and `container` are YAML lines at their indentation. */
function manifest(name: string, opts: { spec?: string; container?: string; command?: string; restartPolicy?: string } = {}): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  terminationGracePeriodSeconds: 2
  restartPolicy: ${opts.restartPolicy ?? 'Always'}
${opts.spec ?? ''}  containers:
  - name: main
    image: ${busybox}
    command: ["sh", "-c", ${JSON.stringify(opts.command ?? 'trap "exit 0" TERM; while true; do sleep 1; done')}]
${opts.container ?? ''}`;
}

const manifests: Record<string, string> = {
  guaranteed: manifest('guaranteed', { container: '    resources:\n      limits: {cpu: 250m, memory: 64Mi}\n' }),
  burstable: manifest('burstable', { container: '    resources:\n      requests: {cpu: 100m, memory: 100Mi}\n' }),
  besteffort: manifest('besteffort'),
  // The pause lets containerd watch the container's OOM events: an OOM within its first ~100 ms goes unseen (containerd 1.6).
  oom: manifest('oom', { restartPolicy: 'Never', command: 'sleep 1; x=a; while true; do x=$x$x; done', container: '    resources:\n      limits: {memory: 20Mi}\n' }),
  ids: manifest('ids', { spec: '  securityContext: {runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000]}\n' }),
  caps: manifest('caps', {
    container: '    securityContext:\n      capabilities: {drop: [ALL], add: [NET_ADMIN]}\n      allowPrivilegeEscalation: false\n      seccompProfile: {type: RuntimeDefault}\n',
  }),
  readonly: manifest('readonly', { container: '    securityContext: {readOnlyRootFilesystem: true}\n' }),
  nonroot: manifest('nonroot', { spec: '  securityContext: {runAsNonRoot: true}\n' }),
  sysctls: manifest('sysctls', {
    spec: '  securityContext:\n    sysctls:\n    - {name: kernel.shm_rmid_forced, value: "1"}\n    - {name: net.ipv4.ip_unprivileged_port_start, value: "80"}\n',
  }),
  unsafesysctl: manifest('unsafesysctl', { spec: '  securityContext:\n    sysctls: [{name: kernel.msgmax, value: "65536"}]\n' }),
  hostpid: manifest('hostpid', { spec: '  hostPID: true\n' }),
  privileged: manifest('privileged', { container: '    securityContext: {privileged: true}\n' }),
  // Starts 100 sleeps in a subshell; past the pod's pids.max a fork fails and the subshell says so on stderr.
  forks: manifest('forks', { command: '(i=0; while [ $i -lt 100 ]; do sleep 600 & i=$((i+1)); done; echo all 100 started); exec sleep 3600' }),
};

const running = (p: V1Pod) => p.status?.phase === 'Running' && !!p.status.containerStatuses?.[0]?.state?.running;

async function runningPod(name: string): Promise<V1Pod> {
  const p = await agent.waitForPod(name, 'Running', running, 90_000);
  seenUids.add(p.metadata!.uid!);
  return p;
}

const containerId = (p: V1Pod) => p.status!.containerStatuses![0]!.containerID!.replace('containerd://', '');

/** The container's cgroup path in one v1 hierarchy, from /proc/<pid>/cgroup. */
async function cgroupOf(pid: number, controller: string): Promise<string> {
  const lines = (await readFile(`/proc/${pid}/cgroup`, 'utf8')).split('\n');
  const line = lines.find((l) => l.split(':')[1]?.split(',').includes(controller));
  if (!line) throw new Error(`no ${controller} cgroup for pid ${pid}`);
  return line.split(':')[2]!;
}

async function readControl(controller: string, path: string, file: string): Promise<string> {
  return (await readFile(`${cgroupRoot}/${controller}${path}/${file}`, 'utf8')).trim();
}

/** Fields of /proc/<pid>/status. */
async function procStatus(pid: number): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const line of (await readFile(`/proc/${pid}/status`, 'utf8')).split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  return out;
}

/** Where any hierarchy still holds a cgroup of these pods. */
async function podCgroupsLeft(uids: string[]): Promise<string[]> {
  const left: string[] = [];
  for (const controller of await readdir(cgroupRoot)) {
    for (const qos of qosCgroups) {
      for (const uid of uids) {
        const dir = `${cgroupRoot}/${controller}${qos}/pod${uid}`;
        if (existsSync(dir)) left.push(dir);
      }
    }
  }
  return left;
}

beforeAll(async () => {
  const config = join(dirname(agent.rootDir), 'kubelet-config.yaml');
  await writeFile(config, `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\npodPidsLimit: ${podPidsLimit}\n`);
  await agent.start(['--config', config]);
  for (const [name, text] of Object.entries(manifests)) await agent.writeManifest(`${name}.yaml`, text);
});



describe('resources', () => {
  test('Guaranteed: qosClass, pod cgroup kubepods/pod<uid> with the pod limits, container limits in its own cgroup', async () => {
    const p = await runningPod('guaranteed');
    expect(p.status!.qosClass).toBe('Guaranteed');
    const pid = await containerPid(cri, containerId(p));
    const podPath = `/kubepods/pod${p.metadata!.uid}`;
    const memoryPath = await cgroupOf(pid, 'memory');
    expect(memoryPath).toBe(`${podPath}/${containerId(p)}`);
    expect(Number(await readControl('memory', memoryPath, 'memory.limit_in_bytes'))).toBe(64 * mi);
    const cpuPath = await cgroupOf(pid, 'cpu');
    expect(await readControl('cpu', cpuPath, 'cpu.shares')).toBe('256');
    expect(await readControl('cpu', cpuPath, 'cpu.cfs_period_us')).toBe('100000');
    expect(await readControl('cpu', cpuPath, 'cpu.cfs_quota_us')).toBe('25000');
    // The pod's own cgroup carries the summed limits, as kubelet sets them.
    expect(Number(await readControl('memory', podPath, 'memory.limit_in_bytes'))).toBe(64 * mi);
    expect(await readControl('cpu', podPath, 'cpu.shares')).toBe('256');
    expect(await readControl('cpu', podPath, 'cpu.cfs_quota_us')).toBe('25000');
    // -997, raised by containerd's restrict_oom_score_adj to its own score where runc cannot go lower.
    const containerdPid = Number((await readFile('/run/nodelet/containerd.pid', 'utf8')).trim());
    const containerdScore = Number((await readFile(`/proc/${containerdPid}/oom_score_adj`, 'utf8')).trim());
    expect(Number((await readFile(`/proc/${pid}/oom_score_adj`, 'utf8')).trim())).toBe(Math.max(-997, containerdScore));
  });

  test('Burstable: kubepods/burstable/pod<uid>, shares from the request, OOM score from the memory request', async () => {
    const p = await runningPod('burstable');
    expect(p.status!.qosClass).toBe('Burstable');
    const pid = await containerPid(cri, containerId(p));
    const cpuPath = await cgroupOf(pid, 'cpu');
    expect(cpuPath).toBe(`/kubepods/burstable/pod${p.metadata!.uid}/${containerId(p)}`);
    expect(await readControl('cpu', cpuPath, 'cpu.shares')).toBe('102');
    expect(await readControl('cpu', cpuPath, 'cpu.cfs_quota_us')).toBe('-1');
    const memTotal = BigInt(/^MemTotal:\s+(\d+) kB$/m.exec(await readFile('/proc/meminfo', 'utf8'))![1]!) * 1024n;
    const expected = Math.min(999, Math.max(3, Number(1000n - (1000n * 100n * BigInt(mi)) / memTotal)));
    expect(Number((await readFile(`/proc/${pid}/oom_score_adj`, 'utf8')).trim())).toBe(expected);
  });

  test('BestEffort: kubepods/besteffort/pod<uid>, minimum shares, OOM score 1000', async () => {
    const p = await runningPod('besteffort');
    expect(p.status!.qosClass).toBe('BestEffort');
    const pid = await containerPid(cri, containerId(p));
    const cpuPath = await cgroupOf(pid, 'cpu');
    expect(cpuPath).toBe(`/kubepods/besteffort/pod${p.metadata!.uid}/${containerId(p)}`);
    expect(await readControl('cpu', cpuPath, 'cpu.shares')).toBe('2');
    expect(await readControl('cpu', '/kubepods/besteffort', 'cpu.shares')).toBe('2');
    expect((await readFile(`/proc/${pid}/oom_score_adj`, 'utf8')).trim()).toBe('1000');
  });

  test('podPidsLimit: the pod cgroup in the pids hierarchy has pids.max, and a fork past it fails in the pod; kubepods has the node\'s', async () => {
    const p = await runningPod('forks');
    const pid = await containerPid(cri, containerId(p));
    const podPath = `/kubepods/besteffort/pod${p.metadata!.uid}`;
    expect(await cgroupOf(pid, 'pids')).toBe(`${podPath}/${containerId(p)}`);
    expect(await readControl('pids', podPath, 'pids.max')).toBe(String(podPidsLimit));
    const log = join(agent.podLogsDir, `default_${p.metadata!.name}_${p.metadata!.uid}`, 'main', '0.log');
    const output = await waitFor('the fork loop to end', async () => {
      const text = await readFile(log, 'utf8').catch(() => '');
      return /can't fork|all 100 started/.test(text) ? text : undefined;
    }, 60_000, 500);
    expect(output).toMatch(/can't fork/);
    expect(output).not.toMatch(/all 100 started/);
    expect(Number(await readControl('pids', podPath, 'pids.current'))).toBeLessThanOrEqual(podPidsLimit);
    // kubepods: the machine's task limit (no pid reservation here), as kubelet's node allocatable enforcement sets it.
    const taskLimit = Math.min(...(await Promise.all(['pid_max', 'threads-max'].map((f) => readFile(`/proc/sys/kernel/${f}`, 'utf8')))).map(Number));
    expect(await readControl('pids', '/kubepods', 'pids.max')).toBe(String(taskLimit));
  });

  test('a container allocating past its memory limit ends OOMKilled', async () => {
    const p = await agent.waitForPod('oom', 'Failed', (x) => x.status?.phase === 'Failed', 90_000);
    seenUids.add(p.metadata!.uid!);
    const terminated = p.status!.containerStatuses![0]!.state!.terminated!;
    expect(terminated.reason).toBe('OOMKilled');
    expect(terminated.exitCode).toBe(137);
  });
});

describe('security contexts', () => {
  test('runAsUser, runAsGroup, fsGroup and supplementalGroups reach the process', async () => {
    const p = await runningPod('ids');
    const status = await procStatus(await containerPid(cri, containerId(p)));
    expect(status.Uid!.split(/\s+/)).toEqual(['1000', '1000', '1000', '1000']);
    expect(status.Gid!.split(/\s+/)).toEqual(['3000', '3000', '3000', '3000']);
    // containerd adds the primary group to the supplementary ones, as with kubelet.
    expect(status.Groups!.split(/\s+/).sort()).toEqual(['2000', '3000', '4000']);
  });

  test('capabilities drop ALL + add NET_ADMIN, no_new_privs, RuntimeDefault seccomp', async () => {
    const p = await runningPod('caps');
    const status = await procStatus(await containerPid(cri, containerId(p)));
    expect(status.CapEff).toBe('0000000000001000'); // CAP_NET_ADMIN is bit 12
    expect(status.CapBnd).toBe('0000000000001000');
    expect(status.NoNewPrivs).toBe('1');
    expect(status.Seccomp).toBe('2'); // filter mode
  });

  test('readOnlyRootFilesystem refuses writes to the root filesystem', async () => {
    const p = await runningPod('readonly');
    const r = await cri.execSync(containerId(p), ['touch', '/written'], 10);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr.toString()).toContain('Read-only file system');
  });

  test('runAsNonRoot refuses the busybox image (it runs as root) with CreateContainerConfigError', async () => {
    const p = await agent.waitForPod('nonroot', 'CreateContainerConfigError', (x) =>
      x.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError', 60_000);
    seenUids.add(p.metadata!.uid!);
    expect(p.status!.phase).toBe('Pending');
    expect(p.status!.containerStatuses![0]!.state!.waiting!.message).toBe(
      `container has runAsNonRoot and image will run as root (pod: "${staticName('nonroot')}_default(${p.metadata!.uid})", container: main)`,
    );
    expect((await runtimeObjects(cri, [p.metadata!.uid!])).containers).toEqual([]);
  });

  test('pod sysctls are set inside the pod', async () => {
    const p = await runningPod('sysctls');
    const read = async (path: string) => (await cri.execSync(containerId(p), ['cat', path], 10)).stdout.toString().trim();
    expect(await read('/proc/sys/kernel/shm_rmid_forced')).toBe('1');
    expect(await read('/proc/sys/net/ipv4/ip_unprivileged_port_start')).toBe('80');
    // The host keeps its own values.
    expect((await readFile('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8')).trim()).toBe('1024');
  });

  test('an unsafe sysctl refuses the pod (SysctlForbidden) before anything runs', async () => {
    const p = await agent.waitForPod('unsafesysctl', 'Failed', (x) => x.status?.phase === 'Failed', 60_000);
    seenUids.add(p.metadata!.uid!);
    expect(p.status!.reason).toBe('SysctlForbidden');
    expect(p.status!.message).toBe('forbidden sysctl: "kernel.msgmax" not allowlisted');
    const left = await runtimeObjects(cri, [p.metadata!.uid!]);
    expect(left.sandboxes.length + left.containers.length).toBe(0);
  });

  test('hostPID shares the host PID namespace: the container sees host processes', async () => {
    const p = await runningPod('hostpid');
    const pid = await containerPid(cri, containerId(p));
    expect(await readlink(`/proc/${pid}/ns/pid`)).toBe(await readlink('/proc/self/ns/pid'));
    const containerdPid = (await readFile('/run/nodelet/containerd.pid', 'utf8')).trim();
    const r = await cri.execSync(containerId(p), ['cat', `/proc/${containerdPid}/comm`], 10);
    expect(r.stdout.toString().trim()).toBe('containerd');
  });

  test('a privileged container runs (its sandbox is privileged too) with the capabilities of the runtime', async () => {
    const p = await runningPod('privileged');
    const status = await procStatus(await containerPid(cri, containerId(p)));
    const capEff = BigInt(`0x${status.CapEff}`);
    expect(capEff & (1n << 21n)).not.toBe(0n); // CAP_SYS_ADMIN
    expect(capEff & (1n << 12n)).not.toBe(0n); // CAP_NET_ADMIN
  });
});

test('removing the pods removes their pod cgroups in every hierarchy', async () => {
  const pods = await agent.pods();
  const uids = pods.map((p) => p.metadata!.uid!);
  for (const uid of uids) seenUids.add(uid);
  expect((await podCgroupsLeft(uids)).length).toBeGreaterThan(0);
  await rm(agent.manifestDir, { recursive: true, force: true });
  await waitForRuntimeGone(cri, uids, 90_000);
  await waitFor('pod cgroups removed', async () => ((await podCgroupsLeft(uids)).length === 0 ? true : undefined), 20_000);
});
