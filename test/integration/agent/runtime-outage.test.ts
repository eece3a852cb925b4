// containerd absent at start and going away later: nodelet keeps running, says so, and recovers by itself.
import { CriClient } from '../../../src/cri/client.js';
import { AgentProcess, busybox, criEndpoint, isRunning, sleep, startContainerd, stopContainerd, waitFor } from '../helpers/agent.js';

const cri = new CriClient(criEndpoint);
const agent = await AgentProcess.create();
const uids = new Set<string>();

const logged = (msg: string) => agent.logLines().some((l) => l.msg === msg);

afterAll(async () => {
  try {
    await startContainerd();
    await agent.shutdown(cri, uids);
  } finally {
    cri.close();
  }
});


test('nodelet starts without containerd, waits for it, and runs the pod once it is there', async () => {
  await stopContainerd();
  await agent.writeManifest('pod.yaml', `apiVersion: v1
kind: Pod
metadata: {name: patient}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: main, image: ${busybox}, command: ["sleep", "3600"]}
`);
  await agent.start();
  await waitFor('the agent to say the runtime is unreachable', async () => (logged('Container runtime is not responding; will keep retrying') ? true : undefined), 20_000);
  const pending = await agent.waitForPod('patient', 'known but not running', (p) => p.status?.phase === 'Pending', 10_000);
  uids.add(pending.metadata!.uid!);
  await sleep(2_000);
  expect(agent.running).toBe(true);

  await startContainerd();
  const running = await agent.waitForPod('patient', 'Running after containerd came up', isRunning, 60_000);
  expect(running.status!.containerStatuses![0]!.restartCount).toBe(0);
});

test('containerd going away and coming back: nodelet stays up and the pod is left running as it was', async () => {
  const before = (await agent.pod('patient'))!;
  const containerID = before.status!.containerStatuses![0]!.containerID;
  await stopContainerd();
  await waitFor('the agent to notice the runtime is gone', async () =>
    agent.logLines().filter((l) => l.msg === 'Container runtime is not responding; will keep retrying').length >= 2 ? true : undefined, 20_000);
  expect(agent.running).toBe(true);
  expect((await agent.pods()).length).toBe(1);

  await startContainerd();
  await waitFor('the agent to notice the runtime is back', async () =>
    agent.logLines().filter((l) => l.msg === 'Container runtime is responding again').length >= 2 ? true : undefined, 30_000);
  await sleep(2_000);
  const after = await agent.waitForPod('patient', 'Running', isRunning, 30_000);
  expect(after.status!.containerStatuses![0]!.containerID).toBe(containerID);
  expect(after.status!.containerStatuses![0]!.restartCount).toBe(0);
});
