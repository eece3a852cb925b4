// The real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler built from the upstream Go
// modules) as test/cluster/control-plane.ts runs it, checked with the real kubectl: it is ready, kubeadm's phases left
// the objects a kind cluster has, the join command names a live bootstrap token and the CA's hash, and a node's
// credentials are held to its own Node by NodeRestriction while the controller-manager gives that Node a pod CIDR.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { COMPONENTS, down, ensureBinaries, nodeCredentials, repoRoot, runningPids, up, type ControlPlane } from '../../cluster/control-plane.js';
import { KUBE_PROXY_SETTINGS } from '../../cluster/host-state.js';
import { caCertHash } from '../../cluster/pki.js';
import { waitFor } from '../helpers/agent.js';
import { freePorts, netfilterState, releasePodBridge } from '../helpers/real-cluster.js';

const execFileAsync = promisify(execFile);

const dir = await mkdtemp(join(tmpdir(), 'nodelet-cp-'));
/** The host's netfilter rules and kube-proxy's settings before `up`: `down` leaves them so. */
const hostSettings = async () => Object.fromEntries(await Promise.all(KUBE_PROXY_SETTINGS.map(async (f) => [f, (await readFile(f, 'utf8').catch(() => ''))?.trim()])));
const netfilterBefore = await netfilterState();
const settingsBefore = await hostSettings();
const binDir = await ensureBinaries();
let plane: ControlPlane | undefined;
let pids: number[] = [];

/** Runs the built kubectl: `out` is its stdout, `err` its stderr (warnings, errors). */
async function kubectl(kubeconfig: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(join(binDir, 'kubectl'), ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'kube-cache'), ...args], { encoding: 'utf8', timeout: 60_000 });
    return { code: 0, out: stdout, err: stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, out: e.stdout ?? '', err: e.stderr ?? '' };
  }
}

