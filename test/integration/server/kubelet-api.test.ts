// The kubelet API (port 10250) against the REAL control plane: kubectl logs, exec, attach, port-forward and cp reach
// nodelet through kube-apiserver (its kubelet client certificate, nodelet's webhook authentication and authorization, as
// kubeadm configures a kubelet), and direct HTTPS calls are refused without credentials, with a foreign certificate and
// with a token that has no rights, and served once the token is bound to system:kubelet-api-admin.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { execa, type ResultPromise } from 'execa';
import type { V1Pod } from '@kubernetes/client-node';
import { busybox, containerPid, httpGet, runtimeObjects, sleep, waitFor, waitForRuntimeGone } from '../helpers/agent.js';
import { freePorts, startRealCluster, type RealCluster } from '../helpers/real-cluster.js';

let cluster: RealCluster;
let port = 0;
const running = (p: V1Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.ready);
const children: ResultPromise[] = [];
/** Short, so that two housekeeping rounds come quickly before the first stats scrape. */
const housekeepingSeconds = 1;

beforeAll(async () => {
  cluster = await startRealCluster();
  port = (await freePorts(1))[0]!;
  // As kubeadm sets up a kubelet: the cluster CA verifies client certificates (kube-apiserver's kubelet client), tokens
  // and authorization go through the API server (nodelet's defaults). A short denied-answer cache keeps the test quick.
  await cluster.agent.stop();
  await cluster.agent.start(['--client-ca-file', join(cluster.dir, 'pki', 'ca.crt'), '--port', String(port), '--authorization-webhook-cache-unauthorized-ttl', '2s',
    '--housekeeping-interval', `${housekeepingSeconds}s`]);
  await waitFor('the Node to advertise the kubelet port', async () => {
    const node = await cluster.node();
    return node.status?.daemonEndpoints?.kubeletEndpoint?.Port === port ? true : undefined;
  }, 60_000, 500);
  await cluster.kubectl.fromFile('create', 'pods.yaml', `
apiVersion: v1
kind: Pod
metadata: {name: logs}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: a
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo first; echo second; echo third; exec sleep 3600"]
  - name: b
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo b-out; echo b-err >&2; exec sleep 3600"]
---
apiVersion: v1
kind: Pod
metadata: {name: restarter}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    volumeMounts: [{name: data, mountPath: /data}]
    command: ["sh", "-c", "n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo attempt $n; if [ $n -ge 2 ]; then exec sleep 3600; fi; exit 1"]
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && echo hello-through-port-forward > /www/index.html && exec httpd -f -p 8080 -h /www"]
  - name: ticker
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "while true; do echo tick; sleep 0.3; done"]
---
apiVersion: v1
kind: Pod
metadata: {name: probed}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: scratch, emptyDir: {}}]
  containers:
  - name: worker
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    volumeMounts: [{name: scratch, mountPath: /scratch}]
    command: ["sh", "-c", "head -c 200000 /dev/zero > /scratch/blob; exec sleep 3600"]
    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}
  - name: done
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exit 0"]
  restartPolicy: OnFailure
`);
  for (const name of ['logs', 'web']) cluster.track(await cluster.kubectl.waitForPod(name, 'running', running, { seen: cluster.uids }));
  await cluster.kubectl.waitForPod('probed', 'running with its second container done', (p) => p.status?.phase === 'Running' &&
    p.status.containerStatuses?.find((c) => c.name === 'done')?.state?.terminated !== undefined && p.status.containerStatuses.find((c) => c.name === 'worker')?.ready === true, { seen: cluster.uids });
  await cluster.kubectl.waitForPod('restarter', 'running again after a restart', (p) => running(p) && (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1, { seen: cluster.uids, timeoutMs: 90_000 });
}, 300_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await cluster?.stop();
}, 300_000);

const kubectl = (...args: string[]) => cluster.kubectl.run(...args);
/** A long-running kubectl (logs -f, attach, port-forward), killed at the end. */
function spawnKubectl(...args: string[]): ResultPromise & { out: () => string } {
  const child = execa(join(cluster.binDir, 'kubectl'), ['--kubeconfig', cluster.adminKubeconfig, '--cache-dir', join(cluster.dir, 'kube-cache'), ...args], { reject: false, buffer: false });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  children.push(child);
  return Object.assign(child, { out: () => out });
}

