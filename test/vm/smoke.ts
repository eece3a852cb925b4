// The VM test's smoke suite, run inside the Debian 13 guest (systemd, cgroup v2) by test/vm/guest.sh against nodelet
// running as its systemd unit on the static pods of test/vm/manifests. Each check appends one line to the results file,
// `PASS <phase>/<check>: <detail>` or `FAIL <phase>/<check>: <why>`; the host's Jest test (test/integration/vm) asserts
// them. Usage: node smoke.js first|rebooted RESULTS cgroupfs|systemd POD_PIDS_LIMIT (nodelet's podPidsLimit)
import { execFileSync } from 'node:child_process';
import { appendFile, readdir, readFile, writeFile } from 'node:fs/promises';
import { get } from 'node:http';
import { join } from 'node:path';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { listPods } from '../../bench/status-client.js';

const socket = '/var/lib/nodelet/nodelet.sock';
const cgroupMount = '/sys/fs/cgroup';
const snapshotFile = '/var/lib/nodelet-vm-test/before-reboot.json';
const mi = 1024 * 1024;

const [phase = '', resultsFile = '', driver = '', podPidsLimit = ''] = process.argv.slice(2);

async function check(name: string, fn: () => Promise<string>): Promise<boolean> {
  const started = Date.now();
  let line: string;
  let ok = true;
  try {
    line = `PASS ${phase}/${name}: ${await fn()}`;
  } catch (err) {
    ok = false;
    line = `FAIL ${phase}/${name}: ${err instanceof Error ? err.message : String(err)}`;
  }
  line += ` (${((Date.now() - started) / 1000).toFixed(1)} s)`;
  console.log(line);
  await appendFile(resultsFile, `${line}\n`);
  return ok;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value; the error names what was awaited and the last thing seen. */
async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) throw new Error(`${what} not seen within ${timeoutMs / 1000} s${last ? ` (last: ${last})` : ''}`);
    await sleep(1_000);
  }
}

/** A static pod of test/vm/manifests by its manifest name (nodelet names it `<name>-<node>`). */
async function pod(name: string): Promise<V1Pod | undefined> {
  return (await listPods(socket)).find((p) => p.metadata?.name?.startsWith(`${name}-`));
}

function onlyContainer(p: V1Pod | undefined): V1ContainerStatus | undefined {
  return p?.status?.containerStatuses?.[0];
}

const describe = (p: V1Pod | undefined) => JSON.stringify({ phase: p?.status?.phase, podIP: p?.status?.podIP, container: onlyContainer(p)?.state });

async function runningPod(name: string): Promise<V1Pod> {
  return waitFor(`pod ${name} Running with an IP`, 240_000, async () => {
    const p = await pod(name);
    if (p?.status?.phase === 'Running' && p.status.podIP && onlyContainer(p)?.state?.running) return p;
    throw new Error(describe(p));
  });
}

function httpGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = get(url, { timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url} answered ${res.statusCode}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer within 5 s`)));
    req.on('error', reject);
  });
}

async function answers(p: V1Pod): Promise<string> {
  const url = `http://${p.status?.podIP}:8080/`;
  const body = await waitFor(`an answer from ${url}`, 60_000, () => httpGet(url));
  if (body.trim() !== 'vm-smoke-ok') throw new Error(`${url} answered ${JSON.stringify(body)}`);
  return `${url} answered ${body.trim()}`;
}

/** The cgroup directory (under the v2 mount) whose name holds the container's ID: cgroupfs `<id>`, systemd `cri-containerd-<id>.scope`. */
async function containerCgroup(status: V1ContainerStatus | undefined): Promise<string> {
  const id = status?.containerID?.replace(/^[a-z]+:\/\//, '');
  if (!id) throw new Error('the container has no ID');
  const walk = async (dir: string, depth: number): Promise<string | undefined> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory() && e.name.includes(id)) return join(dir, e.name);
    if (depth === 0) return undefined;
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const found = await walk(join(dir, e.name), depth - 1);
      if (found) return found;
    }
    return undefined;
  };
  const found = await walk(cgroupMount, 5);
  if (!found) throw new Error(`no cgroup of container ${id} under ${cgroupMount}`);
  return found;
}

/** kubelet's pod cgroup for a Burstable pod, by driver. */
function expectedPodCgroup(uid: string): string {
  if (driver === 'systemd') {
    const escaped = uid.replaceAll('-', '_');
    return join(cgroupMount, 'kubepods.slice/kubepods-burstable.slice', `kubepods-burstable-pod${escaped}.slice`);
  }
  return join(cgroupMount, 'kubepods/burstable', `pod${uid}`);
}

async function control(dir: string, file: string): Promise<string> {
  return (await readFile(join(dir, file), 'utf8')).trim();
}

async function expectControl(dir: string, file: string, want: string): Promise<string> {
  const got = await control(dir, file);
  if (got !== want) throw new Error(`${join(dir, file)} is ${got}, expected ${want}`);
  return `${join(dir, file)} = ${got}`;
}

const kubepods = () => join(cgroupMount, driver === 'systemd' ? 'kubepods.slice' : 'kubepods');

/** kubelet's enforceNodeAllocatable [pods] with no reservations: kubepods is limited to the machine's memory. */
async function kubepodsLimit(): Promise<string> {
  const memTotal = /^MemTotal:\s+(\d+) kB/m.exec(await readFile('/proc/meminfo', 'utf8'))?.[1];
  return expectControl(kubepods(), 'memory.max', String(Number(memTotal) * 1024));
}

