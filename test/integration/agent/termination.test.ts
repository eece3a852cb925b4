// Removing a manifest stops containers with SIGTERM, then SIGKILL once terminationGracePeriodSeconds has passed.
import { CriClient } from '../../../src/cri/client.js';
import { AgentProcess, busybox, criEndpoint, isRunning, removeRuntimePods, runtimeObjects, waitFor } from '../helpers/agent.js';

const cri = new CriClient(criEndpoint);
const agent = await AgentProcess.create();
const uids: string[] = [];

const manifest = (name: string, grace: number, script: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  terminationGracePeriodSeconds: ${grace}
  containers:
  - name: main
    image: ${busybox}
    command: ["sh", "-c", ${JSON.stringify(script)}]
`;

beforeAll(async () => {
  await agent.start();
});

afterAll(async () => {
  try {
    await agent.stop();
  } finally {
    await removeRuntimePods(cri, uids);
    await agent.cleanupDirs();
    cri.close();
  }
});

/** Removes the manifest and returns how long until nothing of the pod is left in the runtime. */
async function removalTime(name: string, uid: string): Promise<number> {
  const start = Date.now();
  await agent.removeManifest(`${name}.yaml`);
  await waitFor(`${name} removed`, async () => {
    const left = await runtimeObjects(cri, [uid]);
    return left.sandboxes.length + left.containers.length === 0 ? true : undefined;
  }, 60_000, 50);
  return Date.now() - start;
}

test('a container that ignores SIGTERM is killed after the grace period; one that exits on SIGTERM goes at once', async () => {
  await agent.writeManifest('stubborn.yaml', manifest('stubborn', 4, "trap '' TERM; while true; do sleep 1; done"));
  await agent.writeManifest('polite.yaml', manifest('polite', 30, "trap 'exit 0' TERM; while true; do sleep 1; done"));
  const stubborn = await agent.waitForPod('stubborn', 'Running', isRunning);
  const polite = await agent.waitForPod('polite', 'Running', isRunning);
  uids.push(stubborn.metadata!.uid!, polite.metadata!.uid!);

  // SIGKILL comes only after the 4 s grace period.
  expect(await removalTime('stubborn', stubborn.metadata!.uid!)).toBeGreaterThanOrEqual(4_000);
  // SIGTERM is delivered: the pod is gone long before its 30 s grace period would force it.
  expect(await removalTime('polite', polite.metadata!.uid!)).toBeLessThan(20_000);
});
