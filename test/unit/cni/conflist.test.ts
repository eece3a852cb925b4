// Network configuration loading and validation, the pod CIDR override, and the host-route collision check.
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bridgeNames,
  DEFAULT_LOOPBACK,
  hostLocalSubnets,
  loadConfLists,
  loadPodNetworks,
  parseConfList,
  readConfFiles,
  selectNetworkFromFiles,
  selectPodNetworks,
  usesHostLocal,
  subnetCollisions,
  withPodCidr,
} from '../../../src/cni/conflist.js';
import { NetConfError, type NetConfList } from '../../../src/cni/types.js';
import { parseIpRouteJson, type HostRoute } from '../../../src/host/routes.js';

const repoConfDir = fileURLToPath(new URL('../../../../cni-conf/', import.meta.url));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-conflist-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const bridgeList = (name: string, subnet = '10.50.0.0/24') => ({
  cniVersion: '1.0.0',
  name,
  plugins: [{ type: 'bridge', bridge: 'br9', ipam: { type: 'host-local', subnet, gateway: '10.50.0.1' } }],
});

describe('loading a configuration directory', () => {
  test('reads .conflist, .conf and .json files sorted by name, wrapping single-plugin configurations', async () => {
    await writeFile(join(dir, '20-b.conflist'), JSON.stringify(bridgeList('bnet')));
    await writeFile(join(dir, '10-a.conf'), JSON.stringify({ cniVersion: '0.4.0', name: 'anet', type: 'ptp', mtu: 1400 }));
    await writeFile(join(dir, '30-c.json'), JSON.stringify({ cniVersion: '1.0.0', name: 'cnet', plugins: [{ type: 'loopback' }] }));
    await writeFile(join(dir, 'README.txt'), 'not a config');
    await mkdir(join(dir, 'sub.conf'));

    const lists = await loadConfLists(dir);

    expect(lists.map((l) => l.name)).toEqual(['anet', 'bnet', 'cnet']);
    expect(lists[0]).toEqual({
      cniVersion: '0.4.0',
      name: 'anet',
      disableCheck: false,
      plugins: [{ type: 'ptp', mtu: 1400 }],
      source: join(dir, '10-a.conf'),
    });
  });

  test('a missing directory holds no configurations', async () => {
    expect(await loadConfLists(join(dir, 'nope'))).toEqual([]);
    await expect(loadPodNetworks(join(dir, 'nope'))).rejects.toThrow(NetConfError);
  });

  test('errors name the file and the field', async () => {
    const cases: [unknown, string][] = [
      [{ cniVersion: '1.0.0', plugins: [{ type: 'bridge' }] }, 'name: must be a string'],
      [{ cniVersion: '1.0.0', name: '-bad', plugins: [{ type: 'bridge' }] }, 'name: "-bad" must start'],
      [{ cniVersion: '9.9.9', name: 'n', plugins: [{ type: 'bridge' }] }, 'cniVersion: 9.9.9 is not supported'],
      [{ name: 'n', plugins: [{ type: 'bridge' }] }, 'cniVersion: must be a string'],
      [{ cniVersion: '1.0.0', name: 'n', plugins: [] }, 'plugins: must hold at least one plugin'],
      [{ cniVersion: '1.0.0', name: 'n', plugins: {} }, 'plugins: must be a list'],
      [{ cniVersion: '1.0.0', name: 'n' }, 'plugins: is missing'],
      [{ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'bridge' }, { bridge: 'x' }] }, 'plugins[1].type: must be a non-empty string'],
      [{ cniVersion: '1.0.0', name: 'n', plugins: [{ type: '../bridge' }] }, 'plugins[0].type: "../bridge" is not a plugin file name'],
      [{ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'p', capabilities: { portMappings: 'yes' } }] }, 'plugins[0].capabilities.portMappings: must be true or false'],
      [{ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'p', ipam: {} }] }, 'plugins[0].ipam.type: must be a non-empty string'],
      [{ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'p', runtimeConfig: {} }] }, 'plugins[0].runtimeConfig: is reserved'],
      [{ cniVersion: '1.0.0', name: 'n', disableCheck: 'no', plugins: [{ type: 'p' }] }, 'disableCheck: must be true or false'],
      [[1, 2], 'must be a JSON object'],
    ];
    for (const [conf, message] of cases) {
      const file = join(dir, '50-x.conflist');
      await writeFile(file, JSON.stringify(conf));
      const err = await loadConfLists(dir).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NetConfError);
      const prefix = `${file}: ${message}`;
      expect((err as Error).message.slice(0, prefix.length)).toBe(prefix);
    }
    await writeFile(join(dir, '50-x.conflist'), '{ "name": ');
    await expect(loadConfLists(dir)).rejects.toThrow(`${join(dir, '50-x.conflist')}: not valid JSON`);
  });
});

