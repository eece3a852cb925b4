// The kubelet API phase (--only api): nodelet's port 10250 measured against the real control plane (the real-cluster
// fixture of the tests: test/cluster/control-plane.ts, nodelet joined as a node with kubeadm's kubelet API settings).
//   exec: `kubectl exec <pod> -- true` end to end; a WebSocket exec (v4.channel.k8s.io) through nodelet's /exec beside
//         the same exec sent straight to containerd's streaming server (CRI Exec, then the session); POST /run beside
//         CRI ExecSync. Target: nodelet's path within 1.5x of containerd's.
//   logs: `kubectl logs -f --timestamps` on a container printing a line every 100 ms: the time from containerd writing
//         each line (its CRI log timestamp) to the client reading it, median over 100 lines. Target 100 ms.
//   scrapes: with 110 pods on the node, 100 scrapes each of /metrics, /stats/summary and /metrics/resource straight to
//         the port: the agent's CPU per scrape (target < 20 ms) and its RSS over the scrapes (target: no growth);
//         before them, the agent's CPU over an idle 30 s with the pods, per housekeeping interval (with
//         --agent-cpu-prof, the housekeeping rounds' own CPU is read from the scrapes' profiles).
// Printed, never asserted.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { Agent as HttpsAgent, request } from 'node:https';
import { connect as netConnect } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import type { Duplex } from 'node:stream';
import { execa } from 'execa';
import type { V1Pod } from '@kubernetes/client-node';
import { defaultHousekeepingIntervalMs } from '../src/server/stats-housekeeping.js';
import { busybox } from '../test/integration/helpers/agent.js';
import { freePorts, startRealCluster, type RealCluster } from '../test/integration/helpers/real-cluster.js';
import { agentMemoryUsage, InspectorSession } from './agent.js';
import { memoryMB, processCpuMs } from './procfs.js';
import { functionBursts, heapProfileSummary, profileSummary, type CpuProfile, type HeapProfileNode } from './profiles.js';
import { median, now, progress, round1, round2 } from './util.js';

const execReps = 20;
const logLines = 100;
const loadPods = 110;
const scrapes = 100;
const idleSeconds = 30;
const targets = { execRatio: 1.5, logsMedianMs: 100, scrapeCpuMs: 20 };

export interface ScrapeFigures {
  path: string;
  bytes: number;
  medianMs: number;
  cpuMsPerScrape: number;
  /** RSS before the scrapes, after the measured 100, after 100 more (whether it keeps growing), and the highest sample. */
  rssMB: { first: number; last: number; then: number; max: number };
  /** A /healthz sent every 10 ms while scrapes of the path run back to back: its latency (the event loop's responsiveness). */
  healthzDuringMs: { median: number; max: number; n: number };
  /** With an inspector: the JS heap and RSS after the scrapes, before and after a full GC (garbage or kept). */
  afterGc?: { heapUsedBeforeMB: number; heapUsedAfterMB: number; rssAfterMB: number };
}

/** Diagnosis of the scrapes (--agent-cpu-prof / --agent-heap-prof): V8 profiles of each path's scrapes. */
export interface ApiProfiling {
  cpuProf: string;
  heapProf: string;
}

/** The agent's CPU with the pods and no scrapes (housekeeping, relists, heartbeats), per housekeeping interval. */
export interface IdleFigures {
  seconds: number;
  rounds: number;
  cpuMsPerInterval: number;
  /** Each second's, for where the rounds fall (10 ms ticks). */
  perSecondMs: number[];
}

export interface KubeletApiResults {
  exec: { kubectlMs: number; nodeletWsMs: number; containerdWsMs: number; runMs: number; execSyncMs: number; freshHealthzMs: number };
  logs: { medianMs: number; p90Ms: number; lines: number };
  idle: IdleFigures;
  scrapes: ScrapeFigures[];
  pods: number;
}

interface ClientTls {
  cert: string;
  key: string;
}

/** The agent's pid: the node process whose command line names its root dir. */
function agentPid(rootDir: string): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmd.includes(rootDir) && cmd.some((a) => a.endsWith('nodelet.js'))) return Number(entry);
    } catch {
      // Gone meanwhile.
    }
  }
  throw new Error(`no nodelet process with --root-dir ${rootDir}`);
}

/**
 * One WebSocket exec session (remotecommand v4.channel.k8s.io) on a fresh connection, from the upgrade request to the
 * status message: the ms it took. Raw frames: the status channel's JSON is all that is read.
 */
