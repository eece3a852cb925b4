// A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler built from the upstream
// Go modules by scripts/kube-build.sh) run as background processes on loopback (kube-apiserver also on the host's address,
// which it advertises, so pods reach it through the `kubernetes` Service), configured the way kubeadm configures
// its static pods, with the cluster objects kubeadm's `init` phases create (kubeadm-config, kubelet-config, cluster-info,
// bootstrap token RBAC, kube-proxy, CoreDNS). All state lives in one directory:
//   DIR/pki/...                     kubeadm's certificatesDir layout (ca, etcd/ca, front-proxy-ca, sa.key/sa.pub, leaves)
//   DIR/*.kubeconfig                admin (kubeadm:cluster-admins), super-admin (system:masters), controller-manager, scheduler
//   DIR/ca.crt, DIR/join-command    the cluster CA and a `kubeadm join` line with a fresh bootstrap token
//   DIR/kubeadm.yaml                the InitConfiguration + ClusterConfiguration the kubeadm phases read
//   DIR/etcd/                       etcd's data dir
//   DIR/run/<component>.pid, DIR/logs/<component>.log (and logs/kubeadm.log: what the kubeadm phases printed)
//   DIR/run/host.json               the host's KUBE-* chains and kube-proxy's settings before `up`, which `down` restores
//                                   (host-state.ts; logs/kube-proxy-cleanup.log: what `kube-proxy --cleanup` printed)
//   DIR/kube-cache/                 kubectl's discovery cache (kept out of ~/.kube)
//   DIR/cluster.json                ports and CIDRs, so `up` again and `node-credentials` find the same cluster
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { appendFile, copyFile, mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { detectNodeIP } from '../../src/host/node.js';
import { readHostSnapshot, restoreHost, takeHostSnapshot, writeHostSnapshot } from './host-state.js';
import { caCertHash, ensurePki, issueClientCert, loadPair, writeAtomic, writeKubeconfig, type KeyPairPem } from './pki.js';

const execFileAsync = promisify(execFile);

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** Settings of a cluster; each has a default and is kept in DIR/cluster.json by the first `up`. */
export interface ClusterSettings {
  /** kube-apiserver's secure port on 127.0.0.1 (kubeadm's default 6443). */
  apiServerPort: number;
  /** etcd's client, peer and metrics ports on 127.0.0.1 (not kubeadm's 2379-2381, so a system etcd does not clash). */
  etcdClientPort: number;
  etcdPeerPort: number;
  etcdMetricsPort: number;
  /** The secure ports of kube-controller-manager and kube-scheduler on 127.0.0.1 (kubeadm's defaults). */
  controllerManagerPort: number;
  schedulerPort: number;
  /**
   * Services' ClusterIPs (kubeadm's and kind's default 10.96.0.0/16) and the pods' range the controller-manager cuts into
   * one /nodeCidrMaskSize per node (kind's podSubnet 10.244.0.0/16). Neither may overlap the host's routes.
   */
  serviceCidr: string;
  clusterCidr: string;
  nodeCidrMaskSize: number;
  clusterName: string;
  dnsDomain: string;
  /** The name kubeadm gives the control-plane node (etcd member and certificate CN); no kubelet runs for it. */
  controlPlaneName: string;
  /**
   * kube-controller-manager's --cluster-signing-duration: the lifetime of the certificates its CSR signer issues (Go
   * duration; its default is a year). Short ones let tests see kubelets rotate their client certificates.
   */
  signingDuration: string;
}

export const DEFAULT_SETTINGS: ClusterSettings = {
  apiServerPort: 6443,
  etcdClientPort: 12379,
  etcdPeerPort: 12380,
  etcdMetricsPort: 12381,
  controllerManagerPort: 10257,
  schedulerPort: 10259,
  serviceCidr: '10.96.0.0/16',
  clusterCidr: '10.244.0.0/16',
  nodeCidrMaskSize: 24,
  clusterName: 'nodelet',
  dnsDomain: 'cluster.local',
  controlPlaneName: 'nodelet-control-plane',
  signingDuration: '8760h0m0s',
};

export interface UpOptions extends Partial<ClusterSettings> {
  dir: string;
  /** Where the Kubernetes binaries are; default: what scripts/kube-build.sh prints (it builds them when missing). */
  binDir?: string;
  /** How long to wait for etcd and the API server to become ready (default 180 s: a loaded 2-core machine is slow). */
  readyTimeoutMs?: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
  /** More flags per component, after kubeadm's (e.g. an audit log for kube-apiserver in tests). */
  extraArgs?: Partial<Record<Component, string[]>>;
}

export interface ControlPlane {
  dir: string;
  binDir: string;
  settings: ClusterSettings;
  /**
   * The address kube-apiserver advertises: the `kubernetes` Service's endpoint, where pods reach it. The host's own
   * address (see advertiseAddress()); 127.0.0.1 on a host without one, and then the Service has no endpoints.
   */
  advertiseAddress: string;
  /** https://127.0.0.1:<apiServerPort> */
  server: string;
  adminKubeconfig: string;
  caCert: string;
  /** The `kubeadm join ...` line, also in DIR/join-command. */
  joinCommand: string;
  /** Which kubeadm init phases ran, each with its output. */
  kubeadmPhases: { phase: string; output: string }[];
}

/** The components in start order; `down` stops them in reverse. */
export const COMPONENTS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
export type Component = (typeof COMPONENTS)[number];

const KUBEADM_PHASES = ['upload-config all', 'bootstrap-token', 'addon all'];
const STOP_GRACE_MS = 15_000;

/** Starts (or restarts) the control plane in `dir` and returns once the API server is ready and kubeadm's objects exist. */
export async function up(opts: UpOptions): Promise<ControlPlane> {
  const dir = resolve(opts.dir);
  const log = opts.log ?? (() => {});
  await mkdir(join(dir, 'logs'), { recursive: true, mode: 0o700 });
  await mkdir(join(dir, 'run'), { recursive: true, mode: 0o700 });
  const fresh = (await readSettings(dir)) === undefined;
  const settings = await resolveSettings(dir, opts);
  if (fresh) await checkRoutes(settings);
  const binDir = opts.binDir ?? (await ensureBinaries(log));
  const timeoutMs = opts.readyTimeoutMs ?? 180_000;
  const server = `https://127.0.0.1:${settings.apiServerPort}`;
  const advertise = await advertiseAddress();

  log(`control-plane: kube-apiserver advertises ${advertise}${advertise === '127.0.0.1' ? ' (no other address: the kubernetes Service has no endpoints)' : ''}`);
  log(`control-plane: PKI and kubeconfigs in ${dir}`);
  const ca = await ensurePki(join(dir, 'pki'), {
    nodeName: settings.controlPlaneName,
    // As kubeadm: the advertise address too (a dir first set up on another host keeps its certificate: pods use the
    // Service's ClusterIP, which it names).
    apiServerHosts: [...new Set(['127.0.0.1', advertise, 'localhost', firstIp(settings.serviceCidr), settings.controlPlaneName, 'kubernetes',
      'kubernetes.default', 'kubernetes.default.svc', `kubernetes.default.svc.${settings.dnsDomain}`])],
  });
  await copyFile(join(dir, 'pki', 'ca.crt'), join(dir, 'ca.crt'));
  // kubeadm's kubeconfigs (cmd/kubeadm/app/phases/kubeconfig): admin.conf is in kubeadm:cluster-admins since 1.29,
  // super-admin.conf in system:masters.
  await ensureKubeconfig(dir, 'admin', ca, server, settings, { name: 'kubernetes-admin', groups: ['kubeadm:cluster-admins'] });
  await ensureKubeconfig(dir, 'super-admin', ca, server, settings, { name: 'kubernetes-super-admin', groups: ['system:masters'] });
  await ensureKubeconfig(dir, 'controller-manager', ca, server, settings, { name: 'system:kube-controller-manager', groups: [] });
  await ensureKubeconfig(dir, 'scheduler', ca, server, settings, { name: 'system:kube-scheduler', groups: [] });
  const kubernetesVersion = (await run(join(binDir, 'kubeadm'), ['version', '-o', 'short'])).trim();
  await writeFile(join(dir, 'kubeadm.yaml'), kubeadmConfig(dir, settings, kubernetesVersion, advertise));
  // Kept for startComponent, which starts a component again with the flags up gave it.
  await writeAtomic(extraArgsFile(dir), `${JSON.stringify(opts.extraArgs ?? {})}\n`, 0o644);

  // The host before anything of the cluster runs, for `down` (see host-state.ts); kept from the first `up` until `down`.
  if (!(await readHostSnapshot(dir)) && Object.keys(await runningPids(dir)).length === 0) await writeHostSnapshot(dir, await takeHostSnapshot(binDir));

  try {
    for (const component of COMPONENTS) {
      if (await runningPid(dir, component)) {
        log(`control-plane: ${component} already running`);
      } else {
        await start(dir, binDir, component, [...componentArgs(component, dir, settings, advertise), ...(opts.extraArgs?.[component] ?? [])]);
        log(`control-plane: started ${component}`);
      }
      if (component === 'etcd') {
        await waitReady(dir, 'etcd', `https://127.0.0.1:${settings.etcdClientPort}/health`, await loadPair(join(dir, 'pki'), 'etcd/healthcheck-client'),
          join(dir, 'pki', 'etcd', 'ca.crt'), (body) => /"health":\s*"true"/.test(body), timeoutMs);
        log('control-plane: etcd is healthy');
      }
      if (component === 'kube-apiserver') {
        await waitReady(dir, 'kube-apiserver', `${server}/readyz`, await loadPair(join(dir, 'pki'), 'apiserver-kubelet-client'),
          join(dir, 'pki', 'ca.crt'), (body) => body.trim() === 'ok', timeoutMs);
        log('control-plane: kube-apiserver is ready');
      }
    }
    // As kubeadm's wait-control-plane with WaitForAllControlPlaneComponents: the controller-manager's /healthz and the
    // scheduler's /livez on their secure ports. They serve a self-signed certificate made at start (kubeadm gives them
    // none either), and kubeadm skips verifying it too; those paths need no credentials.
    await waitReady(dir, 'kube-controller-manager', `https://127.0.0.1:${settings.controllerManagerPort}/healthz`, undefined, undefined,
      (body) => body.trim() === 'ok', timeoutMs);
    await waitReady(dir, 'kube-scheduler', `https://127.0.0.1:${settings.schedulerPort}/livez`, undefined, undefined,
      (body) => body.trim() === 'ok', timeoutMs);
    log('control-plane: kube-controller-manager and kube-scheduler are healthy');

    const kubectl = join(binDir, 'kubectl');
    // What `kubeadm init` does before its phases when it bootstraps admin.conf (EnsureAdminClusterRoleBinding):
    // bind the kubeadm:cluster-admins group to cluster-admin, as the super admin.
    const crbFile = join(dir, 'run', 'kubeadm-cluster-admins.yaml');
    await writeFile(crbFile, stringify({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'kubeadm:cluster-admins' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'kubeadm:cluster-admins' }],
    }));
    await run(kubectl, ['--kubeconfig', join(dir, 'super-admin.kubeconfig'), '--cache-dir', join(dir, 'kube-cache'), 'apply', '-f', crbFile]);

    const kubeadmPhases: ControlPlane['kubeadmPhases'] = [];
    for (const phase of KUBEADM_PHASES) {
      const output = await run(join(binDir, 'kubeadm'), ['init', 'phase', ...phase.split(' '), '--config', join(dir, 'kubeadm.yaml'),
        '--kubeconfig', join(dir, 'admin.kubeconfig')]);
      await appendFile(join(dir, 'logs', 'kubeadm.log'), `$ kubeadm init phase ${phase}\n${output}\n`);
      kubeadmPhases.push({ phase, output });
      log(`control-plane: kubeadm init phase ${phase}: done`);
    }
    // The mode kube-proxy's DaemonSet runs in, for its clean-up in `down`.
    const snapshot = await readHostSnapshot(dir);
    if (snapshot) {
      const { stdout: proxyConfig } = await execFileAsync(kubectl, ['--kubeconfig', join(dir, 'admin.kubeconfig'), '--cache-dir', join(dir, 'kube-cache'), '-n', 'kube-system',
        'get', 'configmap', 'kube-proxy', '-o', 'jsonpath={.data.config\\.conf}'], { encoding: 'utf8', timeout: 60_000 });
      await writeHostSnapshot(dir, { ...snapshot, proxyMode: String((parse(proxyConfig) as { mode?: string } | null)?.mode ?? '') });
    }
    const joinCommand = (await run(join(binDir, 'kubeadm'), ['token', 'create', '--print-join-command', '--kubeconfig',
      join(dir, 'admin.kubeconfig')])).trim();
    await writeFile(join(dir, 'join-command'), `${joinCommand}\n`);
    if (!joinCommand.includes(caCertHash(ca.certPem))) {
      throw new Error(`kubeadm's join command does not carry the CA hash ${caCertHash(ca.certPem)}: ${joinCommand}`);
    }
    return { dir, binDir, settings, advertiseAddress: advertise, server, adminKubeconfig: join(dir, 'admin.kubeconfig'), caCert: join(dir, 'ca.crt'), joinCommand, kubeadmPhases };
  } catch (err) {
    log(`control-plane: up failed, stopping what runs: ${(err as Error).message}`);
    await down(dir);
    throw err;
  }
}

