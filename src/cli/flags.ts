// Parses nodelet's command line: kubelet's flag names, `--flag=value` or `--flag value`.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_SPAWN_HELPER } from '../host/program-runner.js';
import { formatGoDuration, parseGoDuration } from '../core/duration.js';
import { defaultHousekeepingIntervalMs } from '../server/stats-housekeeping.js';

export type FlagKind = 'string' | 'duration' | 'int' | 'bool';

export interface FlagSpec {
  name: string;
  kind: FlagKind;
  default: string;
  help: string;
  /** A string list (pflag's StringSlice, as kubeadm's): given several times, the values add up, comma-joined. */
  repeated?: boolean;
}

/** The repository (or installed package) root: cni-conf/ ships there. */
export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** nodelet's own network (bridge nodelet0), which takes the node's pod CIDR. */
export const defaultCniConfDir = resolve(packageRoot, 'cni-conf');

export const agentFlags: FlagSpec[] = [
  { name: 'kubeconfig', kind: 'string', default: '', help: 'kubeconfig of the API server to join as a node (cluster mode); without it nodelet runs standalone' },
  { name: 'bootstrap-kubeconfig', kind: 'string', default: '', help: 'kubeconfig with a bootstrap token: when --kubeconfig is missing or its certificate expired, a client certificate is requested with it (TLS bootstrap)' },
  { name: 'config', kind: 'string', default: '', help: 'KubeletConfiguration file (kubelet.config.k8s.io/v1beta1)' },
  { name: 'pod-manifest-path', kind: 'string', default: '', help: 'Directory of static pod manifests (YAML or JSON) to run' },
  { name: 'container-runtime-endpoint', kind: 'string', default: 'unix:///run/containerd/containerd.sock', help: 'CRI endpoint of the container runtime' },
  { name: 'root-dir', kind: 'string', default: '/var/lib/nodelet', help: "Directory for nodelet's state (and its status socket nodelet.sock)" },
  { name: 'hostname-override', kind: 'string', default: '', help: 'Node name to use instead of the host name' },
  { name: 'node-ip', kind: 'string', default: '', help: "The node's IP (default: the address of the default route's interface)" },
  { name: 'pod-cidr', kind: 'string', default: '', help: "Pod subnet; overrides the host-local range of the pod network's conflist" },
  { name: 'cni-conf-dir', kind: 'string', default: defaultCniConfDir, help: "Directory of the pod network configurations, watched: the first (by name) is new pods' network" },
  { name: 'cni-bin-dir', kind: 'string', default: '/usr/lib/cni,/opt/cni/bin', help: 'Comma-separated directories of CNI plugin binaries' },
  { name: 'cni-cache-dir', kind: 'string', default: '/var/lib/cni', help: 'Directory of cached CNI results' },
  { name: 'cni-socket', kind: 'string', default: '/run/nodelet/cni.sock', help: "Socket on which the CNI shim reaches nodelet's network executor" },
  { name: 'spawn-helper', kind: 'string', default: DEFAULT_SPAWN_HELPER, help: "Helper that starts CNI plugins without forking the agent; '' starts them directly" },
  { name: 'pod-logs-dir', kind: 'string', default: '/var/log/pods', help: 'Root of pod log directories' },
  { name: 'runtime-request-timeout', kind: 'duration', default: '2m', help: 'Timeout of runtime requests (except long-running ones)' },
  { name: 'sync-frequency', kind: 'duration', default: '1m', help: 'Maximum interval between syncs of a pod' },
  { name: 'file-check-frequency', kind: 'duration', default: '20s', help: 'Interval between full rescans of the manifest directory' },
  { name: 'relist-period', kind: 'duration', default: '1s', help: 'Interval between relists of the runtime (pod lifecycle events)' },
  { name: 'image-gc-period', kind: 'duration', default: '5m', help: "Interval between image garbage collections (kubelet's fixed ImageGCPeriod is 5m)" },
  { name: 'housekeeping-interval', kind: 'duration', default: formatGoDuration(defaultHousekeepingIntervalMs), help: "Interval between samples of the pods' cgroups and network counters that stats scrapes serve (kubelet's, cAdvisor's housekeeping)" },
  { name: 'address', kind: 'string', default: '0.0.0.0', help: "IP address the kubelet API (HTTPS) listens on" },
  { name: 'port', kind: 'int', default: '10250', help: 'Port of the kubelet API (reported in Node.status.daemonEndpoints)' },
  { name: 'tls-cert-file', kind: 'string', default: '', help: "The kubelet API's serving certificate (PEM, with its chain); without it a self-signed one is generated in --cert-dir" },
  { name: 'tls-private-key-file', kind: 'string', default: '', help: 'The private key of --tls-cert-file' },
  { name: 'cert-dir', kind: 'string', default: '', help: 'Where the self-signed serving certificate (kubelet.crt, kubelet.key) and the client certificates (kubelet-client-current.pem) are kept; default <root-dir>/pki' },
  { name: 'tls-min-version', kind: 'string', default: '', help: 'Minimum TLS version: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13' },
  { name: 'tls-cipher-suites', kind: 'string', default: '', help: "Comma-separated TLS 1.2 cipher suites (Go's names); default Node's" },
  { name: 'client-ca-file', kind: 'string', default: '', help: 'CA bundle that verifies client certificates of kubelet API callers (user = CN, groups = O)' },
  { name: 'anonymous-auth', kind: 'bool', default: 'false', help: 'Serve unauthenticated kubelet API requests as system:anonymous' },
  { name: 'authentication-token-webhook', kind: 'bool', default: 'true', help: 'Authenticate bearer tokens with TokenReview on the API server (cluster mode)' },
  { name: 'authentication-token-webhook-cache-ttl', kind: 'duration', default: '2m', help: 'How long TokenReview answers are cached' },
  { name: 'authorization-mode', kind: 'string', default: 'Webhook', help: 'AlwaysAllow or Webhook (SubjectAccessReview; cluster mode)' },
  { name: 'authorization-webhook-cache-authorized-ttl', kind: 'duration', default: '5m', help: 'How long allowed SubjectAccessReview answers are cached' },
  { name: 'authorization-webhook-cache-unauthorized-ttl', kind: 'duration', default: '30s', help: 'How long denied SubjectAccessReview answers are cached' },
  { name: 'fail-cgroupv1', kind: 'bool', default: 'true', help: 'Refuse to start on a host using cgroup v1 (failCgroupV1 in --config); false starts there with a deprecation warning' },
  { name: 'logging-format', kind: 'string', default: '', help: 'json or text (default: text on a terminal, json otherwise)' },
  { name: 'v', kind: 'int', default: '0', help: 'Log verbosity: 0-1 info, 2-3 debug, 4+ trace' },
];

