// --config parsing: kubelet's field names and defaults, Go durations, unknown/unimplemented fields warned, flags over the file.
import { readFileSync } from 'node:fs';
import {
  defaultKubeletConfiguration,
  parseEvictionThreshold,
  parseKubeletConfiguration,
  resolveKubeletConfiguration,
} from '../../../src/agent/kubelet-config.js';

const header = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
const parse = (body: string) => parseKubeletConfiguration(header + body, '/etc/nodelet/config.yaml');

test("kubelet's defaults for the settings nodelet honours", () => {
  const c = defaultKubeletConfiguration();
  expect(c).toMatchObject({
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    nodeLeaseDurationSeconds: 40,
    maxPods: 110,
    podPidsLimit: -1,
    kubeAPIQPS: 50,
    kubeAPIBurst: 100,
    port: 10250,
    registerNode: true,
    syncFrequencyMs: 60_000,
    fileCheckFrequencyMs: 20_000,
    nodeStatusMaxImages: 50,
    containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
  });
  expect(c.evictionHard['memory.available']).toEqual({ quantity: expect.anything() });
  expect(String((c.evictionHard['memory.available'] as { quantity: object }).quantity)).toBe('100Mi');
});


test('parses the supported fields with their types', () => {
  const file = parse(`
nodeStatusUpdateFrequency: 4s
nodeStatusReportFrequency: 1m0s
nodeLeaseDurationSeconds: 20
maxPods: 30
podPidsLimit: 1024
kubeAPIQPS: 10
kubeAPIBurst: 20
podCIDR: 10.244.1.0/24
staticPodPath: /etc/kubernetes/manifests
syncFrequency: 30s
fileCheckFrequency: 5s
port: 10255
containerRuntimeEndpoint: unix:///run/nodelet/containerd/containerd.sock
providerID: nodelet://n1
registerNode: false
registerWithTaints:
  - key: dedicated
    value: infra
    effect: NoSchedule
systemReserved:
  cpu: 500m
  memory: 1Gi
kubeReserved:
  ephemeral-storage: 1Gi
  pid: "1000"
evictionHard:
  memory.available: 200Mi
  nodefs.available: 5%
`);
  expect(file).toMatchObject({
    nodeStatusUpdateFrequencyMs: 4000,
    nodeStatusReportFrequencyMs: 60_000,
    nodeLeaseDurationSeconds: 20,
    maxPods: 30,
    podPidsLimit: 1024,
    kubeAPIQPS: 10,
    kubeAPIBurst: 20,
    podCIDR: '10.244.1.0/24',
    staticPodPath: '/etc/kubernetes/manifests',
    syncFrequencyMs: 30_000,
    fileCheckFrequencyMs: 5000,
    port: 10255,
    providerID: 'nodelet://n1',
    registerNode: false,
    registerWithTaints: [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }],
  });
  expect(String(file.systemReserved?.cpu)).toBe('500m');
  expect(String(file.systemReserved?.memory)).toBe('1Gi');
  expect(String(file.kubeReserved?.pid)).toBe('1k');
  expect(String((file.evictionHard?.['memory.available'] as { quantity: object }).quantity)).toBe('200Mi');
  expect(file.evictionHard?.['nodefs.available']).toEqual({ percentage: Math.fround(Math.fround(5) / 100) });
});

test('an unknown field is accepted with one warning naming it, as kubelet decodes v1beta1 leniently', () => {
  const file = parse('maxPod: 10\nmaxPods: 20\n');
  expect(file.maxPods).toBe(20);
  expect(file.warnings).toEqual([
    "/etc/nodelet/config.yaml: maxPod: unknown field (not a KubeletConfiguration v1beta1 field); ignored, as kubelet's lenient decoding of v1beta1 ignores it",
  ]);
  expect(() => parse('maxPods: 10\nmaxPods: 20\n')).toThrow(/not valid YAML: Map keys must be unique/);
});

