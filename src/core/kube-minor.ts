// The Kubernetes minors one nodelet build serves as a node (a kubelet binary is one minor), the kubeletVersion it
// reports for each, and the feature-gate defaults of each minor for the behaviours nodelet implements that differ
// between them. In cluster mode the minor is the API server's (read once at start); standalone it is the newest.

/** The minors in support today, oldest first. */
export const supportedMinors = [35, 36, 37] as const;
export type KubeMinor = (typeof supportedMinors)[number];
/** The newest supported minor: standalone mode's, and the one nodelet's own tooling (kubectl, kubeadm) is built at. */
export const newestMinor: KubeMinor = 37;

/**
 * The gates nodelet honours whose defaults differ between the supported minors (pkg/features/kube_features.go of
 * v1.35.6 and v1.37.2; 1.36 from 1.37's versioned specs). nodelet runs each minor at its defaults: kubelet's
 * featureGates are not configurable on it.
 */
export interface KubeFeatureGates {
  /**
   * Pod-level status.resources and status.allocatedResources (kubelet_pods.go generateAPIPodStatus): alpha and off in
   * 1.35, beta and on since 1.36.
   */
  InPlacePodLevelResourcesVerticalScaling: boolean;
}

const gatesByMinor: Readonly<Record<KubeMinor, Readonly<KubeFeatureGates>>> = {
  35: { InPlacePodLevelResourcesVerticalScaling: false },
  36: { InPlacePodLevelResourcesVerticalScaling: true },
  37: { InPlacePodLevelResourcesVerticalScaling: true },
};

/** The default feature gates of a supported minor. */
export function featureGatesOf(minor: KubeMinor): Readonly<KubeFeatureGates> {
  return gatesByMinor[minor];
}

/**
 * Node.status.nodeInfo.kubeletVersion for a minor: v1.<minor>.0 with nodelet and its package version as semver build
 * metadata (the form k3s uses, "v1.37.0+k3s1"). Patch 0 is never newer than the API server's patch of the same minor,
 * so kubelet's version-skew policy holds; build metadata does not count in version comparisons, while
 * `kubectl get nodes` shows which agent runs there.
 */
export function kubeletVersionOf(minor: KubeMinor, packageVersion: string): string {
  return `v1.${minor}.0+nodelet.${packageVersion.replace(/[^0-9A-Za-z.-]/g, '-')}`;
}

/** What an API server's GET /version answers (apimachinery's version.Info), the fields read here. */
export interface ServerVersionInfo {
  major?: string;
  minor?: string;
  gitVersion?: string;
  /** The version whose APIs and feature gates the server emulates (--emulated-version; its own minor otherwise). */
  emulationMajor?: string;
  emulationMinor?: string;
}

/** The API server's version cannot be served: the agent refuses to start with this message. */
export class UnsupportedApiServerError extends Error {
  override readonly name = 'UnsupportedApiServerError';
}

/** A version.Info field as a number: leading digits, as a provider's "37+" still names minor 37. */
function versionNumber(field: string | undefined): number | undefined {
  const m = /^(\d+)/.exec(field ?? '');
  return m ? Number(m[1]) : undefined;
}

/**
 * The minor nodelet serves for an API server: the one it emulates (its own unless run with --emulated-version), when
 * supported. A kubelet may not be newer than its API server, and nodelet keeps no behaviour of minors before the
 * oldest supported one, so any other minor is refused, naming the server (at `server`), its version, nodelet's
 * version and the supported range.
 */
export function kubeMinorFor(info: ServerVersionInfo, server: string, nodeletVersion: string): KubeMinor {
  const emulates = info.emulationMajor !== undefined && info.emulationMinor !== undefined;
  const major = versionNumber(emulates ? info.emulationMajor : info.major);
  const minor = versionNumber(emulates ? info.emulationMinor : info.minor);
  const own = `${versionNumber(info.major)}.${versionNumber(info.minor)}`;
  const shown = `${info.gitVersion || `${info.major ?? '?'}.${info.minor ?? '?'}`}${emulates && own !== `${major}.${minor}` ? ` emulating ${major}.${minor}` : ''}`;
  if (major === undefined || minor === undefined) {
    throw new UnsupportedApiServerError(`the API server at ${server} answered GET /version without a major and minor version (${JSON.stringify(info)})`);
  }
  const supported = supportedMinors.find((m) => major === 1 && m === minor);
  if (supported !== undefined) return supported;
  const range = `1.${supportedMinors[0]} to 1.${newestMinor}`;
  const why = major === 1 && minor > newestMinor
    ? `a node is never newer than its API server, and this nodelet knows no minor after 1.${newestMinor}`
    : `kubelet's version-skew policy would need a node of that minor, and this nodelet keeps no minor before 1.${supportedMinors[0]}`;
  throw new UnsupportedApiServerError(
    `the API server at ${server} runs Kubernetes ${shown}, which nodelet ${nodeletVersion} does not support: it serves Kubernetes ${range} (${why})`,
  );
}
