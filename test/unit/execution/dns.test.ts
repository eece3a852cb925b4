// The pod DNS configurer against kubelet's own cases (pkg/kubelet/network/dns/dns_test.go): resolv.conf parsing, the
// policies, dnsConfig merging, the resolver limits and their DNSConfigForming events, the MissingClusterDNS fallback.
import type { V1Pod, V1PodDNSConfig } from '@kubernetes/client-node';
import type { DnsConfig } from '../../../src/cri/types.js';
import { parseResolvConf, podDnsConfig, podDnsType, resolvConfLimitWarning, ResolvConfError, type NodeDnsSettings } from '../../../src/execution/dns.js';

describe('parseResolvConf (kubelet TestParseResolvConf)', () => {
  const cases: Array<[string, string[], string[], string[]]> = [
    ['', [], [], []],
    [' ', [], [], []],
    ['\n', [], [], []],
    ['\t\n\t', [], [], []],
    ['#comment\n', [], [], []],
    [' #comment\n', [], [], []],
    ['#comment\n#comment', [], [], []],
    ['#comment\nnameserver 1.2.3.4\nsearch', ['1.2.3.4'], [], []],
    ['nameserver 1.2.3.4', ['1.2.3.4'], [], []],
    [' nameserver 1.2.3.4', ['1.2.3.4'], [], []],
    ['\tnameserver 1.2.3.4', ['1.2.3.4'], [], []],
    ['nameserver\t1.2.3.4', ['1.2.3.4'], [], []],
    ['nameserver \t 1.2.3.4', ['1.2.3.4'], [], []],
    ['nameserver 1.2.3.4\nnameserver 5.6.7.8', ['1.2.3.4', '5.6.7.8'], [], []],
    ['nameserver 1.2.3.4 #comment', ['1.2.3.4'], [], []],
    ['search ', [], [], []],
    ['search .', [], [], []],
    ['search . foo', [], ['foo'], []],
    ['search foo .', [], ['foo'], []],
    ['search foo .  bar', [], ['foo', 'bar'], []],
    ['search foo', [], ['foo'], []],
    ['search foo bar', [], ['foo', 'bar'], []],
    ['search foo. bar', [], ['foo', 'bar'], []],
    ['search foo bar bat\n', [], ['foo', 'bar', 'bat'], []],
    ['search foo\nsearch bar', [], ['bar'], []],
    ['nameserver 1.2.3.4\nsearch foo bar', ['1.2.3.4'], ['foo', 'bar'], []],
    ['nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar', ['1.2.3.4', '5.6.7.8'], ['bar'], []],
    ['#comment\nnameserver 1.2.3.4\n#comment\nsearch foo\ncomment', ['1.2.3.4'], ['foo'], []],
    ['options ', [], [], []],
    ['options ndots:5 attempts:2', [], [], ['ndots:5', 'attempts:2']],
    ['options ndots:1 ndots:5 attempts:2', [], [], ['ndots:5', 'attempts:2']],
    ['options ndots:1 edns0 attempts:2 single-request-reopen', [], [], ['edns0', 'attempts:2', 'single-request-reopen', 'ndots:1']],
    ['options ndots:1\noptions ndots:5 attempts:3', [], [], ['ndots:5', 'attempts:3']],
    ['options ndots:1 timeout:3 timeout:1 attempts:3\noptions ndots:5', [], [], ['ndots:5', 'timeout:1', 'attempts:3']],
    ['options ndots:1 attempts:3\noptions ndots:1 attempts:3 ndots:5', [], [], ['ndots:5', 'attempts:3']],
    ['nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4', ['1.2.3.4', '5.6.7.8'], ['bar'], ['ndots:5', 'attempts:4']],
  ];
  test.each(cases)('%j', (text, servers, searches, options) => {
    const dns = parseResolvConf(text);
    expect(dns.servers).toEqual(servers);
    expect(dns.searches).toEqual(searches);
    // kubelet compares options as a set (Go map order).
    expect(new Set(dns.options)).toEqual(new Set(options));
    expect(dns.options).toHaveLength(options.length);
  });

  test('a nameserver line without an address is an error, as in kubelet', () => {
    expect(() => parseResolvConf('#comment\nnameserver')).toThrow(ResolvConfError);
    expect(() => parseResolvConf('#comment\nnameserver\nsearch')).toThrow('nameserver list is empty');
  });
});