function wsExec(socket: Duplex, host: string, path: string): Promise<number> {
  const started = now();
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => fail(new Error(`no exec status within 20 s: ${seen.slice(0, 200)}`)), 20_000);
    const fail = (err: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    socket.on('data', (d: Buffer) => {
      seen += d.toString('latin1');
      if (!seen.startsWith('HTTP/1.1 101')) return fail(new Error(`upgrade refused: ${seen.split('\r\n')[0]}`));
      if (/"status":"(Success|Failure)"/.test(seen)) {
        clearTimeout(timer);
        socket.destroy();
        if (seen.includes('"status":"Success"')) resolve(now() - started);
        else reject(new Error(`exec failed: ${seen.slice(seen.indexOf('{'))}`));
      }
    });
    socket.on('error', fail);
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n`,
    );
  });
}

/** A request straight to nodelet's port with the API server's kubelet client certificate; the body and its ms. */
function kubeletCall(port: number, tls: ClientTls, agent: HttpsAgent, path: string, method = 'GET'): Promise<{ ms: number; body: string }> {
  const started = now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, agent, rejectUnauthorized: false, ...tls, timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        if (res.statusCode !== 200) reject(new Error(`${method} ${path}: ${res.statusCode} ${body.slice(0, 200)}`));
        else resolve({ ms: now() - started, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

async function measureExec(cluster: RealCluster, port: number, tls: ClientTls, agent: HttpsAgent): Promise<KubeletApiResults['exec']> {
  const pod = await cluster.kubectl.get<V1Pod>('pod', 'exec-target');
  const containerId = pod.status!.containerStatuses![0]!.containerID!.replace(/^containerd:\/\//, '');
  const samples = { kubectlMs: [] as number[], nodeletWsMs: [] as number[], containerdWsMs: [] as number[], runMs: [] as number[], execSyncMs: [] as number[], freshHealthzMs: [] as number[] };
  // What any session through nodelet's port pays before the exec: a TLS connection with a client certificate, authorized.
  const fresh = new HttpsAgent({ keepAlive: false });
  const execPath = '/exec/default/exec-target/c?command=true&output=1&error=1';
  // Alternating, so machine noise hits every path alike; the first round warms each path up and is not counted.
  for (let i = 0; i <= execReps; i++) {
    const keep = <K extends keyof typeof samples>(k: K, ms: number) => i > 0 && samples[k].push(ms);
    let t = now();
    await cluster.kubectl.run('exec', 'exec-target', '--', 'true');
    keep('kubectlMs', now() - t);
    keep('nodeletWsMs', await wsExec(tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...tls }), `127.0.0.1:${port}`, execPath));
    t = now();
    const url = new URL(await cluster.cri.exec(containerId, ['true'], { stdin: false, stdout: true, stderr: true, tty: false }));
    await wsExec(netConnect({ host: url.hostname, port: Number(url.port) }), url.host, url.pathname + url.search);
    keep('containerdWsMs', now() - t);
    keep('runMs', (await kubeletCall(port, tls, agent, '/run/default/exec-target/c?cmd=true', 'POST')).ms);
    t = now();
    await cluster.cri.execSync(containerId, ['true'], 10);
    keep('execSyncMs', now() - t);
    keep('freshHealthzMs', (await kubeletCall(port, tls, fresh, '/healthz')).ms);
  }
  return {
    kubectlMs: round1(median(samples.kubectlMs)),
    nodeletWsMs: round1(median(samples.nodeletWsMs)),
    containerdWsMs: round1(median(samples.containerdWsMs)),
    runMs: round1(median(samples.runMs)),
    execSyncMs: round1(median(samples.execSyncMs)),
    freshHealthzMs: round1(median(samples.freshHealthzMs)),
  };
}

async function measureLogs(cluster: RealCluster): Promise<KubeletApiResults['logs']> {
  const child = execa(join(cluster.binDir, 'kubectl'), ['--kubeconfig', cluster.adminKubeconfig, '--cache-dir', join(cluster.dir, 'kube-cache'),
    'logs', '-f', '--timestamps', '--tail=0', 'logger'], { reject: false, buffer: false });
  const delays: number[] = [];
  let rest = '';
  const done = new Promise<void>((resolve) => {
    child.stdout!.on('data', (d: Buffer) => {
      const arrived = Date.now();
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        // "<RFC 3339 with ns> <text>": ms precision is what Date parses.
        const stamp = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d) /.exec(line);
        if (!stamp) continue;
        const written = Date.parse(`${stamp[1]}${(stamp[2] ?? '.0').slice(0, 4)}${stamp[3]}`);
        delays.push(arrived - written);
        if (delays.length >= logLines) resolve();
      }
    });
  });
  const timeout = new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`kubectl logs -f gave ${delays.length} lines in 60 s`)), 60_000));
  try {
    await Promise.race([done, timeout]);
  } finally {
    child.kill('SIGTERM');
  }
  const sorted = [...delays].sort((a, b) => a - b);
  return { medianMs: round1(median(delays)), p90Ms: round1(sorted[Math.floor(sorted.length * 0.9)]!), lines: delays.length };
}

/** FILE with the path's name before its extension: one profile per scraped path. */
function profileFile(file: string, path: string): string {
  const tag = path.replace(/^\//, '').replace(/\//g, '-');
  const dot = file.lastIndexOf('.');
  return dot > file.lastIndexOf('/') ? `${file.slice(0, dot)}-${tag}${file.slice(dot)}` : `${file}-${tag}`;
}

/** Scrapes of the path back to back (20) with a /healthz every 10 ms on a connection of its own: the /healthz latencies. */
async function healthzDuringScrapes(port: number, tls: ClientTls, agent: HttpsAgent, path: string): Promise<ScrapeFigures['healthzDuringMs']> {
  const side = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  let scraping = true;
  const poll = (async () => {
    await kubeletCall(port, tls, side, '/healthz');
    while (scraping) {
      latencies.push((await kubeletCall(port, tls, side, '/healthz')).ms);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  try {
    for (let i = 0; i < 20; i++) await kubeletCall(port, tls, agent, path);
  } finally {
    scraping = false;
    await poll;
    side.destroy();
  }
  return { median: round1(median(latencies)), max: round1(Math.max(...latencies)), n: latencies.length };
}

async function measureIdle(cluster: RealCluster): Promise<IdleFigures> {
  const pid = agentPid(cluster.agent.rootDir);
  const perSecond: number[] = [];
  let last = processCpuMs(pid).self;
  for (let i = 0; i < idleSeconds; i++) {
    await new Promise((r) => setTimeout(r, 1_000));
    const cpu = processCpuMs(pid).self;
    perSecond.push(cpu - last);
    last = cpu;
  }
  const total = perSecond.reduce((a, b) => a + b, 0);
  const rounds = (idleSeconds * 1000) / defaultHousekeepingIntervalMs;
  return { seconds: idleSeconds, rounds, cpuMsPerInterval: round1(total / rounds), perSecondMs: perSecond };
}

async function measureScrapes(cluster: RealCluster, port: number, tls: ClientTls, agent: HttpsAgent, inspector: InspectorSession | undefined, prof: ApiProfiling): Promise<ScrapeFigures[]> {
  const pid = agentPid(cluster.agent.rootDir);
  const out: ScrapeFigures[] = [];
  for (const path of ['/metrics', '/stats/summary', '/metrics/resource']) {
    for (let i = 0; i < 5; i++) await kubeletCall(port, tls, agent, path);
    if (inspector && prof.heapProf) await inspector.post('HeapProfiler.startSampling');
    if (inspector && prof.cpuProf) {
      await inspector.post('Profiler.enable');
      await inspector.post('Profiler.start');
    }
    const rss: number[] = [];
    const times: number[] = [];
    let bytes = 0;
    const cpu0 = processCpuMs(pid).self;
    for (let i = 0; i < scrapes; i++) {
      const r = await kubeletCall(port, tls, agent, path);
      times.push(r.ms);
      bytes = r.body.length;
      if (i % 10 === 0 || i === scrapes - 1) rss.push(memoryMB(pid, 'VmRSS'));
    }
    const measuredSamples = rss.length;
    const cpuMs = processCpuMs(pid).self - cpu0;
    let afterGc: ScrapeFigures['afterGc'];
    if (inspector && prof.cpuProf) {
      const { profile } = await inspector.post<{ profile: CpuProfile }>('Profiler.stop');
      const file = profileFile(prof.cpuProf, path);
      await writeFile(file, JSON.stringify(profile));
      const sum = profileSummary(profile, 12);
      progress(`api: ${path}: CPU profile ${file}: ${sum.busyMs} ms busy; self by function:\n${sum.selfByFunction.map((f) => `    ${f.ms} ms ${f.pct}% ${f.name}`).join('\n')}` +
        `\n  nodelet inclusive:\n${sum.nodeletInclusive.map((f) => `    ${f.ms} ms ${f.pct}% ${f.name}`).join('\n')}`);
      // The housekeeping's rounds (10 s apart) among the scrapes, whose own calls of it read only new pods.
      const rounds = functionBursts(profile, (f) => f.functionName === 'sample' && f.url.endsWith('/server/stats-provider.js'), 2_000);
      progress(`api: ${path}: stats housekeeping in the profile (ms into it: CPU ms): ${rounds.map((r) => `${r.atMs}: ${r.ms}`).join(', ')}`);
    }
    // 100 more: does RSS keep growing, or did the first 100 grow the heap to what back-to-back scrapes take, once?
    for (let i = 1; i <= scrapes; i++) {
      await kubeletCall(port, tls, agent, path);
      if (i % 10 === 0) rss.push(memoryMB(pid, 'VmRSS'));
    }
    const rssThen = rss[rss.length - 1]!;
    if (inspector) {
      const before = await agentMemoryUsage(inspector);
      await inspector.post('HeapProfiler.collectGarbage');
      await new Promise((r) => setTimeout(r, 1_000));
      const after = await agentMemoryUsage(inspector);
      afterGc = { heapUsedBeforeMB: before.heapUsedMB, heapUsedAfterMB: after.heapUsedMB, rssAfterMB: round1(memoryMB(pid, 'VmRSS')) };
    }
    if (inspector && prof.heapProf) {
      const { profile } = await inspector.post<{ profile: { head: HeapProfileNode } }>('HeapProfiler.stopSampling');
      const file = profileFile(prof.heapProf, path);
      await writeFile(file, JSON.stringify(profile));
      const sum = heapProfileSummary(profile.head, 12);
      progress(`api: ${path}: heap profile ${file}: ${sum.liveMB} MB live; by function:\n${sum.byFunction.map((f) => `    ${f.kB} kB ${f.pct}% ${f.name}`).join('\n')}`);
    }
    const healthzDuringMs = await healthzDuringScrapes(port, tls, agent, path);
    out.push({
      path, bytes, medianMs: round1(median(times)), cpuMsPerScrape: round2(cpuMs / scrapes),
      rssMB: { first: round1(rss[0]!), last: round1(rss[measuredSamples - 1]!), then: round1(rssThen), max: round1(Math.max(...rss)) },
      healthzDuringMs, ...(afterGc ? { afterGc } : {}),
    });
    progress(`api: ${path}: ${round2(cpuMs / scrapes)} ms agent CPU per scrape, RSS ${round1(rss[0]!)} -> ${round1(rss[measuredSamples - 1]!)} MB, ${round1(rssThen)} MB after ${scrapes} more` +
      `${afterGc ? ` (JS heap ${afterGc.heapUsedBeforeMB} MB, ${afterGc.heapUsedAfterMB} MB after a full GC, RSS then ${afterGc.rssAfterMB} MB)` : ''}; ` +
      `/healthz during scrapes: median ${healthzDuringMs.median} ms, max ${healthzDuringMs.max} ms`);
  }
  return out;
}

const podYaml = (name: string, command: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ${busybox}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", ${JSON.stringify(command)}]
`;

/** The agent's inspector (it was started with --inspect on the port): a session on its one target. */
async function openInspector(port: number): Promise<InspectorSession> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  if (!targets[0]) throw new Error(`no inspector target on 127.0.0.1:${port}`);
  return InspectorSession.open(targets[0].webSocketDebuggerUrl);
}

