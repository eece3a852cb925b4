// Service environment variables as kubelet makes them (kubelet_pods_test.go TestMakeEnvironmentVariables, envvars_test.go):
// which Services a pod sees, the variables of each, and their place in the container's environment.
import type { V1Container, V1Pod, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { containerEnv } from '../../../src/execution/env.js';
import { serviceEnvVarMap } from '../../../src/execution/service-env.js';
import { parseQuantity } from '../../../src/core/quantity.js';

const svc = (namespace: string, name: string, clusterIP: string, ports: V1ServicePort[]): V1Service => ({
  metadata: { name, namespace },
  spec: { clusterIP, ports },
});

// kubelet's test Services: the master service in default, others in test1, one headless, one without an IP.
const services: V1Service[] = [
  svc('default', 'kubernetes', '1.2.3.1', [{ protocol: 'TCP', port: 8081 }]),
  svc('test1', 'test', '1.2.3.3', [{ protocol: 'TCP', port: 8083 }]),
  svc('kubernetes', 'kubernetes', '1.2.3.2', [{ protocol: 'TCP', port: 8084 }]),
  svc('test2', 'test', '1.2.3.5', [{ protocol: 'TCP', port: 8085 }]),
  svc('test2', 'test', 'None', [{ protocol: 'TCP', port: 8085 }]),
  svc('test2', 'test', '', [{ protocol: 'TCP', port: 8085 }]),
  svc('kubernetes', 'kubernetes', '', [{ protocol: 'TCP', port: 8085 }]),
  svc('test1', 'not-special', '1.2.3.8', [{ protocol: 'TCP', port: 8088 }]),
  svc('test1', 'headless', 'None', [{ protocol: 'TCP', port: 8088 }]),
  svc('test1', 'external', '', [{ protocol: 'TCP', port: 8088 }]),
];

const links = (prefix: string, ip: string, port: number, proto = 'tcp'): Array<[string, string]> => [
  [`${prefix}_PORT`, `${proto}://${ip}:${port}`],
  [`${prefix}_PORT_${port}_${proto.toUpperCase()}`, `${proto}://${ip}:${port}`],
  [`${prefix}_PORT_${port}_${proto.toUpperCase()}_PROTO`, proto],
  [`${prefix}_PORT_${port}_${proto.toUpperCase()}_PORT`, String(port)],
  [`${prefix}_PORT_${port}_${proto.toUpperCase()}_ADDR`, ip],
];
const kubernetesVars: Array<[string, string]> = [
  ['KUBERNETES_SERVICE_HOST', '1.2.3.1'],
  ['KUBERNETES_SERVICE_PORT', '8081'],
  ...links('KUBERNETES', '1.2.3.1', 8081),
];

describe('serviceEnvVarMap (kubelet getServiceEnvVarMap)', () => {
  test('enableServiceLinks: the namespace\'s Services with a cluster IP and default/kubernetes; headless and IP-less ones none', () => {
    const env = serviceEnvVarMap(services, 'test1', true);
    expect(Object.fromEntries(env)).toEqual(
      Object.fromEntries([
        ...kubernetesVars,
        ['NOT_SPECIAL_SERVICE_HOST', '1.2.3.8'],
        ['NOT_SPECIAL_SERVICE_PORT', '8088'],
        ...links('NOT_SPECIAL', '1.2.3.8', 8088),
        ['TEST_SERVICE_HOST', '1.2.3.3'],
        ['TEST_SERVICE_PORT', '8083'],
        ...links('TEST', '1.2.3.3', 8083),
      ]),
    );
  });

  test('enableServiceLinks false: only default/kubernetes, for every pod', () => {
    expect([...serviceEnvVarMap(services, 'test1', false)]).toEqual(kubernetesVars);
    expect([...serviceEnvVarMap(services, 'test2', false)]).toEqual(kubernetesVars);
  });

  test('a "kubernetes" Service of the pod\'s own namespace wins over default\'s', () => {
    const env = serviceEnvVarMap(services, 'kubernetes', true);
    expect(env.get('KUBERNETES_SERVICE_HOST')).toBe('1.2.3.2');
    expect(env.get('KUBERNETES_SERVICE_PORT')).toBe('8084');
    // Either order of the list gives the same answer.
    expect(serviceEnvVarMap([...services].reverse(), 'kubernetes', true)).toEqual(env);
    expect(serviceEnvVarMap(services, 'kubernetes', false).get('KUBERNETES_SERVICE_HOST')).toBe('1.2.3.1');
  });

  test('no Services (or no API server): no variables', () => {
    expect(serviceEnvVarMap([], 'test1', true).size).toBe(0);
  });

  test('named ports, UDP and SCTP, dashes in names, IPv6 (envvars.FromServices)', () => {
    const s = svc('ns', 'my-svc', 'fd00::10', [
      { name: 'http', protocol: 'TCP', port: 80 },
      { name: 'dns-udp', protocol: 'UDP', port: 53 },
      { name: 'sctp', protocol: 'SCTP', port: 9999 },
      { name: 'no-proto', port: 8080 },
    ]);
    expect([...serviceEnvVarMap([s], 'ns', true)]).toEqual([
      ['MY_SVC_SERVICE_HOST', 'fd00::10'],
      ['MY_SVC_SERVICE_PORT', '80'],
      ['MY_SVC_SERVICE_PORT_HTTP', '80'],
      ['MY_SVC_SERVICE_PORT_DNS_UDP', '53'],
      ['MY_SVC_SERVICE_PORT_SCTP', '9999'],
      ['MY_SVC_SERVICE_PORT_NO_PROTO', '8080'],
      ['MY_SVC_PORT', 'tcp://[fd00::10]:80'],
      ['MY_SVC_PORT_80_TCP', 'tcp://[fd00::10]:80'],
      ['MY_SVC_PORT_80_TCP_PROTO', 'tcp'],
      ['MY_SVC_PORT_80_TCP_PORT', '80'],
      ['MY_SVC_PORT_80_TCP_ADDR', 'fd00::10'],
      ['MY_SVC_PORT_53_UDP', 'udp://[fd00::10]:53'],
      ['MY_SVC_PORT_53_UDP_PROTO', 'udp'],
      ['MY_SVC_PORT_53_UDP_PORT', '53'],
      ['MY_SVC_PORT_53_UDP_ADDR', 'fd00::10'],
      ['MY_SVC_PORT_9999_SCTP', 'sctp://[fd00::10]:9999'],
      ['MY_SVC_PORT_9999_SCTP_PROTO', 'sctp'],
      ['MY_SVC_PORT_9999_SCTP_PORT', '9999'],
      ['MY_SVC_PORT_9999_SCTP_ADDR', 'fd00::10'],
      ['MY_SVC_PORT_8080_TCP', 'tcp://[fd00::10]:8080'],
      ['MY_SVC_PORT_8080_TCP_PROTO', 'tcp'],
      ['MY_SVC_PORT_8080_TCP_PORT', '8080'],
      ['MY_SVC_PORT_8080_TCP_ADDR', 'fd00::10'],
    ]);
  });
});

describe("the service variables in the container's environment (kubelet makeEnvironmentVariables)", () => {
  const pod: V1Pod = { metadata: { name: 'p', namespace: 'test1', uid: 'u' }, spec: { containers: [] } };
  const ctx = {
    podIPs: ['10.99.0.9'],
    hostIP: '192.0.2.2',
    allocatable: async () => ({ cpu: parseQuantity('2'), memory: parseQuantity('8Gi'), 'ephemeral-storage': parseQuantity('100Gi') }),
    serviceEnv: serviceEnvVarMap(services, 'test1', true),
    volumePath: () => undefined,
  };

  test("an explicit env entry wins; $(VAR) expands the container's variables first, then the service variables", async () => {
    const c: V1Container = {
      name: 'app',
      env: [
        { name: 'TEST_SERVICE_HOST', value: 'overridden' },
        { name: 'URL', value: 'http://$(TEST_SERVICE_HOST):$(TEST_SERVICE_PORT)/' },
        { name: 'API', value: '$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)' },
      ],
    };
    const env = await containerEnv(pod, c, 'spec.containers[0]', ctx);
    expect(env.get('TEST_SERVICE_HOST')).toBe('overridden');
    expect(env.get('URL')).toBe('http://overridden:8083/');
    expect(env.get('API')).toBe('1.2.3.1:8081');
    // The container's own variables first, in order, then the service variables it does not define.
    const names = [...env.keys()];
    expect(names.slice(0, 3)).toEqual(['TEST_SERVICE_HOST', 'URL', 'API']);
    expect(names.filter((n) => n === 'TEST_SERVICE_HOST')).toHaveLength(1);
    expect(env.get('TEST_SERVICE_PORT')).toBe('8083');
    expect(env.get('NOT_SPECIAL_PORT')).toBe('tcp://1.2.3.8:8088');
  });

  test('a variable defined later is not visible to an earlier one, but a service variable is', async () => {
    const c: V1Container = {
      name: 'app',
      env: [
        { name: 'A', value: '$(B)/$(TEST_SERVICE_PORT)' },
        { name: 'B', value: 'b' },
      ],
    };
    expect((await containerEnv(pod, c, 'spec.containers[0]', ctx)).get('A')).toBe('$(B)/8083');
  });

  test('without service variables (standalone) the environment is the container\'s own', async () => {
    const c: V1Container = { name: 'app', env: [{ name: 'X', value: '$(KUBERNETES_SERVICE_HOST)' }] };
    expect([...(await containerEnv(pod, c, 'spec.containers[0]', { ...ctx, serviceEnv: new Map() }))]).toEqual([['X', '$(KUBERNETES_SERVICE_HOST)']]);
  });
});