describe('kubectl through kube-apiserver', () => {
  test('logs: plain, -c in a multi-container pod, --tail, --timestamps, --since', async () => {
    expect(await kubectl('logs', 'logs', '-c', 'a')).toBe('first\nsecond\nthird');
    expect((await kubectl('logs', 'logs', '-c', 'b')).split('\n').sort()).toEqual(['b-err', 'b-out']);
    expect(await kubectl('logs', 'logs', '-c', 'a', '--tail=1')).toBe('third');
    const stamped = (await kubectl('logs', 'logs', '-c', 'a', '--timestamps')).split('\n');
    expect(stamped).toHaveLength(3);
    for (const line of stamped) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}(Z|[+-]\d\d:\d\d) (first|second|third)$/);
    expect(await kubectl('logs', 'logs', '-c', 'a', '--since=1h')).toBe('first\nsecond\nthird');
    await sleep(2_000);
    expect(await kubectl('logs', 'logs', '-c', 'a', '--since=1s')).toBe('');
    expect(await kubectl('logs', 'logs', '-c', 'a', '--limit-bytes=8')).toBe('first\nse');
  });

  test('logs -f sees a new line within a second', async () => {
    const follow = spawnKubectl('logs', '-f', 'logs', '-c', 'a');
    await waitFor('the existing lines', async () => (follow.out().includes('third') ? true : undefined), 20_000, 50);
    const written = Date.now();
    await kubectl('exec', 'logs', '-c', 'a', '--', 'sh', '-c', 'echo followed-line > /proc/1/fd/1');
    await waitFor('the new line', async () => (follow.out().includes('followed-line') ? true : undefined), 5_000, 20);
    // kubectl exec's own round trip is part of it; the line itself must arrive within a second of being written.
    expect(Date.now() - written).toBeLessThan(4_000);
    follow.kill('SIGTERM');
  });

  test('logs --previous after a restart', async () => {
    expect(await kubectl('logs', 'restarter', '--previous')).toBe('attempt 1');
    expect(await kubectl('logs', 'restarter')).toBe('attempt 2');
    const noPrevious = await cluster.kubectl.tryRun('logs', 'logs', '-c', 'a', '--previous');
    expect(noPrevious.exitCode).not.toBe(0);
    expect(noPrevious.stderr).toContain('previous terminated container "a" in pod "logs" not found');
  });

  test('logs of pods that ended: their stopped containers stay until the pods are deleted, then nothing is left', async () => {
    await cluster.kubectl.fromFile('create', 'ended.yaml', ['succeeds', 'fails'].map((name, i) => `
apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo ${name}-out; exit ${i * 3}"]
`).join('---\n'));
    const succeeded = await cluster.kubectl.waitForPod('succeeds', 'Succeeded', (p) => p.status?.phase === 'Succeeded', { seen: cluster.uids });
    const failed = await cluster.kubectl.waitForPod('fails', 'Failed', (p) => p.status?.phase === 'Failed', { seen: cluster.uids });
    expect(failed.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(3);
    const uids = [succeeded.metadata!.uid!, failed.metadata!.uid!];
    // Stopped (the sandbox too: its IP is released), not removed: logs are still read from the kept containers.
    await waitFor('the ended pods stopped', async () => {
      const sandboxes = (await cluster.cri.listPodSandbox()).filter((s) => uids.includes(s.labels['io.kubernetes.pod.uid'] ?? ''));
      return sandboxes.length === 2 && sandboxes.every((s) => s.state === 'SANDBOX_NOTREADY') ? true : undefined;
    }, 30_000, 200);
    expect((await runtimeObjects(cluster.cri, uids)).containers).toHaveLength(2);
    expect(await kubectl('logs', 'succeeds')).toBe('succeeds-out');
    expect(await kubectl('logs', 'fails')).toBe('fails-out');
    await kubectl('delete', 'pod', 'succeeds', 'fails', '--wait=true');
    await waitForRuntimeGone(cluster.cri, uids);
  });

  test('exec: stdin piped, stdout and stderr apart, exit code propagated', async () => {
    const r = await execa(join(cluster.binDir, 'kubectl'), ['--kubeconfig', cluster.adminKubeconfig, '--cache-dir', join(cluster.dir, 'kube-cache'),
      'exec', '-i', 'logs', '-c', 'b', '--', 'sh', '-c', 'cat; echo to-stderr >&2; exit 3'], { input: 'from-stdin\n', reject: false, timeout: 60_000 });
    expect(r.stdout).toBe('from-stdin');
    expect(r.stderr).toContain('to-stderr');
    expect(r.stderr).not.toContain('from-stdin');
    expect(r.exitCode).toBe(3);
  });

  test('attach streams the running process output', async () => {
    const attach = spawnKubectl('attach', 'web', '-c', 'ticker');
    await waitFor('ticks through attach', async () => ((attach.out().match(/tick/g) ?? []).length >= 2 ? true : undefined), 20_000, 50);
    attach.kill('SIGTERM');
  });

  test('port-forward carries an HTTP request', async () => {
    const local = (await freePorts(1))[0]!;
    const forward = spawnKubectl('port-forward', 'pod/web', `${local}:8080`);
    await waitFor('port-forward to listen', async () => (forward.out().includes('Forwarding from') ? true : undefined), 20_000, 50);
    expect(await httpGet(`http://127.0.0.1:${local}/`, 10_000)).toContain('hello-through-port-forward');
    expect(await httpGet(`http://127.0.0.1:${local}/`, 10_000)).toContain('hello-through-port-forward');
    forward.kill('SIGTERM');
  });

  test('cp both ways', async () => {
    const src = join(cluster.dir, 'work', 'to-pod.txt');
    await writeFile(src, 'copied into the pod\n');
    await kubectl('cp', src, 'logs:/tmp/in.txt', '-c', 'b');
    expect(await kubectl('exec', 'logs', '-c', 'b', '--', 'cat', '/tmp/in.txt')).toBe('copied into the pod');
    const back = join(cluster.dir, 'work', 'from-pod.txt');
    await kubectl('cp', 'logs:/tmp/in.txt', back, '-c', 'b');
    expect(await readFile(back, 'utf8')).toBe('copied into the pod\n');
  });

  test('kubectl debug: an ephemeral container joins its target\'s processes, exec and logs reach it, the pod runs on untouched', async () => {
    await kubectl('debug', 'restarter', '--image', busybox, '--image-pull-policy', 'IfNotPresent', '--target', 'main', '-c', 'debugger', '--', 'sh', '-c', 'echo polo; exec sleep 7200');
    const pod = await cluster.kubectl.waitForPod('restarter', 'its ephemeral container running', (p) => !!p.status?.ephemeralContainerStatuses?.find((c) => c.name === 'debugger')?.state?.running, { seen: cluster.uids });
    expect(pod.status?.ephemeralContainerStatuses?.[0]).toMatchObject({ name: 'debugger', ready: false, restartCount: 0 });
    expect(pod.status?.phase).toBe('Running');
    expect(pod.status?.containerStatuses?.[0]).toMatchObject({ ready: true, restartCount: 1 });
    // Running is reported when the process started, maybe before its echo reached the log file.
    await waitFor('the debugger\'s log line', async () => ((await kubectl('logs', 'restarter', '-c', 'debugger')) === 'polo' ? true : undefined), 20_000, 200);
    // The target's process namespace: its sleep is visible from the debugger (not from a container of its own).
    expect(await kubectl('exec', 'restarter', '-c', 'debugger', '--', 'ps', '-o', 'args')).toContain('sleep 3600');
  });
});