/**
 * Stops every component running from `dir` (SIGTERM, then SIGKILL after a grace period), then takes back what the
 * cluster's kube-proxy left on the host (host-state.ts; `log` gets what was done). Returns the components it stopped.
 */
export async function down(dirArg: string, log: (line: string) => void = () => {}): Promise<Component[]> {
  const dir = resolve(dirArg);
  const stopped: Component[] = [];
  for (const component of [...COMPONENTS].reverse()) {
    const pid = await runningPid(dir, component);
    if (pid) {
      await stop(pid);
      stopped.push(component);
    }
    await rm(pidFile(dir, component), { force: true });
  }
  for (const line of await restoreHost(dir)) log(`control-plane: ${line}`);
  return stopped;
}

/** The pids of the components running from `dir`. */
export async function runningPids(dirArg: string): Promise<Partial<Record<Component, number>>> {
  const dir = resolve(dirArg);
  const pids: Partial<Record<Component, number>> = {};
  for (const component of COMPONENTS) {
    const pid = await runningPid(dir, component);
    if (pid) pids[component] = pid;
  }
  return pids;
}

/**
 * Stops one component running from `dir` (SIGTERM, then SIGKILL after the grace period), as an outage: `startComponent`
 * brings it back with the same flags. Returns whether it was running.
 */
