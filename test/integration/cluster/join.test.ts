// `nodelet join` and kubelet's TLS bootstrap against the real control plane (test/cluster/control-plane.ts): kubeadm's
// join command with `kubeadm` replaced by `nodelet`, the bootstrap token's discovery and its errors, the CSR the
// controller-manager approves and signs, the node's identity, a restart that keeps its certificate, rotation of a
// short-lived certificate while the node stays Ready, and a denied CSR.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { parse } from 'yaml';
import type { V1Node } from '@kubernetes/client-node';
import { down, ensureBinaries, restartControllerManager, up, type ControlPlane } from '../../cluster/control-plane.js';
import { AgentProcess, criEndpoint, defaultTestKubeletConfig, repoRoot, waitFor } from '../helpers/agent.js';
import { Kubectl } from '../helpers/kubectl.js';
import { freePorts, releasePodBridge } from '../helpers/real-cluster.js';

const logs = process.env['NODELET_TEST_LOG'] ? (line: string) => process.stderr.write(`${line}\n`) : () => {};

interface Csr {
  metadata: { name: string; creationTimestamp: string };
  spec: { username: string; signerName: string; usages: string[] };
  status?: { conditions?: { type: string }[] };
}

let dir: string;
let plane: ControlPlane;
let binDir: string;
let kubectl: Kubectl;
const agents: AgentProcess[] = [];
const bases: string[] = [];

const nodeReady = (n: V1Node | undefined) => n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

async function csrsOf(user: string): Promise<Csr[]> {
  return (await kubectl.get<{ items: Csr[] }>('csr')).items.filter((c) => c.spec.username === user);
}

/** A fresh bootstrap token from the real kubeadm (`--ttl` as given). */
async function kubeadmToken(...args: string[]): Promise<string> {
  return (await execa(join(binDir, 'kubeadm'), ['token', 'create', ...args, '--kubeconfig', plane.adminKubeconfig])).stdout.trim();
}

/** kubelet's bootstrap kubeconfig for a token: the API server, the cluster CA and the token. */
async function bootstrapKubeconfig(file: string, token: string): Promise<void> {
  const ca = (await readFile(plane.caCert)).toString('base64');
  await writeFile(file, [
    'apiVersion: v1', 'kind: Config',
    'clusters:', `- name: c`, `  cluster: {server: "${plane.server}", certificate-authority-data: ${ca}}`,
    'users:', '- name: bootstrap', `  user: {token: ${token}}`,
    'contexts:', '- name: c', '  context: {cluster: c, user: bootstrap}',
    'current-context: c', '',
  ].join('\n'));
}

/** A `nodelet join` process: a join that fails exits; one that succeeds goes on as the agent until stop(). */
interface JoinProcess {
  done: Promise<{ code: number | null; output: string }>;
  output(): string;
  stop(): Promise<void>;
}

const joins: JoinProcess[] = [];

function startJoin(args: string[], timeoutMs = 60_000): JoinProcess {
  const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };
  const child = spawn(join(repoRoot, 'bin/nodelet.js'), ['join', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const done = new Promise<{ code: number | null; output: string }>((resolve) => child.once('exit', (code) => {
    clearTimeout(timer);
    resolve({ code, output });
  }));
  const p: JoinProcess = {
    done,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await done;
    },
  };
  joins.push(p);
  return p;
}

/** Runs a `nodelet join` that is expected to fail, to its end. */
const runJoin = (args: string[]) => startJoin(args).done;

async function listFiles(root: string): Promise<string[]> {
  if (!existsSync(root)) return [];
  return (await readdir(root, { recursive: true })).map(String).sort();
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-join-'));
  binDir = await ensureBinaries(logs);
  const [apiServerPort, etcdClientPort, etcdPeerPort, etcdMetricsPort, controllerManagerPort, schedulerPort] = await freePorts(6);
  await releasePodBridge();
  plane = await up({ dir, binDir, apiServerPort, etcdClientPort, etcdPeerPort, etcdMetricsPort, controllerManagerPort, schedulerPort, log: logs });
  await execa('mkdir', ['-p', join(dir, 'work')]);
  kubectl = new Kubectl(plane.adminKubeconfig, join(dir, 'kube-cache'), join(dir, 'work'), join(binDir, 'kubectl'));
  // As startRealCluster: no CoreDNS or kube-proxy pods on the node (their images would come from registry.k8s.io).
  await kubectl.run('-n', 'kube-system', 'scale', 'deployment', 'coredns', '--replicas=0');
  await kubectl.run('-n', 'kube-system', 'patch', 'daemonset', 'kube-proxy', '--type=merge', '-p',
    JSON.stringify({ spec: { template: { spec: { nodeSelector: { 'nodelet.test/kube-proxy': 'never' } } } } }));
}, 300_000);

