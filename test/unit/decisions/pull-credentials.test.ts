// kubelet's credential keyring (pkg/credentialprovider): pull secrets of both types, `auth` over username/password,
// the host/glob/port/path matching of URLsMatch, the order of lookups, and Docker Hub's default key.
import type { V1Secret } from '@kubernetes/client-node';
import { keyringFromSecrets, lookupCredentials, registryKeyMatches } from '../../../src/decisions/pull-credentials.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const auth = (user: string, password: string) => ({ auth: b64(`${user}:${password}`) });

function dockerConfigJson(name: string, auths: Record<string, unknown>): V1Secret {
  return { metadata: { name, namespace: 'ns' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) } };
}
function dockerCfg(name: string, config: Record<string, unknown>): V1Secret {
  return { metadata: { name, namespace: 'ns' }, type: 'kubernetes.io/dockercfg', data: { '.dockercfg': b64(JSON.stringify(config)) } };
}

describe('registryKeyMatches (kubelet URLsMatch)', () => {
  test.each([
    ['127.0.0.1:5000', '127.0.0.1:5000/nodelet/busybox', true],
    ['127.0.0.1:5000', '127.0.0.1:5001/nodelet/busybox', false], // the port must be the same
    ['127.0.0.1', '127.0.0.1:5000/nodelet/busybox', false], // no port is not any port
    ['*.0.0.1:5000', '127.0.0.1:5000/nodelet/busybox', true],
    ['*.example.com', 'registry.example.com/app', true],
    ['*.example.com', 'example.com/app', false], // one glob per label: the label counts differ
    ['*.example.com', 'a.b.example.com/app', false],
    ['reg?stry.example.com', 'registry.example.com/app', true],
    ['r[a-d]gistry.example.com', 'registry.example.com/app', false],
    ['r[e]gistry.example.com', 'registry.example.com/app', true],
    ['r[egistry.example.com', 'registry.example.com/app', false], // a malformed glob matches nothing
    ['registry.example.com/team', 'registry.example.com/team/app', true],
    ['registry.example.com/team', 'registry.example.com/other/app', false],
  ])('%s matches %s: %s', (key, target, matches) => {
    expect(registryKeyMatches(key, target)).toBe(matches);
  });
});

