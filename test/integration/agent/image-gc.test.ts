// Image garbage collection against a containerd of the test's own whose root is a 256 MiB tmpfs (never the machine's
// disk), images pulled from a real registry on loopback, nodelet standalone with imageGCHighThresholdPercent 77, low 75,
// imageMinimumGCAge 1s and --image-gc-period 1s. The test fills the tmpfs with a ballast file to put the disk where it
// wants it: GC then removes the never-used busybox image, then the least recently used image, and stops there; an image
// a running pod uses (as its container's image or as an image volume) and the sandbox image are never removed; when nothing more can go, FreeDiskSpaceFailed and, the
// second time in a row, ImageGCFailed.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { execa } from 'execa';
import { CriClient } from '../../../src/cri/client.js';
import { AgentProcess, isRunning, sleep, waitFor } from '../helpers/agent.js';
import { randomImageLayers, registryHostsDir, startRegistry, type Registry } from '../helpers/registry.js';

const imagesDir = '/var/lib/nodelet/images';
const pauseImage = 'localhost/nodelet/pause:1.0';
const busyboxImage = 'localhost/nodelet/busybox:1.35';
const MiB = 1 << 20;

const base = await mkdtemp('/tmp/nodelet-image-gc-');
const root = join(base, 'root');
const state = `/run/nodelet/containerd-image-gc-${process.pid}`;
const socket = join(state, 'containerd.sock');
let containerd: ChildProcess | undefined;
let registry: Registry | undefined;
let agent: AgentProcess | undefined;
let cri: CriClient | undefined;
const uids = new Set<string>();

function containerdConfig(): string {
  return `version = 4
root = "${root}"
state = "${state}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.nri.v1.nri"]
[plugins]
  [plugins.'io.containerd.server.v1.grpc']
    address = "${socket}"
  [plugins.'io.containerd.server.v1.ttrpc']
    address = "${socket}.ttrpc"
  [plugins.'io.containerd.internal.v1.opt']
    path = "${root}/opt"
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "${pauseImage}"
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = "${registryHostsDir}"
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          Root = "${state}/runc"
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["/usr/lib/cni"]
      conf_dir = "${base}/net.d"
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    disable_tcp_service = true
`;
}

const ctr = (...args: string[]) => execa('ctr', ['-a', socket, '-n', 'k8s.io', ...args]);

afterAll(async () => {
  try {
    if (agent && cri) await agent.shutdown(cri, uids);
  } finally {
    cri?.close();
    if (containerd && containerd.exitCode === null) {
      const exited = new Promise((r) => containerd!.once('exit', r));
      containerd.kill('SIGTERM');
      await Promise.race([exited, sleep(15_000)]);
      if (containerd.exitCode === null) containerd.kill('SIGKILL');
    }
    await registry?.stop();
    await execa('umount', ['-l', root], { reject: false });
    await rm(base, { recursive: true, force: true });
    await rm(state, { recursive: true, force: true });
  }
}, 180_000);

beforeAll(async () => {
  await mkdir(root, { recursive: true });
  await mkdir(join(base, 'net.d'));
  await execa('mount', ['-t', 'tmpfs', '-o', 'size=256m', 'tmpfs', root]);
  await writeFile(join(base, 'config.toml'), containerdConfig());
  const log = createWriteStream(join(base, 'containerd.log'));
  await new Promise((r) => log.once('open', r));
  containerd = spawn('containerd', ['--config', join(base, 'config.toml')], { stdio: ['ignore', log, log] });
  await waitFor('the test containerd', async () => {
    if (containerd!.exitCode !== null) throw new Error(`containerd exited: ${await readFile(join(base, 'containerd.log'), 'utf8')}`);
    return (await ctr('version').then(() => true, () => undefined));
  }, 30_000, 200);
  for (const image of [pauseImage, busyboxImage]) {
    await ctr('images', 'import', '--snapshotter', 'overlayfs', join(imagesDir, `${image.replace(/[/:]/g, '_')}.tar`));
  }
  cri = new CriClient(`unix://${socket}`);
  registry = await startRegistry();
  for (const name of ['a', 'b', 'c', 'v']) await registry.upload(`nodelet/gc-${name}:1`, await randomImageLayers(1, 20 * MiB));
  agent = await AgentProcess.create();
  const config = join(base, 'kubelet.yaml');
  await writeFile(config, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\nimageGCHighThresholdPercent: 77\nimageGCLowThresholdPercent: 75\nimageMinimumGCAge: 1s\n');
  await agent.start(['--container-runtime-endpoint', `unix://${socket}`, '--config', config, '--image-gc-period', '1s', '--v', '2']);
}, 180_000);

/** A pod running gc-<name>; with `volume`, mounting the image gc-<volume> as an image volume too. */
function podManifest(name: string, volume?: string): string {
  const main = { name: 'main', image: `${registry!.host}/nodelet/gc-${name}:1`, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] };
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      ...(volume ? { volumes: [{ name: 'v', image: { reference: `${registry!.host}/nodelet/gc-${volume}:1` } }] } : {}),
      containers: [{ ...main, ...(volume ? { volumeMounts: [{ name: 'v', mountPath: '/v' }] } : {}) }],
    },
  });
}