export interface ParsedFlags {
  values: Map<string, string>;
  positional: string[];
  /** The flags given on the command line (the others hold their defaults): they win over a --config file, as in kubelet. */
  explicit: Set<string>;
}

export class FlagError extends Error {}

export function parseFlags(argv: string[], specs: FlagSpec[]): ParsedFlags {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const values = new Map(specs.map((s) => [s.name, s.default]));
  const positional: string[] = [];
  const explicit = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('-') || arg === '-') {
      positional.push(arg);
      continue;
    }
    const body = arg.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq >= 0 ? body.slice(0, eq) : body;
    const spec = byName.get(name);
    if (!spec) throw new FlagError(`unknown flag: --${name}`);
    let value: string;
    if (eq >= 0) value = body.slice(eq + 1);
    else if (spec.kind === 'bool') value = 'true';
    else if (i + 1 < argv.length) value = argv[++i]!;
    else throw new FlagError(`flag needs an argument: --${name}`);
    if (spec.kind === 'duration') {
      try {
        parseGoDuration(value);
      } catch (err) {
        throw new FlagError(`invalid value for --${name}: ${(err as Error).message}`);
      }
    }
    if (spec.kind === 'int' && !/^-?\d+$/.test(value)) throw new FlagError(`invalid value for --${name}: "${value}" is not an integer`);
    values.set(name, spec.repeated && explicit.has(name) ? `${values.get(name)},${value}` : value);
    explicit.add(name);
  }
  return { values, positional, explicit };
}

export function flagUsage(specs: FlagSpec[]): string {
  return specs
    .map((s) => `  --${s.name}${s.kind === 'bool' ? '' : ' ' + s.kind}\n      ${s.help}${s.default ? ` (default "${s.default}")` : ''}`)
    .join('\n');
}
