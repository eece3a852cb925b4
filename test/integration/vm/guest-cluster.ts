// The VM test's cluster phase, the host's side: the real control plane (test/cluster/control-plane.ts) on free loopback
// ports, the guest's nodelet joined to it through qemu's forwards (scripts/vm.sh: guestfwd to kube-apiserver, a relay
// from the host's own address to qemu's hostfwd of the guest's kubelet port), and the checks only the host can make: the Node Ready with
// the address and port kube-apiserver reaches it at, a pod the scheduler binds to it Running, `kubectl logs` of it
// through kube-apiserver and the guest's kubelet API, and its deletion. The guest's side is test/vm/cluster.sh.
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { down, ensureBinaries, nodeCredentials, up, type ControlPlane } from '../../cluster/control-plane.js';
import { detectNodeIP } from '../../../src/host/node.js';
import { busybox, waitFor } from '../helpers/agent.js';
import { Kubectl } from '../helpers/kubectl.js';
import { freePorts, keepAddonsOffNodes } from '../helpers/real-cluster.js';

/** The guest's host name (scripts/vm.sh), so its Node's name. */
export const vmNode = 'nodelet-vm';
const podName = 'vm-hello';

/** The host's checks, in order; each reports `PASS host/<check>: ...` or `FAIL host/<check>: ...`. */
export const hostChecks = ['Node Ready', 'pod scheduled and Running', 'kubectl logs', 'pod deleted', 'hostUsers false pod in its own user namespace'];
const usernsPodName = 'vm-userns';

const podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: ${podName}
  namespace: default
spec:
  nodeSelector: { kubernetes.io/hostname: ${vmNode} }
  terminationGracePeriodSeconds: 5
  containers:
    - name: hello
      image: ${busybox}
      env:
        - name: NODE_NAME
          valueFrom: { fieldRef: { fieldPath: spec.nodeName } }
      command: ["sh", "-c", "echo hello from $NODE_NAME; trap 'exit 0' TERM; while true; do sleep 1; done"]
`;

// Prints its uid_map (the range the guest's nodelet allocated, not the identity map) and reads its ServiceAccount token,
// a tmpfs file mounted idmapped (Linux 6.3 and newer, Debian 13's 6.12).
const usernsPodManifest = `apiVersion: v1
kind: Pod
metadata:
  name: ${usernsPodName}
  namespace: default
spec:
  nodeSelector: { kubernetes.io/hostname: ${vmNode} }
  hostUsers: false
  terminationGracePeriodSeconds: 5
  containers:
    - name: main
      image: ${busybox}
      command: ["sh", "-c", "cat /proc/self/uid_map; stat -L -c 'token owner %u' /var/run/secrets/kubernetes.io/serviceaccount/token; trap 'exit 0' TERM; while true; do sleep 1; done"]