async function runPod(name: string, volume?: string): Promise<V1Pod> {
  await agent!.writeManifest(`${name}.yaml`, podManifest(name, volume));
  const pod = await agent!.waitForPod(name, 'Running', isRunning, 90_000);
  uids.add(pod.metadata!.uid!);
  return pod;
}

async function images(): Promise<Map<string, { id: string; size: number }>> {
  const list = await cri!.listImages();
  return new Map(list.flatMap((i) => i.repoTags.map((t) => [t, { id: i.id, size: i.size }] as const)));
}

/** Grows the ballast file on the tmpfs until the filesystem has `available` bytes free. */
async function fillTo(available: number): Promise<void> {
  const s = await statfs(root);
  const grow = s.bavail * s.bsize - available;
  if (grow <= 0) throw new Error(`the tmpfs has only ${s.bavail * s.bsize} bytes free, fewer than ${available}`);
  const file = await open(join(root, 'ballast'), 'a');
  try {
    const chunk = Buffer.alloc(MiB, 1);
    for (let left = grow; left > 0; left -= chunk.length) await file.write(left >= chunk.length ? chunk : chunk.subarray(0, left));
  } finally {
    await file.close();
  }
}

const removals = () => agent!.logLines().filter((l) => l.msg === 'Removing image to free bytes').map((l) => l.imageID as string);

test('over the high threshold: the never-used image, then the least recently used, and no more; in use and sandbox images stay', async () => {
  const tag = (n: string) => `${registry!.host}/nodelet/gc-${n}:1`;
  await runPod('a', 'v');
  // b, then c: each used by a pod for a few GC periods, then no more.
  for (const name of ['b', 'c']) {
    const pod = await runPod(name);
    await sleep(2_500);
    await agent!.removeManifest(`${name}.yaml`);
    await waitFor(`${name}'s containers removed`, async () => ((await cri!.listContainers()).some((c) => c.labels['io.kubernetes.pod.uid'] === pod.metadata!.uid) ? undefined : true), 60_000, 300);
  }
  await sleep(2_500);
  const before = await images();
  expect(removals()).toEqual([]);
  // Down to the low threshold (75%) means freeing the busybox image and half of b: b goes, c stays.
  const { blocks, bsize } = await statfs(root);
  const capacity = blocks * bsize;
  await fillTo(Math.floor((capacity * 25) / 100) - (before.get(busyboxImage)!.size + Math.floor(before.get(tag('b'))!.size / 2)));
  await waitFor('two images removed', async () => (removals().length >= 2 ? true : undefined), 30_000, 300);
  await sleep(3_000);
  expect(removals()).toEqual([before.get(busyboxImage)!.id, before.get(tag('b'))!.id]);
  const after = await images();
  expect([...after.keys()].sort()).toEqual([pauseImage, tag('a'), tag('c'), tag('v')].sort());

  // The tmpfs nearly full: removing c is not enough (the disk stays over the high threshold), and then nothing more can
  // go (a and v are in use by the running pod, pause is the sandbox image).
  await fillTo(6 * MiB);
  const failed = await waitFor('ImageGCFailed', async () => agent!.logLines().find((l) => l.reason === 'ImageGCFailed'), 30_000, 300);
  expect(failed.msg).toMatch(/^Failed to garbage collect required amount of images\. Attempted to free \d+ bytes, but only found \d+ bytes eligible to free\.$/);
  expect(agent!.logLines().some((l) => l.reason === 'FreeDiskSpaceFailed')).toBe(true);
  expect(removals()).toEqual([before.get(busyboxImage)!.id, before.get(tag('b'))!.id, before.get(tag('c'))!.id]);
  expect([...(await images()).keys()].sort()).toEqual([pauseImage, tag('a'), tag('v')].sort());
  const a = await agent!.pod('a');
  expect(isRunning(a!)).toBe(true);
  await rm(join(root, 'ballast'));
  await agent!.removeManifest('a.yaml');
}, 300_000);