test('a kubelet feature nodelet does not have: one warning naming the field when its value asks for it, none at the default', () => {
  const warned = (body: string) => parse(body).warnings;
  expect(warned('cpuCFSQuota: false\n')).toEqual([
    '/etc/nodelet/config.yaml: cpuCFSQuota: false is not honoured: nodelet does not implement this kubelet setting; ignored',
  ]);
  expect(warned('shutdownGracePeriod: 30s\nfeatureGates:\n  Foo: true\nallowedUnsafeSysctls: [net.core.somaxconn]\n').map((w) => w.split(': ')[1])).toEqual([
    'shutdownGracePeriod',
    'featureGates',
    'allowedUnsafeSysctls',
  ]);
  expect(warned('evictionHard:\n  imagefs.available: 15%\n  memory.available: 100Mi\n')).toEqual([
    '/etc/nodelet/config.yaml: evictionHard.imagefs.available: "15%" is not honoured: nodelet does not evict pods; ignored',
  ]);
  // kubelet's defaults, the zero values its defaulting replaces, and "off" ask for nothing nodelet lacks.
  expect(warned('serializeImagePulls: true\nshutdownGracePeriod: 0s\nvolumeStatsAggPeriod: 1m0s\nlogging:\n  verbosity: 0\ncrashLoopBackOff: {}\nfeatureGates: {}\n')).toEqual([]);
  expect(() => parse('systemReserved:\n  nvidia.com/gpu: "1"\n')).toThrow(/systemReserved.nvidia.com\/gpu: unsupported resource/);
  expect(() => parse('evictionHard:\n  disk.available: 1%\n')).toThrow(/evictionHard.disk.available: unknown eviction signal/);
});

test("the kubelet server's and certificate rotation's fields load without a warning", () => {
  const file = parse(`
address: 0.0.0.0
tlsCertFile: /var/lib/kubelet/pki/kubelet.crt
tlsPrivateKeyFile: /var/lib/kubelet/pki/kubelet.key
tlsCipherSuites: [TLS_AES_128_GCM_SHA256]
tlsMinVersion: VersionTLS12
authentication:
  anonymous:
    enabled: false
authorization:
  mode: Webhook
rotateCertificates: true
`);
  expect(file.warnings).toEqual([]);
  expect(() => parse('rotateCertificates: "yes"\n')).toThrow('rotateCertificates: must be true or false');
  expect(() => parse('authentication: webhook\n')).toThrow('authentication: must be a mapping');
});

test("kind's KubeletConfiguration (kubeadm v1.37.2 on a kind node) loads unchanged: what it sets, and its (empty) set of warnings", () => {
  const fixture = new URL('../../../../test/fixtures/kind/kubelet-config.yaml', import.meta.url);
  const file = parseKubeletConfiguration(readFileSync(fixture, 'utf8'), 'kind.yaml');
  // Every field kind sets is honoured, owned by another branch (server, rotation) or set to what nodelet does anyway
  // (zero durations meaning kubelet's default, image GC and swap and eviction switched off, default logging).
  expect(file.warnings).toEqual([]);
  expect(file).toMatchObject({
    clusterDNS: ['10.96.0.10'],
    clusterDomain: 'cluster.local',
    cgroupDriver: 'systemd',
    cgroupRoot: '/kubelet',
    failSwapOn: false,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    imageGCHighThresholdPercent: 100,
    staticPodPath: '/etc/kubernetes/manifests',
    // kubeadm 1.37 (NodeLocalCRISocket, GA) patches the node's CRI socket from /var/lib/kubelet/instance-config.yaml
    // into the file; 1.32 left it "" and passed --container-runtime-endpoint in kubeadm-flags.env.
    containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
  });
  // failCgroupV1 is not written: kubelet 1.37's default (true) applies.
  expect(file).not.toHaveProperty('failCgroupV1');
  // Zero durations keep kubelet's defaults.
  for (const key of ['syncFrequencyMs', 'fileCheckFrequencyMs', 'runtimeRequestTimeoutMs', 'nodeStatusUpdateFrequencyMs', 'nodeStatusReportFrequencyMs']) {
    expect(file).not.toHaveProperty(key);
  }
  const c = resolveKubeletConfiguration(file);
  expect(c.nodeStatusUpdateFrequencyMs).toBe(10_000);
  expect(c.containerRuntimeEndpoint).toBe('unix:///run/containerd/containerd.sock');
  expect(c.failCgroupV1).toBe(true);
  // --container-runtime-endpoint given on the command line still wins over the file's socket.
  const flags = new Map([['container-runtime-endpoint', 'unix:///run/nodelet/containerd/containerd.sock']]);
  expect(resolveKubeletConfiguration(file, flags, new Set(flags.keys())).containerRuntimeEndpoint).toBe('unix:///run/nodelet/containerd/containerd.sock');
  // evictionHard replaces kubelet's default as a whole: nothing is reserved for eviction (0%).
  expect(c.evictionHard).toEqual({ 'nodefs.available': { percentage: 0 } });
  expect(c.resolvConf).toBe('/etc/resolv.conf');
});

