// kubelet's managed /etc/hosts: when a container gets it, and what it holds.
import type { V1Pod } from '@kubernetes/client-node';
import { managedHostsContent, mountsManagedHosts, podHostDomain } from '../../../src/execution/etc-hosts.js';
import { podHostname } from '../../../src/execution/runtime-config.js';

const pod = (spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({
  metadata: { name: 'web-0', namespace: 'shop' },
  spec: { containers: [{ name: 'app' }], ...spec },
});

test('a container gets it once the pod has an IP (a host-network pod at once), unless it mounts something at /etc/hosts', () => {
  const c = { name: 'app' };
  expect(mountsManagedHosts(pod(), c, ['10.0.0.5'])).toBe(true);
  expect(mountsManagedHosts(pod(), c, [])).toBe(false);
  expect(mountsManagedHosts(pod({ hostNetwork: true }), c, [])).toBe(true);
  expect(mountsManagedHosts(pod(), { name: 'app', volumeMounts: [{ name: 'h', mountPath: '/etc/hosts' }] }, ['10.0.0.5'])).toBe(false);
  expect(mountsManagedHosts(pod(), { name: 'app', volumeMounts: [{ name: 'h', mountPath: '/etc/hosts-original' }] }, ['10.0.0.5'])).toBe(true);
});

test("the pod's FQDN needs both a subdomain and a cluster domain", () => {
  expect(podHostDomain(pod({ subdomain: 'db' }), 'cluster.local')).toBe('db.shop.svc.cluster.local');
  expect(podHostDomain(pod({ subdomain: 'db' }), '')).toBe('');
  expect(podHostDomain(pod(), 'cluster.local')).toBe('');
});

test("the pod's hostname (kubelet's GeneratePodHostNameAndDomain): hostnameOverride, else hostname, else the name, at most 63 characters", () => {
  expect(podHostname(pod())).toBe('web-0');
  expect(podHostname(pod({ hostname: 'h1' }))).toBe('h1');
  expect(podHostname(pod({ hostname: 'h1', subdomain: 'db', hostnameOverride: 'custom.example' }))).toBe('custom.example');
  // 64 characters (validation's limit): cut at 63, the trailing '.' dropped.
  expect(podHostname(pod({ hostnameOverride: `${'a'.repeat(62)}.b` }))).toBe('a'.repeat(62));
  const long = { metadata: { name: `${'p'.repeat(62)}-x`, namespace: 'shop' }, spec: { containers: [] } };
  expect(podHostname(long)).toBe('p'.repeat(62));
  // With an override the pod has no domain, subdomain or not: /etc/hosts names it alone.
  expect(podHostDomain(pod({ subdomain: 'db', hostnameOverride: 'custom.example' }), 'cluster.local')).toBe('');
  expect(managedHostsContent(pod({ subdomain: 'db', hostnameOverride: 'custom.example' }), ['10.0.0.5'], 'cluster.local', '')).toContain('\n10.0.0.5\tcustom.example\n');
});

test('the pod network file: localhost, each pod IP with hostname and FQDN, then the aliases one line per IP', () => {
  const text = managedHostsContent(pod({ hostname: 'h1', subdomain: 'db', hostAliases: [{ ip: '1.2.3.4', hostnames: ['a', 'b'] }, { ip: '::2', hostnames: ['c'] }] }),
    ['10.0.0.5', 'fd00::5'], 'cluster.local', 'ignored');
  expect(text.split('\n')).toEqual([
    '# Kubernetes-managed hosts file.',
    '127.0.0.1\tlocalhost',
    '::1\tlocalhost ip6-localhost ip6-loopback',
    'fe00::0\tip6-localnet',
    'fe00::0\tip6-mcastprefix',
    'fe00::1\tip6-allnodes',
    'fe00::2\tip6-allrouters',
    '10.0.0.5\th1.db.shop.svc.cluster.local\th1',
    'fd00::5\th1.db.shop.svc.cluster.local\th1',
    '',
    '# Entries added by HostAliases.',
    '1.2.3.4\ta\tb',
    '::2\tc',
    '',
  ]);
  expect(managedHostsContent(pod(), ['10.0.0.5'], 'cluster.local', '')).toContain('\n10.0.0.5\tweb-0\n');
});

test("a host-network pod's file is the node's, under the host-network header, with the aliases", () => {
  expect(managedHostsContent(pod({ hostNetwork: true, hostAliases: [{ ip: '1.2.3.4', hostnames: ['a'] }] }), ['192.0.2.2'], 'cluster.local', '127.0.0.1 localhost\n'))
    .toBe('# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n\n# Entries added by HostAliases.\n1.2.3.4\ta\n');
});