/** ... and to the machine's task limit, the smaller of kernel.pid_max and kernel.threads-max. */
async function kubepodsPidsLimit(): Promise<string> {
  const limits = await Promise.all(['pid_max', 'threads-max'].map(async (f) => Number(await readFile(`/proc/sys/kernel/${f}`, 'utf8'))));
  return expectControl(kubepods(), 'pids.max', String(Math.min(...limits)));
}

/** The web pod's cgroups: the pod's at kubelet's path with the pod's limit, the container's inside it with its own. */
async function webCgroups(web: V1Pod): Promise<void> {
  const uid = web.metadata?.uid ?? '';
  let container = '';
  await check('container memory.max', async () => {
    container = await containerCgroup(onlyContainer(web));
    return expectControl(container, 'memory.max', String(64 * mi));
  });
  await check('container cpu.max', () => expectControl(container, 'cpu.max', '25000 100000'));
  await check('pod cgroup path', async () => {
    const want = expectedPodCgroup(uid);
    if (!container.startsWith(`${want}/`)) throw new Error(`the container's cgroup ${container} is not inside ${want}`);
    return want;
  });
  await check('pod memory.max', () => expectControl(expectedPodCgroup(uid), 'memory.max', String(64 * mi)));
  await check('pod cpu.max', () => expectControl(expectedPodCgroup(uid), 'cpu.max', '25000 100000'));
  await check('pod pids.max', () => expectControl(expectedPodCgroup(uid), 'pids.max', podPidsLimit));
  await check('kubepods memory.max', kubepodsLimit);
  await check('kubepods pids.max', kubepodsPidsLimit);
}

interface Snapshot {
  uid: string;
  podIP: string;
  containerID: string;
  restartCount: number;
}

const snapshot = (p: V1Pod): Snapshot => ({
  uid: p.metadata?.uid ?? '',
  podIP: p.status?.podIP ?? '',
  containerID: onlyContainer(p)?.containerID ?? '',
  restartCount: onlyContainer(p)?.restartCount ?? -1,
});

async function first(): Promise<void> {
  let web: V1Pod | undefined;
  await check('web Running', async () => {
    web = await runningPod('web');
    return `podIP ${web.status?.podIP}`;
  });
  if (!web) return;
  await check('web answers on its IP', () => answers(web!));
  await webCgroups(web);
  await check('OOMKilled', async () => {
    const terminated = await waitFor('the oom pod terminated', 240_000, async () => onlyContainer(await pod('oom'))?.state?.terminated);
    if (terminated.reason !== 'OOMKilled') throw new Error(`terminated with reason ${terminated.reason}, exit code ${terminated.exitCode}`);
    return `exit code ${terminated.exitCode}, reason OOMKilled`;
  });
  await check('CrashLoopBackOff', async () => {
    const waiting = await waitFor('crash in CrashLoopBackOff', 240_000, async () => {
      const w = onlyContainer(await pod('crash'))?.state?.waiting;
      return w?.reason === 'CrashLoopBackOff' ? w : undefined;
    });
    return waiting.message ?? 'CrashLoopBackOff';
  });
  await check('systemctl restart nodelet changes nothing', async () => {
    const before = snapshot(web!);
    const oomBefore = JSON.stringify(onlyContainer(await pod('oom'))?.state);
    const pid = () => execFileSync('systemctl', ['show', '-p', 'MainPID', '--value', 'nodelet.service'], { encoding: 'utf8' }).trim();
    const oldPid = pid();
    execFileSync('systemctl', ['restart', 'nodelet.service']);
    if (pid() === oldPid) throw new Error(`nodelet's main PID is still ${oldPid} after the restart`);
    const after = snapshot(await runningPod('web'));
    // Give the restarted agent a few relists and syncs to (wrongly) replace something.
    await sleep(20_000);
    const settled = snapshot(await runningPod('web'));
    for (const s of [after, settled]) {
      if (JSON.stringify(s) !== JSON.stringify(before)) throw new Error(`web was ${JSON.stringify(before)}, now ${JSON.stringify(s)}`);
    }
    const oomAfter = JSON.stringify(onlyContainer(await pod('oom'))?.state);
    if (oomAfter !== oomBefore) throw new Error(`oom's container was ${oomBefore}, now ${oomAfter}`);
    await answers(web!);
    return `web kept ${before.containerID} at ${before.podIP}`;
  });
  await writeFile(snapshotFile, JSON.stringify(snapshot(web)));
}

async function rebooted(): Promise<void> {
  const before = JSON.parse(await readFile(snapshotFile, 'utf8')) as Snapshot;
  let web: V1Pod | undefined;
  await check('web Running after the reboot', async () => {
    web = await runningPod('web');
    const now = snapshot(web);
    if (now.uid !== before.uid) throw new Error(`web's UID changed from ${before.uid} to ${now.uid}`);
    if (now.containerID === before.containerID) throw new Error(`web still reports its container from before the reboot, ${now.containerID}`);
    return `podIP ${now.podIP}, container ${now.containerID}`;
  });
  if (!web) return;
  await check('web answers on its IP after the reboot', () => answers(web!));
  await webCgroups(web);
}

if (phase === 'first') await first();
else if (phase === 'rebooted') await rebooted();
else throw new Error(`usage: smoke.js first|rebooted RESULTS cgroupfs|systemd POD_PIDS_LIMIT (got ${phase})`);