test("kubelet 1.37's other v1beta1 fields: warned when they ask for something, runOnce true refused as kubelet refuses it", () => {
  const warned = (body: string) => parse(body).warnings.map((w) => w.split(': ')[1]);
  expect(warned('defaultPodSysctls: {}\nmemoryReservationPolicy: None\ntlsCurvePreferences: []\nrunOnce: false\n')).toEqual([]);
  expect(warned('defaultPodSysctls: {net.ipv4.ip_forward: "1"}\nmemoryReservationPolicy: TieredReservation\ntlsCurvePreferences: [29, 23]\n')).toEqual([
    'defaultPodSysctls',
    'memoryReservationPolicy',
    'tlsCurvePreferences',
  ]);
  expect(() => parse('runOnce: true\n')).toThrow(
    '/etc/nodelet/config.yaml: runOnce: true is refused, as kubelet refuses it: run-once mode has been deprecated and should not be set',
  );
  expect(() => parse('runOnce: "no"\n')).toThrow('runOnce: must be true or false, not "no"');
  expect(() => parse('defaultPodSysctls: [a]\n')).toThrow('defaultPodSysctls: must be a map of strings');
});

test('cluster DNS, resolver, cgroup, swap, image GC and healthz settings', () => {
  expect(parse('clusterDNS: [10.96.0.10, "fd00::a"]\nclusterDomain: example.org\nresolvConf: ""\n')).toMatchObject({
    clusterDNS: ['10.96.0.10', 'fd00::a'],
    clusterDomain: 'example.org',
    resolvConf: '',
  });
  expect(() => parse('clusterDNS: 10.96.0.10\n')).toThrow('clusterDNS: must be a list of IP addresses, not "10.96.0.10"');
  expect(() => parse('clusterDNS: [kube-dns]\n')).toThrow('clusterDNS[0]: must be an IP address, not "kube-dns"');
  expect(() => parse('cgroupDriver: cgroupv2\n')).toThrow('cgroupDriver: must be one of cgroupfs, systemd, not "cgroupv2"');
  expect(() => parse('cgroupRoot: kubelet\n')).toThrow('cgroupRoot: must be an absolute cgroup path');
  expect(parse('cgroupRoot: ""\n').cgroupRoot).toBe('/');
  expect(parse('enforceNodeAllocatable: [pods]\n').enforceNodeAllocatable).toEqual(['pods']);
  expect(parse('enforceNodeAllocatable: [none]\n').enforceNodeAllocatable).toEqual([]);
  expect(() => parse('enforceNodeAllocatable: [pods, everything]\n')).toThrow('enforceNodeAllocatable: invalid option "everything"');
  expect(() => parse('enforceNodeAllocatable: [none, pods]\n')).toThrow('enforceNodeAllocatable: "none" cannot be combined with other options');
  expect(() => parse('failSwapOn: 1\n')).toThrow('failSwapOn: must be true or false, not 1');
  expect(() => parse('imageGCHighThresholdPercent: 101\n')).toThrow('imageGCHighThresholdPercent: must be at most 100, not 101');
  expect(() => parse('imageGCLowThresholdPercent: -1\n')).toThrow('imageGCLowThresholdPercent: must be at least 0, not -1');
  // kubelet's validation: low < high, each side defaulted (85 / 80) when the file leaves it out.
  expect(() => parse('imageGCHighThresholdPercent: 80\n')).toThrow('imageGCLowThresholdPercent: 80 must be less than imageGCHighThresholdPercent 80');
  expect(() => parse('imageGCHighThresholdPercent: 50\nimageGCLowThresholdPercent: 60\n')).toThrow(/60 must be less than imageGCHighThresholdPercent 50/);
  expect(parse('imageGCHighThresholdPercent: 90\nimageGCLowThresholdPercent: 70\n')).toMatchObject({ imageGCHighThresholdPercent: 90, imageGCLowThresholdPercent: 70 });
  expect(parse('healthzPort: 0\n').healthzPort).toBe(0);
  expect(() => parse('healthzPort: 65536\n')).toThrow('healthzPort: must be at most 65535');
  expect(() => parse('healthzBindAddress: localhost\n')).toThrow('healthzBindAddress: must be an IP address, not "localhost"');
});

