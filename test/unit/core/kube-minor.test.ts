// The minors one nodelet build serves: the minor chosen for an API server's version (or the refusal), the
// kubeletVersion reported for it, and each minor's feature-gate defaults.
import { featureGatesOf, kubeletVersionOf, kubeMinorFor, newestMinor, supportedMinors, UnsupportedApiServerError } from '../../../src/core/kube-minor.js';

const server = 'https://192.0.2.10:6443';
const refusal = (info: Parameters<typeof kubeMinorFor>[0]) => {
  try {
    kubeMinorFor(info, server, '0.1.0');
  } catch (err) {
    expect(err).toBeInstanceOf(UnsupportedApiServerError);
    return (err as Error).message;
  }
  throw new Error(`${JSON.stringify(info)} was not refused`);
};

test('the supported minors are 1.35 to 1.37, the newest standalone', () => {
  expect(supportedMinors).toEqual([35, 36, 37]);
  expect(newestMinor).toBe(37);
});

test('each supported API server is served at its own minor', () => {
  expect(kubeMinorFor({ major: '1', minor: '35', gitVersion: 'v1.35.6' }, server, '0.1.0')).toBe(35);
  expect(kubeMinorFor({ major: '1', minor: '36', gitVersion: 'v1.36.0' }, server, '0.1.0')).toBe(36);
  expect(kubeMinorFor({ major: '1', minor: '37', gitVersion: 'v1.37.2' }, server, '0.1.0')).toBe(37);
  // Providers mark patched builds "37+".
  expect(kubeMinorFor({ major: '1', minor: '37+', gitVersion: 'v1.37.2-gke.100' }, server, '0.1.0')).toBe(37);
});

test('an API server run with --emulated-version is served at the minor it emulates', () => {
  const emulating = (minor: string) => ({ major: '1', minor: '37', gitVersion: 'v1.37.2', emulationMajor: '1', emulationMinor: minor });
  expect(kubeMinorFor(emulating('35'), server, '0.1.0')).toBe(35);
  expect(kubeMinorFor(emulating('36'), server, '0.1.0')).toBe(36);
  expect(kubeMinorFor(emulating('37'), server, '0.1.0')).toBe(37);
  expect(refusal(emulating('34'))).toMatch(/^the API server at https:\/\/192\.0\.2\.10:6443 runs Kubernetes v1\.37\.2 emulating 1\.34, which nodelet 0\.1\.0 does not support: it serves Kubernetes 1\.35 to 1\.37 \(kubelet's version-skew policy/);
});

test('kubeletVersion: v1.<minor>.0, never newer than the API server, with nodelet as build metadata', () => {
  expect(kubeletVersionOf(35, '0.1.0')).toBe('v1.35.0+nodelet.0.1.0');
  expect(kubeletVersionOf(36, '0.1.0')).toBe('v1.36.0+nodelet.0.1.0');
  expect(kubeletVersionOf(37, '1.0.0-rc.1')).toBe('v1.37.0+nodelet.1.0.0-rc.1');
  expect(kubeletVersionOf(37, '1.0.0+build_7')).toBe('v1.37.0+nodelet.1.0.0-build-7');
});

test('an older API server is refused, naming both versions and the range', () => {
  expect(refusal({ major: '1', minor: '34', gitVersion: 'v1.34.3' })).toBe(
    "the API server at https://192.0.2.10:6443 runs Kubernetes v1.34.3, which nodelet 0.1.0 does not support: it serves Kubernetes 1.35 to 1.37 (kubelet's version-skew policy would need a node of that minor, and this nodelet keeps no minor before 1.35)",
  );
});

test('a newer API server is refused: a node is never newer than its API server', () => {
  expect(refusal({ major: '1', minor: '38', gitVersion: 'v1.38.0' })).toBe(
    'the API server at https://192.0.2.10:6443 runs Kubernetes v1.38.0, which nodelet 0.1.0 does not support: it serves Kubernetes 1.35 to 1.37 (a node is never newer than its API server, and this nodelet knows no minor after 1.37)',
  );
  expect(refusal({ major: '2', minor: '0', gitVersion: 'v2.0.0' })).toMatch(/runs Kubernetes v2\.0\.0, which nodelet 0\.1\.0 does not support: it serves Kubernetes 1\.35 to 1\.37/);
});

test('an answer without a version is refused, quoting it', () => {
  expect(refusal({ gitVersion: 'v1.37.2' })).toBe('the API server at https://192.0.2.10:6443 answered GET /version without a major and minor version ({"gitVersion":"v1.37.2"})');
});

test('feature gates: InPlacePodLevelResourcesVerticalScaling off in 1.35 (alpha), on in 1.36 (beta) and 1.37', () => {
  expect(featureGatesOf(35)).toEqual({ InPlacePodLevelResourcesVerticalScaling: false });
  expect(featureGatesOf(36)).toEqual({ InPlacePodLevelResourcesVerticalScaling: true });
  expect(featureGatesOf(37)).toEqual({ InPlacePodLevelResourcesVerticalScaling: true });
});
