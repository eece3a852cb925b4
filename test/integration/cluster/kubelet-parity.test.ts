// Parity with the real kubelet: kubelet v1.37.2 (built from the upstream modules, on the `kubelet` containerd instance of
// scripts/runtime.sh, its own root dir, ports and cgroup root) and nodelet join ONE real control plane as two nodes; the
// same pods, pinned to each node with nodeName in a namespace of its own, run on both, and what each produces is compared:
// the pod status each reports through the API server (phase, conditions, container states, reasons, messages,
// restartCounts, ready), the labels and annotations of the CRI sandboxes and containers, their cgroup paths, the CNI
// arguments the plugin chain is called with (a logging plugin placed last in both chains), and the pods' events.
// What must differ (names, UIDs, IDs, timestamps, IPs, the cgroup root) is normalised; every other difference fails the
// test unless `deliberate` lists it with its reason.
import { readFile, mkdtemp, mkdir, rm, writeFile, readdir } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import type { CoreV1Event, V1Node, V1Pod } from '@kubernetes/client-node';
import { BenchKubelet, kubeletEndpoint, type KubeletPlacement } from '../../../bench/kubelet.js';
import { CriClient } from '../../../src/cri/client.js';
import { podNamespaceLabel, podUidLabel } from '../../../src/core/labels.js';
import { nodeCredentials } from '../../cluster/control-plane.js';
import { busybox, criEndpoint, repoRoot, waitFor } from '../helpers/agent.js';
import { cniLogPluginConf, cniLogPluginType, installCniLogPlugin, readCniCalls } from '../helpers/cni-log-plugin.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';

const kubeletNodeName = 'kubelet-parity';
const side = { kubelet: 'parity-kubelet', nodelet: 'parity-nodelet' } as const;
type Side = keyof typeof side;
const placement: KubeletPlacement = {
  nodeName: kubeletNodeName,
  cgroupRoot: 'nodelet-kubelet-parity',
  hostStateFile: '/run/nodelet/kubelet-parity-host-state.json',
  pods: { labelSelector: { [podNamespaceLabel]: side.kubelet } },
};
/** The kubelet instance's CNI configuration and plugin directory (scripts/runtime.sh). */
const kubeletNetDir = '/etc/nodelet/containerd-kubelet/net.d';
const kubeletConflist = join(kubeletNetDir, '10-nodelet-kubelet.conflist');
const kubeletCniBin = '/opt/nodelet/cni-kubelet/bin';
/** An image no registry serves: its registry is a closed port on loopback, so the pull fails without leaving the host. */
const missingImage = '127.0.0.1:1/nodelet-parity/missing:1.0';
const loopForever = 'trap "exit 0" TERM; while true; do sleep 1; done';

/**
 * The pods, and when each one's status is taken: the first status the API server shows that satisfies `when`, a state
 * both agents reach and hold for seconds.
 */