test("serializeImagePulls and maxParallelImagePulls with kubelet's defaulting and validation", () => {
  expect(parse('serializeImagePulls: false\n')).toMatchObject({ serializeImagePulls: false, warnings: [] });
  expect(parse('serializeImagePulls: false\nmaxParallelImagePulls: 3\n')).toMatchObject({ serializeImagePulls: false, maxParallelImagePulls: 3 });
  // Left out, serializeImagePulls is true unless maxParallelImagePulls is 2 or more.
  expect(parse('maxParallelImagePulls: 5\n').serializeImagePulls).toBe(false);
  expect(parse('maxParallelImagePulls: 1\n').serializeImagePulls).toBe(true);
  expect(parse('serializeImagePulls: true\nmaxParallelImagePulls: 1\n').serializeImagePulls).toBe(true);
  expect(() => parse('serializeImagePulls: true\nmaxParallelImagePulls: 2\n')).toThrow(
    'maxParallelImagePulls: cannot be larger than 1 unless serializeImagePulls is set to false (it is 2)',
  );
  expect(() => parse('maxParallelImagePulls: 0\n')).toThrow('maxParallelImagePulls: must be at least 1, not 0');
  expect(() => parse('serializeImagePulls: "no"\n')).toThrow('serializeImagePulls: must be true or false, not "no"');
  expect(resolveKubeletConfiguration(undefined).serializeImagePulls).toBe(true);
});

test('a wrong type in a field nodelet ignores is still an error naming it', () => {
  expect(() => parse('cpuCFSQuota: "no"\n')).toThrow('cpuCFSQuota: must be true or false, not "no"');
  expect(() => parse('shutdownGracePeriod: 30\n')).toThrow('shutdownGracePeriod: must be a string, not 30');
  expect(() => parse('featureGates:\n  Foo: "on"\n')).toThrow('featureGates.Foo: must be true or false, not "on"');
  expect(() => parse('logging: text\n')).toThrow('logging: must be a map of settings, not "text"');
  expect(() => parse('reservedMemory: {}\n')).toThrow('reservedMemory: must be a list, not {}');
  expect(() => parse('memoryThrottlingFactor: high\n')).toThrow('memoryThrottlingFactor: must be a number');
});

test('apiVersion and kind are required', () => {
  expect(() => parseKubeletConfiguration('kind: KubeletConfiguration\n', 'f')).toThrow('f: apiVersion: must be kubelet.config.k8s.io/v1beta1, not null');
  expect(() => parseKubeletConfiguration('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n', 'f')).toThrow('f: kind: must be KubeletConfiguration');
  expect(() => parseKubeletConfiguration('- a\n', 'f')).toThrow(/not a KubeletConfiguration/);
  expect(() => parseKubeletConfiguration('a: [\n', 'f')).toThrow(/f: not valid YAML/);
});

test('wrong value types and out-of-range values name the field', () => {
  expect(() => parse('maxPods: "110"\n')).toThrow('maxPods: must be an integer, not "110"');
  expect(() => parse('nodeStatusUpdateFrequency: 10\n')).toThrow('nodeStatusUpdateFrequency: must be a string, not 10');
  expect(() => parse('nodeStatusUpdateFrequency: 10x\n')).toThrow('nodeStatusUpdateFrequency: time: invalid duration "10x"');
  expect(() => parse('nodeStatusUpdateFrequency: -1s\n')).toThrow('nodeStatusUpdateFrequency: must be at least 0, not "-1s"');
  expect(() => parse('nodeLeaseDurationSeconds: 0\n')).toThrow('nodeLeaseDurationSeconds: must be at least 1');
  expect(() => parse('port: 70000\n')).toThrow('port: must be at most 65535, not 70000');
  expect(() => parse('registerNode: "yes"\n')).toThrow('registerNode: must be true or false');
  expect(() => parse('systemReserved:\n  memory: lots\n')).toThrow(/systemReserved.memory: "lots": quantities must match/);
  expect(() => parse('registerWithTaints:\n  - key: a\n    effect: Sometimes\n')).toThrow('registerWithTaints[0].effect: must be one of NoSchedule, PreferNoSchedule, NoExecute');
  expect(() => parse('evictionHard:\n  memory.available: 120%\n')).toThrow(/between 0% and 100%/);
});

