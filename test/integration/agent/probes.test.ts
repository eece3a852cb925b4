// Probes run by the real agent against real containers: liveness restarts, readiness flips, startup gating, tcp, no pile-up.
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { busybox, sleep, staticName, waitFor, testAgent } from '../helpers/agent.js';

const { agent, cri, uids: seenUids } = await testAgent();

const manifest = (name: string, containers: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
${containers}`;

const manifests: Record<string, string> = {
  'liveness.yaml': manifest('liveness', `  - name: main
    image: ${busybox}
    command: [sh, -c, 'touch /tmp/healthy; sleep 3; rm -f /tmp/healthy; sleep 3600']
    livenessProbe: {exec: {command: [cat, /tmp/healthy]}, periodSeconds: 1, failureThreshold: 1}
`),
  'readiness.yaml': manifest('readiness', `  - name: web
    image: ${busybox}
    command: [sh, -c, 'mkdir -p /www && echo ok > /www/ready.html && exec httpd -f -p 8080 -h /www']
    ports: [{name: http, containerPort: 8080}]
    readinessProbe: {httpGet: {path: /ready.html, port: http}, periodSeconds: 1, failureThreshold: 1}
`),
  'startup.yaml': manifest('startup', `  - name: slow
    image: ${busybox}
    command: [sh, -c, 'sleep 8; touch /tmp/started; sleep 3600']
    startupProbe: {exec: {command: [cat, /tmp/started]}, periodSeconds: 1, failureThreshold: 30}
    livenessProbe: {exec: {command: [sh, -c, 'echo run >> /tmp/liveness-runs; cat /tmp/started']}, periodSeconds: 1, failureThreshold: 1}
`),
  'tcp.yaml': manifest('tcp', `  - name: open
    image: ${busybox}
    command: [sh, -c, 'mkdir -p /www && exec httpd -f -p 8080 -h /www']
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
  - name: closed
    image: ${busybox}
    command: [sleep, '3600']
    readinessProbe: {tcpSocket: {port: 9999}, periodSeconds: 1, failureThreshold: 1}
`),
  'slow.yaml': manifest('slow', `  - name: main
    image: ${busybox}
    command: [sleep, '3600']
    readinessProbe: {exec: {command: [sh, -c, 'echo start >> /tmp/runs; sleep 3; echo end >> /tmp/runs']}, periodSeconds: 1, timeoutSeconds: 10}
  - name: timeout
    image: ${busybox}
    command: [sleep, '3600']
    readinessProbe: {exec: {command: [sleep, '5']}, periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 1}
`),
};

beforeAll(async () => {
  await agent.start();
  // Every pod starts at once; each test then watches its own.
  for (const [file, text] of Object.entries(manifests)) await agent.writeManifest(file, text);
});



function remember(p: V1Pod): V1Pod {
  seenUids.add(p.metadata!.uid!);
  return p;
}

const status = (p: V1Pod, container: string): V1ContainerStatus | undefined => p.status?.containerStatuses?.find((c) => c.name === container);
const readyCondition = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status;
const idOf = (cs: V1ContainerStatus | undefined) => (cs?.containerID ?? '').replace('containerd://', '');

async function exec(containerId: string, cmd: string[]): Promise<{ exitCode: number; stdout: string }> {
  const r = await cri.execSync(containerId, cmd, 10);
  return { exitCode: r.exitCode, stdout: r.stdout.toString() };
}

/** Log lines of the agent about one probe of one pod's container. */
function probeLogs(pod: string, container: string, prefix: string): Record<string, unknown>[] {
  return agent
    .logLines()
    .filter((l) => l.pod === `default/${staticName(pod)}` && l.container === container && String(l.msg).startsWith(prefix));
}

describe('probes', () => {
  test('a failing liveness probe restarts the container (restartCount 1), the killed one shows Error 137', async () => {
    const restarted = remember(
      await agent.waitForPod('liveness', 'restarted after the liveness failure', (p) => {
        const cs = status(p, 'main');
        return cs?.restartCount === 1 && !!cs.state?.running;
      }, 60_000),
    );
    const cs = status(restarted, 'main')!;
    expect(cs.lastState?.terminated).toMatchObject({ exitCode: 137, reason: 'Error' });
    const failed = probeLogs('liveness', 'main', 'Liveness probe failed:');
    expect(failed.length).toBeGreaterThanOrEqual(1);
    expect(failed[0]).toMatchObject({ level: 40, reason: 'Unhealthy', probeType: 'liveness', msg: "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory" });
    const kill = agent.logLines().find((l) => l.msg === 'Killing container with a grace period' && l.reason === 'Container main failed liveness probe, will be restarted');
    expect(kill).toMatchObject({ pod: `default/${staticName('liveness')}`, container: 'main', gracePeriod: 2 });
  });

  test('an httpGet readiness probe flips Ready False -> True and back with the served file', async () => {
    const ready = remember(await agent.waitForPod('readiness', 'Ready', (p) => readyCondition(p) === 'True' && !!status(p, 'web')?.ready, 30_000));
    const id = idOf(status(ready, 'web'));
    expect((await exec(id, ['rm', '/www/ready.html'])).exitCode).toBe(0);
    const unready = await agent.waitForPod('readiness', 'not Ready', (p) => readyCondition(p) === 'False', 15_000);
    expect(status(unready, 'web')).toMatchObject({ ready: false, started: true, restartCount: 0 });
    expect(unready.status!.conditions!.find((c) => c.type === 'ContainersReady')).toMatchObject({ status: 'False', reason: 'ContainersNotReady' });
    expect(probeLogs('readiness', 'web', 'Readiness probe failed:')[0]).toMatchObject({ msg: 'Readiness probe failed: HTTP probe failed with statuscode: 404' });
    expect((await exec(id, ['sh', '-c', 'echo ok > /www/ready.html'])).exitCode).toBe(0);
    const again = await agent.waitForPod('readiness', 'Ready again', (p) => readyCondition(p) === 'True', 15_000);
    expect(status(again, 'web')).toMatchObject({ ready: true, restartCount: 0 });
    expect(idOf(status(again, 'web'))).toBe(id);
  });

  test('a startup probe holds liveness back until it succeeds', async () => {
    const starting = remember(await agent.waitForPod('startup', 'running', (p) => !!status(p, 'slow')?.state?.running, 30_000));
    const id = idOf(status(starting, 'slow'));
    expect(status(starting, 'slow')).toMatchObject({ started: false, ready: false });
    // Liveness would fail (no /tmp/started yet) and restart the container if it ran before startup succeeded.
    expect((await exec(id, ['cat', '/tmp/liveness-runs'])).exitCode).not.toBe(0);
    const started = await agent.waitForPod('startup', 'started', (p) => !!status(p, 'slow')?.started, 30_000);
    expect(status(started, 'slow')).toMatchObject({ ready: true, restartCount: 0 });
    await waitFor('liveness runs after startup', async () => ((await exec(id, ['cat', '/tmp/liveness-runs'])).exitCode === 0 ? true : undefined), 10_000);
    await sleep(2_000);
    const later = (await agent.pod('startup'))!;
    expect(status(later, 'slow')).toMatchObject({ restartCount: 0, ready: true });
    expect(idOf(status(later, 'slow'))).toBe(id);
    expect(probeLogs('startup', 'slow', 'Liveness probe failed:')).toEqual([]);
  });

  test('tcpSocket probes: an open port is ready, a closed one is not (and keeps the pod unready)', async () => {
    const p = remember(await agent.waitForPod('tcp', 'open container ready', (x) => !!status(x, 'open')?.ready, 30_000));
    await waitFor('closed port reported', async () => (probeLogs('tcp', 'closed', 'Readiness probe failed:').length > 0 ? true : undefined), 10_000);
    const now = (await agent.pod('tcp'))!;
    expect(status(now, 'closed')).toMatchObject({ ready: false, started: true });
    expect(readyCondition(now)).toBe('False');
    const failure = probeLogs('tcp', 'closed', 'Readiness probe failed:')[0]!;
    expect(failure.msg).toBe(`Readiness probe failed: dial tcp ${p.status!.podIP}:9999: connect: connection refused`);
  });

  test('a probe slower than its period runs back to back, never overlapping; a timed-out exec fails', async () => {
    const p = remember(await agent.waitForPod('slow', 'running', (x) => !!status(x, 'main')?.state?.running, 30_000));
    const id = idOf(status(p, 'main'));
    const runLines = async () => (await exec(id, ['cat', '/tmp/runs'])).stdout.trim().split('\n');
    const startsIn = (lines: string[]) => lines.filter((l) => l === 'start').length;
    await waitFor('first slow run', async () => ((await exec(id, ['cat', '/tmp/runs'])).exitCode === 0 ? true : undefined), 10_000);
    const before = startsIn(await runLines());
    await sleep(9_000);
    const runs = await runLines();
    const starts = startsIn(runs) - before;
    // 9 s at 3 s a run: 3 or 4 new starts; piling up at a 1 s period would give 9.
    expect(starts).toBeGreaterThanOrEqual(2);
    expect(starts).toBeLessThanOrEqual(4);
    // Strictly alternating: a run never starts before the previous one ended.
    runs.forEach((l, i) => expect(l).toBe(i % 2 === 0 ? 'start' : 'end'));
    expect(status((await agent.pod('slow'))!, 'main')!.ready).toBe(true);

    await waitFor('timeout reported', async () => (probeLogs('slow', 'timeout', 'Readiness probe failed:').length > 0 ? true : undefined), 15_000);
    expect(probeLogs('slow', 'timeout', 'Readiness probe failed:')[0]!.msg).toBe('Readiness probe failed: command "sleep 5" timed out');
    expect(status((await agent.pod('slow'))!, 'timeout')!.ready).toBe(false);
  });
});