const pods: { name: string; spec: Record<string, unknown>; when: (p: V1Pod) => boolean }[] = [
  {
    // Fails once (its emptyDir remembers), then runs Ready: one restart.
    name: 'restart',
    spec: {
      volumes: [{ name: 'data', emptyDir: {} }],
      containers: [{
        name: 'app', image: busybox, command: ['sh', '-c', `if [ -e /data/ran ]; then ${loopForever}; else touch /data/ran; exit 3; fi`],
        ports: [{ name: 'http', containerPort: 8080 }],
        readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
      }],
    },
    when: (p) => container(p, 'app')?.restartCount === 1 && !!container(p, 'app')?.ready,
  },
  {
    // kubelet 1.37 requeues a pod in back-off when the back-off ends (at most a resync later): through a back-off of
    // 10 s or 20 s its status shows the exit, not CrashLoopBackOff (measured with v1.37.2). Compared in the second
    // back-off (restartCount 2, 20 s), which both show.
    name: 'crashloop',
    spec: { containers: [{ name: 'app', image: busybox, command: ['sh', '-c', 'echo crashing; exit 1'] }] },
    when: (p) => !!container(p, 'app')?.state?.terminated && container(p, 'app')!.restartCount === 2,
  },
  {
    name: 'init',
    spec: {
      volumes: [{ name: 'data', emptyDir: {} }],
      initContainers: [
        { name: 'init-a', image: busybox, command: ['sh', '-c', 'echo a > /data/a'], volumeMounts: [{ name: 'data', mountPath: '/data' }] },
        { name: 'init-b', image: busybox, command: ['test', '-e', '/data/a'], volumeMounts: [{ name: 'data', mountPath: '/data' }] },
      ],
      containers: [{ name: 'app', image: busybox, command: ['sh', '-c', loopForever] }],
    },
    when: (p) => p.status?.phase === 'Running' && !!container(p, 'app')?.ready,
  },
  {
    // The liveness probe fails once (its emptyDir remembers), the readiness probe always.
    name: 'probes',
    spec: {
      volumes: [{ name: 'data', emptyDir: {} }],
      containers: [{
        name: 'app', image: busybox, command: ['sh', '-c', loopForever],
        livenessProbe: { exec: { command: ['sh', '-c', 'if [ -e /data/killed ]; then exit 0; fi; touch /data/killed; echo dead; exit 1'] }, initialDelaySeconds: 1, periodSeconds: 1, failureThreshold: 1 },
        readinessProbe: { exec: { command: ['sh', '-c', 'echo not ready; exit 1'] }, periodSeconds: 1 },
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
      }],
    },
    when: (p) => container(p, 'app')?.restartCount === 1 && !!container(p, 'app')?.state?.running,
  },
  {
    name: 'oom',
    spec: {
      restartPolicy: 'Never',
      containers: [{ name: 'app', image: busybox, command: ['sh', '-c', 'sleep 1; x=a; while true; do x=$x$x; done'], resources: { limits: { memory: '20Mi' } } }],
    },
    // Settled: Failed with the sandbox stopped. (Either agent may first write Failed with the sandbox still up; kubelet's
    // status manager, which reads the pod before each write, usually coalesces that with the next.)
    when: (p) => p.status?.phase === 'Failed' && p.status.conditions?.find((c) => c.type === 'PodReadyToStartContainers')?.status === 'False',
  },
  {
    name: 'badimage',
    spec: { containers: [{ name: 'app', image: missingImage, command: ['sh', '-c', loopForever] }] },
    when: (p) => container(p, 'app')?.state?.waiting?.reason === 'ImagePullBackOff',
  },
];

/**
 * Differences kept on purpose, by path (after normalisation) with the reason. A difference not listed fails the test.
 */
const deliberate: { path: RegExp; reason: string }[] = [
  {
    path: /^init\.status\.resources\.limits: /,
    reason:
      "timing: kubelet reads the pod cgroup into status.resources at a sync that finds the pod Running in the API server; the init pod became Running there after kubelet's last sync of it and before nodelet's",
  },
  {
    path: /^oom\.cgroups\./,
    reason: "timing: nodelet removes an ended pod's cgroup as it stops the pod, kubelet at its next housekeeping",
  },
  {
    path: /^event only from (kubelet|nodelet): \w+ \| .* \| Unhealthy \| .* probe errored and resulted in unknown state: rpc error: code = \w+ desc = failed to exec in container: /,
    reason: 'timing: nodelet probes a container from the sync that started it, kubelet from its next sync (~1 s later); an exec probe that meets the container exiting errors',
  },
  {
    // The probes pod's readiness command prints before it fails, the restart pod's is `true`: no output means the
    // container ended under it (the liveness probe's kill, or the restart pod's first run exiting at once).
    path: /^event only from (kubelet|nodelet): (probes|restart) \| spec\.containers\{app\} \| Warning \| Unhealthy \| .* \| Readiness probe failed: $/,
    reason: 'timing: a readiness probe running when its container ends fails with no output, on either agent when the two meet',
  },
  {
    // Seen once in CI (nodelet's side, 2026-11-28); both agents report a failed StopPodSandbox the same way.
    path: /^event only from (kubelet|nodelet): oom \|  \| Warning \| FailedKillPod \| .* error killing pod: KillPod <id>: StopPodSandbox: failed to stop sandbox container "<id>" in "SANDBOX_READY" state: failed to kill sandbox container: ttrpc: closed: unknown$/,
    reason: "the runtime's: containerd 1.6 lost its shim's ttrpc connection while stopping the OOM-killed pod's sandbox; the agent reports it and retries at its next sync, as kubelet does",
  },
];

