// The node's InternalIP as kubelet's NodeAddress setter chooses it at every status update, and kubelet's validation of
// --node-ip (it must still be on the host).
import type { NetworkInterfaceInfo } from 'node:os';
import { chooseNodeIP, defaultRouteInterface, detectNodeIP, NodeIPError, nodeIPProblem, type NodeIPFacts } from '../../../src/host/node.js';

const addr = (address: string, internal = false): NetworkInterfaceInfo =>
  address.includes(':')
    ? { address, family: 'IPv6', internal, netmask: 'ffff:ffff:ffff:ffff::', mac: '00:00:00:00:00:00', cidr: `${address}/64`, scopeid: 0 }
    : { address, family: 'IPv4', internal, netmask: '255.255.255.0', mac: '00:00:00:00:00:00', cidr: `${address}/24` };
const host = (route: string | undefined, interfaces: Record<string, string[]>): NodeIPFacts => ({
  defaultRouteInterface: route,
  interfaces: Object.fromEntries(Object.entries(interfaces).map(([name, list]) => [name, list.map((a) => addr(a, name === 'lo'))])),
});

const machine = host('eth1', { lo: ['127.0.0.1', '::1'], eth0: ['192.0.2.5'], eth1: ['fe80::1', '198.51.100.7', '2001:db8::7'] });

test("without --node-ip: the default route's interface's IPv4 address, then any non-loopback one; a hostname that is an IP wins", () => {
  expect(chooseNodeIP('', 'node-a', machine)).toBe('198.51.100.7');
  expect(chooseNodeIP('', 'node-a', { ...machine, defaultRouteInterface: undefined })).toBe('192.0.2.5');
  expect(chooseNodeIP('0.0.0.0', 'node-a', machine)).toBe('198.51.100.7');
  expect(chooseNodeIP('', '203.0.113.9', machine)).toBe('203.0.113.9');
  expect(() => chooseNodeIP('', 'node-a', host(undefined, { lo: ['127.0.0.1'] }))).toThrow(
    new NodeIPError("can't get ip address of node node-a: no non-loopback IPv4 address on the host"),
  );
});

test('a change of the host is seen by the next call (nothing is cached)', () => {
  expect(chooseNodeIP('', 'node-a', host('eth1', { eth1: ['198.51.100.7'] }))).toBe('198.51.100.7');
  expect(chooseNodeIP('', 'node-a', host('eth1', { eth1: ['198.51.100.8'] }))).toBe('198.51.100.8');
});

test("--node-ip is kept while it is on the host, in any spelling; otherwise kubelet's validation errors", () => {
  expect(chooseNodeIP('192.0.2.5', 'node-a', machine)).toBe('192.0.2.5');
  expect(chooseNodeIP('2001:db8:0:0:0:0:0:7', 'node-a', machine)).toBe('2001:db8:0:0:0:0:0:7');
  expect(() => chooseNodeIP('192.0.2.6', 'node-a', machine)).toThrow('failed to validate nodeIP: node IP: "192.0.2.6" not found in the host\'s network interfaces');
  expect(nodeIPProblem('not-an-ip', machine)).toBe('nodeIP must be a valid IP address');
  expect(nodeIPProblem('127.0.0.1', machine)).toBe("nodeIP can't be loopback address");
  expect(nodeIPProblem('::1', machine)).toBe("nodeIP can't be loopback address");
  expect(nodeIPProblem('224.0.0.1', machine)).toBe("nodeIP can't be a multicast address");
  expect(nodeIPProblem('ff02::1', machine)).toBe("nodeIP can't be a multicast address");
  expect(nodeIPProblem('169.254.1.1', machine)).toBe("nodeIP can't be a link-local unicast address");
  expect(nodeIPProblem('fe80::1', machine)).toBe("nodeIP can't be a link-local unicast address");
  expect(nodeIPProblem('0.0.0.0', machine)).toBe("nodeIP can't be an all zeros address");
});

test('the default route from /proc/net/route', () => {
  const table = 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n' +
    'eth1\t0064A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n' +
    'eth0\t00000000\t0164A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n';
  expect(defaultRouteInterface(table)).toBe('eth0');
  expect(defaultRouteInterface(table.split('\n').slice(0, 2).join('\n'))).toBeUndefined();
});

test('--node-ip 0.0.0.0 or :: asks for the address to be found, as no --node-ip does', async () => {
  expect(await detectNodeIP('0.0.0.0')).not.toBe('0.0.0.0');
  expect(await detectNodeIP('0.0.0.0')).toBe(await detectNodeIP(''));
  expect(await detectNodeIP('::')).toBe(await detectNodeIP(''));
  expect(await detectNodeIP('192.0.2.9')).toBe('192.0.2.9');
});
