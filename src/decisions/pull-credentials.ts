// Registry credentials of a pull as kubelet finds them (pkg/credentialprovider): keyrings from the pod's
// imagePullSecrets and from the node's docker config file, looked up by the image's repository with kubelet's URL, glob and port matching.
import type { V1Secret } from '@kubernetes/client-node';
import { parseImageReference } from '../core/image-reference.js';

/** One registry login of a docker config. */
export interface RegistryCredential {
  username: string;
  password: string;
}

/** Keys (registry globs with an optional path) and their credentials, in kubelet's lookup order. */
export interface DockerKeyring {
  entries: { key: string; credentials: RegistryCredential[] }[];
}

/** The docker config's key for Docker Hub (`https://index.docker.io/v1/` reads as this host). */
const defaultRegistryHost = 'index.docker.io';

/** A docker config's logins by location (`host[:port][/path]`, perhaps a URL), in the file's order. */
export type DockerConfig = [location: string, credential: RegistryCredential][];

/**
 * A JSON object's field as Go's encoding/json decodes it into a struct: every key equal to the field's name but for case
 * is assigned in the document's order, so the last one wins.
 */
function goField(object: Record<string, unknown>, name: string): unknown {
  const lower = name.toLowerCase();
  const key = Object.keys(object).findLast((k) => k.toLowerCase() === lower);
  return key === undefined ? undefined : object[key];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A string field of an entry, as Go decodes it into a string: absent or null is empty, another type an error. */
function stringField(entry: Record<string, unknown>, name: string): string {
  const value = goField(entry, name);
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new Error(`${name}: cannot unmarshal ${Array.isArray(value) ? 'array' : typeof value} into a string`);
  return value;
}

/** A docker config entry's login: `auth` (base64 of user:password), when set, wins over username and password. */
function entryCredential(entry: unknown): RegistryCredential {
  // Go decodes a null entry as an empty login, which kubelet's keyring keeps.
  if (entry === null) return { username: '', password: '' };
  if (!isObject(entry)) throw new Error('cannot unmarshal a docker config entry that is not an object');
  const auth = stringField(entry, 'auth');
  if (auth !== '') {
    const decoded = Buffer.from(auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon === -1) throw new Error('auth: must be formatted as base64(username:password)');
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  return { username: stringField(entry, 'username'), password: stringField(entry, 'password') };
}

/** The logins of a `.dockercfg`-shaped object (location -> entry); an entry that cannot be read throws naming it. */
function dockerConfigOf(config: unknown): DockerConfig {
  if (config === null || config === undefined) return [];
  if (!isObject(config)) throw new Error('cannot unmarshal a docker config that is not an object');
  return Object.entries(config).map(([location, entry]) => {
    try {
      return [location, entryCredential(entry)];
    } catch (err) {
      throw new Error(`${location}: ${(err as Error).message}`);
    }
  });
}

/** A legacy `.dockercfg` file's text (a map of locations to logins); throws when it is not one. */
export function parseDockercfg(text: string): DockerConfig {
  return dockerConfigOf(JSON.parse(text));
}

/** A `config.json` file's text: the logins under its `auths` (none when it has no `auths`); throws when it is not one. */
export function parseDockerConfigJSON(text: string): DockerConfig {
  const file: unknown = JSON.parse(text);
  if (!isObject(file)) throw new Error('cannot unmarshal a docker config.json that is not an object');
  return dockerConfigOf(goField(file, 'auths'));
}

/**
 * The key a docker config location is stored under: host (with its port as written), plus the path unless it is
 * empty, `/`, or starts `/v1/` or `/v2/` (then cut to what follows). Read as Go's url.Parse does, not the WHATWG URL
 * parser, which refuses a glob host such as `*.0.0.1` (it reads it as a malformed IPv4 address).
 */
function keyOf(location: string): string {
  const rest = location.replace(/^https?:\/\//, '').replace(/[?#].*$/s, '');
  const slash = rest.indexOf('/');
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  const host = authority.slice(authority.lastIndexOf('@') + 1);
  let path = slash === -1 ? '' : rest.slice(slash);
  if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
  return path.length > 0 && path !== '/' ? host + path : host;
}

/**
 * The docker config of a pull secret, as kubelet reads it: `auths` of `.dockerconfigjson` in a
 * `kubernetes.io/dockerconfigjson` secret, `.dockercfg` in a `kubernetes.io/dockercfg` one; any other secret holds none
 * and is skipped. A config that cannot be read throws an error naming the secret.
 */
function secretDockerConfig(secret: V1Secret): DockerConfig {
  const key = secret.type === 'kubernetes.io/dockerconfigjson' ? '.dockerconfigjson' : secret.type === 'kubernetes.io/dockercfg' ? '.dockercfg' : undefined;
  const data = key === undefined ? '' : (secret.data?.[key] ?? '');
  if (data === '') return [];
  const text = Buffer.from(data, 'base64').toString('utf8');
  try {
    return key === '.dockerconfigjson' ? parseDockerConfigJSON(text) : parseDockercfg(text);
  } catch (err) {
    throw new Error(`pull secret ${secret.metadata?.namespace}/${secret.metadata?.name}: ${key}: ${(err as Error).message}`);
  }
}

/**
 * kubelet's BasicDockerKeyring of docker configs: every config's logins in one index, keys in reverse lexical order (a
 * longer path before its prefix), a key's logins in the order added.
 */
export function makeKeyring(configs: DockerConfig[]): DockerKeyring {
  const byKey = new Map<string, RegistryCredential[]>();
  for (const config of configs) {
    for (const [location, credential] of config) {
      const key = keyOf(location);
      byKey.set(key, [...(byKey.get(key) ?? []), credential]);
    }
  }
  return { entries: [...byKey.keys()].sort().reverse().map((key) => ({ key, credentials: byKey.get(key)! })) };
}

/**
 * kubelet's keyring of the pod's pull secrets (MakeDockerKeyring): the logins of all of them in one keyring. A docker
 * config that cannot be read, or an entry's unreadable `auth`, throws an error naming the secret.
 */
export function keyringFromSecrets(secrets: V1Secret[]): DockerKeyring {
  return makeKeyring(secrets.map(secretDockerConfig));
}

/** Go's filepath.Match for one host label (no separators in it); undefined for a malformed pattern. */
function globMatch(pattern: string, name: string): boolean | undefined {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '\\') {
      if (i + 1 >= pattern.length) return undefined;
      re += `\\${pattern[++i]}`;
    } else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end === -1) return undefined;
      let body = pattern.slice(i + 1, end);
      if (body.startsWith('^')) body = `^${body.slice(1)}`;
      re += `[${body.replace(/[\]\\]/g, '\\$&')}]`;
      i = end;
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 's').test(name);
}