describe('keyring from pull secrets', () => {
  test('dockerconfigjson: the auth field wins over username and password; the URL scheme and /v2/ are dropped', () => {
    const keyring = keyringFromSecrets([
      dockerConfigJson('a', { 'https://127.0.0.1:5000/v2/': { username: 'ignored', password: 'ignored', ...auth('u1', 'p:1') } }),
    ]);
    expect(keyring.entries).toEqual([{ key: '127.0.0.1:5000', credentials: [{ username: 'u1', password: 'p:1' }] }]);
    expect(lookupCredentials(keyring, '127.0.0.1:5000/nodelet/busybox:1.35')).toEqual([{ username: 'u1', password: 'p:1' }]);
    expect(lookupCredentials(keyring, '127.0.0.1:5001/nodelet/busybox:1.35')).toEqual([]);
  });

  test('a glob key with a port, written as a URL, matches an IP registry (WHATWG URL would refuse the host)', () => {
    const keyring = keyringFromSecrets([dockerCfg('glob', { 'https://*.0.0.1:5000': auth('g', 'x'), 'http://user@reg.example.com:443/v1/team?x#y': auth('t', 'x') })]);
    expect(keyring.entries.map((e) => e.key)).toEqual(['reg.example.com:443/team', '*.0.0.1:5000']);
    expect(lookupCredentials(keyring, `127.0.0.1:5000/nodelet/private@sha256:${'b'.repeat(64)}`).map((c) => c.username)).toEqual(['g']);
    expect(lookupCredentials(keyring, 'reg.example.com:443/team/app:1').map((c) => c.username)).toEqual(['t']);
  });

  test('dockercfg with username and password; a pull by digest looks up its repository', () => {
    const keyring = keyringFromSecrets([dockerCfg('b', { 'reg.example.com': { username: 'u2', password: 'p2' } })]);
    expect(lookupCredentials(keyring, `reg.example.com/app@sha256:${'a'.repeat(64)}`)).toEqual([{ username: 'u2', password: 'p2' }]);
  });

  test('every matching login, all secrets in one keyring: longer paths first, then reverse lexical order of keys', () => {
    const keyring = keyringFromSecrets([
      dockerConfigJson('first', { 'reg.example.com': auth('host', 'x'), 'reg.example.com/team': auth('team', 'x'), 'other.example.com': auth('other', 'x') }),
      dockerCfg('second', { '*.example.com': auth('glob', 'x') }),
    ]);
    expect(lookupCredentials(keyring, 'reg.example.com/team/app:1').map((c) => c.username)).toEqual(['team', 'host', 'glob']);
    expect(lookupCredentials(keyring, 'reg.example.com/app:1').map((c) => c.username)).toEqual(['host', 'glob']);
    // kubelet's MakeDockerKeyring adds every secret to one keyring: a later secret's key can sort before an earlier one's.
    const union = keyringFromSecrets([dockerCfg('glob', { '*.example.com': auth('glob', 'x') }), dockerCfg('host', { 'reg.example.com': auth('host', 'x') })]);
    expect(lookupCredentials(union, 'reg.example.com/app:1').map((c) => c.username)).toEqual(['host', 'glob']);
    // The same key in two secrets: their logins in the pods' order.
    const same = keyringFromSecrets([dockerCfg('one', { 'reg.example.com': auth('one', 'x') }), dockerConfigJson('two', { 'https://reg.example.com/v1/': auth('two', 'x') })]);
    expect(same.entries).toEqual([{ key: 'reg.example.com', credentials: [{ username: 'one', password: 'x' }, { username: 'two', password: 'x' }] }]);
  });

  test("fields as Go's encoding/json reads them: case-insensitive names, null entries empty, a wrong type an error", () => {
    const keyring = keyringFromSecrets([
      { metadata: { name: 'cased', namespace: 'ns' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(JSON.stringify({ Auths: { 'reg.example.com': { Username: 'U', PASSWORD: 'P' }, 'null.example.com': null } })) } },
    ]);
    expect(lookupCredentials(keyring, 'reg.example.com/app').map((c) => c.username)).toEqual(['U']);
    expect(lookupCredentials(keyring, 'null.example.com/app')).toEqual([{ username: '', password: '' }]);
    expect(() => keyringFromSecrets([dockerCfg('typed', { 'reg.example.com': { username: 5 } })])).toThrow('pull secret ns/typed: .dockercfg: reg.example.com: username: cannot unmarshal number into a string');
    // Keys equal but for case all reach the field, in the document's order: the last wins, an exact one or not.
    const both = (first: string, second: string) =>
      lookupCredentials(keyringFromSecrets([dockerCfg('twice', { 'reg.example.com': { [first]: 'first', [second]: 'second' } })]), 'reg.example.com/app').map((c) => c.username);
    expect(both('username', 'USERNAME')).toEqual(['second']);
    expect(both('USERNAME', 'username')).toEqual(['second']);
  });

  test("Docker Hub images use the index.docker.io key (docker's https://index.docker.io/v1/)", () => {
    const keyring = keyringFromSecrets([dockerConfigJson('hub', { 'https://index.docker.io/v1/': auth('hub', 'x') })]);
    for (const image of ['busybox', 'library/busybox:1', 'docker.io/team/app']) expect(lookupCredentials(keyring, image).map((c) => c.username)).toEqual(['hub']);
    expect(lookupCredentials(keyring, 'localhost/app')).toEqual([]);
    expect(lookupCredentials(keyring, 'quay.io/app')).toEqual([]);
  });

  test('a secret of another type, or without its key, is skipped; a docker config that is not JSON is an error naming the secret', () => {
    expect(keyringFromSecrets([{ metadata: { name: 'plain', namespace: 'ns' }, type: 'Opaque', data: { '.dockercfg': b64('{"reg.example.com":{}}') } }]).entries).toEqual([]);
    expect(keyringFromSecrets([{ metadata: { name: 'empty', namespace: 'ns' }, type: 'kubernetes.io/dockercfg', data: {} }]).entries).toEqual([]);
    expect(() => keyringFromSecrets([{ metadata: { name: 'broken', namespace: 'ns' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64('{') } }])).toThrow(
      /^pull secret ns\/broken: \.dockerconfigjson: /,
    );
    expect(() => keyringFromSecrets([dockerCfg('noauth', { 'reg.example.com': { auth: b64('no-colon') } })])).toThrow(
      'pull secret ns/noauth: .dockercfg: reg.example.com: auth: must be formatted as base64(username:password)',
    );
  });

  test('an invalid image name has no credentials', () => {
    const keyring = keyringFromSecrets([dockerCfg('b', { 'reg.example.com': auth('u', 'p') })]);
    expect(lookupCredentials(keyring, 'Reg.example.com/UPPER')).toEqual([]);
  });
});