interface Answer {
  status: number;
  body: string;
}

/** A request straight to nodelet's port 10250-equivalent over HTTPS. */
function kubeletGet(path: string, opts: { token?: string; cert?: string; key?: string; method?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, path, method: opts.method ?? 'GET', rejectUnauthorized: false,
      ...(opts.cert ? { cert: opts.cert, key: opts.key } : {}),
      headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {},
      timeout: 10_000,
    }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('straight to the kubelet port over HTTPS', () => {
  test('no credentials: 401', async () => {
    expect(await kubeletGet('/pods')).toEqual({ status: 401, body: 'Unauthorized' });
  });

  test('a client certificate of another CA: 401', async () => {
    const dir = join(cluster.dir, 'work');
    await promisify(execFile)('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-keyout', join(dir, 'other.key'),
      '-out', join(dir, 'other.crt'), '-subj', '/CN=kube-apiserver-kubelet-client/O=system:masters']);
    const answer = await kubeletGet('/pods', { cert: await readFile(join(dir, 'other.crt'), 'utf8'), key: await readFile(join(dir, 'other.key'), 'utf8') });
    expect(answer.status).toBe(401);
  });

  test('a ServiceAccount token: 403 without rights, 200 once bound to system:kubelet-api-admin', async () => {
    await kubectl('create', 'serviceaccount', 'probe-user');
    const token = (await kubectl('create', 'token', 'probe-user')).trim();
    const denied = await kubeletGet('/pods', { token });
    expect(denied).toEqual({ status: 403, body: 'Forbidden (user=system:serviceaccount:default:probe-user, verb=get, resource=nodes, subresource(s)=[pods proxy])\n' });
    expect((await kubeletGet('/containerLogs/default/logs/a', { token })).body).toContain('subresource(s)=[proxy])');
    expect((await kubeletGet('/stats/summary', { token })).body).toContain('subresource(s)=[stats])');
    await kubectl('create', 'clusterrolebinding', 'probe-user-kubelet', '--clusterrole=system:kubelet-api-admin', '--serviceaccount=default:probe-user');
    // The denied answer is cached for --authorization-webhook-cache-unauthorized-ttl (2s here).
    await sleep(2_500);
    const allowed = await kubeletGet('/pods', { token });
    expect(allowed.status).toBe(200);
    const list = JSON.parse(allowed.body) as { kind: string; items: V1Pod[] };
    expect(list.kind).toBe('PodList');
    expect(list.items.map((p) => p.metadata?.name).sort()).toEqual(expect.arrayContaining(['logs', 'restarter', 'web']));
    // Bad input, with rights: 404 for an unknown path, pod or container, 400/422 for a malformed or invalid query value.
    expect((await kubeletGet('/nonexistent', { token })).status).toBe(404);
    expect(await kubeletGet('/containerLogs/default/nope/a', { token })).toEqual({ status: 404, body: 'pod "nope" does not exist' });
    expect(await kubeletGet('/containerLogs/default/logs/zz', { token })).toEqual({ status: 404, body: 'container "zz" not found in pod "logs"' });
    const bad = await kubeletGet('/containerLogs/default/logs/a?tailLines=abc', { token });
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('tailLines');
    // The last line of container a's log ("followed-line" came from the logs -f test).
    expect((await kubeletGet('/containerLogs/default/logs/a?tailLines=1', { token })).body).toBe('followed-line\n');
    expect(await kubeletGet('/healthz', { token })).toEqual({ status: 200, body: 'ok' });
    expect((await kubeletGet('/configz', { token })).body).toContain(`"port":${port}`);
    expect(await kubeletGet(`/run/default/logs/b?cmd=echo+run-output`, { token, method: 'POST' })).toEqual({ status: 200, body: 'run-output\n' });
    // As kubelet: exec and run look among running containers only, and answer 500 for one that is not running.
    expect(await kubeletGet(`/run/default/probed/done?cmd=true`, { token, method: 'POST' })).toEqual({ status: 500, body: 'container not found ("done")' });
  });

  test('fine-grained authorization (GA in 1.36): nodes/pods alone admits /pods and /runningpods/, not /containerLogs', async () => {
    await kubectl('create', 'serviceaccount', 'pods-reader');
    await kubectl('create', 'clusterrole', 'kubelet-pods-reader', '--verb=get', '--resource=nodes/pods');
    await kubectl('create', 'clusterrolebinding', 'pods-reader', '--clusterrole=kubelet-pods-reader', '--serviceaccount=default:pods-reader');
    const token = (await kubectl('create', 'token', 'pods-reader')).trim();
    const pods = await kubeletGet('/pods', { token });
    expect(pods.status).toBe(200);
    expect((JSON.parse(pods.body) as { kind: string }).kind).toBe('PodList');
    // Admitted as nodes/pods; nodelet does not serve /runningpods/ (kubelet's debugging handler): 404, not 403.
    expect((await kubeletGet('/runningpods/', { token })).status).toBe(404);
    expect(await kubeletGet('/containerLogs/default/logs/a', { token })).toEqual({
      status: 403, body: 'Forbidden (user=system:serviceaccount:default:pods-reader, verb=get, resource=nodes, subresource(s)=[proxy])\n',
    });
    expect((await kubeletGet('/healthz', { token })).body).toContain('subresource(s)=[healthz proxy])');
  });

  test('run on a container stopped since the last relist: container not found, as kubelet (which asks the runtime) answers', async () => {
    await cluster.kubectl.fromFile('create', 'stopped.yaml', `
apiVersion: v1
kind: Pod
metadata: {name: stopped}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: main
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`);
    const pod = await cluster.kubectl.waitForPod('stopped', 'running', running, { seen: cluster.uids });
    const pki = join(cluster.dir, 'pki');
    // kube-apiserver's own client certificate for kubelets (system:kubelet-api-admin through kubeadm's binding).
    const client = { cert: await readFile(join(pki, 'apiserver-kubelet-client.crt'), 'utf8'), key: await readFile(join(pki, 'apiserver-kubelet-client.key'), 'utf8') };
    expect(await kubeletGet('/run/default/stopped/main?cmd=echo+up', { ...client, method: 'POST' })).toEqual({ status: 200, body: 'up\n' });
    const [container] = await cluster.cri.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': pod.metadata!.uid! } });
    process.kill(await containerPid(cluster.cri, container!.id), 'SIGKILL');
    await waitFor('containerd to see the container exited', async () =>
      (await cluster.cri.containerStatus(container!.id)).state === 'CONTAINER_EXITED' ? true : undefined, 10_000, 5);
    // From then until nodelet reports the container terminated (its relist runs once a second), requests land in the
    // window where nodelet's last relist still has the container running and the runtime has not.
    const answers = new Set<string>();
    await waitFor('nodelet to report the container terminated', async () => {
      const answer = await kubeletGet('/run/default/stopped/main?cmd=echo+up', { ...client, method: 'POST' });
      answers.add(`${answer.status} ${answer.body}`);
      const status = (await cluster.kubectl.pod('stopped', cluster.uids)).status?.containerStatuses?.[0];
      return status?.state?.terminated !== undefined ? true : undefined;
    }, 60_000, 0);
    expect([...answers]).toEqual(['500 container not found ("main")']);
    await kubectl('delete', 'pod', 'stopped', '--wait=true');
    await waitForRuntimeGone(cluster.cri, [pod.metadata!.uid!]);
  });
});