test('eviction thresholds: quantities and float32 percentages as kubelet parses them', () => {
  expect(String((parseEvictionThreshold('100Mi') as { quantity: object }).quantity)).toBe('100Mi');
  expect(parseEvictionThreshold('10%')).toEqual({ percentage: Math.fround(Math.fround(10) / 100) });
  expect(() => parseEvictionThreshold('%')).toThrow();
});

describe('resolveKubeletConfiguration', () => {
  test('the file overrides the defaults; evictionHard replaces the default thresholds as a whole', () => {
    const c = resolveKubeletConfiguration(parse('maxPods: 20\nevictionHard:\n  memory.available: 1Gi\n'));
    expect(c.maxPods).toBe(20);
    expect(c.kubeAPIQPS).toBe(50);
    expect(Object.keys(c.evictionHard)).toEqual(['memory.available']);
  });

  test('nodeStatusReportFrequency follows nodeStatusUpdateFrequency when only that is set (kubelet compatibility)', () => {
    expect(resolveKubeletConfiguration(parse('nodeStatusUpdateFrequency: 20s\n')).nodeStatusReportFrequencyMs).toBe(20_000);
    expect(resolveKubeletConfiguration(parse('nodeStatusUpdateFrequency: 20s\nnodeStatusReportFrequency: 2m\n')).nodeStatusReportFrequencyMs).toBe(120_000);
    expect(resolveKubeletConfiguration(undefined).nodeStatusReportFrequencyMs).toBe(300_000);
  });

  test('flags given on the command line override the file; flags left at their default do not', () => {
    const file = parse('staticPodPath: /from/file\npodCIDR: 10.1.0.0/24\nsyncFrequency: 30s\n');
    const flags = new Map([
      ['pod-manifest-path', '/from/flag'],
      ['pod-cidr', ''],
      ['sync-frequency', '1m'],
    ]);
    const c = resolveKubeletConfiguration(file, flags, new Set(['pod-manifest-path']));
    expect(c.staticPodPath).toBe('/from/flag');
    expect(c.podCIDR).toBe('10.1.0.0/24');
    expect(c.syncFrequencyMs).toBe(30_000);
    expect(resolveKubeletConfiguration(file, flags, new Set(['sync-frequency'])).syncFrequencyMs).toBe(60_000);
  });
});

