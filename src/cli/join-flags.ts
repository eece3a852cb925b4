// The flags of `nodelet join`: kubeadm join's names (the command line kubeadm prints runs with `kubeadm` replaced).
import type { FlagSpec } from './flags.js';

/** `kubeadm join`'s flags that nodelet takes; the agent's flags are accepted beside them and passed on. */
export const joinFlags: FlagSpec[] = [
  { name: 'token', kind: 'string', default: '', help: 'Bootstrap token <id>.<secret> for discovery and the TLS bootstrap' },
  { name: 'discovery-token-ca-cert-hash', kind: 'string', repeated: true, default: '', help: "sha256:<hex> of the cluster CA's public key; repeat the flag (or separate by commas) to pin several, any match is enough" },
  { name: 'discovery-token-unsafe-skip-ca-verification', kind: 'bool', default: '', help: 'Trust the CA cluster-info carries without a pin' },
  { name: 'node-name', kind: 'string', default: '', help: "The node's name (default: the host name); the agent's --hostname-override" },
  { name: 'cri-socket', kind: 'string', default: '', help: "The container runtime's CRI endpoint; the agent's --container-runtime-endpoint" },
  { name: 'discovery-timeout', kind: 'duration', default: '5m', help: 'How long discovery waits for cluster-info to be signed for the token' },
  { name: 'tls-bootstrap-timeout', kind: 'duration', default: '1h', help: 'How long the TLS bootstrap waits for the certificate' },
];

export const joinUsage = 'nodelet join <host:port> --token <id>.<secret> (--discovery-token-ca-cert-hash sha256:<hex> | --discovery-token-unsafe-skip-ca-verification) [--node-name NAME] [--cri-socket unix:///...] [agent flags]';
