// The addons of a kubeadm cluster as real pods on a nodelet node of the REAL control plane: kube-proxy as the DaemonSet
// and CoreDNS as the Deployment that `kubeadm init phase addon all` made, unchanged, their images built locally from the
// upstream Go modules under the names kubeadm gives them (scripts/runtime.sh addon-images). A ClusterIP Service reaches
// a pod through kube-proxy's iptables rules, a pod resolves `kubernetes.default` and a Service's name through CoreDNS,
// and CoreDNS reaches the API server through the `kubernetes` Service (the control plane advertises the host's address).
// Nothing leaves the machine: before CoreDNS can start, its Corefile loses `forward` (to the host's resolvers) and `loop`
// (which queries through them), and until kube-proxy has programmed a ClusterIP, a packet forwarded to the service range
// is rejected by a rule of the test (without it, it would follow the default route out of the machine). CoreDNS keeps
// kubeadm's replicas from the start: its pods, scheduled as soon as the node is Ready, get IPs from the node's podCIDR
// (nodelet's network waits for it, as containerd's conf_template). The clean-up is proven: the control plane's `down`
// takes back kube-proxy's chains (`kube-proxy --cleanup` and what it leaves) and the conntrack settings it made, the test
// the host paths its volumes created; then iptables-save and those settings are compared with the snapshot taken first.
import { existsSync, readFileSync } from 'node:fs';
import { readFile, rmdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1ConfigMap, V1DaemonSet, V1Deployment, V1Endpoints, V1Pod, V1Service } from '@kubernetes/client-node';
import { execa } from 'execa';
import { parse } from 'yaml';
import { busybox, ipReservations, repoRoot, waitFor } from '../helpers/agent.js';
import { KUBE_PROXY_SETTINGS } from '../../cluster/host-state.js';
import { netfilterState, podBridge, startRealCluster, type RealCluster } from '../helpers/real-cluster.js';
import { DEFAULT_SETTINGS } from '../../cluster/control-plane.js';
import { cidrContains, parseCidr, parseIp } from '../../../src/cni/cidr.js';

const ns = 'addons';

/**
 * kind's kube-proxy pod for Kubernetes 1.37 (test/fixtures/kind/kube-proxy-pod.yaml): kubeadm v1.37.2's DaemonSet, as the
 * API server presents its pod for the node nodelet-1.
 */
const kindProxyPod = parse(readFileSync(new URL('../../../../test/fixtures/kind/kube-proxy-pod.yaml', import.meta.url), 'utf8')) as V1Pod;

/**
 * What a DaemonSet pod's spec and metadata say, without what differs from node to node and pod to pod: the node's name
 * (spec.nodeName and the DaemonSet controller's node affinity), the token volume's generated suffix, and the image's tag
 * (the cluster's version). The controller-revision-hash label is left out too (the fixture's is computed, not observed).
 */
function daemonPodShape(pod: V1Pod): unknown {
  const spec = structuredClone(pod.spec!);
  const node = spec.nodeName!;
  spec.nodeName = '<node>';
  for (const term of spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []) {
    for (const field of term.matchFields ?? []) field.values = field.values?.map((v) => (v === node ? '<node>' : v));
  }
  const token = (name: string) => name.replace(/^kube-api-access-[a-z0-9]{5}$/, 'kube-api-access-<id>');
  for (const v of spec.volumes ?? []) v.name = token(v.name);
  for (const c of spec.containers) {
    c.image = c.image?.replace(/:[^:/]+$/, ':<version>');
    for (const m of c.volumeMounts ?? []) m.name = token(m.name);
  }
  const { 'controller-revision-hash': _hash, ...labels } = pod.metadata!.labels!;
  const owner = pod.metadata!.ownerReferences!.map(({ uid: _uid, ...ref }) => ref);
  return { generateName: pod.metadata!.generateName, generation: pod.metadata!.generation, labels, owner, spec, qosClass: pod.status!.qosClass };
}