const pod = (spec: Partial<NonNullable<V1Pod['spec']>> = {}, namespace = 'testNS'): V1Pod => ({
  metadata: { name: 'test_pod', namespace, uid: 'u1' },
  spec: { containers: [], ...spec },
});
const node = (over: Partial<NodeDnsSettings> = {}): NodeDnsSettings => ({
  clusterDNS: ['10.0.0.10'],
  clusterDomain: 'kubernetes.io',
  resolvConf: '/etc/resolv.conf',
  nodeIPs: ['192.0.2.1'],
  ...over,
});
const host: DnsConfig = { servers: ['192.0.2.53'], searches: ['host.domain'], options: ['edns0'] };
const empty: DnsConfig = { servers: [], searches: [], options: [] };

describe('podDnsType (kubelet TestGetPodDNSType)', () => {
  test.each([
    ['ClusterFirst', false, 'cluster'],
    ['ClusterFirstWithHostNet', true, 'cluster'],
    ['ClusterFirstWithHostNet', false, 'cluster'],
    ['Default', false, 'host'],
    ['Default', true, 'host'],
    // A host-network pod with ClusterFirst falls back to Default.
    ['ClusterFirst', true, 'host'],
    ['None', false, 'none'],
    // An invalid policy (the API server refuses it) counts as ClusterFirst, as kubelet falls back.
    ['invalidPolicy', false, 'cluster'],
  ] as const)('%s, hostNetwork %s: %s', (dnsPolicy, hostNetwork, expected) => {
    expect(podDnsType(pod({ dnsPolicy, hostNetwork }))).toBe(expected);
  });
});