/**
 * Differences from kubelet v1.37 features nodelet does not have yet (README "Kubernetes 1.37 on the node"), by path with
 * the feature. A difference listed neither here nor in `deliberate` fails the test.
 */
const notYetBuilt: { path: RegExp; feature: string }[] = [
  {
    // kubelet: "... already present on machine and can be accessed by the pod" once it has checked the pod's pull
    // credentials for the image (KubeletEnsureSecretPulledImages, beta and on since 1.35); nodelet checks nothing and
    // keeps the older message.
    path: /^event only from (kubelet|nodelet): \w+ \| spec\.(initContainers|containers)\{[\w-]+\} \| Normal \| Pulled \| .* \| Container image "[^"]+" already present on machine( and can be accessed by the pod)?$/,
    feature: "the image pull credential check for images already present (KubeletEnsureSecretPulledImages)",
  },
];

function container(p: V1Pod, name: string) {
  return [...(p.status?.containerStatuses ?? []), ...(p.status?.initContainerStatuses ?? [])].find((c) => c.name === name);
}

const workDir = await mkdtemp(join(tmpdir(), 'nodelet-parity-'));
const cniLog = { kubelet: join(workDir, 'cni-kubelet.log'), nodelet: join(workDir, 'cni-nodelet.log') };
const nodeletConfDir = join(workDir, 'cni-conf');
const nodeletCniBin = join(workDir, 'cni-bin');

/** The nodelet chain of cni-conf/ with the logging plugin last. */
async function writeNodeletCniConf(): Promise<void> {
  await mkdir(nodeletConfDir, { recursive: true });
  await mkdir(nodeletCniBin, { recursive: true });
  await installCniLogPlugin(nodeletCniBin);
  for (const f of await readdir(join(repoRoot, 'cni-conf'))) {
    const conf = JSON.parse(await readFile(join(repoRoot, 'cni-conf', f), 'utf8')) as { name: string; plugins: unknown[] };
    if (conf.plugins.some((p) => (p as { type: string }).type === 'bridge')) conf.plugins.push(cniLogPluginConf(cniLog.nodelet));
    await writeFile(join(nodeletConfDir, f), JSON.stringify(conf, null, 2));
  }
}

// The kubelet instance's containerd (started here when it is not running, and stopped again at the end).
const kubeletContainerdRunning = (() => {
  try {
    return existsSync(`/proc/${readFileSync('/run/nodelet/containerd-kubelet.pid', 'utf8').trim()}`);
  } catch {
    return false;
  }
})();
for (const problem of await BenchKubelet.restoreLeftovers(placement)) console.warn(`parity: restoring an earlier run's leftovers: ${problem}`);
await execa('bash', [join(repoRoot, 'scripts/runtime.sh'), 'up'], { env: { NODELET_RUNTIME_INSTANCE: 'kubelet' } });
const originalKubeletConflist = await readFile(kubeletConflist, 'utf8');
await writeNodeletCniConf();

// nodelet's network is a --cni-conf-dir one, as kubelet's: it keeps its own range rather than the Node's podCIDR.
const cluster: RealCluster = await startRealCluster({
  agentArgs: ['--cni-conf-dir', nodeletConfDir, '--cni-bin-dir', `${nodeletCniBin},/usr/lib/cni,/opt/cni/bin`],
  networkTakesPodCIDR: false,
});
const { kubectl } = cluster;
const cri = { kubelet: new CriClient(kubeletEndpoint), nodelet: new CriClient(criEndpoint) };
// kubelet with nodelet's node address: without --node-ip it would look its node name up in DNS at every status update.
const kubelet = new BenchKubelet(workDir, { placement, kubeconfig: await nodeCredentials(cluster.dir, kubeletNodeName), nodeIP: cluster.nodeIP, logFile: join(workDir, 'kubelet.log') });

async function restoreKubeletCni(): Promise<void> {
  await writeFile(kubeletConflist, originalKubeletConflist);
  await rm(join(kubeletCniBin, cniLogPluginType), { force: true });
}

