// Hostile static pod manifests beside a good one, against the real agent, containerd, runc and CNI: the good pod runs,
// the agent stays up, and each bad file is named once in the log however many rescans pass.
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { writeHostileManifests } from '../../fixtures/hostile-manifests.js';
import { busybox, isRunning, sleep, staticName, testAgent } from '../helpers/agent.js';

// The outward symlink's target lives beside the manifest directory, in the test's directory the clean-up removes.
const { agent, uids } = await testAgent();

const good = `apiVersion: v1
kind: Pod
metadata:
  name: good
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ${busybox}
    command: [sleep, "3600"]
`;

test('every hostile file costs only itself', async () => {
  const hostile = await writeHostileManifests(agent.manifestDir, join(agent.manifestDir, '..', 'outside'), busybox);
  await agent.writeManifest('good.yaml', good);
  // A rescan every second, so the wait below spans several.
  await agent.start(['--file-check-frequency', '1s']);
  const pod: V1Pod = await agent.waitForPod('good', 'Running', isRunning, 120_000);
  uids.add(pod.metadata!.uid!);
  await sleep(5_000);
  expect(agent.running).toBe(true);

  const lines = agent.logLines();
  for (const { file, logged } of hostile) {
    const path = join(agent.manifestDir, file);
    const named = lines.filter((l) => l.file === path || String(l.msg).includes(path));
    expect({ file, lines: named.length }).toEqual({ file, lines: 1 });
    expect({ file, msg: named[0]!.msg }).toEqual({ file, msg: expect.stringMatching(logged) });
  }
  // Only the good pod exists: nothing of a hostile file ran, or was even tried.
  expect((await agent.pods()).map((p) => p.metadata!.name)).toEqual([staticName('good')]);
  // Nothing threw out of a scan.
  expect(lines.filter((l) => /scan failed|RangeError|Maximum call stack/.test(JSON.stringify(l)))).toEqual([]);
}, 240_000);