describe('podDnsConfig (kubelet TestGetPodDNS, TestGetPodDNSCustom)', () => {
  const custom: V1PodDNSConfig = {
    nameservers: ['10.0.0.11'],
    searches: ['my.domain'],
    options: [{ name: 'ndots', value: '3' }, { name: 'debug' }],
  };
  const cluster = ['testNS.svc.kubernetes.io', 'svc.kubernetes.io', 'kubernetes.io'];
  const cases: Array<{ desc: string; pod: V1Pod; node?: NodeDnsSettings; host?: DnsConfig; want: DnsConfig }> = [
    {
      desc: 'ClusterFirst: the cluster DNS only, the cluster search list before the host, ndots:5',
      pod: pod({ dnsPolicy: 'ClusterFirst' }),
      want: { servers: ['10.0.0.10'], searches: [...cluster, 'host.domain'], options: ['ndots:5'] },
    },
    {
      desc: 'ClusterFirstWithHostNet on the host network: as ClusterFirst',
      pod: pod({ dnsPolicy: 'ClusterFirstWithHostNet', hostNetwork: true }),
      want: { servers: ['10.0.0.10'], searches: [...cluster, 'host.domain'], options: ['ndots:5'] },
    },
    {
      desc: 'ClusterFirst on the host network: Default (the host resolver)',
      pod: pod({ dnsPolicy: 'ClusterFirst', hostNetwork: true }),
      want: host,
    },
    { desc: 'Default: the host resolver file', pod: pod({ dnsPolicy: 'Default' }), want: host },
    {
      desc: 'Default without a resolver file (resolvConf ""): the loopback, search "."',
      pod: pod({ dnsPolicy: 'Default' }),
      node: node({ resolvConf: '', nodeIPs: ['192.0.2.1', '2001:db8::1'] }),
      host: empty,
      want: { servers: ['127.0.0.1', '::1'], searches: ['.'], options: [] },
    },
    {
      desc: 'Default without a resolver file nor node IPs: 127.0.0.1',
      pod: pod({ dnsPolicy: 'Default' }),
      node: node({ resolvConf: '', nodeIPs: [] }),
      host: empty,
      want: { servers: ['127.0.0.1'], searches: ['.'], options: [] },
    },
    {
      desc: 'ClusterFirst without a cluster domain: the host search list unchanged',
      pod: pod({ dnsPolicy: 'ClusterFirst' }),
      node: node({ clusterDomain: '' }),
      want: { servers: ['10.0.0.10'], searches: ['host.domain'], options: ['ndots:5'] },
    },
    {
      desc: 'ClusterFirst: a host search path equal to a cluster one is not repeated',
      pod: pod({ dnsPolicy: 'ClusterFirst' }),
      host: { servers: [], searches: ['kubernetes.io', 'host.domain'], options: [] },
      want: { servers: ['10.0.0.10'], searches: [...cluster, 'host.domain'], options: ['ndots:5'] },
    },
    { desc: 'None without dnsConfig: empty settings', pod: pod({ dnsPolicy: 'None' }), want: empty },
    {
      desc: 'None with dnsConfig: exactly the dnsConfig',
      pod: pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['203.0.113.1'], searches: ['my.domain', 'second.domain'], options: [{ name: 'ndots', value: '3' }, { name: 'debug' }] } }),
      want: { servers: ['203.0.113.1'], searches: ['my.domain', 'second.domain'], options: ['ndots:3', 'debug'] },
    },
    {
      desc: 'ClusterFirst with dnsConfig: merged, its options replacing ndots',
      pod: pod({ dnsPolicy: 'ClusterFirst', dnsConfig: custom }),
      want: { servers: ['10.0.0.10', '10.0.0.11'], searches: [...cluster, 'host.domain', 'my.domain'], options: ['ndots:3', 'debug'] },
    },
    {
      desc: 'ClusterFirstWithHostNet with dnsConfig: merged',
      pod: pod({ dnsPolicy: 'ClusterFirstWithHostNet', hostNetwork: true, dnsConfig: custom }),
      want: { servers: ['10.0.0.10', '10.0.0.11'], searches: [...cluster, 'host.domain', 'my.domain'], options: ['ndots:3', 'debug'] },
    },
    {
      desc: 'Default with dnsConfig: merged into the host settings',
      pod: pod({ dnsPolicy: 'Default', dnsConfig: custom }),
      want: { servers: ['192.0.2.53', '10.0.0.11'], searches: ['host.domain', 'my.domain'], options: ['edns0', 'ndots:3', 'debug'] },
    },
    {
      desc: 'dnsConfig duplicates of the base are dropped',
      pod: pod({ dnsPolicy: 'Default', dnsConfig: { nameservers: ['192.0.2.53'], searches: ['host.domain'], options: [{ name: 'edns0' }] } }),
      want: host,
    },
  ];
  test.each(cases)('$desc', ({ pod: p, node: n, host: h, want }) => {
    const { dnsConfig, events } = podDnsConfig(p, n ?? node(), h ?? host);
    expect(dnsConfig).toEqual(want);
    expect(events).toEqual([]);
  });

  test('ClusterFirst without cluster DNS falls back to Default with kubelet\'s MissingClusterDNS events (node and pod)', () => {
    const { dnsConfig, events } = podDnsConfig(pod({ dnsPolicy: 'ClusterFirst' }), node({ clusterDNS: [] }), host);
    expect(dnsConfig).toEqual(host);
    const message = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
    expect(events).toEqual([
      { about: 'node', type: 'Warning', reason: 'MissingClusterDNS', message },
      { about: 'pod', type: 'Warning', reason: 'MissingClusterDNS', message: `pod: "test_pod_testNS(u1)". ${message}` },
    ]);
  });

  test('a pod without a dnsPolicy is ClusterFirst (the API server\'s default)', () => {
    expect(podDnsConfig(pod(), node(), host).dnsConfig.servers).toEqual(['10.0.0.10']);
  });
});