afterAll(async () => {
  try {
    for (const j of joins) await j.stop();
    for (const a of agents) await a.stop();
    for (const a of agents) await a.cleanupDirs();
    for (const b of bases) await rm(b, { recursive: true, force: true });
    if (dir) await down(dir);
  } finally {
    await releasePodBridge();
  }
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

/** A root dir for a join that the test removes. */
async function joinRoot(): Promise<string> {
  const base = await mkdtemp(join(tmpdir(), 'nodelet-join-root-'));
  bases.push(base);
  return join(base, 'root');
}

describe('discovery refuses what it cannot trust, writing nothing', () => {
  const endpoint = () => plane.server.replace('https://', '');
  const hash = () => /--discovery-token-ca-cert-hash (\S+)/.exec(plane.joinCommand)![1]!;

  test('a token whose secret does not sign cluster-info', async () => {
    const root = await joinRoot();
    const token = /--token (\S+)/.exec(plane.joinCommand)![1]!;
    const wrong = `${token.slice(0, 7)}${'0123456789abcdef'}`;
    const r = await runJoin([endpoint(), '--token', wrong, '--discovery-token-ca-cert-hash', hash(), '--root-dir', root, '--logging-format', 'text']);
    expect(r.code).toBe(1);
    expect(r.output).toMatch(/signature for token id "[a-z0-9]{6}" does not verify \(the signature does not match the token secret\)/);
    expect(await listFiles(root)).toEqual([]);
  });

  test('an expired token', async () => {
    const root = await joinRoot();
    const token = await kubeadmToken('--ttl', '1s');
    const id = token.slice(0, 6);
    // The token cleaner deletes the expired token's Secret, and the bootstrap signer drops its signature.
    await waitFor(`cluster-info without jws-kubeconfig-${id}`, async () => {
      const cm = await kubectl.get<{ data: Record<string, string> }>('-n', 'kube-public', 'configmap', 'cluster-info');
      return cm.data[`jws-kubeconfig-${id}`] === undefined ? true : undefined;
    }, 60_000, 500);
    const r = await runJoin([endpoint(), '--token', token, '--discovery-token-ca-cert-hash', hash(), '--discovery-timeout', '3s', '--root-dir', root, '--logging-format', 'text']);
    expect(r.code).toBe(1);
    expect(r.output).toContain(`token id "${id}" is invalid for this cluster or it has expired`);
    expect(await listFiles(root)).toEqual([]);
  });

  test('a CA hash that pins another key, and neither a hash nor the unsafe skip', async () => {
    const root = await joinRoot();
    const token = /--token (\S+)/.exec(plane.joinCommand)![1]!;
    const r = await runJoin([endpoint(), '--token', token, '--discovery-token-ca-cert-hash', `sha256:${'ab'.repeat(32)}`, '--root-dir', root, '--logging-format', 'text']);
    expect(r.code).toBe(1);
    expect(r.output).toContain(`the cluster CA in the cluster-info ConfigMap is not trusted: none of its public keys (${hash()}) is pinned`);
    const none = await runJoin([endpoint(), '--token', token, '--root-dir', root, '--logging-format', 'text']);
    expect(none.code).toBe(2);
    expect(none.output).toContain('give --discovery-token-ca-cert-hash sha256:<hex> to pin the cluster CA, or --discovery-token-unsafe-skip-ca-verification');
    expect(await listFiles(root)).toEqual([]);
  });
});

test('kubeadm\'s join command with nodelet: the node registers, Ready, as system:node:<name>', async () => {
  const root = await joinRoot();
  const node = 'nodelet-joined';
  const line = plane.joinCommand.replace(/^kubeadm join /, '').split(/\s+/);
  const base = dirname(root);
  // kubeadm's hash flag may be repeated: a pin of another key beside the cluster's still joins (any match pins). No CNI
  // DaemonSet runs here to write /etc/cni/net.d (a joined node's default): nodelet's own network is given.
  const joined = startJoin([...line, '--discovery-token-ca-cert-hash', `sha256:${'ab'.repeat(32)}`, '--node-name', node, '--cri-socket', criEndpoint, '--root-dir', root,
    `--cni-conf-dir=${join(repoRoot, 'cni-conf')}`,
    `--pod-logs-dir=${join(base, 'pod-logs')}`, `--pod-manifest-path=${join(base, 'manifests')}`, '--logging-format', 'json'], 600_000);
  try {
    const ready = waitFor(`Node ${node} Ready`, async () => nodeReady(await kubectl.get<V1Node>('node', node).catch(() => undefined)) || undefined, 120_000, 500);
    // A join that fails ends the process: its output is the failure.
    const outcome = await Promise.race([ready.then(() => 'ready'), joined.done.then((x) => `nodelet join exited ${x.code}:\n${x.output.split('\n').slice(-15).join('\n')}`)]);
    expect(outcome).toBe('ready');
    // What join wrote: the cluster's configuration with the node's CRI socket, the bootstrap kubeconfig, the CA, the
    // client certificate behind the current symlink and the kubeconfig naming it.
    expect((await listFiles(root)).filter((f) => !f.startsWith('pods') && !f.endsWith('.sock') && !f.startsWith('machine'))).toEqual(expect.arrayContaining([
      'bootstrap-kubeconfig', 'config.yaml', 'kubeconfig', 'pki', 'pki/ca.crt', 'pki/kubelet-client-current.pem']));
    const config = parse(await readFile(join(root, 'config.yaml'), 'utf8')) as { containerRuntimeEndpoint: string; authentication: { x509: { clientCAFile: string } }; rotateCertificates: boolean };
    expect(config.containerRuntimeEndpoint).toBe(criEndpoint);
    expect(config.authentication.x509.clientCAFile).toBe(join(root, 'pki', 'ca.crt'));
    expect(config.rotateCertificates).toBe(true);
    expect(joined.output()).toContain('This node has joined the cluster; restart it with: nodelet');
    expect(joined.output()).toContain(`--cni-conf-dir=${join(repoRoot, 'cni-conf')}`);
    const who = await new Kubectl(join(root, 'kubeconfig'), join(dir, 'kube-cache'), join(dir, 'work'), join(binDir, 'kubectl'))
      .run('auth', 'whoami', '-o', 'json');
    expect(JSON.parse(who).status.userInfo).toMatchObject({ username: `system:node:${node}`, groups: expect.arrayContaining(['system:nodes']) });
  } finally {
    // One agent at a time on this host: the CNI shim's socket is the host's.
    await joined.stop();
  }
}, 240_000);

describe('kubelet\'s --bootstrap-kubeconfig', () => {
  const node = 'nodelet-bootstrap';
  let agent: AgentProcess;
  let certDir: string;
  // One agent at a time on this host: the CNI shim's socket is the host's.
  afterAll(() => agent?.stop());

  test('TLS bootstrap: a node-csr- CSR approved and signed, the dated pem behind kubelet-client-current.pem, the node Ready as system:node:<name>', async () => {
    agent = await AgentProcess.create({ nodeName: node, kubeconfig: join(dirname(await joinRoot()), 'kubeconfig') });
    agents.push(agent);
    certDir = join(agent.rootDir, 'pki');
    const bootstrap = join(dirname(agent.kubeconfig!), 'bootstrap-kubeconfig');
    const token = await kubeadmToken();
    await bootstrapKubeconfig(bootstrap, token);
    await agent.start(['--bootstrap-kubeconfig', bootstrap]);
    await waitFor(`Node ${node} Ready`, async () => nodeReady(await kubectl.get<V1Node>('node', node).catch(() => undefined)) || undefined, 120_000, 500)
      .catch((err: Error) => { throw new Error(`${err.message}\n${agent.output.split('\n').slice(-20).join('\n')}`); });

    const csrs = await kubectl.get<{ items: Csr[] }>('csr');
    const mine = csrs.items.filter((c) => c.metadata.name.startsWith('node-csr-') && c.spec.username === `system:bootstrap:${token.slice(0, 6)}`);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.spec.signerName).toBe('kubernetes.io/kube-apiserver-client-kubelet');
    expect(mine[0]!.spec.usages).toEqual(['digital signature', 'client auth']);
    expect(mine[0]!.status?.conditions?.map((c) => c.type)).toEqual(['Approved']);
    // The API server's version was read with the bootstrap token before the CSR was made, and names the node's minor.
    const served = agent.output.indexOf("Serving the API server's Kubernetes minor");
    expect(served).toBeGreaterThanOrEqual(0);
    expect(served).toBeLessThan(agent.output.indexOf('TLS bootstrap: certificate signing request created'));
    expect((await kubectl.get<V1Node>('node', node)).status?.nodeInfo?.kubeletVersion).toMatch(/^v1\.37\.0\+nodelet\./);

    const target = await readlink(join(certDir, 'kubelet-client-current.pem'));
    expect(target).toMatch(new RegExp(`^${certDir}/kubelet-client-\\d{4}-\\d\\d-\\d\\d-\\d\\d-\\d\\d-\\d\\d\\.pem$`));
    const pem = await readFile(target, 'utf8');
    expect(pem).toMatch(/-----BEGIN CERTIFICATE-----[\s\S]+-----BEGIN EC PRIVATE KEY-----/);
    const subject = (await execa('openssl', ['x509', '-noout', '-subject', '-nameopt', 'RFC2253'], { input: pem })).stdout;
    expect(subject).toBe(`subject=CN=system:node:${node},O=system:nodes`);

    const who = await new Kubectl(agent.kubeconfig!, join(dir, 'kube-cache'), join(dir, 'work'), join(binDir, 'kubectl')).run('auth', 'whoami', '-o', 'json');
    expect(JSON.parse(who).status.userInfo).toMatchObject({ username: `system:node:${node}`, groups: expect.arrayContaining(['system:nodes']) });
  }, 240_000);

  test('a restart keeps the valid certificate: no new CSR', async () => {
    const before = (await kubectl.get<{ items: Csr[] }>('csr')).items.length;
    const target = await readlink(join(certDir, 'kubelet-client-current.pem'));
    await agent.stop();
    await agent.start(['--bootstrap-kubeconfig', join(dirname(agent.kubeconfig!), 'bootstrap-kubeconfig')]);
    await waitFor('the restarted agent to keep its kubeconfig', async () =>
      agent.logLines().some((l) => String(l.msg).includes('skipping the TLS bootstrap')) ? true : undefined, 30_000);
    await waitFor(`Node ${node} Ready`, async () => nodeReady(await kubectl.get<V1Node>('node', node).catch(() => undefined)) || undefined, 60_000, 500);
    expect((await kubectl.get<{ items: Csr[] }>('csr')).items.length).toBe(before);
    expect(await readlink(join(certDir, 'kubelet-client-current.pem'))).toBe(target);
  }, 120_000);

  test('rotation of a short-lived certificate: a csr- from system:node:<name>, a new dated pem in use, the node Ready throughout', async () => {
    // Certificates of 3 minutes (the signer backdates them 5 minutes): rotation falls 0.6-2.2 minutes after issue.
    await restartControllerManager(dir, { signingDuration: '3m' }, binDir);
    await agent.stop();
    await rm(agent.kubeconfig!, { force: true });
    // The restarted kube-controller-manager signs only once it holds the leader lease, which its predecessor may still
    // hold for up to 15 s: the bootstrap, which comes before the status socket, waits for that signature.
    await agent.start(['--bootstrap-kubeconfig', join(dirname(agent.kubeconfig!), 'bootstrap-kubeconfig')], 90_000);
    const current = join(certDir, 'kubelet-client-current.pem');
    const first = await waitFor('a short-lived certificate from the bootstrap', async () => {
      const t = await readlink(current);
      const end = (await execa('openssl', ['x509', '-noout', '-enddate'], { input: await readFile(t, 'utf8') })).stdout;
      return Date.parse(end.replace('notAfter=', '')) - Date.now() < 5 * 60_000 ? t : undefined;
    }, 60_000, 500);
    let notReady = 0;
    const rotated = await waitFor('the certificate rotated', async () => {
      if (!nodeReady(await kubectl.get<V1Node>('node', node).catch(() => undefined))) notReady++;
      const t = await readlink(current);
      return t !== first ? t : undefined;
    }, 200_000, 1_000);
    expect(existsSync(first)).toBe(true);
    expect(rotated).not.toBe(first);
    const rotations = (await csrsOf(`system:node:${node}`)).filter((c) => c.metadata.name.startsWith('csr-'));
    expect(rotations.length).toBeGreaterThanOrEqual(1);
    expect(rotations[0]!.status?.conditions?.map((c) => c.type)).toEqual(['Approved']);
    // The agent keeps working with the new certificate: its lease is renewed after the rotation.
    const rotatedAt = Date.now();
    await waitFor('a lease renewal with the new certificate', async () => {
      const lease = await kubectl.get<{ spec: { renewTime: string } }>('-n', 'kube-node-lease', 'lease', node);
      return Date.parse(lease.spec.renewTime) > rotatedAt ? true : undefined;
    }, 30_000, 1_000);
    expect(nodeReady(await kubectl.get<V1Node>('node', node))).toBe(true);
    expect(notReady).toBe(0);
    expect(agent.logLines().filter((l) => String(l.msg).startsWith('Client certificate rotation: new certificate in use')).length).toBeGreaterThanOrEqual(1);
  }, 360_000);
});

test('a denied CSR fails the bootstrap naming it, and writes no kubeconfig or certificate', async () => {
  const node = 'nodelet-denied';
  // Without kubeadm's auto-approval binding the CSR stays pending until someone decides: the test denies it.
  const binding = await kubectl.run('get', 'clusterrolebinding', 'kubeadm:node-autoapprove-bootstrap', '-o', 'yaml');
  await kubectl.run('delete', 'clusterrolebinding', 'kubeadm:node-autoapprove-bootstrap');
  const agent = await AgentProcess.create({ nodeName: node });
  agents.push(agent);
  const kubeconfig = join(dirname(await joinRoot()), 'kubeconfig');
  const bootstrap = join(dirname(kubeconfig), 'bootstrap-kubeconfig');
  await bootstrapKubeconfig(bootstrap, await kubeadmToken());
  const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };
  // This host is cgroup v1: the agent starts only with failCgroupV1 false (join's own config.yaml has it from the cluster's).
  await writeFile(agent.configFile, defaultTestKubeletConfig);
  try {
    const child = spawn(join(repoRoot, 'bin/nodelet.js'), ['--config', agent.configFile, '--kubeconfig', kubeconfig, '--bootstrap-kubeconfig', bootstrap, '--hostname-override', node,
      '--container-runtime-endpoint', criEndpoint, '--root-dir', agent.rootDir, '--pod-logs-dir', agent.podLogsDir, '--logging-format', 'json'],
    { stdio: ['ignore', 'pipe', 'pipe'], env });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const csr = await waitFor('the node-csr- CSR', async () => {
      if (child.exitCode !== null) throw new Error(`nodelet exited ${child.exitCode}:\n${output}`);
      const pending = (await kubectl.get<{ items: Csr[] }>('csr')).items.filter((c) => c.metadata.name.startsWith('node-csr-') && !c.status?.conditions?.length);
      return pending[0];
    }, 60_000, 300).catch((err: Error) => { throw new Error(`${err.message}\n${output.split('\n').slice(-10).join('\n')}`); });
    await kubectl.run('certificate', 'deny', csr.metadata.name);
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise((r) => (timer = setTimeout(() => r('still running'), 30_000)))]);
    clearTimeout(timer);
    if (code === 'still running') child.kill('SIGKILL');
    expect(code).toBe(1);
    expect(output).toContain(`certificate signing request ${csr.metadata.name} is denied`);
    expect(existsSync(kubeconfig)).toBe(false);
    expect(existsSync(join(agent.rootDir, 'pki', 'kubelet-client-current.pem'))).toBe(false);
  } finally {
    await kubectl.fromFile('apply', 'autoapprove.yaml', binding);
  }
}, 180_000);
