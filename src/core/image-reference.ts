// Image reference grammar ([domain[:port]/]path[:tag][@digest]) as docker, containerd and kubelet read it.

/** A parsed, normalized image reference (`busybox` reads as docker.io / library/busybox). */
export interface ImageReference {
  domain: string;
  path: string;
  tag?: string;
  digest?: string;
}

/** The image string cannot be pulled by any runtime; the pod is invalid, retrying will not help. */
export class InvalidImageReferenceError extends Error {
  override readonly name = 'InvalidImageReferenceError';
  constructor(
    readonly reference: string,
    message: string,
  ) {
    super(message);
  }
}

const alphanumeric = '[a-z0-9]+';
const separator = '(?:[._]|__|[-]+)';
const pathComponent = `${alphanumeric}(?:${separator}${alphanumeric})*`;
const domainComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const domainName = `${domainComponent}(?:\\.${domainComponent})*`;
const ipv6Host = '\\[[a-fA-F0-9:]+\\]';
const domainAndPort = `(?:${domainName}|${ipv6Host})(?::[0-9]+)?`;
const namePattern = `(?:${domainAndPort}/)?${pathComponent}(?:/${pathComponent})*`;
const tagPattern = '[\\w][\\w.-]{0,127}';
const digestPattern = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const referenceRegexp = new RegExp(`^(${namePattern})(?::(${tagPattern}))?(?:@(${digestPattern}))?$`);

const nameMaxLength = 255;
/** Far above any real reference; bounds the regexp's work on hostile input. */
const referenceMaxLength = 4096;

/** Hex lengths of the digest algorithms runtimes can verify. */
const digestHexLength: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };

const defaultDomain = 'docker.io';
const legacyDefaultDomain = 'index.docker.io';
const officialRepoPrefix = 'library/';

/**
 * Parses and normalizes an image reference the way containerd's CRI plugin does before a pull.
 * Throws InvalidImageReferenceError with the distribution library's wording.
 */
export function parseImageReference(ref: string): ImageReference {
  if (ref === '') throw new InvalidImageReferenceError(ref, 'repository name must have at least one component');
  if (ref.length > referenceMaxLength) throw new InvalidImageReferenceError(ref, 'invalid reference format');
  const match = referenceRegexp.exec(ref);
  if (!match) {
    const lowered = ref.toLowerCase();
    if (lowered !== ref && referenceRegexp.test(lowered)) {
      throw new InvalidImageReferenceError(ref, 'invalid reference format: repository name must be lowercase');
    }
    throw new InvalidImageReferenceError(ref, 'invalid reference format');
  }
  const name = match[1] ?? '';
  const tag = match[2];
  const digest = match[3];
  if (name.length > nameMaxLength) {
    throw new InvalidImageReferenceError(ref, `repository name must not be more than ${nameMaxLength} characters`);
  }
  if (digest !== undefined) validateDigest(ref, digest);

  const parsed: ImageReference = normalizedName(name);
  if (tag !== undefined) parsed.tag = tag;
  if (digest !== undefined) parsed.digest = digest;
  return parsed;
}

/** distribution's splitDockerDomain: the registry (docker.io by default) and the path, official images under library/. */
function normalizedName(name: string): { domain: string; path: string } {
  let { domain, path } = splitDomain(name);
  if (domain === legacyDefaultDomain) domain = defaultDomain;
  if (domain === defaultDomain && !path.includes('/')) path = officialRepoPrefix + path;
  return { domain, path };
}

/**
 * Why kubelet's ParseImageName (distribution's ParseNormalizedNamed) refuses a reference, in its words; undefined when
 * it is an image name. Container images are validated before; an image volume's reference is not.
 */
export function imageNameError(ref: string): string | undefined {
  if (/^[a-f0-9]{64}$/.test(ref)) return `invalid repository name (${ref}), cannot specify 64-byte hexadecimal strings`;
  const remote = normalizedName(ref).path.split(':')[0]!;
  if (remote.toLowerCase() !== remote) return `invalid reference format: repository name (${remote}) must be lowercase`;
  try {
    parseImageReference(ref);
    return undefined;
  } catch (err) {
    if (!(err instanceof InvalidImageReferenceError)) throw err;
    return err.message;
  }
}

/** The first component names a registry only if it looks like a host: has a dot or port, is localhost, or has capitals. */
function splitDomain(name: string): { domain: string; path: string } {
  const slash = name.indexOf('/');
  if (slash === -1) return { domain: defaultDomain, path: name };
  const first = name.slice(0, slash);
  const isHost = first.includes('.') || first.includes(':') || first === 'localhost' || first.toLowerCase() !== first;
  return isHost ? { domain: first, path: name.slice(slash + 1) } : { domain: defaultDomain, path: name };
}

function validateDigest(ref: string, digest: string): void {
  const colon = digest.indexOf(':');
  const algorithm = digest.slice(0, colon);
  const hex = digest.slice(colon + 1);
  const expected = digestHexLength[algorithm];
  if (expected === undefined) throw new InvalidImageReferenceError(ref, 'unsupported digest algorithm');
  if (hex.length !== expected) throw new InvalidImageReferenceError(ref, 'invalid checksum digest length');
  if (!/^[a-f0-9]+$/.test(hex)) throw new InvalidImageReferenceError(ref, 'invalid checksum digest format');
}

/**
 * The apiserver's default imagePullPolicy: Always when the tag is `latest` or there is neither tag nor
 * digest, else IfNotPresent. An unparsable reference gets IfNotPresent, as upstream (validation rejects it anyway).
 */
export function defaultImagePullPolicy(image: string): 'Always' | 'IfNotPresent' {
  let ref: ImageReference;
  try {
    ref = parseImageReference(image);
  } catch {
    return 'IfNotPresent';
  }
  if (ref.tag === 'latest') return 'Always';
  return ref.tag === undefined && ref.digest === undefined ? 'Always' : 'IfNotPresent';
}