afterAll(async () => {
  const problems: string[] = [];
  try {
    // kubelet tears its pods down when their namespace goes, as nodelet does in cluster.stop().
    await kubectl.tryRun('delete', 'namespace', side.kubelet, '--wait=false');
    await waitFor('kubelet to tear its pods down', async () => ((await kubectl.get<{ items: V1Pod[] }>('pods', '-n', side.kubelet)).items.length === 0 ? true : undefined), 120_000, 1_000)
      .catch((err: Error) => problems.push(err.message));
    problems.push(...(await kubelet.cleanup()));
    const left = await cri.kubelet.listPodSandbox(placement.pods);
    if (left.length > 0) problems.push(`${left.length} kubelet sandboxes left`);
  } finally {
    cri.kubelet.close();
    cri.nodelet.close();
    await restoreKubeletCni();
    if (!kubeletContainerdRunning) await execa('bash', [join(repoRoot, 'scripts/runtime.sh'), 'down'], { env: { NODELET_RUNTIME_INSTANCE: 'kubelet' }, reject: false });
    await cluster.stop();
    await rm(workDir, { recursive: true, force: true });
  }
  expect(problems).toEqual([]);
}, 420_000);

beforeAll(async () => {
  await installCniLogPlugin(kubeletCniBin);
  const conf = JSON.parse(originalKubeletConflist) as { plugins: unknown[] };
  conf.plugins.push(cniLogPluginConf(cniLog.kubelet));
  // containerd reloads its CNI configuration when the directory changes.
  await writeFile(kubeletConflist, JSON.stringify(conf, null, 2));
  await kubelet.start(AbortSignal.timeout(120_000));
  await waitFor(`Node ${kubeletNodeName} Ready`, async () => {
    const n = await kubectl.get<V1Node>('node', kubeletNodeName).catch(() => undefined);
    return n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
  }, 120_000, 500).catch((err: Error) => {
    throw new Error(`${err.message}\nkubelet's output (end):\n${kubelet.recentOutput()}`);
  });
}, 300_000);

/** What one side produced for one pod. */
interface Produced {
  status: unknown;
  runtime: unknown;
  cgroups: unknown;
}

const nodeOf: Record<Side, string> = { kubelet: kubeletNodeName, nodelet: cluster.nodeName };

/** The runtime's view of one pod: labels and annotations of its sandbox and containers, and their cgroup paths. */
async function runtimeView(s: Side, uid: string): Promise<{ runtime: unknown; cgroups: unknown; ids: string[] }> {
  const filter = { labelSelector: { [podUidLabel]: uid } };
  const sandboxes = await cri[s].listPodSandbox(filter);
  const containers = await cri[s].listContainers(filter);
  const cgroupsPath = (info: Record<string, string> | undefined) =>
    (JSON.parse(info?.['info'] ?? '{}') as { runtimeSpec?: { linux?: { cgroupsPath?: string } } }).runtimeSpec?.linux?.cgroupsPath;
  const runtime = {
    sandboxes: sandboxes.map((x) => ({ attempt: x.metadata.attempt, labels: x.labels, annotations: x.annotations })),
    // By name and attempt: the pods' own names and order, not the runtime's IDs.
    containers: Object.fromEntries(containers.map((c) => [`${c.metadata.name}#${c.metadata.attempt}`, { labels: c.labels, annotations: c.annotations }])),
  };
  const cgroups = {
    sandboxes: await Promise.all(sandboxes.map(async (x) => cgroupsPath((await cri[s].podSandboxStatus(x.id, true)).info))),
    containers: Object.fromEntries(await Promise.all(containers.map(async (c) => [`${c.metadata.name}#${c.metadata.attempt}`, cgroupsPath((await cri[s].containerStatus(c.id, true)).info)]))),
  };
  return { runtime, cgroups, ids: [...sandboxes.map((x) => x.id), ...containers.map((c) => c.id)] };
}

/** Everything that must differ between the two sides, replaced by a placeholder. */
class Normaliser {
  private readonly replacements = new Map<string, string>();

  constructor(s: Side) {
    this.replacements.set(`/${placement.cgroupRoot}/`, '/');
    this.replacements.set(side[s], '<namespace>');
    this.replacements.set(nodeOf[s], '<node>');
  }

  add(value: string | undefined, placeholder: string): void {
    if (value) this.replacements.set(value, placeholder);
  }

