// npm run conformance -- [--focus REGEX] [--skip REGEX] [--procs N] [--results DIR]
//
// Kubernetes' own e2e tests (e2e.test of the control plane's version, scripts/e2e-build.sh) against the real control
// plane (test/cluster/control-plane.ts, on free loopback ports) with nodelet as its only node. nodelet runs on the
// rig's `conformance` containerd instance (scripts/runtime.sh): its own socket, CNI socket, bridge, networks, CNI
// result cache, cgroup root, kubelet API and healthz ports, root and pod-log dirs, so a long run neither disturbs the
// integration tests nor needs their lock. The instance pulls nothing from outside the machine (every registry goes to
// loopback); the test images that can be built here are imported under their upstream names first.
//
// Prints a summary (passed / failed / skipped per SIG, each failure with its first error line) and leaves under the
// results directory: junit_01.xml, ginkgo/report.json, e2e.log (ginkgo's output), summary.txt, and logs/ (the control
// plane's and nodelet's logs). Everything it started is torn down at the end, also after a failure or Ctrl-C.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import { parseCgroupMounts } from '../../src/host/cgroups.js';
import { repoRoot } from '../cluster/control-plane.js';
import { describeRuntime } from '../cluster/runtime-instance.js';
import { freePorts, startRealCluster, type NodeRuntime, type RealCluster } from '../integration/helpers/real-cluster.js';
import { DEFAULT_FOCUS, DEFAULT_SKIP, NODE_CONFORMANCE_FOCUS, NODE_CONFORMANCE_SKIP, formatSummary, ginkgoArgs, summarize, type GinkgoReport } from './suite.js';

const USAGE = `usage: npm run conformance -- [--node-conformance] [--focus REGEX] [--skip REGEX] [--procs N] [--results DIR]
  --node-conformance  the [NodeConformance] tests outside the conformance set (focus [NodeConformance], skip
             [Conformance] and the skip list), in place of the default focus
  --focus    the tests to run (default: sig-node's [Conformance] tests and sig-storage's of configMap, secret,
             projected, downward API, emptyDir and hostPath volumes)
  --skip     tests not to run (default: the skip list of test/conformance/suite.ts)
  --procs    parallel ginkgo processes (default 4); [Serial] tests run alone at the end
  --results  where the reports and logs go (default /var/tmp/nodelet-conformance/<time>)`;

/** scripts/runtime.sh's instance for this node (its socket, bridge, networks and CNI directories: `runtime.sh describe`). */
const INSTANCE = 'conformance' as const;
/** kubelet's cgroupRoot for this node: its kubepods never meets the integration tests' nodelet's. */
const CGROUP_ROOT = '/nodelet-conformance';
/** CIDRs no other cluster of the rig uses (the integration tests' are 10.96.0.0/16 and 10.244.0.0/16), nor the conformance
 * instance's network before the podCIDR (10.94.0.0/24, scripts/runtime.sh). */
const CLUSTER_SETTINGS = { clusterCidr: '10.92.0.0/16', serviceCidr: '10.93.0.0/16' };
const NODE_NAME = 'nodelet-conformance';

const log = (line: string) => console.log(`conformance: ${line}`);

/** Runs one of the project's scripts with the conformance instance selected; its stdout's last line. */
async function script(name: string, ...args: string[]): Promise<string> {
  const r = await execa('bash', [join(repoRoot, 'scripts', name), ...args], {
    env: { NODELET_RUNTIME_INSTANCE: INSTANCE },
    stderr: 'inherit',
  });
  return r.stdout.trim().split('\n').pop() ?? '';
}

/** The cgroup hierarchies of the host, from its mounts (v1: one per controller mount, and named ones; v2: the unified one). */
async function cgroupHierarchies(): Promise<string[]> {
  return parseCgroupMounts(await readFile('/proc/self/mountinfo', 'utf8')).map((h) => h.mountPoint);
}