export async function stopComponent(dirArg: string, component: Component): Promise<boolean> {
  const dir = resolve(dirArg);
  const pid = await runningPid(dir, component);
  if (pid) await stop(pid);
  await rm(pidFile(dir, component), { force: true });
  return pid !== undefined;
}

/** Where `up` keeps its extraArgs. */
function extraArgsFile(dir: string): string {
  return join(dir, 'run', 'extra-args.json');
}

/**
 * Starts one component of the cluster in `dir` again (after `stopComponent`) with the flags `up` gave it (extraArgs too), and waits until
 * it is ready (etcd healthy, kube-apiserver's /readyz ok, the controller-manager's and scheduler's health endpoints).
 * Returns its pid; one that already runs is left alone.
 */
export async function startComponent(dirArg: string, component: Component, opts: { binDir?: string; readyTimeoutMs?: number } = {}): Promise<number> {
  const dir = resolve(dirArg);
  const settings = await readSettings(dir);
  if (!settings) throw new Error(`${dir} holds no control plane (run up first)`);
  const binDir = opts.binDir ?? (await ensureBinaries());
  const timeoutMs = opts.readyTimeoutMs ?? 180_000;
  const extra = (JSON.parse(await readFile(extraArgsFile(dir), 'utf8').catch(() => '{}')) as UpOptions['extraArgs'])?.[component] ?? [];
  const pid = (await runningPid(dir, component)) ?? (await start(dir, binDir, component, [...componentArgs(component, dir, settings, await advertiseAddress()), ...extra]));
  const pki = join(dir, 'pki');
  switch (component) {
    case 'etcd':
      await waitReady(dir, 'etcd', `https://127.0.0.1:${settings.etcdClientPort}/health`, await loadPair(pki, 'etcd/healthcheck-client'),
        join(pki, 'etcd', 'ca.crt'), (body) => /"health":\s*"true"/.test(body), timeoutMs);
      break;
    case 'kube-apiserver':
      await waitReady(dir, 'kube-apiserver', `https://127.0.0.1:${settings.apiServerPort}/readyz`, await loadPair(pki, 'apiserver-kubelet-client'),
        join(pki, 'ca.crt'), (body) => body.trim() === 'ok', timeoutMs);
      break;
    case 'kube-controller-manager':
      await waitReady(dir, component, `https://127.0.0.1:${settings.controllerManagerPort}/healthz`, undefined, undefined, (body) => body.trim() === 'ok', timeoutMs);
      break;
    case 'kube-scheduler':
      await waitReady(dir, component, `https://127.0.0.1:${settings.schedulerPort}/livez`, undefined, undefined, (body) => body.trim() === 'ok', timeoutMs);
      break;
  }
  return pid;
}