  text(s: string): string {
    let out = s;
    for (const [from, to] of [...this.replacements].sort((a, b) => b[0].length - a[0].length)) out = out.split(from).join(to);
    return out
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)/g, '<time>')
      .replace(/(?<!sha256:)\b[0-9a-f]{64}\b/g, '<id>')
      .replace(/\b(?:\d{1,3}\.){3}\d{1,3}\b(?!:1\/)/g, '<ip>')
      .replace(/\/var\/run\/netns\/cni-[0-9a-f-]+/g, '<netns>');
  }

  value(v: unknown): unknown {
    if (typeof v === 'string') return this.text(v);
    if (Array.isArray(v)) return v.map((x) => this.value(x));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [this.text(k), this.value(x)]));
    return v;
  }
}

/** The differences between two normalised values, as `path: kubelet=... nodelet=...` lines. */
function differences(path: string, a: unknown, b: unknown, out: string[]): string[] {
  if (JSON.stringify(a) === JSON.stringify(b)) return out;
  const isObject = (x: unknown) => !!x && typeof x === 'object' && !Array.isArray(x);
  if (isObject(a) && isObject(b)) {
    const ao = a as Record<string, unknown>;
    const bo = b as Record<string, unknown>;
    for (const k of [...new Set([...Object.keys(ao), ...Object.keys(bo)])].sort()) differences(`${path}.${k}`, ao[k], bo[k], out);
    return out;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    a.forEach((x, i) => differences(`${path}[${i}]`, x, b[i], out));
    return out;
  }
  out.push(`${path}: kubelet=${JSON.stringify(a)} nodelet=${JSON.stringify(b)}`);
  return out;
}

/** A status with its lists keyed (conditions by type, container statuses by name) so that order does not count. */
function keyedStatus(p: V1Pod): unknown {
  const st = p.status ?? {};
  const byName = (l?: { name: string }[]) => (l ? Object.fromEntries(l.map((c) => [c.name, c])) : undefined);
  return {
    ...st,
    conditions: st.conditions ? Object.fromEntries(st.conditions.map((c) => [c.type, c])) : undefined,
    containerStatuses: byName(st.containerStatuses),
    initContainerStatuses: byName(st.initContainerStatuses),
  };
}

function normaliserFor(s: Side, p: V1Pod, ids: string[]): Normaliser {
  const n = new Normaliser(s);
  n.add(p.metadata?.uid, '<uid>');
  for (const id of ids) n.add(id, '<id>');
  return n;
}

/** One line per distinct event about a pod (counts and times left out: they depend on timing). */
function eventLines(s: Side, events: CoreV1Event[], normalisers: Map<string, Normaliser>): string[] {
  const lines = events.filter((e) => e.involvedObject.kind === 'Pod').map((e) => {
    const n = normalisers.get(e.involvedObject.name!) ?? new Normaliser(s);
    return n.text([e.involvedObject.name, e.involvedObject.fieldPath ?? '', e.type, e.reason, e.source?.component ?? '', e.source?.host ?? '', e.reportingComponent ?? '', e.message].join(' | '));
  });
  return [...new Set(lines)].sort();
}

const produced: Record<Side, Map<string, Produced>> = { kubelet: new Map(), nodelet: new Map() };
const normalisers: Record<Side, Map<string, Normaliser>> = { kubelet: new Map(), nodelet: new Map() };

