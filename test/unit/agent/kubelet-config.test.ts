// --config parsing: kubelet's field names and defaults, Go durations, unknown/unsupported fields refused, flags over the file.
import {
  defaultKubeletConfiguration,
  KubeletConfigError,
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

test('an unknown field is an error naming the file and the field', () => {
  expect(() => parse('maxPod: 10\n')).toThrow(KubeletConfigError);
  expect(() => parse('maxPod: 10\n')).toThrow('/etc/nodelet/config.yaml: maxPod: unknown field');
});

test('a kubelet field nodelet does not implement is an error that says so', () => {
  expect(() => parse('serializeImagePulls: false\n')).toThrow(
    '/etc/nodelet/config.yaml: serializeImagePulls: is a kubelet setting that nodelet does not support',
  );
  expect(() => parse('clusterDNS: [10.96.0.10]\n')).toThrow(/clusterDNS: is a kubelet setting that nodelet does not support/);
  expect(() => parse('evictionHard:\n  imagefs.available: 15%\n')).toThrow(/evictionHard.imagefs.available: not supported: nodelet does not evict pods/);
  expect(() => parse('systemReserved:\n  nvidia.com/gpu: "1"\n')).toThrow(/systemReserved.nvidia.com\/gpu: unsupported resource/);
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
  expect(() => parse('nodeStatusUpdateFrequency: 0s\n')).toThrow('nodeStatusUpdateFrequency: must be greater than 0');
  expect(() => parse('nodeLeaseDurationSeconds: 0\n')).toThrow('nodeLeaseDurationSeconds: must be at least 1');
  expect(() => parse('port: 70000\n')).toThrow('port: must be a port number');
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