describe('choosing the pod networks', () => {
  const parsed = (conf: object, source: string): NetConfList => parseConfList(JSON.stringify(conf), source);

  test('the first non-loopback list is the main network; the loopback list is used, or a built-in one', () => {
    const lo = parsed({ cniVersion: '1.0.0', name: 'lo-net', plugins: [{ type: 'loopback' }] }, '05-lo');
    const a = parsed(bridgeList('a'), '10-a');
    const b = parsed(bridgeList('b'), '20-b');
    expect(selectPodNetworks([lo, a, b], dir)).toEqual({ main: a, loopback: lo });
    expect(selectPodNetworks([b], dir)).toEqual({ main: b, loopback: DEFAULT_LOOPBACK });
    expect(() => selectPodNetworks([lo], dir)).toThrow('holds no network configuration besides loopback');
    expect(() => selectPodNetworks([], dir)).toThrow(NetConfError);
    const clash = parsed({ cniVersion: '1.0.0', name: 'a', plugins: [{ type: 'loopback' }] }, '99-lo');
    expect(() => selectPodNetworks([a, clash], dir)).toThrow('"a" is also the name of 10-a');
  });

  test("the repository's cni-conf: bridge nodelet0 on 10.99.0.0/24 with portmap, and loopback", async () => {
    const { main, loopback } = await loadPodNetworks(repoConfDir);
    expect(main.name).toBe('nodelet-bridge');
    expect(main.cniVersion).toBe('1.0.0');
    expect(main.plugins.map((p) => p.type)).toEqual(['bridge', 'portmap']);
    expect(main.plugins[0]).toMatchObject({ bridge: 'nodelet0', isGateway: true, ipMasq: false, hairpinMode: true });
    expect(main.plugins[0]!.ipam).toEqual({
      type: 'host-local',
      ranges: [[{ subnet: '10.99.0.0/24', gateway: '10.99.0.1' }]],
      routes: [{ dst: '0.0.0.0/0' }],
    });
    expect(main.plugins[1]!.capabilities).toEqual({ portMappings: true });
    expect(loopback.name).toBe('nodelet-loopback');
    expect(loopback.plugins).toEqual([{ type: 'loopback' }]);
    expect(hostLocalSubnets(main)).toEqual(['10.99.0.0/24']);
    expect(bridgeNames(main)).toEqual(['nodelet0']);
  });

  test('--pod-cidr replaces the host-local ranges, with the first host address as gateway', async () => {
    const { main } = await loadPodNetworks(repoConfDir, { podCidr: '10.123.4.0/23' });
    expect(main.plugins[0]!.ipam).toEqual({
      type: 'host-local',
      ranges: [[{ subnet: '10.123.4.0/23', gateway: '10.123.4.1' }]],
      routes: [{ dst: '0.0.0.0/0' }],
    });
    expect(main.plugins[1]).toEqual({ type: 'portmap', capabilities: { portMappings: true } });
    expect(hostLocalSubnets(main)).toEqual(['10.123.4.0/23']);
  });

  test('--pod-cidr normalizes host bits, drops legacy single-range keys, and rejects unusable values', () => {
    const legacy = parseConfList(JSON.stringify(bridgeList('legacy')), 'x');
    const over = withPodCidr(legacy, '10.88.7.9/16');
    expect(over.plugins[0]!.ipam).toEqual({ type: 'host-local', ranges: [[{ subnet: '10.88.0.0/16', gateway: '10.88.0.1' }]] });
    expect(legacy.plugins[0]!.ipam).toMatchObject({ subnet: '10.50.0.0/24' });
    expect(withPodCidr(legacy, 'fd00:10::/64').plugins[0]!.ipam).toMatchObject({
      ranges: [[{ subnet: 'fd00:10::/64', gateway: 'fd00:10::1' }]],
    });
    expect(() => withPodCidr(legacy, '10.0.0.0/31')).toThrow('too small');
    expect(() => withPodCidr(legacy, '10.0.0.0')).toThrow('no prefix length');
    expect(() => withPodCidr(legacy, 'banana/24')).toThrow('--pod-cidr');
    const noIpam = parseConfList(JSON.stringify({ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'ptp' }] }), 'y');
    expect(() => withPodCidr(noIpam, '10.0.0.0/24')).toThrow('no plugin uses host-local IPAM');
  });
});