test('the same pods on kubelet and on nodelet produce the same status, runtime objects, cgroups, CNI calls and events', async () => {
  for (const s of ['kubelet', 'nodelet'] as Side[]) {
    await kubectl.run('create', 'namespace', side[s]);
    await waitFor(`the default ServiceAccount in ${side[s]}`, () => kubectl.get('serviceaccount', 'default', '-n', side[s]).catch(() => undefined), 60_000, 500);
    const list = { apiVersion: 'v1', kind: 'List', items: pods.map((p) => ({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: p.name, namespace: side[s] },
      spec: { nodeName: nodeOf[s], terminationGracePeriodSeconds: 2, automountServiceAccountToken: false, ...p.spec },
    })) };
    await kubectl.fromFile('create', `${s}.json`, JSON.stringify(list));
  }
  // Each pod's status the first time it satisfies its `when`, with the runtime's view taken right then.
  await waitFor('every pod on both nodes in its compared state', async () => {
    for (const s of ['kubelet', 'nodelet'] as Side[]) {
      for (const p of (await kubectl.get<{ items: V1Pod[] }>('pods', '-n', side[s])).items) {
        const spec = pods.find((x) => x.name === p.metadata?.name);
        if (!spec || produced[s].has(spec.name) || !spec.when(p)) continue;
        if (s === 'nodelet') cluster.uids.add(p.metadata!.uid!);
        const view = await runtimeView(s, p.metadata!.uid!);
        const n = normaliserFor(s, p, view.ids);
        normalisers[s].set(spec.name, n);
        produced[s].set(spec.name, { status: n.value(keyedStatus(p)), runtime: n.value(view.runtime), cgroups: n.value(view.cgroups) });
      }
    }
    return produced.kubelet.size === pods.length && produced.nodelet.size === pods.length ? true : undefined;
  }, 240_000, 500).catch(async (err: Error) => {
    const missing = (s: Side) => pods.filter((p) => !produced[s].has(p.name)).map((p) => p.name);
    throw new Error(`${err.message}; kubelet missing ${missing('kubelet').join(',')}, nodelet missing ${missing('nodelet').join(',')}\n` +
      JSON.stringify((await kubectl.get<{ items: V1Pod[] }>('pods', '-A')).items.map((p) => [p.metadata?.namespace, p.metadata?.name, p.status]), null, 1).slice(0, 20_000));
  });

  const found: string[] = [];
  for (const p of pods) {
    const k = produced.kubelet.get(p.name)!;
    const n = produced.nodelet.get(p.name)!;
    differences(`${p.name}.status`, k.status, n.status, found);
    differences(`${p.name}.runtime`, k.runtime, n.runtime, found);
    differences(`${p.name}.cgroups`, k.cgroups, n.cgroups, found);
  }

  // The CNI calls of each pod's sandbox (ADD, and DEL for pods already torn down), by pod name.
  const cniCalls = (s: Side) => {
    const byPod: Record<string, unknown[]> = {};
    for (const call of readCniCalls(cniLog[s])) {
      const args = Object.fromEntries((call.env['CNI_ARGS'] ?? '').split(';').filter(Boolean).map((kv) => kv.split('=', 2) as [string, string]));
      const pod = args['K8S_POD_NAME'] ?? '?';
      if (args['K8S_POD_NAMESPACE'] !== side[s]) continue;
      const n = normalisers[s].get(pod);
      if (!n) continue;
      const { CNI_PATH: _path, ...env } = call.env;
      const { name: _name, logFile: _log, type: _type, capabilities: _caps, ...conf } = call.conf;
      (byPod[pod] ??= []).push(n.value({ env: { ...env, CNI_ARGS: Object.fromEntries(Object.entries(args).sort()) }, conf }));
    }
    return byPod;
  };
  const calls = { kubelet: cniCalls('kubelet'), nodelet: cniCalls('nodelet') };
  for (const p of pods) differences(`${p.name}.cni`, calls.kubelet[p.name]?.[0], calls.nodelet[p.name]?.[0], found);
  expect(Object.keys(calls.nodelet).sort()).toEqual(pods.map((p) => p.name).sort());

  // The events of the last moments reach the API server.
  await new Promise((r) => setTimeout(r, 5_000));
  const events = {
    kubelet: eventLines('kubelet', (await kubectl.get<{ items: CoreV1Event[] }>('events', '-n', side.kubelet)).items, normalisers.kubelet),
    nodelet: eventLines('nodelet', (await kubectl.get<{ items: CoreV1Event[] }>('events', '-n', side.nodelet)).items, normalisers.nodelet),
  };
  for (const line of events.kubelet) if (!events.nodelet.includes(line)) found.push(`event only from kubelet: ${line}`);
  for (const line of events.nodelet) if (!events.kubelet.includes(line)) found.push(`event only from nodelet: ${line}`);

  const unexplained = found.filter((d) => !deliberate.some((x) => x.path.test(d)) && !notYetBuilt.some((x) => x.path.test(d)));
  expect(unexplained).toEqual([]);
}, 420_000);