/** Host labels and port of `host[:port][/path]`, and the path. */
function splitLocation(location: string): { labels: string[]; port: string; path: string } {
  const slash = location.indexOf('/');
  const hostPort = slash === -1 ? location : location.slice(0, slash);
  const path = slash === -1 ? '' : location.slice(slash);
  const m = /^(.*?)(?::(\d*))?$/.exec(hostPort)!;
  return { labels: m[1]!.split('.'), port: m[2] ?? '', path };
}

/**
 * kubelet's URLsMatch: the same port, the same number of host labels each matching its glob (`*.example.com`), and
 * the target's path starting with the key's.
 */
export function registryKeyMatches(key: string, target: string): boolean {
  const glob = splitLocation(key);
  const image = splitLocation(target);
  if (glob.port !== image.port || glob.labels.length !== image.labels.length || !image.path.startsWith(glob.path)) return false;
  return glob.labels.every((label, i) => globMatch(label, image.labels[i]!) === true);
}

/** Docker Hub images: no registry host, or docker.io / index.docker.io. */
function isDefaultRegistry(repository: string): boolean {
  const [first, rest] = [repository.split('/')[0]!, repository.includes('/')];
  if (first === '') return false;
  if (!rest || first === 'docker.io' || first === 'index.docker.io') return true;
  return !/[.:]/.test(first) && first !== 'localhost';
}

/**
 * The credentials to try for an image, in order (kubelet's Lookup on the image's normalized repository); empty when
 * none match, and the image is pulled anonymously.
 */
export function lookupCredentials(keyring: DockerKeyring, image: string): RegistryCredential[] {
  let repository: string;
  try {
    const ref = parseImageReference(image);
    repository = `${ref.domain}/${ref.path}`;
  } catch {
    return [];
  }
  const found = keyring.entries.filter((e) => registryKeyMatches(e.key, repository)).flatMap((e) => e.credentials);
  if (found.length > 0 || !isDefaultRegistry(repository)) return found;
  return keyring.entries.filter((e) => e.key === defaultRegistryHost).flatMap((e) => e.credentials);
}
