// postStart and preStop hooks, and termination messages, observed in the container, on the host and in its log.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { busybox, isRunning, runtimeObjects, staticName, waitFor, testAgent } from '../helpers/agent.js';

const { agent, cri, uids } = await testAgent(() => rm(hostDir, { recursive: true, force: true }));
let hostDir: string;

beforeAll(async () => {
  hostDir = await mkdtemp(join(tmpdir(), 'nodelet-hooks-'));
  await agent.start();
});



async function waitPod(name: string, what: string, ok: (p: V1Pod) => boolean, timeoutMs = 60_000): Promise<V1Pod> {
  const p = await agent.waitForPod(name, what, ok, timeoutMs);
  uids.add(p.metadata!.uid!);
  return p;
}

const containerId = (p: V1Pod, i = 0) => p.status!.containerStatuses![i]!.containerID!.replace('containerd://', '');

test('postStart runs in the container before it is reported running', async () => {
  await agent.writeManifest('poststart.yaml', `apiVersion: v1
kind: Pod
metadata: {name: poststart}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo hooked > /tmp/poststart"]}
`);
  const pod = await waitPod('poststart', 'Running', isRunning);
  const res = await cri.execSync(containerId(pod), ['cat', '/tmp/poststart'], 5);
  expect(res.stdout.toString().trim()).toBe('hooked');
});

test('a failing postStart hook kills the container and it is restarted', async () => {
  await agent.writeManifest('badhook.yaml', `apiVersion: v1
kind: Pod
metadata: {name: badhook}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "exit 7"]}
`);
  await waitPod('badhook', 'restarted after a failed hook', (p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1, 60_000);
  const line = agent.logLines().find((l) => l.reason === 'FailedPostStartHook');
  expect(line?.pod).toBe(`default/${staticName('badhook')}`);
  expect(String(line?.msg)).toMatch(/^Exec lifecycle hook \(\[sh -c exit 7\]\) for Container "main" in Pod ".*" failed - error: /);
  await agent.removeManifest('badhook.yaml');
});

test('preStop runs before the stop signal, within the grace period', async () => {
  await agent.writeManifest('prestop.yaml', `apiVersion: v1
kind: Pod
metadata: {name: prestop}
spec:
  terminationGracePeriodSeconds: 10
  volumes:
  - {name: out, hostPath: {path: ${hostDir}, type: Directory}}
  containers:
  - name: main
    image: ${busybox}
    command: ["sh", "-c", "trap 'echo term >> /out/events; exit 0' TERM; while true; do sleep 1; done"]
    volumeMounts: [{name: out, mountPath: /out}]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "echo prestop >> /out/events; sleep 2"]}
`);
  const pod = await waitPod('prestop', 'Running', isRunning);
  await agent.removeManifest('prestop.yaml');
  await waitFor('prestop gone', async () => ((await runtimeObjects(cri, [pod.metadata!.uid!])).containers.length === 0 ? true : undefined), 30_000);
  expect((await readFile(join(hostDir, 'events'), 'utf8')).trim().split('\n')).toEqual(['prestop', 'term']);
});

test('terminationMessagePath and FallbackToLogsOnError fill the terminated state\'s message', async () => {
  await agent.writeManifest('messages.yaml', `apiVersion: v1
kind: Pod
metadata: {name: messages}
spec:
  restartPolicy: Never
  containers:
  - name: file
    image: ${busybox}
    command: ["sh", "-c", "echo 'disk full' > /dev/termination-log; exit 1"]
  - name: logs
    image: ${busybox}
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "echo first; echo 'last words'; exit 2"]
  - name: custom
    image: ${busybox}
    terminationMessagePath: /tmp/why
    command: ["sh", "-c", "echo 'done here' > /tmp/why"]
`);
  const pod = await waitPod('messages', 'Failed', (p) => p.status?.phase === 'Failed');
  const byName = new Map(pod.status!.containerStatuses!.map((s) => [s.name, s.state!.terminated!]));
  expect(byName.get('file')).toMatchObject({ exitCode: 1, message: 'disk full\n' });
  expect(byName.get('logs')).toMatchObject({ exitCode: 2, message: 'first\nlast words' });
  expect(byName.get('custom')).toMatchObject({ exitCode: 0, message: 'done here\n' });
});
