// kind's KubeletConfiguration (test/fixtures/kind/kubelet-config.yaml: what kubeadm v1.37.2 writes on a node of kind's
// main, see test/fixtures/kind/README.md) as nodelet's --config on a node of the REAL control plane, unchanged but for
// failCgroupV1 (this host is cgroup v1, which kubelet 1.37 and nodelet refuse by default,
// as the first test shows with the file unchanged; kind's users there add failCgroupV1: false with a kubeadmConfigPatch)
// and cgroupDriver (kind's systemd; the rig's containerd here is cgroupfs, and a driver that differs from the runtime's
// is refused at start, which the second test shows): cluster DNS in the pods' /etc/resolv.conf (ClusterFirst, None with dnsConfig, a host-network pod's
// Default), the service environment variables of the pod's namespace and default/kubernetes, the pods' cgroups under
// kind's cgroupRoot /kubelet, kubelet's healthz on 127.0.0.1:10248. What a container saw is read from its log file.
// The file names kind's CRI socket (containerRuntimeEndpoint, which kubeadm 1.37 writes from the node's criSocket); the
// rig's containerd is elsewhere, and the --container-runtime-endpoint every test agent is given wins, as in kubelet.
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { parseCgroupMounts } from '../../../src/host/cgroups.js';
import { AgentProcess, busybox, waitFor } from '../helpers/agent.js';
import { startRealCluster, type RealCluster } from '../helpers/real-cluster.js';

const kindConfig = new URL('../../../../test/fixtures/kind/kubelet-config.yaml', import.meta.url).pathname;
const ns = 'dns-env';

/** The hierarchies the pods' cgroups live in (v1 controllers, the named systemd one, the unified one). */
const hierarchies = parseCgroupMounts(readFileSync('/proc/self/mountinfo', 'utf8'));
/** kind's cgroupRoot, which kubelet requires to exist (kind's entrypoint makes it): made here, removed after. */
const cgroupRoot = '/kubelet';

/** Removes a cgroup tree bottom-up (rmdir: a cgroup directory holds only control files). */
async function removeCgroupTree(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => undefined);
  if (!entries) return;
  for (const e of entries) if (e.isDirectory()) await removeCgroupTree(join(dir, e.name));
  await rmdir(dir);
}

let cluster: RealCluster;
const work = await mkdtemp(join(tmpdir(), 'nodelet-kind-config-'));
/** kind's file as kind's users on cgroup v1 have it: failCgroupV1 false. */
const kindConfigCgroupV1 = join(work, 'kubelet-config-cgroupv1.yaml');
/** That file with the rig's runtime's cgroup driver. */
const kindConfigCgroupfs = join(work, 'kubelet-config.yaml');

beforeAll(async () => {
  for (const h of hierarchies) await mkdir(join(h.mountPoint, cgroupRoot), { recursive: true });
  const kind = await readFile(kindConfig, 'utf8');
  expect(kind).toMatch(/^cgroupDriver: systemd$/m);
  expect(kind).not.toMatch(/^failCgroupV1:/m);
  expect(kind).toMatch(/^containerRuntimeEndpoint: unix:\/\/\/run\/containerd\/containerd\.sock$/m);
  const cgroupV1 = `${kind}failCgroupV1: false\n`;
  await writeFile(kindConfigCgroupV1, cgroupV1);
  await writeFile(kindConfigCgroupfs, cgroupV1.replace(/^cgroupDriver: systemd$/m, 'cgroupDriver: cgroupfs'));
  // kind's file names the client CA /etc/kubernetes/pki/ca.crt, where `kubeadm join` puts the cluster's CA; the test gives
  // nodelet that CA by flag (flags win over the file, as in kubelet) rather than writing into the host's /etc/kubernetes.
  cluster = await startRealCluster({ agentArgs: (dir) => ['--config', kindConfigCgroupfs, '--client-ca-file', join(dir, 'ca.crt')] });
}, 420_000);

afterAll(async () => {
  try {
    await cluster?.stop();
  } finally {
    for (const h of hierarchies) await removeCgroupTree(join(h.mountPoint, cgroupRoot));
    await rm(work, { recursive: true, force: true });
  }
}, 300_000);

test("kind's file unchanged (failCgroupV1 left to kubelet 1.37's default true) is refused on this cgroup v1 host, in kubelet's words", async () => {
  const agent = await AgentProcess.create();
  try {
    await expect(agent.start(['--config', kindConfig])).rejects.toThrow(/nodelet exited early \(2\)/);
    expect(agent.logLines().filter((l) => l.level === 60).map((l) => l.msg)).toEqual([
      'failCgroupV1: kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release',
    ]);
    expect(agent.running).toBe(false);
  } finally {
    await agent.cleanupDirs();
  }
});