describe('subnetCollisions', () => {
  // Taken from `ip -j route show table all` on a test machine, plus a leftover pod bridge and an overlapping VPN.
  const routes: HostRoute[] = parseIpRouteJson(
    JSON.stringify([
      { dst: 'default', gateway: '192.0.2.1', dev: 'eth0', flags: [] },
      { dst: '192.0.2.0/24', dev: 'eth0', protocol: 'kernel', scope: 'link', prefsrc: '192.0.2.2', flags: [] },
      { type: 'local', dst: '127.0.0.0/8', dev: 'lo', table: 'local', flags: [] },
      { type: 'local', dst: '192.0.2.2', dev: 'eth0', table: 'local', flags: [] },
      { dst: '10.99.0.0/24', dev: 'nodelet0', flags: [] },
      { dst: '10.100.0.0/16', dev: 'tun0', flags: [] },
      { dst: '0.0.0.0/0', dev: 'wg0', table: '51820', flags: [] },
      { dst: 'fd00::/64', dev: 'eth0', flags: [] },
      { dst: 'default', gateway: 'fd00::1', dev: 'eth0', flags: [] },
      { flags: [] },
    ]),
  );

  test('parses iproute2 JSON into routes', () => {
    expect(routes).toHaveLength(9);
    expect(routes[3]).toEqual({ dst: '192.0.2.2', dev: 'eth0', table: 'local', type: 'local' });
  });

  test('finds routes overlapping the pod subnet, ignoring default routes and the pod bridge', () => {
    expect(subnetCollisions('10.99.0.0/24', routes, ['nodelet0'])).toEqual([]);
    expect(subnetCollisions('10.99.0.0/24', routes).map((r) => r.dst)).toEqual(['10.99.0.0/24']);
    expect(subnetCollisions('10.100.5.0/24', routes).map((r) => r.dev)).toEqual(['tun0']);
    expect(subnetCollisions('10.0.0.0/8', routes, ['nodelet0']).map((r) => r.dst)).toEqual(['10.100.0.0/16']);
    expect(subnetCollisions('192.0.2.128/25', routes).map((r) => r.dst)).toEqual(['192.0.2.0/24']);
    expect(subnetCollisions('192.0.2.0/30', routes).map((r) => r.dst)).toEqual(['192.0.2.0/24', '192.0.2.2']);
    expect(subnetCollisions('127.0.0.0/16', routes).map((r) => r.dev)).toEqual(['lo']);
    expect(subnetCollisions('172.31.0.0/16', routes)).toEqual([]);
    expect(subnetCollisions('fd00::/48', routes).map((r) => r.dst)).toEqual(['fd00::/64']);
  });
});

