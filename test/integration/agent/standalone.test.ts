// nodelet in standalone mode against the real containerd, runc and CNI plugins started by the rig.
import { existsSync } from 'node:fs';
import { execa } from 'execa';
import { readFile } from 'node:fs/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { watchPods, type PodWatchEvent } from '../../../src/agent/status-api.js';
import { podUidLabel } from '../../../src/core/labels.js';
import {
  bridgePorts,
  busybox,
  containerPid,
  httpGet,
  ipReservations,
  isRunning,
  podSubnetPrefix,
  repoRoot,
  runtimeObjects,
  sandboxNetns,
  sleep,
  staticName,
  waitFor,
  waitForRuntimeGone,
  testAgent,
} from '../helpers/agent.js';


const webManifest = (name: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels: {app: ${name}}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: httpd
    image: ${busybox}
    env:
    - {name: GREETING, value: "hello from ${name}"}
    command: ["sh", "-c"]
    args: ['mkdir -p /www && echo "$(GREETING)" > /www/index.html && exec httpd -f -p 8080 -h /www']
    ports:
    - containerPort: 8080
`;

const { agent, cri, uids: seenUids } = await testAgent();

function remember(p: V1Pod): V1Pod {
  seenUids.add(p.metadata!.uid!);
  return p;
}

async function runningPod(name: string): Promise<V1Pod> {
  return remember(await agent.waitForPod(name, 'Running with an IP', isRunning));
}

beforeAll(async () => {
  await agent.start();
});




/** The page a pod's httpd serves, asked until it answers: a container reported running may not listen yet. */
const answer = (url: string) => waitFor(`${url} answering`, () => httpGet(url).catch(() => undefined), 15_000, 250);
describe('standalone static pods', () => {
  let a: V1Pod;
  let b: V1Pod;

  test('two pods reach Running with IPs from the pod subnet, with kubelet labels on the sandbox', async () => {
    await agent.writeManifest('web-a.yaml', webManifest('web-a'));
    await agent.writeManifest('web-b.json', JSON.stringify({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-b' },
      spec: { terminationGracePeriodSeconds: 3, containers: [{ name: 'httpd', image: busybox, command: ['sh', '-c'], args: ['mkdir -p /www && echo "hello from web-b" > /www/index.html && exec httpd -f -p 8080 -h /www'] }] },
    }));
    a = await runningPod('web-a');
    b = await runningPod('web-b');
    for (const p of [a, b]) {
      expect(p.status!.podIP!.startsWith(podSubnetPrefix)).toBe(true);
      expect(p.status!.conditions!.find((c) => c.type === 'Ready')!.status).toBe('True');
      expect(p.status!.containerStatuses![0]!.containerID).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);
      // imageID is the image's digest reference, as for an image pulled from a registry.
      expect(p.status!.containerStatuses![0]!.imageID).toMatch(/^localhost\/nodelet\/busybox@sha256:[0-9a-f]{64}$/);
    }
    expect(a.status!.podIP).not.toBe(b.status!.podIP);

    const sandboxes = await cri.listPodSandbox({ labelSelector: { [podUidLabel]: a.metadata!.uid! } });
    expect(sandboxes).toHaveLength(1);
    expect(sandboxes[0]!.labels).toMatchObject({
      'io.kubernetes.pod.name': staticName('web-a'),
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': a.metadata!.uid,
      app: 'web-a',
    });
    const containers = await cri.listContainers({ labelSelector: { [podUidLabel]: a.metadata!.uid! } });
    expect(containers[0]!.labels['io.kubernetes.container.name']).toBe('httpd');
    // Log layout: <podLogsDir>/<ns>_<name>_<uid>/<container>/<restartCount>.log
    const logFile = `${agent.podLogsDir}/default_${staticName('web-a')}_${a.metadata!.uid}/httpd/0.log`;
    await waitFor('container log file', async () => (existsSync(logFile) ? true : undefined), 10_000);
  });

  test('`nodelet pods` prints the running agent\'s pods as a table and as JSON', async () => {
    const cli = (args: string[]) => execa(process.execPath, [`${repoRoot}/bin/nodelet.js`, 'pods', '--root-dir', agent.rootDir, ...args]);
    const table = (await cli(['-o', 'wide'])).stdout.split('\n');
    expect(table[0]).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$/);
    const row = table.find((l) => l.includes(staticName('web-a')))!;
    expect(row.split(/\s{2,}/).slice(0, 7)).toEqual(['default', staticName('web-a'), '1/1', 'Running', '0', expect.stringMatching(/^\d+s$/), a.status!.podIP]);
    const list = JSON.parse((await cli(['-o', 'json'])).stdout) as { kind: string; items: V1Pod[] };
    expect(list.kind).toBe('List');
    expect(list.items.map((p) => p.metadata!.name).sort()).toEqual([staticName('web-a'), staticName('web-b')]);
  });

  test('a watch opened before a manifest is written delivers the pod Running with its IP, then DELETED; so does `nodelet pods -w`', async () => {
    const name = staticName('watched');
    const events: PodWatchEvent[] = [];
    const stop = new AbortController();
    let established!: () => void;
    const initial = new Promise<void>((r) => (established = r));
    const watching = watchPods(agent.socket, { signal: stop.signal, sendInitialEvents: true }, (e) => {
      if (e.type === 'BOOKMARK') established();
      else if (e.object.metadata?.name === name) events.push(e);
    });
    const cli = execa(process.execPath, [`${repoRoot}/bin/nodelet.js`, 'pods', '-w', '-o', 'wide', '--root-dir', agent.rootDir]);
    let printed = '';
    cli.stdout!.on('data', (d: Buffer) => (printed += d.toString()));
    try {
      await Promise.race([initial, watching.then(() => Promise.reject(new Error('the watch ended before its initial events')))]);
      // The initial table (web-a, web-b) is out: the CLI's watch is established too.
      await waitFor('the initial table of `nodelet pods -w`', async () => (printed.includes(staticName('web-b')) ? true : undefined), 10_000, 50);
      await agent.writeManifest('watched.yaml', `apiVersion: v1
kind: Pod
metadata: {name: watched}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ${busybox}
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`);
      const ran = await waitFor('the watch to deliver the pod Running with its IP', async () => events.find((e) => isRunning(e.object)), 60_000, 20);
      remember(ran.object);
      expect(ran.object.status!.podIP!.startsWith(podSubnetPrefix)).toBe(true);
      expect(events[0]!.type).toBe('ADDED');
      expect(events.slice(1).every((e) => e.type === 'MODIFIED')).toBe(true);
      await waitFor('a Running row from `nodelet pods -w`', async () =>
        printed.split('\n').some((l) => l.startsWith(`default   ${name}   1/1   Running   0   `) && l.includes(ran.object.status!.podIP!)) ? true : undefined, 10_000, 50);

      await agent.removeManifest('watched.yaml');
      const deleted = await waitFor('the watch to deliver DELETED', async () => events.find((e) => e.type === 'DELETED'), 30_000, 50);
      expect(deleted.object.metadata!.uid).toBe(ran.object.metadata!.uid);
      expect(events.at(-1)).toBe(deleted);
      await waitForRuntimeGone(cri, [ran.object.metadata!.uid!], 30_000);
    } finally {
      stop.abort();
      await watching;
      cli.kill('SIGINT');
      await agent.removeManifest('watched.yaml');
    }
    expect((await cli).exitCode).toBe(0);
  });

  test('the host reaches both pods, and pod A fetches pod B over the pod network', async () => {
    expect((await answer(`http://${a.status!.podIP}:8080/`)).trim()).toBe('hello from web-a');
    expect((await answer(`http://${b.status!.podIP}:8080/`)).trim()).toBe('hello from web-b');
    const aContainer = a.status!.containerStatuses![0]!.containerID!.replace('containerd://', '');
    // (busybox 1.35's `wget -T` crashes: the exec's own timeout bounds it instead)
    const res = await cri.execSync(aContainer, ['wget', '-q', '-O', '-', `http://${b.status!.podIP}:8080/`], 10);
    expect(res.exitCode).toBe(0);
    expect(res.stdout.toString().trim()).toBe('hello from web-b');
  });

  test('a killed container is restarted (restartCount 1), a second kill shows CrashLoopBackOff', async () => {
    const id = a.status!.containerStatuses![0]!.containerID!.replace('containerd://', '');
    process.kill(await containerPid(cri, id), 'SIGKILL');
    const restarted = await agent.waitForPod('web-a', 'restarted once', (p) => {
      const cs = p.status?.containerStatuses?.[0];
      return cs?.restartCount === 1 && !!cs.state?.running;
    }, 30_000);
    const cs = restarted.status!.containerStatuses![0]!;
    expect(cs.lastState?.terminated?.exitCode).toBe(137);
    expect(cs.containerID).not.toBe(`containerd://${id}`);
    expect((await answer(`http://${restarted.status!.podIP}:8080/`)).trim()).toBe('hello from web-a');

    // The second exit falls inside the 10 s back-off opened by the first restart.
    process.kill(await containerPid(cri, cs.containerID!.replace('containerd://', '')), 'SIGKILL');
    const backingOff = await agent.waitForPod('web-a', 'CrashLoopBackOff', (p) =>
      p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff', 15_000);
    expect(backingOff.status!.containerStatuses![0]!.state!.waiting!.message).toMatch(/^back-off 10s restarting failed container=httpd pod=/);
    const again = await agent.waitForPod('web-a', 'restarted after back-off', (p) => {
      const c = p.status?.containerStatuses?.[0];
      return c?.restartCount === 2 && !!c.state?.running;
    }, 30_000);
    a = remember(again);
  });

  test('restartPolicy Never with exit 3 ends Failed with exitCode 3, and its sandbox is stopped', async () => {
    await agent.writeManifest('fail.yaml', `apiVersion: v1
kind: Pod
metadata: {name: fail}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: ${busybox}
    command: ["sh", "-c", "echo failing; exit 3"]
`);
    const p = remember(await agent.waitForPod('fail', 'Failed', (x) => x.status?.phase === 'Failed', 60_000));
    const t = p.status!.containerStatuses![0]!.state!.terminated!;
    expect(t.exitCode).toBe(3);
    expect(t.reason).toBe('Error');
    await waitFor('sandbox stopped', async () => {
      const s = await cri.listPodSandbox({ labelSelector: { [podUidLabel]: p.metadata!.uid! } });
      return s.every((x) => x.state === 'SANDBOX_NOTREADY') ? true : undefined;
    }, 20_000);
    const log = await readFile(`${agent.podLogsDir}/default_${staticName('fail')}_${p.metadata!.uid}/main/0.log`, 'utf8');
    expect(log).toContain('failing');
  });

  test('a malformed manifest is reported with file and field, and the other pods keep running', async () => {
    await agent.writeManifest('bad.yaml', `apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers:
  - {name: one, image: ${busybox}}
  - {name: one, image: "UPPER/Case:bad tag"}
`);
    const line = await waitFor('invalid manifest log line', async () =>
      agent.logLines().find((l) => typeof l.file === 'string' && (l.file as string).endsWith('bad.yaml')), 10_000);
    expect(String(line.field)).toMatch(/^spec\.containers\[1\]\.(name|image)$/);
    expect(await agent.pod('bad')).toBeUndefined();
    expect(isRunning((await agent.pod('web-b'))!)).toBe(true);
    await agent.removeManifest('bad.yaml');
  });

  test('a static pod referencing a Secret or a ConfigMap is refused as kubelet 1.37 refuses it; nothing of it runs', async () => {
    await agent.writeManifest('apiref.yaml', `apiVersion: v1
kind: Pod
metadata: {name: apiref}
spec:
  volumes:
  - {name: cfg, configMap: {name: settings}}
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    env:
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: db, key: password}}}
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
`);
    const line = await waitFor('the refusal in the log', async () =>
      agent.logLines().find((l) => typeof l.file === 'string' && (l.file as string).endsWith('apiref.yaml')), 10_000);
    // Secrets come before configMaps in kubelet's check; the field names the reference.
    expect(line.field).toBe('spec.containers[0].env[0].valueFrom.secretKeyRef');
    expect(line.msg).toBe('invalid pod manifest: spec.containers[0].env[0].valueFrom.secretKeyRef: static pods may not reference secrets');
    expect(await agent.pod('apiref')).toBeUndefined();
    await agent.removeManifest('apiref.yaml');
  });

  test('an image that cannot be pulled gives ErrImagePull, then ImagePullBackOff', async () => {
    await agent.writeManifest('nopull.yaml', `apiVersion: v1
kind: Pod
metadata: {name: nopull}
spec:
  containers:
  - name: main
    image: localhost/nodelet/does-not-exist:1.0
`);
    const reasons = new Set<string>();
    await waitFor('ErrImagePull then ImagePullBackOff', async () => {
      const p = await agent.pod('nopull');
      if (p) remember(p);
      const r = p?.status?.containerStatuses?.[0]?.state?.waiting?.reason;
      if (r) reasons.add(r);
      return reasons.has('ErrImagePull') && reasons.has('ImagePullBackOff') ? true : undefined;
    }, 40_000, 100);
    const p = (await agent.pod('nopull'))!;
    expect(p.status!.phase).toBe('Pending');
    await agent.removeManifest('nopull.yaml');
    await waitFor('nopull removed', async () => {
      const left = await runtimeObjects(cri, [p.metadata!.uid!]);
      return left.sandboxes.length === 0 && !(await agent.pod('nopull')) ? true : undefined;
    }, 30_000);
  });

  test('restarting nodelet adopts running pods: no new sandbox, no restart, counts kept', async () => {
    const before = await agent.pods();
    const idsBefore = await runtimeObjects(cri, before.map((p) => p.metadata!.uid!));
    expect(await agent.stop()).toBe(0);
    await sleep(1_500);
    await agent.start();
    const after = await agent.waitForPod('web-a', 'Running again', isRunning, 30_000);
    await sleep(3_000); // a few relists: anything wrongly restarted would show up now
    const idsAfter = await runtimeObjects(cri, before.map((p) => p.metadata!.uid!));
    expect(idsAfter.sandboxes.sort()).toEqual(idsBefore.sandboxes.sort());
    expect(idsAfter.containers.sort()).toEqual(idsBefore.containers.sort());
    const cs = after.status!.containerStatuses![0]!;
    expect(cs.restartCount).toBe(2);
    expect(cs.containerID).toBe(a.status!.containerStatuses![0]!.containerID);
    expect(after.status!.podIP).toBe(a.status!.podIP);
  });

  test('a changed manifest replaces its pod (new UID, old pod removed from the runtime)', async () => {
    const old = (await agent.pod('web-a'))!;
    await agent.writeManifest('web-a.yaml', webManifest('web-a').replace('hello from web-a', 'hello again from web-a'));
    const fresh = remember(await agent.waitForPod('web-a', 'replaced and Running', (p) => p.metadata!.uid !== old.metadata!.uid && isRunning(p), 60_000));
    expect((await answer(`http://${fresh.status!.podIP}:8080/`)).trim()).toBe('hello again from web-a');
    await waitForRuntimeGone(cri, [old.metadata!.uid!], 30_000);
  });

  test('removing a manifest leaves no sandbox, container, netns, veth or IP reservation', async () => {
    const p = (await agent.pod('web-b'))!;
    const [sandbox] = await cri.listPodSandbox({ labelSelector: { [podUidLabel]: p.metadata!.uid! } });
    const netns = await sandboxNetns(cri, sandbox!.id);
    expect(netns && existsSync(netns)).toBe(true);
    const portsBefore = await bridgePorts('nodelet0');
    expect(await ipReservations()).toContain(p.status!.podIP);

    await agent.removeManifest('web-b.json');
    await waitForRuntimeGone(cri, [p.metadata!.uid!], 30_000);
    // The pod leaves the agent once its teardown has run to the end (the log directory goes last).
    await waitFor('web-b gone from the agent', async () => ((await agent.pod('web-b')) ? undefined : true), 10_000);
    expect(existsSync(netns!)).toBe(false);
    expect(await ipReservations()).not.toContain(p.status!.podIP);
    expect((await bridgePorts('nodelet0')).length).toBe(portsBefore.length - 1);
    expect(existsSync(`${agent.podLogsDir}/default_${staticName('web-b')}_${p.metadata!.uid}`)).toBe(false);
  });
});
