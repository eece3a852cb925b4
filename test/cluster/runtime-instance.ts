// The rig's containerd instances (scripts/runtime.sh) as programs driving them need them: read from the script itself
// (`runtime.sh describe`), so their sockets, bridges and networks are written down once.
import { execa } from 'execa';
import { join } from 'node:path';
import { repoRoot } from './control-plane.js';

/** What `runtime.sh describe` prints of an instance; an empty string where the instance has none. */
export interface RuntimeInstance {
  criEndpoint: string;
  bridge: string;
  /** The CNI networks whose host-side state is the instance's: containerd's (the shim's on an instance with an agent), then the agent's own. */
  networks: string[];
  cniSocket: string;
  agentCniConfDir: string;
  agentCniCacheDir: string;
}

export async function describeRuntime(instance: 'main' | 'floor' | 'kubelet' | 'conformance'): Promise<RuntimeInstance> {
  const r = await execa('bash', [join(repoRoot, 'scripts', 'runtime.sh'), 'describe'], { env: { NODELET_RUNTIME_INSTANCE: instance } });
  return JSON.parse(r.stdout) as RuntimeInstance;
}