export async function runKubeletApiPhase(prof: ApiProfiling): Promise<KubeletApiResults> {
  const [port, inspectPort] = await freePorts(2);
  const profiling = prof.cpuProf !== '' || prof.heapProf !== '';
  progress('api: starting the control plane and nodelet as its node...');
  // The fixture passes the bench's environment to the agent: an inspector on a loopback port for the diagnosis options.
  const nodeOptions = process.env['NODE_OPTIONS'];
  if (profiling) process.env['NODE_OPTIONS'] = `${nodeOptions ?? ''} --inspect=127.0.0.1:${inspectPort}`.trim();
  let cluster: RealCluster;
  try {
    cluster = await startRealCluster({ agentArgs: (dir) => ['--client-ca-file', join(dir, 'pki', 'ca.crt'), '--port', String(port)], log: progress });
  } finally {
    if (nodeOptions === undefined) delete process.env['NODE_OPTIONS'];
    else process.env['NODE_OPTIONS'] = nodeOptions;
  }
  const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
  let inspector: InspectorSession | undefined;
  try {
    if (profiling) {
      inspector = await openInspector(inspectPort!);
      if (prof.heapProf) await inspector.post('HeapProfiler.enable');
    }
    const pki = join(cluster.dir, 'pki');
    const tls = { cert: await readFile(join(pki, 'apiserver-kubelet-client.crt'), 'utf8'), key: await readFile(join(pki, 'apiserver-kubelet-client.key'), 'utf8') };
    await cluster.kubectl.fromFile('create', 'api-pods.yaml', [podYaml('exec-target', 'exec sleep 3600'), podYaml('logger', 'while true; do echo line; sleep 0.1; done')].join('---\n'));
    for (const name of ['exec-target', 'logger']) await cluster.kubectl.waitForPod(name, 'running', (p) => p.status?.phase === 'Running', { seen: cluster.uids });
    progress('api: exec round trips...');
    const exec = await measureExec(cluster, port!, tls, agent);
    progress(`api: ${JSON.stringify(exec)}`);
    progress('api: logs -f line latency...');
    const logs = await measureLogs(cluster);
    progress(`api: ${JSON.stringify(logs)}`);
    progress(`api: starting ${loadPods - 2} more pods (${loadPods} on the node)...`);
    await cluster.kubectl.fromFile('create', 'load-pods.yaml', Array.from({ length: loadPods - 2 }, (_, i) => podYaml(`load-${i}`, 'exec sleep 3600')).join('---\n'));
    const started = now();
    for (;;) {
      const pods = await cluster.nodePods();
      const running = pods.filter((p) => p.status?.phase === 'Running').length;
      if (running >= loadPods) break;
      if (now() - started > 15 * 60_000) throw new Error(`only ${running} of ${loadPods} pods Running after 15 minutes`);
      await new Promise((r) => setTimeout(r, 5_000));
    }
    progress(`api: ${loadPods} pods Running after ${round1((now() - started) / 1000)} s; scraping...`);
    // Two relists and a volume stats period's start behind the scrapes: the steady state a scraper sees.
    await new Promise((r) => setTimeout(r, 10_000));
    progress(`api: the agent idle for ${idleSeconds} s...`);
    const idle = await measureIdle(cluster);
    progress(`api: ${JSON.stringify(idle)}`);
    const scrapeFigures = await measureScrapes(cluster, port!, tls, agent, inspector, prof);
    return { exec, logs, idle, scrapes: scrapeFigures, pods: loadPods };
  } finally {
    inspector?.close();
    agent.destroy();
    progress('api: tearing the cluster down...');
    await cluster.stop();
  }
}