describe('the network of a watched directory (containerd\'s choice)', () => {
  const kindnet = {
    cniVersion: '0.3.1',
    name: 'kindnet',
    plugins: [
      { type: 'ptp', ipMasq: false, ipam: { type: 'host-local', dataDir: '/run/cni-ipam-state', routes: [{ dst: '0.0.0.0/0' }], ranges: [[{ subnet: '10.244.1.0/24' }]] }, mtu: 1500 },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
  const file = (name: string, conf: unknown) => ({ path: `/etc/cni/net.d/${name}`, text: typeof conf === 'string' ? conf : JSON.stringify(conf) });

  test('none while the directory has no usable file: go-cni\'s "no network config found"', async () => {
    expect(selectNetworkFromFiles([], '/etc/cni/net.d')).toEqual({ loopback: DEFAULT_LOOPBACK, problem: 'no network config found in /etc/cni/net.d' });
    const onlyLoopback = selectNetworkFromFiles([file('99-lo.conf', { cniVersion: '1.0.0', name: 'lo', type: 'loopback' })], '/d');
    expect(onlyLoopback.main).toBeUndefined();
    expect(onlyLoopback.loopback.name).toBe('lo');
    expect(await readConfFiles(join(dir, 'missing'))).toEqual([]);
  });

  test('the lexicographically first file is the network, whatever its ending; later ones are not read', () => {
    const picked = selectNetworkFromFiles(
      [file('20-b.conflist', bridgeList('b')), file('10-kindnet.conflist', kindnet), file('30-broken.conf', '{')],
      '/etc/cni/net.d',
    );
    expect(picked.main?.name).toBe('kindnet');
    expect(picked.main?.source).toBe('/etc/cni/net.d/10-kindnet.conflist');
    expect(picked.problem).toBeUndefined();
    expect(usesHostLocal(picked.main!)).toBe(true);
    expect(hostLocalSubnets(picked.main!)).toEqual(['10.244.1.0/24']);
    // Names are compared whole, endings included: 10-a.conflist sorts before 10-a.json.
    const single = selectNetworkFromFiles([file('10-a.json', { cniVersion: '0.4.0', name: 'one', type: 'ptp', ipam: { type: 'host-local' } }), file('10-a.conflist', kindnet)], '/d');
    expect(single.main?.name).toBe('kindnet');
  });

  test('an unusable file before the first usable one fails the load, as in containerd', () => {
    const picked = selectNetworkFromFiles([file('05-half.conflist', '{"cniVersion":'), file('10-kindnet.conflist', kindnet)], '/d');
    expect(picked.main).toBeUndefined();
    expect(picked.problem).toMatch(/^\/etc\/cni\/net.d\/05-half.conflist: not valid JSON/);
  });

  test('reads only .conf, .conflist and .json files, sorted by name', async () => {
    await writeFile(join(dir, '10-kindnet.conflist'), JSON.stringify(kindnet));
    await writeFile(join(dir, '05-notes.txt'), 'not a configuration');
    await writeFile(join(dir, '01-x.conflist.tmp'), '{');
    await mkdir(join(dir, '00-dir.conf'));
    expect((await readConfFiles(dir)).map((f) => f.path)).toEqual([join(dir, '10-kindnet.conflist')]);
  });

  test("ptp's per-pod host routes through veths do not collide with the pod subnet", () => {
    const routes: HostRoute[] = [{ dst: '10.244.1.5', dev: 'veth1a2b3c4d' }, { dst: '10.244.2.0/24', dev: 'eth0' }];
    expect(subnetCollisions('10.244.1.0/24', routes)).toEqual([]);
    expect(subnetCollisions('10.244.2.0/24', routes).map((r) => r.dev)).toEqual(['eth0']);
  });
});