test("kind's cgroupDriver systemd beside this runtime (SystemdCgroup false) is refused at start, naming both", async () => {
  const agent = await AgentProcess.create();
  try {
    await expect(agent.start(['--config', kindConfigCgroupV1])).rejects.toThrow(/nodelet exited early \(2\)/);
    expect(agent.logLines().filter((l) => l.level === 60).map((l) => l.msg)).toEqual([
      `cgroupDriver: "systemd" does not match the container runtime's cgroup driver "cgroupfs" (its runc runtime's SystemdCgroup = false): ` +
        "configure both alike, cgroupDriver in --config and SystemdCgroup in the runtime's configuration",
    ]);
    expect(agent.running).toBe(false);
  } finally {
    await agent.cleanupDirs();
  }
});

/** The pod's container log as the container wrote it (CRI log lines: time, stream, tag, text). */
async function containerOutput(pod: V1Pod, container: string): Promise<string> {
  const m = pod.metadata!;
  const text = await readFile(join(cluster.agent.podLogsDir, `${m.namespace}_${m.name}_${m.uid}`, container, '0.log'), 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ').slice(3).join(' '))
    .join('\n');
}

/** Creates the pod, waits until its container printed `done`, returns the pod and what it printed. */
async function runPod(yaml: string, name: string): Promise<{ pod: V1Pod; output: string }> {
  await cluster.kubectl.fromFile('apply', `${name}.yaml`, yaml);
  const pod = await waitFor(`pod ${name} running`, async () => {
    const p = await cluster.kubectl.get<V1Pod>('pod', '-n', ns, name).catch(() => undefined);
    if (p?.metadata?.uid) cluster.uids.add(p.metadata.uid);
    return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
  }, 120_000, 500);
  const output = await waitFor(`pod ${name}'s output`, async () => {
    const out = await containerOutput(pod, 'show').catch(() => '');
    return out.includes('\ndone') ? out : undefined;
  }, 30_000, 200);
  return { pod, output };
}

const podYaml = (name: string, spec: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  terminationGracePeriodSeconds: 1
${spec}
  containers:
  - name: show
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "cat /etc/resolv.conf; echo ---; env | sort; echo done; exec sleep 3600"]
`;

const resolvConf = (output: string) => output.split('\n---\n')[0]!.split('\n').filter((l) => l && !l.startsWith('#'));
const envOf = (output: string) =>
  new Map(output.split('\n---\n')[1]!.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

let service: V1Service;
let kubernetes: V1Service;

test("the kind configuration's node: healthz on 127.0.0.1:10248, and a Service in the pods' namespace", async () => {
  const res = await fetch('http://127.0.0.1:10248/healthz');
  expect([res.status, await res.text()]).toEqual([200, 'ok']);
  // Loaded with no warnings; the cgroup driver is the runtime's (CRI RuntimeConfig, as kubelet 1.37 asks it).
  const lines = cluster.agent.logLines();
  expect(lines.filter((l) => String(l.msg).includes('kubelet-config.yaml'))).toEqual([]);
  expect(lines.find((l) => l.msg === 'Using cgroup driver setting received from the CRI runtime')).toMatchObject({ cgroupDriver: 'cgroupfs' });
  // The runtime is the flag's (the rig's containerd), not the file's kind socket.
  expect(cluster.agent.runtimeEndpoint).not.toBe('unix:///run/containerd/containerd.sock');
  expect(lines.find((l) => l.msg === 'Container runtime connected')).toMatchObject({ endpoint: cluster.agent.runtimeEndpoint });

  await cluster.kubectl.run('create', 'namespace', ns);
  await cluster.kubectl.fromFile('apply', 'svc.yaml', `apiVersion: v1
kind: Service
metadata: {name: web-svc, namespace: ${ns}}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
  - {name: dns, port: 53, protocol: UDP}
`);
  service = await cluster.kubectl.get<V1Service>('service', '-n', ns, 'web-svc');
  kubernetes = await cluster.kubectl.get<V1Service>('service', '-n', 'default', 'kubernetes');
  expect(service.spec?.clusterIP).toMatch(/^10\.96\./);
}, 60_000);

test('ClusterFirst: nameserver 10.96.0.10, the cluster search list then the host\'s, ndots:5; the service variables', async () => {
  const { pod, output } = await runPod(podYaml('cluster-first', '  dnsPolicy: ClusterFirst'), 'cluster-first');
  const host = readFileSync('/etc/resolv.conf', 'utf8');
  const hostSearch = host.split('\n').filter((l) => l.startsWith('search ')).pop()?.split(/\s+/).slice(1) ?? [];
  expect(resolvConf(output)).toEqual([
    'search dns-env.svc.cluster.local svc.cluster.local cluster.local' + hostSearch.map((s) => ` ${s}`).join(''),
    'nameserver 10.96.0.10',
    'options ndots:5',
  ]);
  const env = envOf(output);
  const ip = service.spec!.clusterIP!;
  expect(Object.fromEntries([...env].filter(([k]) => k.startsWith('WEB_SVC_') || k.startsWith('KUBERNETES_')))).toEqual({
    WEB_SVC_SERVICE_HOST: ip,
    WEB_SVC_SERVICE_PORT: '80',
    WEB_SVC_SERVICE_PORT_HTTP: '80',
    WEB_SVC_SERVICE_PORT_DNS: '53',
    WEB_SVC_PORT: `tcp://${ip}:80`,
    WEB_SVC_PORT_80_TCP: `tcp://${ip}:80`,
    WEB_SVC_PORT_80_TCP_PROTO: 'tcp',
    WEB_SVC_PORT_80_TCP_PORT: '80',
    WEB_SVC_PORT_80_TCP_ADDR: ip,
    WEB_SVC_PORT_53_UDP: `udp://${ip}:53`,
    WEB_SVC_PORT_53_UDP_PROTO: 'udp',
    WEB_SVC_PORT_53_UDP_PORT: '53',
    WEB_SVC_PORT_53_UDP_ADDR: ip,
    KUBERNETES_SERVICE_HOST: kubernetes.spec!.clusterIP!,
    KUBERNETES_SERVICE_PORT: '443',
    KUBERNETES_SERVICE_PORT_HTTPS: '443',
    KUBERNETES_PORT: `tcp://${kubernetes.spec!.clusterIP}:443`,
    KUBERNETES_PORT_443_TCP: `tcp://${kubernetes.spec!.clusterIP}:443`,
    KUBERNETES_PORT_443_TCP_PROTO: 'tcp',
    KUBERNETES_PORT_443_TCP_PORT: '443',
    KUBERNETES_PORT_443_TCP_ADDR: kubernetes.spec!.clusterIP!,
  });
  // kind's cgroupRoot: the pod's cgroup is <root>/kubepods/besteffort/pod<uid> in every v1 hierarchy.
  for (const h of hierarchies.filter((x) => x.version === 1 && x.controllers.includes('memory'))) {
    expect(await readdir(join(h.mountPoint, cgroupRoot, 'kubepods/besteffort'))).toContain(`pod${pod.metadata!.uid}`);
  }
}, 180_000);