/** Host paths of the kube-proxy DaemonSet's hostPath volumes (an empty one is made by the runtime when missing). */
const hostPaths = ['/run/xtables.lock', '/lib/modules'];

interface HostState {
  /** iptables-save and ip6tables-save, reduced to what filters or rewrites packets (see netfilterState). */
  netfilter: string[];
  settings: Record<string, string | undefined>;
}

async function hostState(): Promise<HostState> {
  const settings: HostState['settings'] = {};
  for (const f of KUBE_PROXY_SETTINGS) settings[f] = (await readFile(f, 'utf8').catch(() => undefined))?.trim();
  return { netfilter: await netfilterState(), settings };
}

/**
 * Waits until kube-proxy sends the Service's ClusterIP to its endpoints (a KUBE-SERVICES rule jumping to its KUBE-SVC
 * chain) and returns the nat table. Nothing in the test talks to a ClusterIP before: without the rule the packet would
 * follow the default route out of the machine.
 */
async function serviceRule(service: string): Promise<string> {
  return waitFor(`kube-proxy's rule for ${service}`, async () => {
    const nat = (await execa('iptables-save', ['-t', 'nat'])).stdout;
    return nat.split('\n').some((l) => l.startsWith('-A KUBE-SERVICES ') && l.includes(`"${service} cluster IP"`) && / -j KUBE-SVC-/.test(l)) ? nat : undefined;
  }, 90_000, 500);
}

/**
 * The test's guard for the service range: a ClusterIP packet that no kube-proxy rule has rewritten yet (CoreDNS talks to
 * the `kubernetes` Service from its start) is rejected at the FORWARD hook instead of routed off the machine. Rewritten
 * ones go to the host's own address (INPUT), so the guard never sees them.
 */
const serviceGuard = ['FORWARD', '-d', DEFAULT_SETTINGS.serviceCidr, '-m', 'comment', '--comment', 'nodelet addons test: no unrewritten ClusterIP leaves', '-j', 'REJECT'];

const before = await hostState();
const pathsBefore = new Map(hostPaths.map((p) => [p, existsSync(p)]));
let cluster: RealCluster | undefined;
/** kube-dns's ClusterIP: nodelet's clusterDNS. */
let clusterDNS = '';
/** The replicas kubeadm gave CoreDNS's Deployment. */
let corednsReplicas = 0;

beforeAll(async () => {
  // The addon images, built (cached) and imported into the rig's containerd under kubeadm's names; the progress of a
  // first build (minutes) shows on the test's stderr.
  const built = await execa('bash', [join(repoRoot, 'scripts', 'runtime.sh'), 'addon-images'], { reject: false, timeout: 1_500_000, stderr: 'inherit' });
  if (built.exitCode !== 0) throw new Error(`scripts/runtime.sh addon-images failed (exit ${built.exitCode}; its output is above)`);
  await execa('iptables', ['-w', '10', '-I', ...serviceGuard]);
  cluster = await startRealCluster({
    keepAddons: true,
    beforeJoin: async (kubectl, plane) => {
      // kubeadm's Corefile forwards other names to the host's resolvers (/etc/resolv.conf) and its `loop` plugin sends
      // a query through them at start: both would send DNS traffic out of this machine. Gone before any CoreDNS pod runs.
      const cm = await kubectl.get<V1ConfigMap>('configmap', '-n', 'kube-system', 'coredns');
      const corefile = cm.data!['Corefile']!
        .replace(/^\s*forward \. \/etc\/resolv\.conf \{[^}]*\}\n/m, '')
        .replace(/^\s*loop\n/m, '');
      if (/\b(forward|loop)\b/.test(corefile)) throw new Error(`cannot take forward/loop out of kubeadm's Corefile:\n${corefile}`);
      await kubectl.run('-n', 'kube-system', 'patch', 'configmap', 'coredns', '--type=merge', '-p', JSON.stringify({ data: { Corefile: corefile } }));
      clusterDNS = (await kubectl.get<V1Service>('service', '-n', 'kube-system', 'kube-dns')).spec!.clusterIP!;
      corednsReplicas = (await kubectl.get<V1Deployment>('deployment', '-n', 'kube-system', 'coredns')).spec!.replicas!;
      await writeFile(join(plane.dir, 'kubelet-config.yaml'), [
        'apiVersion: kubelet.config.k8s.io/v1beta1', 'kind: KubeletConfiguration', 'failCgroupV1: false', `clusterDNS: [${clusterDNS}]`, 'clusterDomain: cluster.local', '',
      ].join('\n'));
    },
    // The cluster CA as client CA: kube-apiserver reaches the kubelet API for `kubectl exec`.
    agentArgs: (dir) => ['--config', join(dir, 'kubelet-config.yaml'), '--client-ca-file', join(dir, 'ca.crt')],
  });
}, 1_800_000);