`;

export class GuestCluster {
  private plane: ControlPlane | undefined;
  /** Aborted when the guest's qemu exits: the waits stop at once. */
  private readonly vmRunning = new AbortController();

  private constructor(
    private readonly dir: string,
    private readonly out: string,
    private readonly apiServerPort: number,
    private readonly kubeletPort: number,
    /** The host's own address: scripts/vm.sh forwards the guest's kubelet port from it, and the guest reports it as its node IP. */
    private readonly kubeletAddress: string,
    /** The control plane coming up (started at once, while the guest boots). */
    private readonly starting: Promise<ControlPlane>,
  ) {
    // An unhandled rejection before exercise() awaits it would end the run; exercise() reports it.
    starting.catch(() => undefined);
  }

  /** Picks the ports and starts the control plane in the background; `env` is what scripts/vm.sh needs for the forwards. */
  static async start(out: string, log: (line: string) => void): Promise<GuestCluster> {
    const dir = await mkdtemp(join(tmpdir(), 'nodelet-vm-cluster-'));
    const [apiServerPort, etcdClientPort, etcdPeerPort, etcdMetricsPort, controllerManagerPort, schedulerPort, kubeletPort] = await freePorts(7);
    const starting = ensureBinaries(log).then((binDir) =>
      up({ dir, binDir, apiServerPort, etcdClientPort, etcdPeerPort, etcdMetricsPort, controllerManagerPort, schedulerPort, log }));
    return new GuestCluster(dir, out, apiServerPort!, kubeletPort!, await detectNodeIP(), starting);
  }

  get env(): Record<string, string> {
    return {
      NODELET_VM_API_SERVER_PORT: String(this.apiServerPort),
      NODELET_VM_KUBELET_PORT: String(this.kubeletPort),
      NODELET_VM_KUBELET_ADDRESS: this.kubeletAddress,
    };
  }

  /** Call when the guest's qemu has exited: the waits stop at once. */
  vmDone(): void {
    this.vmRunning.abort(new Error('the guest powered off before the host\'s checks ended'));
  }

  /** Hands the guest its credentials, runs the host's checks, and always tells the guest it may power off. */
  async exercise(): Promise<string[]> {
    const lines: string[] = [];
    const clusterDir = join(this.out, 'cluster');
    await mkdir(clusterDir, { recursive: true });
    try {
      this.plane = await this.starting;
      const kubectl = new Kubectl(this.plane.adminKubeconfig, join(this.dir, 'kube-cache'), this.dir, join(this.plane.binDir, 'kubectl'));
      await keepAddonsOffNodes(kubectl);
      // The guest reaches kube-apiserver by the control plane's name (in its serving certificate) at qemu's forward.
      const kubeconfig = await readFile(await nodeCredentials(this.dir, vmNode), 'utf8');
      await writeFile(join(clusterDir, 'kubeconfig'),
        kubeconfig.replaceAll(`https://127.0.0.1:${this.apiServerPort}`, `https://${this.plane.settings.controlPlaneName}:${this.apiServerPort}`));
      await copyFile(this.plane.caCert, join(clusterDir, 'ca.crt'));
      await writeFile(join(clusterDir, 'ready'), '');
      await this.checks(kubectl, lines);
    } catch (err) {
      lines.push(`FAIL host/${hostChecks[lines.length] ?? 'control plane'}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      await writeFile(join(clusterDir, 'finished'), '');
    }
    return lines;
  }

  /** The control plane stopped and its directory removed. */
  async stop(): Promise<void> {
    await this.starting.catch(() => undefined);
    await down(this.dir);
    await rm(this.dir, { recursive: true, force: true });
  }

  private async checks(kubectl: Kubectl, lines: string[]): Promise<void> {
    const until = <T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>) =>
      waitFor(what, probe, timeoutMs, 2_000, this.vmRunning.signal);
    const pass = (check: string, detail: string) => lines.push(`PASS host/${check}: ${detail}`);
    // The guest joins after its provisioning, smoke suite and reboot: minutes under TCG.
    const node = await until(`Node ${vmNode} Ready`, 900_000, async () => {
      const n = await kubectl.get<V1Node>('node', vmNode).catch(() => undefined);
      return n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? n : undefined;
    });
    const internalIP = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
    if (internalIP !== this.kubeletAddress || port !== this.kubeletPort) {
      throw new Error(`the Node reports InternalIP ${internalIP} and kubelet port ${port}; kube-apiserver reaches the guest at ${this.kubeletAddress}:${this.kubeletPort}`);
    }
    pass('Node Ready', `InternalIP ${internalIP}, kubelet port ${port} (forwarded to the guest), podCIDR ${node.spec?.podCIDR}`);

    await until('the default ServiceAccount', 60_000, () => kubectl.get('serviceaccount', 'default').catch(() => undefined));
    await kubectl.fromFile('create', `${podName}.yaml`, podManifest);
    const pod = await until(`pod ${podName} Running`, 300_000, async () => {
      const p = await kubectl.get<V1Pod>('pod', podName);
      return p.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.state?.running ? p : undefined;
    });
    if (pod.spec?.nodeName !== vmNode) throw new Error(`${podName} was bound to ${pod.spec?.nodeName}`);
    pass('pod scheduled and Running', `on ${pod.spec.nodeName}, podIP ${pod.status?.podIP}`);

    const logs = await until(`kubectl logs ${podName}`, 60_000, async () => {
      const r = await kubectl.tryRun('logs', podName);
      if (r.exitCode !== 0) throw new Error(r.stderr.trim());
      return r.stdout.includes(`hello from ${vmNode}`) ? r.stdout.trim() : undefined;
    });
    pass('kubectl logs', JSON.stringify(logs));

    // kubectl waits for the pod to be gone: the node stopped it and deleted it with grace 0.
    await kubectl.run('delete', 'pod', podName, '--timeout=120s');
    const after = await kubectl.tryRun('get', 'pod', podName);
    if (!after.stderr.includes('NotFound')) throw new Error(`${podName} is still there: ${after.stdout}${after.stderr}`);
    pass('pod deleted', 'gone from the API server after the node stopped it');

    const handler = (await kubectl.get<V1Node>('node', vmNode)).status?.runtimeHandlers?.find((h) => h.name === '');
    if (handler?.features?.userNamespaces !== true) throw new Error(`the Node's default runtime handler: ${JSON.stringify(handler)}`);
    await kubectl.fromFile('create', `${usernsPodName}.yaml`, usernsPodManifest);
    const mapping = await until(`kubectl logs ${usernsPodName}`, 300_000, async () => {
      const r = await kubectl.tryRun('logs', usernsPodName);
      const m = /^\s*0\s+(\d+)\s+65536\s*\ntoken owner 0$/m.exec(r.stdout);
      return m ? { firstId: Number(m[1]), text: r.stdout.trim() } : undefined;
    });
    if (mapping.firstId < 65536 || mapping.firstId % 65536 !== 0) throw new Error(`${usernsPodName}'s uid_map: ${mapping.text}`);
    await kubectl.run('delete', 'pod', usernsPodName, '--timeout=120s');
    pass('hostUsers false pod in its own user namespace', `the Node's runtime handler has userNamespaces; uid_map and token owner: ${JSON.stringify(mapping.text)}`);
  }
}