test('dnsPolicy None with dnsConfig; enableServiceLinks false keeps only default/kubernetes; an explicit env entry wins', async () => {
  const { output } = await runPod(
    podYaml('none-policy', `  dnsPolicy: None
  enableServiceLinks: false
  dnsConfig:
    nameservers: [192.0.2.53]
    searches: [example.org, corp.example]
    options:
    - {name: ndots, value: "2"}
    - {name: edns0}`).replace(
      'imagePullPolicy: IfNotPresent',
      `imagePullPolicy: IfNotPresent
    env:
    - {name: KUBERNETES_SERVICE_PORT, value: "overridden"}
    - {name: API, value: "$(KUBERNETES_SERVICE_HOST)"}`,
    ),
    'none-policy',
  );
  expect(resolvConf(output)).toEqual(['search example.org corp.example', 'nameserver 192.0.2.53', 'options ndots:2 edns0']);
  const env = envOf(output);
  expect([...env.keys()].filter((k) => k.startsWith('WEB_SVC_'))).toEqual([]);
  expect(env.get('KUBERNETES_SERVICE_HOST')).toBe(kubernetes.spec!.clusterIP);
  expect(env.get('KUBERNETES_SERVICE_PORT')).toBe('overridden');
  expect(env.get('API')).toBe(kubernetes.spec!.clusterIP);
}, 180_000);

test("a host-network pod with ClusterFirst gets the host's resolver (Default), as kubelet gives it", async () => {
  const { output } = await runPod(podYaml('host-net', '  hostNetwork: true\n  dnsPolicy: ClusterFirst'), 'host-net');
  const host = readFileSync('/etc/resolv.conf', 'utf8').split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  const servers = host.filter((l) => l.startsWith('nameserver')).map((l) => l.split(/\s+/)[1]);
  expect(resolvConf(output).filter((l) => l.startsWith('nameserver'))).toEqual(servers.slice(0, 3).map((s) => `nameserver ${s}`));
  expect(resolvConf(output)).not.toContain('nameserver 10.96.0.10');
}, 180_000);