/** Prometheus text: every sample as [name, labels, value, timestamp]. */
function parseExposition(text: string): { name: string; labels: Record<string, string>; value: number; timestamp?: number }[] {
  return text.split('\n').filter((l) => l && !l.startsWith('#')).map((line) => {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)(?: (\d+))?$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
    return { name: m[1]!, labels, value: Number(m[3]), ...(m[4] ? { timestamp: Number(m[4]) } : {}) };
  });
}

describe('metrics and stats through kube-apiserver (kubectl get --raw)', () => {
  const raw = (path: string) => kubectl('get', '--raw', `/api/v1/nodes/${cluster.nodeName}/proxy${path}`);
  const one = (samples: ReturnType<typeof parseExposition>, name: string, labels: Record<string, string> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  const podsOnNode = async () =>
    (JSON.parse(await kubectl('get', 'pods', '-A', '-o', 'json', '--field-selector', `spec.nodeName=${cluster.nodeName}`)) as { items: V1Pod[] }).items;

  // First in the file to scrape stats: the housekeeping runs from the agent's start (cAdvisor's does for kubelet), so the
  // very first scrape, metrics-server's on a real node, already has the pods' cpu rates from two rounds' samples.
  test('the first stats scrape has the pods\' cpu rates: the housekeeping samples them from the start', async () => {
    await sleep(2.5 * housekeepingSeconds * 1000);
    const summary = JSON.parse(await raw('/stats/summary?only_cpu_and_memory=true')) as { pods: { podRef: { name: string }; cpu?: { usageNanoCores?: number } }[] };
    const web = summary.pods.find((p) => p.podRef.name === 'web');
    expect(web?.cpu?.usageNanoCores).toBeGreaterThanOrEqual(0);
  });

  test('/metrics: kubelet metrics with the running pods and containers, runtime operations, process metrics', async () => {
    const running = (await podsOnNode()).filter((p) => p.status?.phase === 'Running');
    const samples = parseExposition(await raw('/metrics'));
    expect(one(samples, 'kubelet_node_name', { node: cluster.nodeName })[0]?.value).toBe(1);
    expect(one(samples, 'kubelet_running_pods')[0]?.value).toBe(running.length);
    const runningContainers = running.reduce((n, p) => n + [...(p.status?.containerStatuses ?? []), ...(p.status?.ephemeralContainerStatuses ?? [])].filter((c) => c.state?.running).length, 0);
    expect(one(samples, 'kubelet_running_containers', { container_state: 'running' })[0]?.value).toBe(runningContainers);
    expect(one(samples, 'kubelet_running_containers', { container_state: 'exited' })[0]?.value).toBeGreaterThanOrEqual(1);
    expect(one(samples, 'kubelet_runtime_operations_total', { operation_type: 'list_podsandbox' })[0]?.value).toBeGreaterThan(0);
    expect(one(samples, 'kubelet_runtime_operations_total', { operation_type: 'run_podsandbox' })[0]?.value).toBeGreaterThanOrEqual(4);
    expect(one(samples, 'kubelet_runtime_operations_duration_seconds_bucket', { operation_type: 'create_container', le: '0.005' })).toHaveLength(1);
    expect(one(samples, 'kubelet_started_pods_total')[0]?.value).toBeGreaterThanOrEqual(4);
    expect(one(samples, 'kubelet_started_containers_total', { container_type: 'container' })[0]?.value).toBeGreaterThanOrEqual(8);
    expect(one(samples, 'kubelet_pod_start_sli_duration_seconds_count', { first_with_network: 'false' })[0]?.value).toBeGreaterThanOrEqual(1);
    expect(one(samples, 'kubelet_pod_start_duration_seconds_count')[0]?.value).toBeGreaterThanOrEqual(4);
    expect(one(samples, 'kubelet_pod_worker_duration_seconds_count', { operation_type: 'create' })[0]?.value).toBeGreaterThanOrEqual(4);
    expect(one(samples, 'kubelet_pleg_relist_duration_seconds_count')[0]?.value).toBeGreaterThan(0);
    expect(one(samples, 'kubelet_pleg_relist_interval_seconds_count')[0]?.value).toBeGreaterThan(0);
    expect(one(samples, 'process_resident_memory_bytes')[0]?.value).toBeGreaterThan(0);
    expect(one(samples, 'nodejs_heap_size_used_bytes')[0]?.value).toBeGreaterThan(0);
  });

  test('/metrics/probes: prober_probe_total per container and result', async () => {
    const probed = (await podsOnNode()).find((p) => p.metadata?.name === 'probed')!;
    const samples = parseExposition(await raw('/metrics/probes'));
    const labels = { probe_type: 'Readiness', result: 'successful', container: 'worker', pod: 'probed', namespace: 'default', pod_uid: probed.metadata!.uid! };
    expect(one(samples, 'prober_probe_total', labels)[0]?.value).toBeGreaterThanOrEqual(1);
    expect(one(samples, 'prober_probe_total', { ...labels, result: 'failed' })).toEqual([]);
    expect(one(samples, 'prober_probe_duration_seconds_count', { probe_type: 'Readiness', container: 'worker', pod: 'probed' })[0]?.value).toBeGreaterThanOrEqual(1);
  });

  test('/metrics/resource: node, pod and container cpu and working set, with timestamps', async () => {
    const samples = parseExposition(await raw('/metrics/resource'));
    expect(one(samples, 'resource_scrape_error')[0]?.value).toBe(0);
    expect(one(samples, 'node_cpu_usage_seconds_total')[0]?.value).toBeGreaterThan(0);
    expect(one(samples, 'node_memory_working_set_bytes')[0]?.value).toBeGreaterThan(0);
    const web = { pod: 'web', namespace: 'default' };
    for (const container of ['httpd', 'ticker']) {
      const cpu = one(samples, 'container_cpu_usage_seconds_total', { container, ...web })[0];
      expect(cpu?.value).toBeGreaterThan(0);
      expect(Math.abs(cpu!.timestamp! - Date.now())).toBeLessThan(120_000);
      expect(one(samples, 'container_memory_working_set_bytes', { container, ...web })[0]?.value).toBeGreaterThan(0);
      expect(one(samples, 'container_start_time_seconds', { container, ...web })[0]?.value).toBeGreaterThan(Date.now() / 1000 - 3600);
    }
    expect(one(samples, 'pod_cpu_usage_seconds_total', web)[0]?.value).toBeGreaterThan(0);
    expect(one(samples, 'pod_memory_working_set_bytes', web)[0]?.value).toBeGreaterThan(0);
    // A container that is not running has no series.
    expect(one(samples, 'container_cpu_usage_seconds_total', { container: 'done', pod: 'probed' })).toEqual([]);
  });

  test('/stats/summary: the node and the running pods with cpu, memory, network, logs, volumes and ephemeral storage', async () => {
    interface Fs { usedBytes?: number; capacityBytes?: number; availableBytes?: number }
    interface PodStats {
      podRef: { name: string; namespace: string; uid: string };
      containers: { name: string; cpu?: { usageCoreNanoSeconds?: number }; memory?: { workingSetBytes?: number }; rootfs?: Fs; logs?: Fs }[];
      cpu?: { usageCoreNanoSeconds?: number }; memory?: { workingSetBytes?: number }; network?: { rxBytes?: number; interfaces: unknown[] };
      volume?: (Fs & { name: string })[]; 'ephemeral-storage'?: Fs; process_stats?: { process_count: number };
    }
    const summary = JSON.parse(await raw('/stats/summary')) as {
      node: { nodeName: string; cpu?: { usageCoreNanoSeconds?: number }; memory?: { workingSetBytes?: number; availableBytes?: number }; fs?: Fs; runtime?: { imageFs?: Fs }; rlimit?: { maxpid?: number } };
      pods: PodStats[];
    };
    expect(summary.node.nodeName).toBe(cluster.nodeName);
    expect(summary.node.cpu?.usageCoreNanoSeconds).toBeGreaterThan(0);
    expect(summary.node.memory?.workingSetBytes).toBeGreaterThan(0);
    expect(summary.node.fs?.capacityBytes).toBeGreaterThan(0);
    expect(summary.node.runtime?.imageFs?.usedBytes).toBeGreaterThan(0);
    expect(summary.node.rlimit?.maxpid).toBeGreaterThan(0);
    const running = (await podsOnNode()).filter((p) => p.status?.phase === 'Running');
    expect(summary.pods.map((p) => p.podRef.uid).sort()).toEqual(running.map((p) => p.metadata!.uid!).sort());
    const web = summary.pods.find((p) => p.podRef.name === 'web')!;
    expect(web.containers.map((c) => c.name).sort()).toEqual(['httpd', 'ticker']);
    const ticker = web.containers.find((c) => c.name === 'ticker')!;
    expect(ticker.cpu?.usageCoreNanoSeconds).toBeGreaterThan(0);
    expect(ticker.memory?.workingSetBytes).toBeGreaterThan(0);
    expect(ticker.logs?.usedBytes).toBeGreaterThan(0);
    expect(ticker.rootfs?.capacityBytes).toBeGreaterThan(0);
    expect(web.cpu?.usageCoreNanoSeconds).toBeGreaterThan(0);
    expect(web.memory?.workingSetBytes).toBeGreaterThan(0);
    expect(web.network?.interfaces.length).toBeGreaterThan(0);
    // Its two containers' processes (httpd, the ticker's shell), not the pause process.
    expect(web.process_stats?.process_count).toBeGreaterThanOrEqual(2);
    const probed = summary.pods.find((p) => p.podRef.name === 'probed')!;
    expect(probed.containers.map((c) => c.name)).toEqual(['worker']);
    const scratch = probed.volume?.find((v) => v.name === 'scratch');
    expect(scratch?.usedBytes).toBeGreaterThanOrEqual(200_000);
    expect(probed['ephemeral-storage']?.usedBytes).toBeGreaterThanOrEqual(200_000);
    const only = JSON.parse(await raw('/stats/summary?only_cpu_and_memory=true')) as { pods: PodStats[] };
    expect(Object.keys(only.pods.find((p) => p.podRef.name === 'web')!).sort()).toEqual(['containers', 'cpu', 'memory', 'podRef', 'startTime']);
  });
});