async function admin(...args: string[]): Promise<string> {
  const { code, out, err } = await kubectl(join(dir, 'admin.kubeconfig'), ...args);
  if (code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${code}): ${err}`);
  return out;
}

function nodeManifest(name: string): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } } });
}

async function createAs(kubeconfig: string, manifest: string): Promise<{ code: number; out: string; err: string }> {
  const file = join(dir, `manifest-${Date.now()}-${Math.random().toString(16).slice(2)}.json`);
  await writeFile(file, manifest);
  return kubectl(kubeconfig, 'create', '-f', file);
}

beforeAll(async () => {
  const [apiServerPort, etcdClientPort, etcdPeerPort, etcdMetricsPort, controllerManagerPort, schedulerPort] = await freePorts(6);
  await releasePodBridge();
  plane = await up({ dir, binDir, apiServerPort, etcdClientPort, etcdPeerPort, etcdMetricsPort, controllerManagerPort, schedulerPort });
  pids = Object.values(await runningPids(dir));
}, 600_000);

afterAll(async () => {
  await down(dir);
  const left = pids.filter((pid) => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z'));
  await rm(dir, { recursive: true, force: true });
  expect(left).toEqual([]);
}, 120_000);

test('every component runs as its own process and the API server is ready', async () => {
  expect(Object.keys(await runningPids(dir)).sort()).toEqual([...COMPONENTS].sort());
  expect((await admin('get', '--raw', '/readyz')).trim()).toBe('ok');
  // The binaries carry the release version (kubeadm and kubelet compare versions).
  const version = JSON.parse(await admin('version', '-o', 'json')) as { clientVersion: { gitVersion: string }; serverVersion: { gitVersion: string } };
  const pinned = /^require k8s\.io\/kubernetes (v\S+)$/m.exec(readFileSync(join(repoRoot, 'kube', 'go.mod'), 'utf8'))?.[1];
  expect(version.serverVersion.gitVersion).toBe(pinned);
  expect(version.clientVersion.gitVersion).toBe(version.serverVersion.gitVersion);
  expect(await admin('get', 'nodes', '-o', 'name')).toBe('');
});

test("kubeadm's phases created kube-system's configuration, CoreDNS and kube-proxy", async () => {
  const cms = (await admin('get', 'configmaps', '-n', 'kube-system', '-o', 'name')).split('\n');
  for (const name of ['kubeadm-config', 'kubelet-config', 'kube-proxy', 'coredns']) expect(cms).toContain(`configmap/${name}`);
  const clusterConfig = await admin('get', 'configmap', 'kubeadm-config', '-n', 'kube-system', '-o', 'jsonpath={.data.ClusterConfiguration}');
  expect(clusterConfig).toContain(`podSubnet: ${plane!.settings.clusterCidr}`);
  expect(clusterConfig).toContain(`serviceSubnet: ${plane!.settings.serviceCidr}`);
  expect(await admin('get', 'daemonset', 'kube-proxy', '-n', 'kube-system', '-o', 'name')).toBe('daemonset.apps/kube-proxy\n');
  expect(await admin('get', 'deployment', 'coredns', '-n', 'kube-system', '-o', 'name')).toBe('deployment.apps/coredns\n');
  // CoreDNS's Service sits on the service range's tenth address, as kubelet-config's clusterDNS says.
  expect(await admin('get', 'service', 'kube-dns', '-n', 'kube-system', '-o', 'jsonpath={.spec.clusterIP}')).toBe('10.96.0.10');
  // kube-proxy reaches the API server where it listens (controlPlaneEndpoint).
  const proxyKubeconfig = await admin('get', 'configmap', 'kube-proxy', '-n', 'kube-system', '-o', 'jsonpath={.data.kubeconfig\\.conf}');
  expect(proxyKubeconfig).toContain(`server: https://127.0.0.1:${plane!.settings.apiServerPort}`);
  const kubeletConfig = await admin('get', 'configmap', 'kubelet-config', '-n', 'kube-system', '-o', 'jsonpath={.data.kubelet}');
  expect(kubeletConfig).toContain('10.96.0.10');
});

test("the `kubernetes` Service's endpoint is the host's address, where kube-apiserver listens beside loopback", async () => {
  const address = plane!.advertiseAddress;
  // Discovered at run time: an address of this host (the default route's interface), never loopback when there is another.
  const hostAddresses = Object.values(networkInterfaces()).flatMap((l) => (l ?? []).map((a) => a.address));
  expect(hostAddresses).toContain(address);
  if (hostAddresses.some((a) => a.includes('.') && !a.startsWith('127.'))) expect(address).not.toMatch(/^127\./);
  const endpoints = JSON.parse(await admin('get', 'endpoints', 'kubernetes', '-n', 'default', '-o', 'json')) as {
    subsets?: { addresses?: { ip: string }[]; ports?: { port: number }[] }[] };
  expect(endpoints.subsets?.[0]?.addresses?.map((a) => a.ip)).toEqual([address]);
  expect(endpoints.subsets?.[0]?.ports?.map((p) => p.port)).toEqual([plane!.settings.apiServerPort]);
  // The serving certificate names it, and the API server answers there as on 127.0.0.1.
  const { stdout } = await execFileAsync('curl', ['-sS', '--max-time', '10', '--cacert', plane!.caCert, `https://${address}:${plane!.settings.apiServerPort}/livez`],
    { encoding: 'utf8' });
  expect(stdout.trim()).toBe('ok');
});

