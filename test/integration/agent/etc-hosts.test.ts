// The managed /etc/hosts in real containers: the pod's IP and hostname with its aliases, a container that mounts its
// own /etc/hosts keeps it, a host-network pod gets the node's file under its own header.
import type { V1Pod } from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { busybox, isRunning, testAgent } from '../helpers/agent.js';

const { agent, cri, uids } = await testAgent();

const pods: Record<string, string> = {
  'hosts.yaml': `apiVersion: v1
kind: Pod
metadata: {name: hosts}
spec:
  terminationGracePeriodSeconds: 1
  hostname: web-0
  hostAliases: [{ip: 123.45.67.89, hostnames: [foo.local, bar.local]}]
  volumes: [{name: own, hostPath: {path: /etc/hosts, type: File}}]
  containers:
  - {name: managed, image: ${busybox}, command: [sleep, '3600']}
  - {name: own, image: ${busybox}, command: [sleep, '3600'], volumeMounts: [{name: own, mountPath: /etc/hosts, readOnly: true}]}
`,
  'hostnet.yaml': `apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  terminationGracePeriodSeconds: 1
  hostNetwork: true
  hostAliases: [{ip: 10.1.2.3, hostnames: [alias.local]}]
  containers:
  - {name: main, image: ${busybox}, command: [sleep, '3600']}
`,
};

beforeAll(async () => {
  await agent.start();
  for (const [file, text] of Object.entries(pods)) await agent.writeManifest(file, text);
});

async function catHosts(pod: V1Pod, container: string): Promise<string> {
  const id = pod.status!.containerStatuses!.find((c) => c.name === container)!.containerID!.replace('containerd://', '');
  return (await cri.execSync(id, ['cat', '/etc/hosts'], 10)).stdout.toString();
}

test("each container of a pod reads the pod's managed hosts file, unless it mounts its own /etc/hosts", async () => {
  const pod = await agent.waitForPod('hosts', 'Running', isRunning);
  uids.add(pod.metadata!.uid!);
  expect(await catHosts(pod, 'managed')).toBe('# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' +
    `fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n${pod.status!.podIP}\tweb-0\n` +
    '\n# Entries added by HostAliases.\n123.45.67.89\tfoo.local\tbar.local\n');
  expect(await catHosts(pod, 'own')).toBe(await readFile('/etc/hosts', 'utf8'));
});

test("a host-network pod's file is the node's hosts file under the host-network header, with its aliases", async () => {
  const pod = await agent.waitForPod('hostnet', 'Running', isRunning);
  uids.add(pod.metadata!.uid!);
  expect(await catHosts(pod, 'main')).toBe(`# Kubernetes-managed hosts file (host network).\n${await readFile('/etc/hosts', 'utf8')}\n# Entries added by HostAliases.\n10.1.2.3\talias.local\n`);
});