/** kubelet requires its cgroupRoot to exist in every hierarchy; cpuset children start empty, so they get the parent's CPUs and memory nodes. */
async function createCgroupRoot(): Promise<void> {
  for (const h of await cgroupHierarchies()) {
    const dir = join(h, CGROUP_ROOT);
    await mkdir(dir, { recursive: true });
    for (const f of ['cpuset.cpus', 'cpuset.mems']) {
      const parent = await readFile(join(h, f), 'utf8').catch(() => undefined);
      if (parent !== undefined && (await readFile(join(dir, f), 'utf8')).trim() === '') await writeFile(join(dir, f), parent.trim());
    }
  }
}

/** Removes a cgroup and its children, deepest first (a cgroup directory goes with rmdir once it has no child). */
async function removeCgroupTree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => undefined);
  if (!entries) return [];
  const failed: string[] = [];
  for (const e of entries) if (e.isDirectory()) failed.push(...(await removeCgroupTree(join(dir, e.name))));
  await rmdir(dir).catch((err: NodeJS.ErrnoException) => failed.push(`${dir}: ${err.code ?? err.message}`));
  return failed;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      focus: { type: 'string' },
      skip: { type: 'string' },
      'node-conformance': { type: 'boolean', default: false },
      procs: { type: 'string', default: '4' },
      results: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const nodeConformance = values['node-conformance'];
  const focus = values.focus ?? (nodeConformance ? NODE_CONFORMANCE_FOCUS : DEFAULT_FOCUS);
  const skip = values.skip ?? (nodeConformance ? NODE_CONFORMANCE_SKIP : DEFAULT_SKIP);
  const procs = Number(values.procs);
  if (!Number.isInteger(procs) || procs < 1) throw new Error(`--procs: not a process count: ${values.procs}\n${USAGE}`);
  const results = resolve(values.results ?? join('/var/tmp/nodelet-conformance', new Date().toISOString().replace(/[:.]/g, '-')));
  await mkdir(results, { recursive: true });
  log(`results in ${results}`);

  let interrupted = false;
  let ginkgo: ChildProcess | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    if (interrupted && ginkgo?.pid) {
      process.kill(-ginkgo.pid, 'SIGKILL');
      return;
    }
    interrupted = true;
    log(`${sig}: stopping the tests, then tearing everything down (again to kill the tests at once)`);
    // ginkgo stops its processes, runs their clean-up and writes its reports.
    if (ginkgo?.pid) process.kill(-ginkgo.pid, 'SIGINT');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let cluster: RealCluster | undefined;
  let exitCode = 1;
  const started = Date.now();
  try {
    const criEndpoint = await script('runtime.sh', 'up');
    const instance = await describeRuntime(INSTANCE);
    await script('runtime.sh', 'e2e-images');
    const e2eDir = await script('e2e-build.sh');
    if (interrupted) return 130;
    await createCgroupRoot();

    const [kubeletPort, healthzPort] = await freePorts(2);
    const kubeletConfig = join(results, 'nodelet-config.yaml');
    await writeFile(kubeletConfig, [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      // This host is cgroup v1: kubelet 1.37 (and nodelet) refuse it unless failCgroupV1 is false.
      'failCgroupV1: false',
      `cgroupRoot: ${CGROUP_ROOT}`,
      `healthzPort: ${healthzPort}`,
      '',
    ].join('\n'));
    // cleanUpRealCluster copies the control plane's and nodelet's logs here.
    process.env['NODELET_TEST_LOGS'] = join(results, 'logs');
    // nodelet's own network is the instance's last (the first is the CNI shim's that containerd runs).
    const runtime: NodeRuntime = { criEndpoint, podBridge: instance.bridge, podNetwork: instance.networks.at(-1)! };
    cluster = await startRealCluster({
      nodeName: NODE_NAME,
      runtime,
      settings: CLUSTER_SETTINGS,
      // The instance's agent network is a --cni-conf-dir one: it keeps its range (10.94.0.0/24), not the podCIDR.
      networkTakesPodCIDR: false,
      // As kubeadm's kubelet configuration: the cluster CA verifies the API server's client certificate (logs, exec, ...).
      agentArgs: (dir) => ['--config', kubeletConfig, '--client-ca-file', join(dir, 'ca.crt'), '--port', String(kubeletPort),
        '--cni-socket', instance.cniSocket, '--cni-conf-dir', instance.agentCniConfDir, '--cni-cache-dir', instance.agentCniCacheDir],
      log,
    });
    log(`node ${NODE_NAME} Ready (podCIDR ${cluster.podCIDR}, kubelet API on ${cluster.nodeIP}:${kubeletPort}) after ${Math.round((Date.now() - started) / 1000)} s`);
    await copyFile(cluster.adminKubeconfig, join(results, 'admin.kubeconfig'));
    if (interrupted) return 130;

    const args = ginkgoArgs({
      focus, skip, procs, adminKubeconfig: cluster.adminKubeconfig, reportDir: results,
      e2eTest: join(e2eDir, 'e2e.test'), timeout: '6h',
    });
    log(`${join(e2eDir, 'ginkgo')} ${args.map((a) => (/[\s|()*\\[\]]/.test(a) ? `'${a}'` : a)).join(' ')}`);
    const runStarted = Date.now();
    const e2eLog = createWriteStream(join(results, 'e2e.log'));
    // Its own process group, so an interrupt reaches ginkgo and every e2e.test process it runs, and only them.
    ginkgo = spawn(join(e2eDir, 'ginkgo'), args, {
      cwd: results,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // kubectl (some tests run it) is the built one, of the cluster's version.
      env: { ...process.env, PATH: `${cluster.binDir}:${process.env['PATH'] ?? ''}`, KUBECONFIG: cluster.adminKubeconfig },
    });
    for (const stream of [ginkgo.stdout!, ginkgo.stderr!]) {
      stream.on('data', (d: Buffer) => {
        e2eLog.write(d);
        process.stdout.write(d);
      });
    }
    const code = await new Promise<number>((res) => ginkgo!.once('exit', (c, sig) => res(c ?? (sig ? 128 : 1))));
    e2eLog.end();
    log(`ginkgo exited with ${code} after ${Math.round((Date.now() - runStarted) / 1000)} s`);

    const reportFile = join(results, 'ginkgo', 'report.json');
    const reports = JSON.parse(await readFile(reportFile, 'utf8').catch(() => '[]')) as GinkgoReport[];
    if (reports.length === 0) log(`no report at ${reportFile}: see ${join(results, 'e2e.log')}`);
    const summary = summarize(reports);
    const text = formatSummary(summary);
    await writeFile(join(results, 'summary.txt'), text);
    await writeFile(join(results, 'summary.json'), `${JSON.stringify(summary, null, 1)}\n`);
    console.log(`\n${text}`);
    exitCode = summary.failed === 0 && reports.length > 0 && !interrupted ? 0 : 1;
  } finally {
    log('tearing down: the node\'s pods, nodelet, the control plane, the conformance containerd instance');
    if (cluster) {
      await cluster.stop().catch((err: Error) => {
        log(`teardown: ${err.message}`);
        exitCode = 1;
      });
    }
    await script('runtime.sh', 'down').catch((err: Error) => {
      log(`runtime.sh down failed: ${err.message}`);
      exitCode = 1;
    });
    const left = await Promise.all((await cgroupHierarchies()).map((h) => removeCgroupTree(join(h, CGROUP_ROOT))));
    if (left.flat().length > 0) {
      log(`cgroups left: ${left.flat().join(', ')}`);
      exitCode = 1;
    }
    log(`done in ${Math.round((Date.now() - started) / 1000)} s; reports in ${results}`);
  }
  return interrupted ? 130 : exitCode;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`conformance: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