describe('the kubelet API settings', () => {
  test("v1beta1's secure defaults: anonymous off, webhook authentication and authorization", () => {
    const d = defaultKubeletConfiguration();
    expect(d).toMatchObject({ address: '0.0.0.0', port: 10250, tlsCertFile: '', tlsPrivateKeyFile: '', tlsMinVersion: '', tlsCipherSuites: [] });
    expect(d.authentication).toEqual({ x509: { clientCAFile: '' }, webhook: { enabled: true, cacheTTLMs: 120_000 }, anonymous: { enabled: false } });
    expect(d.authorization).toEqual({ mode: 'Webhook', webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 } });
  });

  test('parses address, TLS, authentication and authorization; a partial section keeps the other defaults', () => {
    const c = parse(`address: 127.0.0.1
tlsCertFile: /pki/k.crt
tlsPrivateKeyFile: /pki/k.key
tlsMinVersion: VersionTLS13
tlsCipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
authentication:
  x509: {clientCAFile: /pki/ca.crt}
  webhook: {cacheTTL: 30s}
authorization:
  mode: AlwaysAllow
`);
    expect(c).toMatchObject({ address: '127.0.0.1', tlsCertFile: '/pki/k.crt', tlsPrivateKeyFile: '/pki/k.key', tlsMinVersion: 'VersionTLS13', tlsCipherSuites: ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'] });
    expect(c.authentication).toEqual({ x509: { clientCAFile: '/pki/ca.crt' }, webhook: { enabled: true, cacheTTLMs: 30_000 }, anonymous: { enabled: false } });
    expect(c.authorization).toEqual({ mode: 'AlwaysAllow', webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 } });
  });

  test.each([
    ['address: here', 'address'],
    ['tlsMinVersion: TLS12', 'tlsMinVersion'],
    ['tlsCipherSuites: [TLS_RSA_WITH_RC4_128_SHA]', 'tlsCipherSuites[0]'],
    ['authorization: {mode: RBAC}', 'authorization.mode'],
    ['authentication: {anonymous: {enabled: yes-please}}', 'authentication.anonymous.enabled'],
    ['authentication: {oidc: {}}', 'authentication.oidc'],
  ])('%s is refused naming %s', (body, field) => {
    expect(() => parse(`${body}\n`)).toThrow(`/etc/nodelet/config.yaml: ${field}:`);
  });

  test("kubelet's flags over the file", () => {
    const file = parse('authentication: {anonymous: {enabled: true}}\nport: 10260\n');
    const flags = new Map([
      ['port', '10270'], ['client-ca-file', '/ca.crt'], ['anonymous-auth', 'false'], ['authorization-mode', 'AlwaysAllow'],
      ['authorization-webhook-cache-unauthorized-ttl', '2s'], ['tls-cipher-suites', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256'],
    ]);
    const c = resolveKubeletConfiguration(file, flags, new Set(flags.keys()));
    expect(c.port).toBe(10270);
    expect(c.authentication.x509.clientCAFile).toBe('/ca.crt');
    expect(c.authentication.anonymous.enabled).toBe(false);
    expect(c.authorization).toEqual({ mode: 'AlwaysAllow', webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 2_000 } });
    expect(c.tlsCipherSuites).toEqual(['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_AES_128_GCM_SHA256']);
    expect(() => resolveKubeletConfiguration(undefined, new Map([['authorization-mode', 'Node']]), new Set(['authorization-mode']))).toThrow('--authorization-mode');
  });
});

test("failCgroupV1: kubelet 1.37's default true, false in the file, --fail-cgroupv1 on the command line over both", () => {
  expect(defaultKubeletConfiguration().failCgroupV1).toBe(true);
  const file = parse('failCgroupV1: false\n');
  expect(file.failCgroupV1).toBe(false);
  expect(file.warnings).toEqual([]);
  expect(resolveKubeletConfiguration(file).failCgroupV1).toBe(false);
  expect(resolveKubeletConfiguration(parse('failCgroupV1: true\n')).failCgroupV1).toBe(true);
  expect(resolveKubeletConfiguration(undefined).failCgroupV1).toBe(true);
  // The flag's default ("true") does not count: only a flag given on the command line wins over the file.
  expect(resolveKubeletConfiguration(file, new Map([['fail-cgroupv1', 'true']]), new Set()).failCgroupV1).toBe(false);
  expect(resolveKubeletConfiguration(file, new Map([['fail-cgroupv1', 'true']]), new Set(['fail-cgroupv1'])).failCgroupV1).toBe(true);
  expect(resolveKubeletConfiguration(undefined, new Map([['fail-cgroupv1', 'false']]), new Set(['fail-cgroupv1'])).failCgroupV1).toBe(false);
  expect(() => resolveKubeletConfiguration(undefined, new Map([['fail-cgroupv1', 'no']]), new Set(['fail-cgroupv1']))).toThrow(
    'command line: --fail-cgroupv1: must be true or false, not "no"',
  );
  expect(() => parse('failCgroupV1: "false"\n')).toThrow('/etc/nodelet/config.yaml: failCgroupV1: must be true or false, not "false"');
});

test('podPidsLimit: -1 (no limit) and up; below is an error naming the field', () => {
  expect(parse('podPidsLimit: -1\n').podPidsLimit).toBe(-1);
  expect(parse('podPidsLimit: 0\n').podPidsLimit).toBe(0);
  expect(() => parse('podPidsLimit: -2\n')).toThrow(/podPidsLimit: must be at least -1, not -2/);
  expect(() => parse('podPidsLimit: "100"\n')).toThrow(/podPidsLimit: must be an integer/);
});
