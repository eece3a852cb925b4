// Slow pulls from a real registry (Debian's docker-registry on loopback, test/integration/helpers/registry.ts) through a
// loopback proxy that sends its answers at 4 MiB/s, nodelet standalone: a pull's progress in the agent's log and in
// `nodelet pods -o wide` while it runs; and the registry stopped in the middle of a pull: ErrImagePull, then
// ImagePullBackOff, no image of it in containerd's list, and a pod beside it starting as usual.
import type { V1Pod } from '@kubernetes/client-node';
import { execa } from 'execa';
import { busybox, isRunning, repoRoot, staticName, testAgent, waitFor } from '../helpers/agent.js';
import { randomImageLayers, startRegistry, type Registry, type ThrottledProxy } from '../helpers/registry.js';

let registry: Registry | undefined;
let proxy: ThrottledProxy | undefined;
const { agent, cri, uids } = await testAgent(async () => {
  await proxy?.stop();
  await registry?.stop();
});

beforeAll(async () => {
  registry = await startRegistry();
  proxy = await registry.throttled(4 << 20);
  await agent.start();
}, 120_000);

function podManifest(name: string, image: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }] },
  });
}

/** The pod's row of `nodelet pods -o wide` when the table has the IMAGE PULL column, else undefined. */
async function pullRow(name: string): Promise<string | undefined> {
  const { stdout } = await execa(process.execPath, [`${repoRoot}/bin/nodelet.js`, 'pods', '--root-dir', agent.rootDir, '-o', 'wide']);
  const [header, ...rows] = stdout.split('\n');
  if (!header?.endsWith('IMAGE PULL')) return undefined;
  return rows.find((r) => r.includes(staticName(name)));
}

const waitingReason = (p: V1Pod) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason;

test('a pull of about 32 MiB at 4 MiB/s: its progress in nodelet pods -o wide and in the log, then the pod runs', async () => {
  await registry!.upload('nodelet/big:1', await randomImageLayers(3, 10 << 20));
  const image = `${proxy!.host}/nodelet/big:1`;
  await agent.writeManifest('big.yaml', podManifest('big', image));
  const seen: string[] = [];
  await waitFor('progress past 30% in nodelet pods -o wide', async () => {
    const row = await pullRow('big');
    if (row) seen.push(row);
    const percent = Number(/\((\d+)%\)$/.exec(row ?? '')?.[1] ?? -1);
    return percent >= 30 ? row : undefined;
  }, 60_000, 250);
  expect(seen.at(-1)).toMatch(new RegExp(`${image.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\d+\\.\\dMiB of 3\\d\\.\\dMiB \\(\\d+%\\)$`));
  const pod = await agent.waitForPod('big', 'Running', isRunning, 90_000);
  uids.add(pod.metadata!.uid!);
  // Once running, no pull is shown.
  expect(await pullRow('big')).toBeUndefined();
  // The log: a line at least every 5 s of the pull, with the figures as fields, never going back.
  const lines = agent.logLines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith(`Pulling image "${image}": `));
  expect(lines.length).toBeGreaterThanOrEqual(1);
  const downloaded = lines.map((l) => l.downloadedBytes as number);
  expect(downloaded).toEqual([...downloaded].sort((a, b) => a - b));
  expect(lines.at(-1)).toMatchObject({ image, totalBytes: expect.any(Number) });
  expect(agent.logLines().some((l) => l.msg === `Successfully pulled image "${image}"`)).toBe(true);
  await agent.removeManifest('big.yaml');
}, 180_000);

test('the registry stopped in the middle of a pull: ErrImagePull then ImagePullBackOff, no image left, the pod beside it runs', async () => {
  await registry!.upload('nodelet/cut:1', await randomImageLayers(3, 10 << 20));
  const image = `${proxy!.host}/nodelet/cut:1`;
  await agent.writeManifest('cut.yaml', podManifest('cut', image));
  await waitFor('the pull under way', async () => {
    const percent = Number(/\((\d+)%\)$/.exec((await pullRow('cut')) ?? '')?.[1] ?? 0);
    return percent >= 10 ? true : undefined;
  }, 60_000, 250);
  const stopped = registry!;
  registry = undefined;
  await stopped.stop();
  // A pod whose image is present starts meanwhile: only the pulling pod is affected.
  await agent.writeManifest('beside.yaml', podManifest('beside', busybox));
  const failed = await agent.waitForPod('cut', 'ErrImagePull', (p) => waitingReason(p) === 'ErrImagePull', 60_000);
  uids.add(failed.metadata!.uid!);
  expect(failed.status!.containerStatuses![0]!.state!.waiting!.message).toBeTruthy();
  const beside = await agent.waitForPod('beside', 'Running', isRunning, 60_000);
  uids.add(beside.metadata!.uid!);
  await agent.waitForPod('cut', 'ImagePullBackOff', (p) => waitingReason(p) === 'ImagePullBackOff', 60_000);
  // No image of the cut pull: containerd lists only complete images.
  const names = (await cri.listImages()).flatMap((i) => [...i.repoTags, ...i.repoDigests]);
  expect(names.filter((n) => n.includes('nodelet/cut'))).toEqual([]);
  expect(agent.logLines().some((l) => l.msg === `Failed to pull image "${image}"`)).toBe(true);
  await agent.removeManifest('cut.yaml');
  await agent.removeManifest('beside.yaml');
}, 180_000);