test("kubeadm takes the PKI for its own: its certs phase keeps every file of the certificatesDir", async () => {
  const copy = await mkdtemp(join(tmpdir(), 'nodelet-cp-pki-'));
  try {
    await cp(join(dir, 'pki'), join(copy, 'pki'), { recursive: true });
    const config = (await readFile(join(dir, 'kubeadm.yaml'), 'utf8')).replaceAll(`${dir}/`, `${copy}/`);
    await writeFile(join(copy, 'kubeadm.yaml'), config);
    const digests = async () => (await execFileAsync('bash', ['-c', 'cd "$1" && find . -type f | sort | xargs sha256sum', '-', join(copy, 'pki')])).stdout;
    const before = await digests();
    const { stdout } = await execFileAsync(join(binDir, 'kubeadm'), ['init', 'phase', 'certs', 'all', '--config', join(copy, 'kubeadm.yaml')], { encoding: 'utf8' });
    expect(stdout).toContain('Using existing ca certificate authority');
    expect(stdout).toContain('Using existing apiserver certificate and key on disk');
    expect(stdout).not.toContain('Generating');
    expect(await digests()).toBe(before);
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
});

test('the join command carries a live bootstrap token, signed into cluster-info, and the CA hash', async () => {
  const joinCommand = (await readFile(join(dir, 'join-command'), 'utf8')).trim();
  const m = /^kubeadm join (\S+) --token ([a-z0-9]{6})\.([a-z0-9]{16}) --discovery-token-ca-cert-hash (sha256:[0-9a-f]{64})$/.exec(joinCommand);
  expect(m).not.toBeNull();
  const [, endpoint, tokenId, , hash] = m!;
  expect(endpoint).toBe(`127.0.0.1:${plane!.settings.apiServerPort}`);
  expect(hash).toBe(caCertHash(await readFile(join(dir, 'ca.crt'), 'utf8')));
  const secret = JSON.parse(await admin('get', 'secret', `bootstrap-token-${tokenId}`, '-n', 'kube-system', '-o', 'json')) as { type: string };
  expect(secret.type).toBe('bootstrap.kubernetes.io/token');
  // The controller-manager's bootstrapsigner signs cluster-info for every token.
  const deadline = Date.now() + 60_000;
  let keys: string[] = [];
  while (Date.now() < deadline) {
    const cm = JSON.parse(await admin('get', 'configmap', 'cluster-info', '-n', 'kube-public', '-o', 'json')) as { data: Record<string, string> };
    keys = Object.keys(cm.data);
    if (keys.includes(`jws-kubeconfig-${tokenId}`)) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  expect(keys).toContain('kubeconfig');
  expect(keys).toContain(`jws-kubeconfig-${tokenId}`);
  // cluster-info is readable without credentials, as `kubeadm join` discovery reads it.
  const anon = await execFileAsync('curl', ['-sS', '--cacert', join(dir, 'ca.crt'),
    `https://127.0.0.1:${plane!.settings.apiServerPort}/api/v1/namespaces/kube-public/configmaps/cluster-info`], { encoding: 'utf8' });
  expect(anon.stdout).toContain(`jws-kubeconfig-${tokenId}`);
});

test("a node's credentials create its own Node, not another's, and the Node gets a pod CIDR", async () => {
  const kc = await nodeCredentials(dir, 'node-a');
  expect(kc).toBe(join(dir, 'node-a.kubeconfig'));
  expect((await kubectl(kc, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}')).out).toBe('system:node:node-a');
  expect((await kubectl(kc, 'auth', 'can-i', 'create', 'nodes')).out.trim()).toBe('yes');
  expect((await kubectl(kc, 'auth', 'can-i', 'list', 'secrets', '-n', 'kube-system')).out).toMatch(/^no\b/);
  expect((await kubectl(kc, 'auth', 'can-i', 'delete', 'namespaces')).out).toMatch(/^no\b/);

  const own = await createAs(kc, nodeManifest('node-a'));
  expect(own).toEqual({ code: 0, out: 'node/node-a created\n', err: '' });
  const other = await createAs(kc, nodeManifest('node-b'));
  expect(other.code).not.toBe(0);
  expect(other.err).toMatch(/forbidden: node "node-a" is not allowed to modify node "node-b"/);

  const deadline = Date.now() + 90_000;
  let podCIDR = '';
  while (Date.now() < deadline && !podCIDR) {
    podCIDR = await admin('get', 'node', 'node-a', '-o', 'jsonpath={.spec.podCIDR}');
    if (!podCIDR) await new Promise((r) => setTimeout(r, 500));
  }
  expect(podCIDR).toMatch(/^10\.244\.\d+\.0\/24$/);
  expect(await admin('get', 'nodes', '-o', 'name')).toBe('node/node-a\n');
});

test("down takes back what kube-proxy did on the host: its iptables chains and its conntrack settings", async () => {
  // The built kube-proxy in kubeadm's default mode (iptables), on the host as its DaemonSet's pod runs it (host network,
  // privileged), with the admin's credentials: it programs the `kubernetes` Service and sets its conntrack settings.
  const [healthzPort, metricsPort] = await freePorts(2);
  const proxy = spawn(join(binDir, 'kube-proxy'), ['--kubeconfig', join(dir, 'admin.kubeconfig'), '--hostname-override', 'proxy-host',
    '--cluster-cidr', plane!.settings.clusterCidr, '--healthz-bind-address', `127.0.0.1:${healthzPort}`, '--metrics-bind-address', `127.0.0.1:${metricsPort}`],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  proxy.stderr.on('data', (d: Buffer) => { output += d.toString(); });
  const gone = new AbortController();
  const exited = new Promise((resolve) => proxy.once('exit', resolve)).then(() => gone.abort(new Error('kube-proxy exited')));
  try {
    await waitFor("kube-proxy's rule for the kubernetes Service", async () => {
      const { stdout } = await execFileAsync('iptables-save', ['-t', 'nat'], { encoding: 'utf8' });
      return /^-A KUBE-SERVICES .*"default\/kubernetes:https cluster IP".* -j KUBE-SVC-/m.test(stdout) ? true : undefined;
    }, 90_000, 500, gone.signal).catch((err: Error) => { throw new Error(`${err.message}; kube-proxy's output:\n${output.slice(-3000)}`); });
  } finally {
    if (!gone.signal.aborted) proxy.kill('SIGTERM');
    await exited;
  }
  // It left them when it stopped, as on any node.
  const left = (await netfilterState()).filter((l) => !netfilterBefore.includes(l));
  expect(left.some((l) => l.startsWith('iptables-save filter ') && l.includes('KUBE-'))).toBe(true);
  expect(left.some((l) => l.startsWith('iptables-save nat ') && l.includes('KUBE-'))).toBe(true);

  expect((await down(dir)).sort()).toEqual([...COMPONENTS].sort());
  const after = await netfilterState();
  expect({ added: after.filter((l) => !netfilterBefore.includes(l)), removed: netfilterBefore.filter((l) => !after.includes(l)) })
    .toEqual({ added: [], removed: [] });
  expect(await hostSettings()).toEqual(settingsBefore);
  expect(existsSync(join(dir, 'run', 'host.json'))).toBe(false);
  expect(await readFile(join(dir, 'logs', 'kube-proxy-cleanup.log'), 'utf8')).toContain('$ kube-proxy --cleanup');

  plane = await up({ dir, binDir });
  pids = Object.values(await runningPids(dir));
}, 600_000);

test('down stops every process and up brings the same cluster back', async () => {
  const before = await admin('get', 'node', 'node-a', '-o', 'jsonpath={.metadata.uid}');
  expect((await down(dir)).sort()).toEqual([...COMPONENTS].sort());
  expect(await runningPids(dir)).toEqual({});
  for (const pid of pids) expect(existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z')).toBe(false);
  plane = await up({ dir, binDir });
  pids = Object.values(await runningPids(dir));
  expect(pids).toHaveLength(COMPONENTS.length);
  expect(await admin('get', 'node', 'node-a', '-o', 'jsonpath={.metadata.uid}')).toBe(before);
}, 600_000);
