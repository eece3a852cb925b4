// Bootstrap tokens (`<id>.<secret>`) and the detached JWS with which the bootstrap signer vouches for cluster-info.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** A bootstrap token: the public id names the Secret `bootstrap-token-<id>`, the secret authenticates and signs. */
export interface BootstrapToken {
  id: string;
  secret: string;
}

/** Input nodelet refuses before any request: a malformed token, CA hash or flag combination. */
export class BootstrapInputError extends Error {
  override name = 'BootstrapInputError';
}

const tokenPattern = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;

/** Parses `[a-z0-9]{6}.[a-z0-9]{16}` (cluster-bootstrap's BootstrapTokenPattern). */
export function parseBootstrapToken(text: string): BootstrapToken {
  const m = tokenPattern.exec(text);
  if (!m) throw new BootstrapInputError(`the bootstrap token "${text.slice(0, 7)}..." does not match the pattern [a-z0-9]{6}.[a-z0-9]{16}`);
  return { id: m[1]!, secret: m[2]! };
}

/** The bearer token a bootstrap token authenticates with: `<id>.<secret>`. */
export const bearerToken = (t: BootstrapToken): string => `${t.id}.${t.secret}`;

const b64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

/**
 * The detached JWS (RFC 7515 appendix F: `<header>..<signature>`) of `content` under the token: HS256 keyed with the
 * secret, the token id as `kid` in the protected header. What cluster-bootstrap's ComputeDetachedSignature makes
 * (go-jose writes the header `{"alg":"HS256","kid":"<id>"}`).
 */
export function detachedSignature(content: string, token: BootstrapToken): string {
  const header = b64url(JSON.stringify({ alg: 'HS256', kid: token.id }));
  const signature = createHmac('sha256', token.secret).update(`${header}.${b64url(content)}`).digest();
  return `${header}..${b64url(signature)}`;
}

/**
 * Why a detached JWS does not vouch for `content` under the token, or undefined when it does. The header must be
 * HS256 with the token's id as kid; the signature is compared in constant time.
 */
export function detachedSignatureProblem(jws: string, content: string, token: BootstrapToken): string | undefined {
  const parts = jws.split('.');
  if (parts.length !== 3 || parts[1] !== '') return 'not a detached JWS (expected "<header>..<signature>")';
  const [headerPart, , signaturePart] = parts as [string, string, string];
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(headerPart, 'base64url').toString('utf8'));
  } catch {
    return 'its protected header is not base64url-encoded JSON';
  }
  const h = header as { alg?: unknown; kid?: unknown } | null;
  if (h?.alg !== 'HS256') return `its algorithm is ${JSON.stringify(h?.alg)}, not HS256`;
  if (h.kid !== token.id) return `it was made for token id ${JSON.stringify(h.kid)}, not "${token.id}"`;
  const expected = createHmac('sha256', token.secret).update(`${headerPart}.${b64url(content)}`).digest();
  const actual = Buffer.from(signaturePart, 'base64url');
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return 'the signature does not match the token secret';
  return undefined;
}
