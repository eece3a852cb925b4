// The pull phase: a ~50 MiB image (made of random layers, new to every store) pulled from a real registry on loopback
// (Debian's docker-registry, the tests' fixture) through nodelet (a static pod whose image is missing; the figure is the
// agent's own "Successfully pulled image" time: the queue, the logins, CRI PullImage and the image's status) beside
// `ctr images pull` of the same image into the floor containerd's store, which has never held it (the ratio's target:
// 1.1x); each repetition pulls a new image and removes it from both stores after. Then 10 pods of one new image created at once: the
// registry's access log tells how often each blob and the tag were fetched (target: once), and the time until all run.
import type { V1Pod } from '@kubernetes/client-node';
import { execa } from 'execa';
import { waitFor } from '../test/integration/helpers/agent.js';
import { randomImageLayers, registryHostsDir, startRegistry } from '../test/integration/helpers/registry.js';
import type { Bench } from './session.js';
import { isRunning, listPods } from './status-client.js';
import { fmtMs, median, now, progress, round1, round2 } from './util.js';
import { benchNamespace, benchNode } from './workload.js';

const floorSocket = '/run/nodelet/containerd-floor/containerd.sock';
const MiB = 1 << 20;

export interface PullResults {
  imageMiB: number;
  nodeletMs: number[];
  ctrMs: number[];
  ratio: number;
  shared: { pods: number; allRunningMs: number; blobFetches: number[]; tagResolutions: number };
}

function pullPod(name: string, image: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: benchNamespace },
    spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }] },
  });
}

export async function runPullPhase(bench: Bench): Promise<PullResults> {
  const agent = bench.agent!;
  const registry = await startRegistry();
  const floorCtr = (...args: string[]) => execa('ctr', ['-a', floorSocket, '-n', 'k8s.io', ...args]);
  try {
    const nodeletMs: number[] = [];
    const ctrMs: number[] = [];
    const reps = Math.min(bench.opts.reps, 5);
    let imageMiB = 0;
    for (let rep = 0; rep < reps; rep++) {
      // A new image of new random layers each repetition: removing an image leaves its blobs in containerd's content
      // store for a while (ctr's `images rm --sync` did), and a pull that finds them fetches nothing.
      const layers = await randomImageLayers(5, 10 * MiB);
      imageMiB = round1(layers.reduce((sum, l) => sum + l.length, 0) / MiB);
      await registry.upload(`nodelet/bench-pull:${rep + 1}`, layers);
      const image = `${registry.host}/nodelet/bench-pull:${rep + 1}`;
      // nodelet: a pod of the missing image; its own figure for the pull.
      await bench.main.removeImage(image).catch(() => undefined);
      const name = `pull-${rep}`;
      await agent.writeManifestAside(name, pullPod(name, image));
      const since = Date.now();
      agent.renameManifestsIn([name]);
      const line = await waitFor('nodelet\'s pull', async () => agent.lines.find((l) => l.time >= since && l.msg === `Successfully pulled image "${image}"`), 120_000, 50);
      nodeletMs.push(line.durationMs!);
      await bench.nodeletTeardown(bench.signal);
      await bench.main.removeImage(image);
      // ctr into the floor's store, which does not have the image.
      await floorCtr('images', 'rm', '--sync', image).catch(() => undefined);
      const t0 = now();
      await floorCtr('images', 'pull', '--hosts-dir', registryHostsDir, image);
      ctrMs.push(now() - t0);
      await floorCtr('images', 'rm', '--sync', image);
      progress(`pull ${rep + 1}/${reps}: nodelet ${fmtMs(nodeletMs.at(-1)!)}, ctr ${fmtMs(ctrMs.at(-1)!)}`);
    }

    // 10 pods of one new image at once.
    const shared = await randomImageLayers(2, 5 * MiB);
    const sharedDigests = (await registry.upload('nodelet/bench-shared:1', shared)).layers;
    const sharedImage = `${registry.host}/nodelet/bench-shared:1`;
    const names = Array.from({ length: 10 }, (_, i) => `shared-${i}`);
    for (const n of names) await agent.writeManifestAside(n, pullPod(n, sharedImage));
    const logBefore = (await registry.log()).length;
    const t0 = now();
    agent.renameManifestsIn(names);
    const wanted = new Set(names.map((n) => `${n}-${benchNode}`));
    await waitFor('10 pods Running', async () => {
      const pods: V1Pod[] = await listPods(agent.socket);
      return pods.filter((p) => wanted.has(p.metadata?.name ?? '') && isRunning(p)).length === wanted.size ? true : undefined;
    }, 120_000);
    const allRunningMs = now() - t0;
    const served = (await registry.log()).slice(logBefore);
    const count = (needle: string) => served.split(needle).length - 1;
    const result: PullResults = {
      imageMiB,
      nodeletMs: nodeletMs.map(round1),
      ctrMs: ctrMs.map(round1),
      ratio: round2(median(nodeletMs) / median(ctrMs)),
      shared: {
        pods: names.length,
        allRunningMs: round1(allRunningMs),
        blobFetches: sharedDigests.map((d) => count(`GET /v2/nodelet/bench-shared/blobs/${d} `)),
        tagResolutions: (served.match(/(GET|HEAD) \/v2\/nodelet\/bench-shared\/manifests\/1 /g) ?? []).length,
      },
    };
    await bench.nodeletTeardown(bench.signal);
    await bench.main.removeImage(sharedImage).catch(() => undefined);
    return result;
  } finally {
    await floorCtr('images', 'ls', '-q').then(({ stdout }) => {
      const left = stdout.split('\n').filter((n) => n.startsWith(`${registry.host}/`));
      return left.length > 0 ? floorCtr('images', 'rm', '--sync', ...left) : undefined;
    }).catch(() => undefined);
    await registry.stop();
  }
}

export function pullTable(r: PullResults): string {
  return [
    `image pull (${r.imageMiB} MiB of random layers from docker-registry on loopback, ${r.nodeletMs.length} reps, medians)`,
    `  nodelet (static pod, the agent's pull time)   ${fmtMs(median(r.nodeletMs))}`,
    `  ctr images pull into a fresh store (floor)      ${fmtMs(median(r.ctrMs))}`,
    `  ratio ${r.ratio}x (target 1.1x: ${r.ratio <= 1.1 ? 'met' : 'missed'})`,
    `${r.shared.pods} pods of one new image at once: all Running in ${fmtMs(r.shared.allRunningMs)}; blobs fetched [${r.shared.blobFetches.join(', ')}] times, tag resolved ${r.shared.tagResolutions} time(s) (target: once)`,
    '',
  ].join('\n');
}