afterAll(async () => {
  const problems: string[] = [];
  try {
    if (cluster) {
      // The addons go first, or their controllers would put their pods back while the fixture waits for the node to empty.
      await cluster.kubectl.tryRun('-n', 'kube-system', 'delete', 'daemonset/kube-proxy', 'deployment/coredns', '--wait=false');
      await cluster.stop();
    }
  } finally {
    await execa('iptables', ['-w', '10', '-D', ...serviceGuard], { reject: false });
    for (const [p, existed] of pathsBefore) {
      if (!existed) await unlink(p).catch(() => rmdir(p)).catch(() => undefined);
    }
    const after = await hostState();
    const added = after.netfilter.filter((l) => !before.netfilter.includes(l));
    const removed = before.netfilter.filter((l) => !after.netfilter.includes(l));
    if (added.length + removed.length > 0) problems.push(`iptables differ from the start:\n+ ${added.join('\n+ ')}\n- ${removed.join('\n- ')}`);
    for (const [f, value] of Object.entries(after.settings)) if (value !== before.settings[f]) problems.push(`${f} is ${value}, was ${before.settings[f]}`);
    for (const [p, existed] of pathsBefore) if (!existed && existsSync(p)) problems.push(`${p} was made by the test and is still there`);
  }
  expect(problems).toEqual([]);
}, 600_000);

const onNode = (p: V1Pod) => p.spec?.nodeName === cluster!.nodeName;
const ready = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** The pods of kube-system with this k8s-app label, once `count` of them are Ready on the node. */
async function readyAddonPods(app: string, count: number): Promise<V1Pod[]> {
  return waitFor(`${count} ${app} pod(s) Ready on the node`, async () => {
    const pods = (await cluster!.kubectl.get<{ items: V1Pod[] }>('pods', '-n', 'kube-system', '-l', `k8s-app=${app}`)).items.filter(onNode);
    for (const p of pods) cluster!.uids.add(p.metadata!.uid!);
    return pods.length === count && pods.every(ready) ? pods : undefined;
  }, 300_000, 1000);
}

/**
 * `kubectl exec` in the client pod, retried until `ok` holds (kube-proxy programs new Services within its sync period).
 * Commands are bounded with `timeout`: busybox 1.35's own `wget -T` crashes (exit 139).
 */
async function fromClient(what: string, cmd: string[], ok: (out: string, err: string) => boolean): Promise<string> {
  let last = '';
  return waitFor(what, async () => {
    const r = await cluster!.kubectl.tryRun('exec', '-n', ns, 'client', '--', ...cmd);
    last = `${r.stdout}${r.stderr}`;
    return ok(r.stdout, r.stderr) ? r.stdout : undefined;
  }, 90_000, 2000).catch((err: Error) => {
    throw new Error(`${err.message}; last output: ${last}`);
  });
}