describe("the resolver's limits (kubelet TestFormDNSSearchFitsLimits, TestFormDNSNameserversFitsLimits)", () => {
  // The pod's dnsConfig searches are appended to an empty None base, so the list below is what gets cut.
  const withSearches = (searches: string[]) => podDnsConfig(pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['10.0.0.1'], searches } }), node(), empty);
  const a = (n: number) => 'A'.repeat(n);
  // 2048 = 128 + 127 * 15 + 15 (distinct paths: the dnsConfig merge drops duplicates before the limits apply)
  const list2048 = [a(128), ...Array.from({ length: 15 }, (_, i) => String.fromCharCode(66 + i).repeat(127))];
  const searchEvent = (applied: string[]) => ({
    about: 'pod',
    type: 'Warning',
    reason: 'DNSConfigForming',
    message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${applied.join(' ')}`,
  });
  const base = ['testNS.svc.TEST', 'svc.TEST', 'TEST'];
  const numbered = (to: number) => Array.from({ length: to - 3 }, (_, i) => String(i + 4));
  const cases: Array<[string, string[], string[], boolean]> = [
    ['valid: 3 search paths', base, base, false],
    ['valid: 5 search paths', [...base, 'AAA', 'BBB'], [...base, 'AAA', 'BBB'], false],
    ['invalid: a search path longer than 253 characters', [...base, 'AAA', 'B'.repeat(256), 'BBB'], [...base, 'AAA', 'BBB'], true],
    ['valid: 2048 characters in the search line', list2048, list2048, false],
    ['invalid: 2050 characters in the search line', [...list2048, 'B'], list2048, true],
    ['valid: 7 search paths', [...base, 'AAA', 'BBB', 'CCC', 'DDD'], [...base, 'AAA', 'BBB', 'CCC', 'DDD'], false],
    ['valid: 32 search paths', [...base, ...numbered(32)], [...base, ...numbered(32)], false],
    ['invalid: 33 search paths', [...base, ...numbered(33)], [...base, ...numbered(32)], true],
  ];
  test.each(cases)('%s', (_desc, searches, applied, event) => {
    const { dnsConfig, events } = withSearches(searches);
    expect(dnsConfig.searches).toEqual(applied);
    expect(events).toEqual(event ? [searchEvent(applied)] : []);
  });

  test.each([
    [['127.0.0.1'], ['127.0.0.1'], false],
    [['127.0.0.1', '10.0.0.10', '8.8.8.8'], ['127.0.0.1', '10.0.0.10', '8.8.8.8'], false],
    [['127.0.0.1', '10.0.0.10', '8.8.8.8', '1.2.3.4'], ['127.0.0.1', '10.0.0.10', '8.8.8.8'], true],
  ])('nameservers %j -> %j', (nameservers, applied, event) => {
    const { dnsConfig, events } = podDnsConfig(pod({ dnsPolicy: 'None', dnsConfig: { nameservers } }), node(), empty);
    expect(dnsConfig.servers).toEqual(applied);
    expect(events).toEqual(
      event
        ? [{ about: 'pod', type: 'Warning', reason: 'DNSConfigForming', message: `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${applied.join(' ')}` }]
        : [],
    );
  });

  test('a cluster DNS server plus three of the dnsConfig: cut to three, with the event', () => {
    const { dnsConfig, events } = podDnsConfig(pod({ dnsPolicy: 'ClusterFirst', dnsConfig: { nameservers: ['10.0.0.11', '10.0.0.12', '10.0.0.13'] } }), node(), host);
    expect(dnsConfig.servers).toEqual(['10.0.0.10', '10.0.0.11', '10.0.0.12']);
    expect(events.map((e) => e.reason)).toEqual(['DNSConfigForming']);
  });
});

describe('resolvConfLimitWarning (kubelet CheckLimitsForResolvConf)', () => {
  const search = (n: number) => `search ${Array.from({ length: n }, (_, i) => `d${i}.example`).join(' ')}\n`;
  test.each([
    ['within the limits', search(29), 'cluster.local', undefined],
    ['more than 29 domains with a cluster domain', search(30), 'cluster.local', "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 29 domains!"],
    ['32 domains without a cluster domain', search(32), '', undefined],
    ['a path over 253 characters', `search ${'a'.repeat(254)}\n`, '', 'Resolv.conf file "/etc/resolv.conf" contains a search path which length is more than allowed 253 chars!'],
    ['a search line over 2048 characters', `search ${Array.from({ length: 9 }, (_, i) => String.fromCharCode(97 + i).repeat(250)).join(' ')}\n`, '', "Resolv.conf file '/etc/resolv.conf' contains search line which length is more than allowed 2048 chars!"],
    ['a nameserver line without an address', 'nameserver\n', '', 'nameserver list is empty '],
  ])('%s', (_desc, text, domain, warning) => {
    expect(resolvConfLimitWarning('/etc/resolv.conf', text, domain)).toBe(warning);
  });

  test('a file that cannot be read is the warning itself', () => {
    expect(resolvConfLimitWarning('/x', undefined, '', "ENOENT: no such file or directory, open '/x'")).toBe("ENOENT: no such file or directory, open '/x'");
  });
});