export function kubeletApiTable(r: KubeletApiResults): string {
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
  const lines = [
    `kubelet API (real control plane): exec and /run, median of ${execReps}`,
    `  kubectl exec <pod> -- true (end to end)          ${r.exec.kubectlMs} ms`,
    `  WebSocket exec via nodelet /exec                 ${r.exec.nodeletWsMs} ms   straight to containerd ${r.exec.containerdWsMs} ms   ${ratio(r.exec.nodeletWsMs, r.exec.containerdWsMs)} (target <= ${targets.execRatio}x)`,
    `    of which a new TLS connection (client certificate) and an authorized request (GET /healthz): ${r.exec.freshHealthzMs} ms`,
    `  POST /run                                        ${r.exec.runMs} ms   CRI ExecSync ${r.exec.execSyncMs} ms   ${ratio(r.exec.runMs, r.exec.execSyncMs)} (target <= ${targets.execRatio}x)`,
    `  kubectl logs -f line latency                     median ${r.logs.medianMs} ms, p90 ${r.logs.p90Ms} ms over ${r.logs.lines} lines (target median <= ${targets.logsMedianMs} ms)`,
    `  idle with ${r.pods} pods, ${r.idle.seconds} s: agent CPU ${r.idle.cpuMsPerInterval} ms per housekeeping interval ` +
      `(each second: ${r.idle.perSecondMs.join(' ')} ms)`,
    `  scrapes with ${r.pods} pods (${scrapes} each): agent CPU per scrape (target < ${targets.scrapeCpuMs} ms), RSS first / after them / after ${scrapes} more / max`,
    ...r.scrapes.map((s) => `    ${s.path.padEnd(20)} ${String(s.cpuMsPerScrape).padStart(6)} ms CPU   ${s.medianMs} ms latency   ${s.bytes} bytes   RSS ${s.rssMB.first} / ${s.rssMB.last} / ${s.rssMB.then} / ${s.rssMB.max} MB` +
      `   /healthz meanwhile: median ${s.healthzDuringMs.median} ms, max ${s.healthzDuringMs.max} ms` +
      (s.afterGc ? `   JS heap ${s.afterGc.heapUsedBeforeMB} MB, after a full GC ${s.afterGc.heapUsedAfterMB} MB (RSS ${s.afterGc.rssAfterMB} MB)` : '')),
  ];
  return lines.join('\n');
}