/**
 * Writes DIR/NAME.kubeconfig: a client certificate for `system:node:NAME` in `system:nodes`, signed by the cluster CA,
 * as a kubelet's client certificate is. Returns its path.
 */
export async function nodeCredentials(dirArg: string, name: string): Promise<string> {
  const dir = resolve(dirArg);
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) throw new Error(`invalid node name ${JSON.stringify(name)}`);
  const settings = await readSettings(dir);
  const ca = await loadPair(join(dir, 'pki'), 'ca');
  if (!settings || !ca) throw new Error(`${dir} holds no control plane (run up first)`);
  const user = `system:node:${name}`;
  const pair = await issueClientCert(ca, { name: user, groups: ['system:nodes'] });
  const file = join(dir, `${name}.kubeconfig`);
  await writeKubeconfig(file, { server: `https://127.0.0.1:${settings.apiServerPort}`, caPem: ca.certPem, user, ...pair, clusterName: settings.clusterName });
  return file;
}

/**
 * Restarts kube-controller-manager of the running control plane in `dir` with other settings (e.g. a shorter
 * signingDuration), kept in DIR/cluster.json; returns once it is healthy. Nothing else is touched (`up` would also run
 * kubeadm's phases again, which re-apply the addons).
 */
export async function restartControllerManager(dirArg: string, change: Partial<Pick<ClusterSettings, 'signingDuration'>>, binDir?: string): Promise<void> {
  const dir = resolve(dirArg);
  const stored = await readSettings(dir);
  if (!stored) throw new Error(`${dir} holds no control plane (run up first)`);
  const settings = { ...stored, ...change };
  await writeAtomic(join(dir, 'cluster.json'), `${JSON.stringify(settings, null, 2)}\n`, 0o644);
  const pid = await runningPid(dir, 'kube-controller-manager');
  if (pid) await stop(pid);
  await start(dir, binDir ?? (await ensureBinaries()), 'kube-controller-manager', componentArgs('kube-controller-manager', dir, settings));
  await waitReady(dir, 'kube-controller-manager', `https://127.0.0.1:${settings.controllerManagerPort}/healthz`, undefined, undefined,
    (body) => body.trim() === 'ok', 120_000);
}

