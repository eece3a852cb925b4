// Cluster mode end to end: what a pod occupies on the node (sandbox, containers, netns, host veth, host-local reservation, pod dir) to prove it is all gone.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { execa } from 'execa';
import type { CriClient } from '../../../src/cri/client.js';
import { ipReservations, runtimeObjects, sandboxNetns } from './agent.js';

/** What one pod holds on the node, recorded while it runs. */
export interface PodFootprint {
  uid: string;
  podIP: string;
  sandboxes: string[];
  containers: string[];
  /** /var/run/netns/cni-... */
  netns: string;
  /** The host end of the pod's veth pair. */
  hostVeth: string;
  podDir: string;
}

/** The host interface whose index is the peer of eth0 inside the netns. */
async function hostVethOf(netnsPath: string): Promise<string> {
  const { stdout } = await execa('ip', ['-n', basename(netnsPath), '-j', 'link', 'show', 'eth0']);
  const [eth0] = JSON.parse(stdout) as { link_index?: number }[];
  if (!eth0?.link_index) throw new Error(`no veth peer of eth0 in ${netnsPath}`);
  const host = JSON.parse((await execa('ip', ['-j', 'link', 'show'])).stdout) as { ifindex: number; ifname: string }[];
  const veth = host.find((l) => l.ifindex === eth0.link_index);
  if (!veth) throw new Error(`no host interface with index ${eth0.link_index}`);
  return veth.ifname;
}

export async function podFootprint(cri: CriClient, rootDir: string, uid: string, podIP: string): Promise<PodFootprint> {
  const { sandboxes, containers } = await runtimeObjects(cri, [uid]);
  if (sandboxes.length !== 1) throw new Error(`pod ${uid} has ${sandboxes.length} sandboxes`);
  const netns = await sandboxNetns(cri, sandboxes[0]!);
  if (!netns) throw new Error(`no netns for sandbox ${sandboxes[0]}`);
  return { uid, podIP, sandboxes, containers, netns, hostVeth: await hostVethOf(netns), podDir: join(rootDir, 'pods', uid) };
}

/** What is left on the node of a footprint: an empty list when the pod is gone without a trace. */
export async function leftovers(cri: CriClient, fp: PodFootprint): Promise<string[]> {
  const left: string[] = [];
  const { sandboxes, containers } = await runtimeObjects(cri, [fp.uid]);
  left.push(...sandboxes.map((s) => `sandbox ${s}`), ...containers.map((c) => `container ${c}`));
  if (existsSync(fp.netns)) left.push(`netns ${fp.netns}`);
  const { exitCode } = await execa('ip', ['link', 'show', fp.hostVeth], { reject: false });
  if (exitCode === 0) left.push(`veth ${fp.hostVeth}`);
  if ((await ipReservations()).includes(fp.podIP)) left.push(`host-local reservation ${fp.podIP}`);
  if (existsSync(fp.podDir)) left.push(`pod dir ${fp.podDir}`);
  return left;
}

/** How many lines of the containerd log name this string (a pod UID: containerd logs every RunPodSandbox with it). */
export async function containerdLogMentions(text: string, log = '/var/log/nodelet/containerd.log'): Promise<number> {
  const content = await readFile(log, 'utf8').catch(() => '');
  return content.split('\n').filter((l) => l.includes(text)).length;
}