/** The addresses of nslookup's answer (busybox's format: `Address: <ip>` after `Name:`; the server's carries its port). */
const answers = (out: string) => [...out.matchAll(/^Address:\s+([0-9.]+)$/gm)].map((m) => m[1]);

test('kube-proxy runs as kubeadm\'s DaemonSet and CoreDNS as its Deployment, with the images kubeadm names', async () => {
  const ds = await cluster!.kubectl.get<V1DaemonSet>('daemonset', '-n', 'kube-system', 'kube-proxy');
  const version = (JSON.parse(await cluster!.kubectl.run('get', '--raw', '/version')) as { gitVersion: string }).gitVersion;
  expect(ds.spec!.template.spec!.containers[0]!.image).toBe(`registry.k8s.io/kube-proxy:${version}`);
  expect(ds.spec!.template.spec!.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
  const [proxy] = await readyAddonPods('kube-proxy', 1);
  expect(proxy!.spec!.hostNetwork).toBe(true);
  expect(proxy!.spec!.priorityClassName).toBe('system-node-critical');
  expect(proxy!.status!.containerStatuses![0]!.restartCount).toBe(0);
  // kind's 1.37 kube-proxy pod is this cluster's: the same DaemonSet from the same kubeadm, the same API server.
  expect(daemonPodShape(proxy!)).toEqual(daemonPodShape(kindProxyPod));

  const deploy = await cluster!.kubectl.get<V1Deployment>('deployment', '-n', 'kube-system', 'coredns');
  expect(deploy.spec!.replicas).toBe(corednsReplicas);
  expect(deploy.spec!.template.spec!.containers[0]!.image).toMatch(/^registry\.k8s\.io\/coredns\/coredns:v\d+\.\d+\.\d+$/);
  // Ready means CoreDNS's kubernetes plugin has synced with the API server, which it reaches through the `kubernetes`
  // Service (10.96.0.1 -> kube-proxy's DNAT -> the advertised host address).
  const dns = await readyAddonPods('kube-dns', deploy.spec!.replicas!);
  for (const p of dns) await cluster!.track(p);
  // Scheduled as soon as the node was Ready, CoreDNS's pods have their IPs from the node's podCIDR: nodelet's network
  // waited for it (the Node NotReady until then), and the bridge never carried another range.
  const podCIDR = parseCidr(cluster!.podCIDR);
  expect(dns.map((p) => [p.metadata!.name, cidrContains(podCIDR, parseIp(p.status!.podIP!)!)])).toEqual(dns.map((p) => [p.metadata!.name, true]));
  // The host shows it: the pod bridge's gateway address and every host-local reservation of the network are the podCIDR's.
  const inPodCIDR = (ip: string) => cidrContains(podCIDR, parseIp(ip)!);
  const { stdout } = await execa('ip', ['-j', '-4', 'addr', 'show', 'dev', podBridge]);
  const bridgeIPs = (JSON.parse(stdout) as { addr_info: { local: string }[] }[]).flatMap((l) => l.addr_info.map((a) => a.local));
  expect(bridgeIPs.length).toBeGreaterThan(0);
  expect(bridgeIPs.filter((ip) => !inPodCIDR(ip))).toEqual([]);
  const reserved = await ipReservations();
  expect(reserved.length).toBeGreaterThanOrEqual(dns.length);
  expect(reserved.filter((ip) => !inPodCIDR(ip))).toEqual([]);
  const endpoints = await cluster!.kubectl.get<V1Endpoints>('endpoints', '-n', 'default', 'kubernetes');
  expect(endpoints.subsets?.[0]?.addresses?.map((a) => a.ip)).toEqual([cluster!.plane.advertiseAddress]);

  // kube-proxy's rules on this host: the `kubernetes` and `kube-dns` Services (the latter once its endpoints are ready).
  const nat = await serviceRule('kube-system/kube-dns:dns');
  expect(nat).toMatch(/default\/kubernetes:https cluster IP/);
  expect(nat).toMatch(/kube-system\/kube-dns:dns-tcp cluster IP/);
}, 600_000);

test('a ClusterIP Service reaches a pod on the node through kube-proxy, and a pod resolves names through CoreDNS', async () => {
  await cluster!.kubectl.fromFile('apply', 'addons-workload.yaml', `apiVersion: v1
kind: Namespace
metadata: {name: ${ns}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: ${ns}, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: ${busybox}
    command: [sh, -c, 'mkdir -p /tmp/www && echo "hello from $(hostname)" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www']
    ports: [{containerPort: 8080}]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ${ns}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: ${busybox}
    command: [sleep, '3600']
`);
  const webPod = await waitFor('pod web Ready', async () => {
    const p = await cluster!.kubectl.get<V1Pod>('pod', '-n', ns, 'web');
    cluster!.uids.add(p.metadata!.uid!);
    return ready(p) ? p : undefined;
  }, 120_000, 500);
  const client = await waitFor('pod client Running', async () => {
    const p = await cluster!.kubectl.get<V1Pod>('pod', '-n', ns, 'client');
    cluster!.uids.add(p.metadata!.uid!);
    return p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
  }, 120_000, 500);
  await cluster!.track(webPod);
  await cluster!.track(client);

  // Through kube-proxy: the ClusterIP is no address of any interface; only its DNAT rule leads to the pod.
  const svc = await cluster!.kubectl.get<V1Service>('service', '-n', ns, 'web');
  const clusterIP = svc.spec!.clusterIP!;
  expect(clusterIP).not.toBe(webPod.status!.podIP);
  expect(await serviceRule(`${ns}/web`)).toContain(`${clusterIP}/32`);
  const page = await fromClient(`GET http://${clusterIP}/ from the client pod`, ['timeout', '5', 'wget', '-q', '-O', '-', `http://${clusterIP}/`],
    (out) => out.includes('hello from web'));
  expect(page.trim()).toBe('hello from web');

  // Through CoreDNS, as the pod's resolv.conf (ClusterFirst: nameserver = kube-dns's ClusterIP) sends it.
  const resolvConf = await fromClient('the client pod\'s resolv.conf', ['cat', '/etc/resolv.conf'], (out) => out.includes('nameserver'));
  expect(resolvConf).toContain(`nameserver ${clusterDNS}`);
  expect(resolvConf).toContain(`search ${ns}.svc.cluster.local svc.cluster.local cluster.local`);
  const kubernetesIP = (await cluster!.kubectl.get<V1Service>('service', '-n', 'default', 'kubernetes')).spec!.clusterIP!;
  const lookup = await fromClient('nslookup kubernetes.default.svc.cluster.local in the client pod',
    ['nslookup', 'kubernetes.default.svc.cluster.local'], (out) => answers(out).length > 0);
  expect(lookup).toMatch(new RegExp(`^Server:\\s+${clusterDNS.replace(/\./g, '\\.')}$`, 'm'));
  expect(answers(lookup)).toEqual([kubernetesIP]);
  expect(answers(await fromClient('nslookup of the Service in the client pod', ['nslookup', `web.${ns}.svc.cluster.local`],
    (out) => answers(out).length > 0))).toEqual([clusterIP]);
  // Short names through the pod's search path (busybox's nslookup ignores it; wget resolves with libc, which follows
  // it): `kubernetes.default` is the API server, reached through kube-proxy, whose TLS port answers plain HTTP with 400.
  await fromClient('GET http://kubernetes.default:443/ from the client pod', ['timeout', '5', 'wget', '-q', '-O', '-', 'http://kubernetes.default:443/'],
    (_out, err) => err.includes('400 Bad Request'));
  expect((await fromClient('GET http://web/ from the client pod', ['timeout', '5', 'wget', '-q', '-O', '-', 'http://web/'],
    (out) => out.includes('hello from web'))).trim()).toBe('hello from web');
}, 600_000);