/** Builds the binaries if needed (scripts/kube-build.sh, idempotent) and returns their directory. */
export async function ensureBinaries(log: (line: string) => void = () => {}): Promise<string> {
  const env = process.env['NODELET_KUBE_BIN'];
  if (env) return env;
  return new Promise((resolvePromise, reject) => {
    const child = spawn('bash', [join(repoRoot, 'scripts', 'kube-build.sh')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      for (const line of d.toString().split('\n')) if (line.startsWith('kube-build:')) log(line);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const bin = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && bin) resolvePromise(bin);
      else reject(new Error(`scripts/kube-build.sh failed (exit ${code}): ${stderr.trim().split('\n').slice(-5).join('\n')}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Component flags: kubeadm's (cmd/kubeadm/app/phases/controlplane/manifests.go, phases/etcd/local.go) with our paths,
// ports and loopback-only bind addresses.

export function componentArgs(component: Component, dir: string, s: ClusterSettings, advertise = '127.0.0.1'): string[] {
  const pki = (f: string) => join(dir, 'pki', f);
  const loopback = '127.0.0.1';
  switch (component) {
    case 'etcd': {
      const clientUrl = `https://${loopback}:${s.etcdClientPort}`;
      const peerUrl = `https://${loopback}:${s.etcdPeerPort}`;
      return flags({
        name: s.controlPlaneName,
        'listen-client-urls': clientUrl,
        'advertise-client-urls': clientUrl,
        'listen-peer-urls': peerUrl,
        'initial-advertise-peer-urls': peerUrl,
        'initial-cluster': `${s.controlPlaneName}=${peerUrl}`,
        'data-dir': join(dir, 'etcd'),
        'cert-file': pki('etcd/server.crt'),
        'key-file': pki('etcd/server.key'),
        'trusted-ca-file': pki('etcd/ca.crt'),
        'client-cert-auth': 'true',
        'peer-cert-file': pki('etcd/peer.crt'),
        'peer-key-file': pki('etcd/peer.key'),
        'peer-trusted-ca-file': pki('etcd/ca.crt'),
        'peer-client-cert-auth': 'true',
        'snapshot-count': '10000',
        'listen-metrics-urls': `http://${loopback}:${s.etcdMetricsPort}`,
        'feature-gates': 'InitialCorruptCheck=true',
        'watch-progress-notify-interval': '5s',
      });
    }
    case 'kube-apiserver':
      return flags({
        'advertise-address': advertise,
        ...(advertise === loopback
          ? {
            // No address but loopback: the Endpoints of the `kubernetes` Service may not hold one (validation refuses
            // 127.0.0.0/8), so the reconciler would fail every 10 s; the Service is created without endpoints instead.
            'bind-address': loopback,
            'endpoint-reconciler-type': 'none',
          }
          : {
            // Pods reach the API server through the `kubernetes` Service, whose endpoint (kubeadm's lease reconciler)
            // is the advertised host address; loopback clients keep 127.0.0.1. One bind address serves both: kubeadm's
            // 0.0.0.0, i.e. the host's own addresses.
            'bind-address': '0.0.0.0',
          }),
        'secure-port': String(s.apiServerPort),
        'allow-privileged': 'true',
        'authorization-mode': 'Node,RBAC',
        'enable-admission-plugins': 'NodeRestriction',
        'enable-bootstrap-token-auth': 'true',
        'client-ca-file': pki('ca.crt'),
        'tls-cert-file': pki('apiserver.crt'),
        'tls-private-key-file': pki('apiserver.key'),
        'kubelet-client-certificate': pki('apiserver-kubelet-client.crt'),
        'kubelet-client-key': pki('apiserver-kubelet-client.key'),
        'kubelet-preferred-address-types': 'InternalIP,ExternalIP,Hostname',
        'etcd-servers': `https://${loopback}:${s.etcdClientPort}`,
        'etcd-cafile': pki('etcd/ca.crt'),
        'etcd-certfile': pki('apiserver-etcd-client.crt'),
        'etcd-keyfile': pki('apiserver-etcd-client.key'),
        'service-cluster-ip-range': s.serviceCidr,
        'service-account-issuer': `https://kubernetes.default.svc.${s.dnsDomain}`,
        'service-account-key-file': pki('sa.pub'),
        'service-account-signing-key-file': pki('sa.key'),
        'requestheader-username-headers': 'X-Remote-User',
        'requestheader-group-headers': 'X-Remote-Group',
        'requestheader-extra-headers-prefix': 'X-Remote-Extra-',
        'requestheader-client-ca-file': pki('front-proxy-ca.crt'),
        'requestheader-allowed-names': 'front-proxy-client',
        'proxy-client-cert-file': pki('front-proxy-client.crt'),
        'proxy-client-key-file': pki('front-proxy-client.key'),
      });
    case 'kube-controller-manager': {
      const kubeconfig = join(dir, 'controller-manager.kubeconfig');
      return flags({
        'bind-address': loopback,
        'secure-port': String(s.controllerManagerPort),
        'leader-elect': 'true',
        kubeconfig,
        'authentication-kubeconfig': kubeconfig,
        'authorization-kubeconfig': kubeconfig,
        'client-ca-file': pki('ca.crt'),
        'requestheader-client-ca-file': pki('front-proxy-ca.crt'),
        'root-ca-file': pki('ca.crt'),
        'service-account-private-key-file': pki('sa.key'),
        'cluster-signing-cert-file': pki('ca.crt'),
        'cluster-signing-key-file': pki('ca.key'),
        'cluster-signing-duration': s.signingDuration,
        'use-service-account-credentials': 'true',
        controllers: '*,bootstrapsigner,tokencleaner',
        'allocate-node-cidrs': 'true',
        'cluster-cidr': s.clusterCidr,
        'node-cidr-mask-size': String(s.nodeCidrMaskSize),
        'service-cluster-ip-range': s.serviceCidr,
        'cluster-name': s.clusterName,
      });
    }
    case 'kube-scheduler': {
      const kubeconfig = join(dir, 'scheduler.kubeconfig');
      return flags({
        'bind-address': loopback,
        'secure-port': String(s.schedulerPort),
        'leader-elect': 'true',
        kubeconfig,
        'authentication-kubeconfig': kubeconfig,
        'authorization-kubeconfig': kubeconfig,
      });
    }
  }
}

function flags(values: Record<string, string>): string[] {
  return Object.entries(values).map(([k, v]) => `--${k}=${v}`);
}

/**
 * The InitConfiguration + ClusterConfiguration (+ KubeletConfiguration) the kubeadm phases read: certificatesDir is
 * DIR/pki and etcd is "local" with the data dir and URLs it really has. (kubeadm 1.37 keeps the CRI socket in the node's
 * own kubelet configuration, NodeLocalCRISocket being GA: `upload-config kubelet` annotates no control-plane Node, which
 * does not exist here since no kubelet runs for it.)
 */
export function kubeadmConfig(dir: string, s: ClusterSettings, kubernetesVersion: string, advertise = '127.0.0.1'): string {
  const init = {
    apiVersion: 'kubeadm.k8s.io/v1beta4',
    kind: 'InitConfiguration',
    // kube-apiserver's advertise address; none when it is loopback (kubeadm takes that as "find a global address on lo"
    // and fails). These phases do not use it: controlPlaneEndpoint (127.0.0.1) is what the kube-proxy and cluster-info
    // kubeconfigs name, reachable from the node's host-network pods.
    localAPIEndpoint: { bindPort: s.apiServerPort, ...(advertise === '127.0.0.1' ? {} : { advertiseAddress: advertise }) },
    nodeRegistration: { name: s.controlPlaneName, criSocket: 'unix:///run/containerd/containerd.sock', taints: [] },
  };
  const cluster = {
    apiVersion: 'kubeadm.k8s.io/v1beta4',
    kind: 'ClusterConfiguration',
    clusterName: s.clusterName,
    kubernetesVersion,
    controlPlaneEndpoint: `127.0.0.1:${s.apiServerPort}`,
    certificatesDir: join(dir, 'pki'),
    encryptionAlgorithm: 'ECDSA-P256',
    networking: { serviceSubnet: s.serviceCidr, podSubnet: s.clusterCidr, dnsDomain: s.dnsDomain },
    etcd: {
      local: {
        dataDir: join(dir, 'etcd'),
        extraArgs: [
          { name: 'listen-client-urls', value: `https://127.0.0.1:${s.etcdClientPort}` },
          { name: 'advertise-client-urls', value: `https://127.0.0.1:${s.etcdClientPort}` },
        ],
      },
    },
  };
  // No systemd on these hosts: the kubelets that join use the cgroupfs driver. The hosts are cgroup v1, where kubelet
  // 1.35+ refuses to start unless failCgroupV1 is false.
  const kubelet = { apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', cgroupDriver: 'cgroupfs', failCgroupV1: false };
  return [init, cluster, kubelet].map((d) => stringify(d)).join('---\n');
}

// ---------------------------------------------------------------------------------------------------------------
// Processes

function pidFile(dir: string, component: Component): string {
  return join(dir, 'run', `${component}.pid`);
}

async function start(dir: string, binDir: string, component: Component, args: string[]): Promise<number> {
  const logFile = join(dir, 'logs', `${component}.log`);
  const fh = await open(logFile, 'a');
  try {
    await fh.write(`\n==== ${new Date().toISOString()} ${component} ${args.join(' ')}\n`);
    // Detached into its own session and process group, stdout and stderr to its log: it outlives the caller.
    const child = spawn(join(binDir, component), args, { detached: true, stdio: ['ignore', fh.fd, fh.fd], cwd: dir });
    const pid = await new Promise<number>((res, rej) => {
      child.once('spawn', () => res(child.pid!));
      child.once('error', rej);
    });
    child.unref();
    await writeAtomic(pidFile(dir, component), `${pid}\n`, 0o644);
    return pid;
  } finally {
    await fh.close();
  }
}

/** The pid in DIR/run/<component>.pid if that process is alive (not a zombie) and is this component of this dir. */
async function runningPid(dir: string, component: Component): Promise<number | undefined> {
  const text = await readFile(pidFile(dir, component), 'utf8').catch(() => undefined);
  const pid = Number(text?.trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return isOurs(pid, dir, component) ? pid : undefined;
}

function isOurs(pid: number, dir: string, component: Component): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    // A recycled pid is not ours: the program must be this component and its flags must name this dir.
    return (argv[0] ?? '').endsWith(`/${component}`) && argv.some((a) => a.includes(`${dir}/`));
  } catch {
    return false;
  }
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

async function stop(pid: number): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig); // its whole process group (it is a group leader: spawned detached)
    } catch {
      try { process.kill(pid, sig); } catch { /* gone */ }
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + STOP_GRACE_MS;
  while (alive(pid) && Date.now() < deadline) await sleep(100);
  if (alive(pid)) {
    signal('SIGKILL');
    while (alive(pid)) await sleep(50);
  }
}

/** Polls an HTTPS health endpoint until `ok(body)`, verifying the server against `caFile` (none: not verified). */
async function waitReady(dir: string, component: Component, url: string, client: KeyPairPem | undefined, caFile: string | undefined,
  ok: (body: string) => boolean, timeoutMs: number): Promise<void> {
  const ca = caFile === undefined ? undefined : await readFile(caFile, 'utf8');
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    if (!(await runningPid(dir, component))) {
      throw new Error(`${component} exited while starting; the end of ${join(dir, 'logs', `${component}.log`)}:\n${await logTail(dir, component)}`);
    }
    try {
      const { status, body } = await httpsGet(url, ca, client);
      if (status === 200 && ok(body)) return;
      last = `HTTP ${status}: ${body.slice(0, 500)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`${component} not ready after ${timeoutMs} ms (${url}: ${last})`);
    await sleep(500);
  }
}

async function logTail(dir: string, component: Component): Promise<string> {
  const text = await readFile(join(dir, 'logs', `${component}.log`), 'utf8').catch(() => '');
  return text.split('\n').slice(-20).join('\n');
}

function httpsGet(url: string, ca: string | undefined, client: KeyPairPem | undefined): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const tls = ca === undefined ? { rejectUnauthorized: false } : { ca };
    const req = request(url, { ...tls, cert: client?.certPem, key: client?.keyPem, timeout: 5_000, agent: false }, (resp) => {
      let body = '';
      resp.setEncoding('utf8');
      resp.on('data', (d: string) => { body += d; });
      resp.on('end', () => res({ status: resp.statusCode ?? 0, body }));
      resp.on('error', rej);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', rej);
    req.end();
  });
}

async function run(file: string, args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await execFileAsync(file, args, { timeout: 180_000, encoding: 'utf8', maxBuffer: 16 << 20 });
    return stdout + stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${file.split('/').pop()} ${args.join(' ')} failed: ${(e.stderr || e.stdout || e.message).trim()}`, { cause: err });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Settings, kubeconfigs, routes

async function readSettings(dir: string): Promise<ClusterSettings | undefined> {
  const text = await readFile(join(dir, 'cluster.json'), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : { ...DEFAULT_SETTINGS, ...(JSON.parse(text) as Partial<ClusterSettings>) };
}

const FIXED_SETTINGS = ['serviceCidr', 'clusterCidr', 'nodeCidrMaskSize', 'clusterName', 'dnsDomain', 'controlPlaneName'] as const;

/** The stored settings of `dir` (or the defaults) with the options given; what the cluster's state depends on cannot change. */
async function resolveSettings(dir: string, opts: UpOptions): Promise<ClusterSettings> {
  const stored = await readSettings(dir);
  const given = Object.fromEntries(Object.entries(opts).filter(([k, v]) => k in DEFAULT_SETTINGS && v !== undefined)) as Partial<ClusterSettings>;
  if (stored) {
    for (const key of FIXED_SETTINGS) {
      if (given[key] !== undefined && given[key] !== stored[key]) {
        throw new Error(`${dir} was set up with ${key} ${stored[key]}; it cannot change to ${given[key]} (use a new dir)`);
      }
    }
  }
  const settings = { ...DEFAULT_SETTINGS, ...stored, ...given };
  for (const cidr of [settings.serviceCidr, settings.clusterCidr]) parseCidr(cidr);
  if (parseCidr(settings.clusterCidr).bits > settings.nodeCidrMaskSize) {
    throw new Error(`a /${settings.nodeCidrMaskSize} per node (nodeCidrMaskSize) does not fit in the cluster CIDR ${settings.clusterCidr}`);
  }
  if (overlaps(settings.serviceCidr, settings.clusterCidr)) throw new Error(`service CIDR ${settings.serviceCidr} overlaps cluster CIDR ${settings.clusterCidr}`);
  await writeAtomic(join(dir, 'cluster.json'), `${JSON.stringify(settings, null, 2)}\n`, 0o644);
  return settings;
}

async function ensureKubeconfig(dir: string, name: string, ca: KeyPairPem, server: string, s: ClusterSettings,
  user: { name: string; groups: string[] }): Promise<void> {
  const file = join(dir, `${name}.kubeconfig`);
  const existing = await readFile(file, 'utf8').catch(() => undefined);
  if (existing !== undefined) {
    // Keep the credentials; follow a changed API server port.
    const doc = parse(existing) as { clusters?: { cluster?: { server?: string } }[] };
    const cluster = doc.clusters?.[0]?.cluster;
    if (cluster) {
      if (cluster.server !== server) {
        cluster.server = server;
        await writeAtomic(file, stringify(doc), 0o600);
      }
      return;
    }
  }
  const pair = await issueClientCert(ca, user);
  await writeKubeconfig(file, { server, caPem: ca.certPem, user: user.name, ...pair, clusterName: s.clusterName });
}

/** Refuses CIDRs that overlap a route of the host: pods or services there would shadow (or be shadowed by) it. */
async function checkRoutes(s: ClusterSettings): Promise<void> {
  const { stdout } = await execFileAsync('ip', ['-j', '-4', 'route', 'show', 'table', 'all']);
  const routes = (JSON.parse(stdout) as { dst?: string; dev?: string; table?: string; type?: string }[])
    .filter((r) => r.dst && r.dst !== 'default' && (r.type === undefined || r.type === 'unicast') && r.table !== 'local')
    .map((r) => ({ dst: r.dst!.includes('/') ? r.dst! : `${r.dst}/32`, dev: r.dev }));
  for (const [what, cidr] of [['service CIDR', s.serviceCidr], ['cluster CIDR', s.clusterCidr]] as const) {
    const clash = routes.find((r) => overlaps(r.dst, cidr));
    if (clash) {
      throw new Error(`${what} ${cidr} overlaps the host route ${clash.dst}${clash.dev ? ` dev ${clash.dev}` : ''} ` +
        `(choose another with --${what.startsWith('service') ? 'service' : 'cluster'}-cidr)`);
    }
  }
}

function parseCidr(cidr: string): { base: number; bits: number } {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (!m) throw new Error(`not an IPv4 CIDR: ${cidr}`);
  const octets = m.slice(1, 5).map(Number);
  const bits = Number(m[5]);
  if (octets.some((o) => o > 255) || bits > 32) throw new Error(`not an IPv4 CIDR: ${cidr}`);
  const addr = octets.reduce((a, o) => a * 256 + o, 0);
  const size = 2 ** (32 - bits);
  return { base: addr - (addr % size), bits };
}

function overlaps(a: string, b: string): boolean {
  const x = parseCidr(a);
  const y = parseCidr(b);
  const bits = Math.min(x.bits, y.bits);
  const size = 2 ** (32 - bits);
  return Math.floor(x.base / size) === Math.floor(y.base / size);
}

/**
 * The address kube-apiserver advertises, found at each start (a CI machine has its own): the host's, as nodelet picks
 * its node IP (the default route's interface), so pods reach the API server at an address of this host. 127.0.0.1
 * when the host has no other.
 */
export async function advertiseAddress(): Promise<string> {
  return detectNodeIP();
}

/** The first usable address of a CIDR: the `kubernetes` Service's ClusterIP, which the serving certificate names. */
function firstIp(cidr: string): string {
  const n = parseCidr(cidr).base + 1;
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
