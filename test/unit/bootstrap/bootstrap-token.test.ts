// Bootstrap tokens and the detached JWS of cluster-info, against a signature the real bootstrap signer made.
import { BootstrapInputError, detachedSignature, detachedSignatureProblem, parseBootstrapToken } from '../../../src/bootstrap/bootstrap-token.js';
import { clusterInfoJws, clusterInfoKubeconfig, clusterInfoToken } from './cluster-info-fixture.js';

test('a bootstrap token is [a-z0-9]{6}.[a-z0-9]{16}', () => {
  expect(parseBootstrapToken('abcdef.0123456789abcdef')).toEqual({ id: 'abcdef', secret: '0123456789abcdef' });
  for (const bad of ['', 'abcdef', 'abcdef.', 'ABCDEF.0123456789abcdef', 'abcde.0123456789abcdef', 'abcdef.0123456789abcdeg0', 'abcdef:0123456789abcdef']) {
    expect(() => parseBootstrapToken(bad)).toThrow(BootstrapInputError);
  }
});

test('the signature kubeadm\'s bootstrap signer made is the one computed here', () => {
  expect(detachedSignature(clusterInfoKubeconfig, clusterInfoToken)).toBe(clusterInfoJws);
});

const other = { id: 'abcdef', secret: '0123456789abcdef' };
const forged = (header: object) => `${Buffer.from(JSON.stringify(header)).toString('base64url')}..${clusterInfoJws.split('..')[1]}`;
test.each([
  ['the real signature', clusterInfoJws, clusterInfoKubeconfig, clusterInfoToken, undefined],
  ['changed content', clusterInfoJws, clusterInfoKubeconfig.replace('26443', '26444'), clusterInfoToken, /does not match the token secret/],
  ['wrong secret', clusterInfoJws, clusterInfoKubeconfig, { ...clusterInfoToken, secret: '0123456789abcdef' }, /does not match the token secret/],
  ['another token id', clusterInfoJws, clusterInfoKubeconfig, other, /made for token id "1k63v8", not "abcdef"/],
  ['alg none', forged({ alg: 'none', kid: '1k63v8' }), clusterInfoKubeconfig, clusterInfoToken, /algorithm is "none", not HS256/],
  ['attached payload', clusterInfoJws.replace('..', '.eA.'), clusterInfoKubeconfig, clusterInfoToken, /not a detached JWS/],
  ['truncated signature', clusterInfoJws.slice(0, -4), clusterInfoKubeconfig, clusterInfoToken, /does not match/],
  ['garbage header', 'bm90IGpzb24..abc', clusterInfoKubeconfig, clusterInfoToken, /not base64url-encoded JSON/],
])('detached JWS: %s', (_name, jws, content, token, problem) => {
  const found = detachedSignatureProblem(jws, content, token);
  if (problem === undefined) expect(found).toBeUndefined();
  else expect(found).toMatch(problem);
});
