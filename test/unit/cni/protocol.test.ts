// CNI protocol helpers and CIDR arithmetic.
import { cidrsOverlap, firstHost, formatCidr, formatIp, networkOf, parseCidr, parseIp } from '../../../src/cni/cidr.js';
import {
  compareVersions,
  convertResult,
  formatCniArgs,
  parseCniArgs,
  parseResult,
  podIdentity,
  resultPodIPs,
  validateRuntimeConf,
} from '../../../src/cni/protocol.js';
import type { CniResult } from '../../../src/cni/types.js';

describe('CNI_ARGS', () => {
  test('parses and formats key/value pairs, keeping "=" inside values', () => {
    const text = 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;;X=a=b';
    const pairs = parseCniArgs(text);
    expect(pairs).toEqual([
      ['IgnoreUnknown', '1'],
      ['K8S_POD_NAMESPACE', 'default'],
      ['K8S_POD_NAME', 'web-0'],
      ['X', 'a=b'],
    ]);
    expect(formatCniArgs(pairs)).toBe('IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;X=a=b');
    expect(parseCniArgs(undefined)).toEqual([]);
    expect(() => parseCniArgs('A=1;oops')).toThrow(expect.objectContaining({ code: 4 }));
    expect(podIdentity(pairs)).toBe('default/web-0');
    expect(podIdentity([])).toBeUndefined();
  });
});

describe('results', () => {
  test('a result nested past the limit is a decoding failure naming the field, not a crash of the walks after it', () => {
    const deep = `{"cniVersion":"1.0.0","dns":${'{"x":'.repeat(5000)}1${'}'.repeat(5000)}}`;
    expect(() => parseResult(deep, 'bridge')).toThrow(/^plugin bridge: result field dns(\.x)+\.+: nested more than 1000 levels deep$/);
    expect(parseResult('{"cniVersion":"1.0.0","ips":[]}', 'bridge')).toEqual({ cniVersion: '1.0.0', ips: [] });
  });

  const result: CniResult = {
    cniVersion: '1.0.0',
    interfaces: [
      { name: 'nodelet0', mac: '02:00:00:00:00:01' },
      { name: 'veth1', mac: '02:00:00:00:00:02' },
      { name: 'eth0', mac: '02:00:00:00:00:03', sandbox: '/run/netns/x' },
    ],
    ips: [
      { address: 'fd00:99::5/64', gateway: 'fd00:99::1', interface: 2 },
      { address: '10.99.0.5/24', gateway: '10.99.0.1', interface: 2 },
      { address: '10.99.0.1/24', interface: 0 },
    ],
    routes: [{ dst: '0.0.0.0/0' }],
    dns: {},
  };

  test('converts between 1.0.0 and 0.3.x/0.4.0 (the per-ip version field)', () => {
    const old = convertResult(result, '0.4.0');
    expect(old.cniVersion).toBe('0.4.0');
    expect(old.ips!.map((ip) => ip.version)).toEqual(['6', '4', '4']);
    expect(old.interfaces).toEqual(result.interfaces);
    const back = convertResult(old, '1.0.0');
    expect(back).toEqual(result);
    expect(() => convertResult(result, '0.2.0')).toThrow(expect.objectContaining({ code: 1 }));
    expect(() => convertResult({ ...result, cniVersion: '0.1.0' }, '1.0.0')).toThrow(expect.objectContaining({ code: 1 }));
  });

  test('pod IPs are the sandbox interface addresses, bare, IPv4 first', () => {
    expect(resultPodIPs(result)).toEqual(['10.99.0.5', 'fd00:99::5']);
    expect(resultPodIPs({ cniVersion: '1.0.0', ips: [{ address: '10.1.0.2/16' }] })).toEqual(['10.1.0.2']);
    expect(resultPodIPs({ cniVersion: '1.0.0' })).toEqual([]);
  });

  test('versions compare numerically', () => {
    expect(compareVersions('0.4.0', '0.10.0')).toBeLessThan(0);
    expect(compareVersions('1.0.0', '0.4.0')).toBeGreaterThan(0);
    expect(compareVersions('1.0', '1.0.0')).toBe(0);
  });

  test('runtime parameters are validated as the spec says', () => {
    const rt = { containerId: 'abc_1.x-y', netns: '/run/netns/x', ifName: 'eth0', args: [], capabilityArgs: {} };
    expect(() => validateRuntimeConf(rt, true)).not.toThrow();
    expect(() => validateRuntimeConf({ ...rt, netns: '' }, false)).not.toThrow();
    expect(() => validateRuntimeConf({ ...rt, netns: '' }, true)).toThrow('CNI_NETNS');
    expect(() => validateRuntimeConf({ ...rt, containerId: '' }, false)).toThrow('CNI_CONTAINERID');
    expect(() => validateRuntimeConf({ ...rt, ifName: 'a-very-long-ifname' }, false)).toThrow('CNI_IFNAME');
    expect(() => validateRuntimeConf({ ...rt, ifName: '..' }, false)).toThrow('CNI_IFNAME');
  });
});

describe('CIDR arithmetic', () => {
  test('parses and formats IPv4 and IPv6', () => {
    expect(parseIp('10.0.0.1')).toEqual({ family: 4, value: 0x0a000001n });
    expect(formatIp(parseIp('2001:db8:0:0:1:0:0:1')!)).toBe('2001:db8::1:0:0:1');
    expect(formatIp(parseIp('::ffff:10.0.0.1')!)).toBe('::ffff:a00:1');
    expect(formatIp(parseIp('::')!)).toBe('::');
    expect(formatIp(parseIp('fe80::1%eth0')!)).toBe('fe80::1');
    expect(parseIp('10.0.0')).toBeUndefined();
    expect(formatCidr(networkOf(parseCidr('10.1.2.3/20')))).toBe('10.1.0.0/20');
    expect(formatIp(firstHost(parseCidr('fd00:1::/64')))).toBe('fd00:1::1');
    expect(parseCidr('10.0.0.1')).toEqual({ family: 4, address: 0x0a000001n, prefix: 32 });
    expect(() => parseCidr('10.0.0.0/33')).toThrow('prefix length');
    expect(() => parseCidr('10.0.0.0/abc')).toThrow('prefix length');
  });

  test('overlap needs a shared address and the same family', () => {
    expect(cidrsOverlap(parseCidr('10.0.0.0/8'), parseCidr('10.99.0.0/24'))).toBe(true);
    expect(cidrsOverlap(parseCidr('10.99.1.0/24'), parseCidr('10.99.0.0/24'))).toBe(false);
    expect(cidrsOverlap(parseCidr('0.0.0.0/0'), parseCidr('::/0'))).toBe(false);
  });
});
