// The density phase's steady state: all --big-pods pods (kubelet's maxPods, 110) running, the agent watched for
// --density-seconds: its relist duration (kubelet_pleg_relist_duration_seconds, read from its /metrics on the kubelet
// API), its CPU and its RSS. The start of the 110 and their removal are timed in the start-up phase, beside the floor.
import { request } from 'node:https';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ensurePki, issueClientCert, type KeyPairPem } from '../test/cluster/pki.js';
import { freePort } from './kubelet.js';
import { memoryMB } from './procfs.js';
import type { Bench } from './session.js';
import { now, progress, round1, round3 } from './util.js';
import { benchNode } from './workload.js';

export const densityTargets = { startRatio: 1.15, relistP99Ms: 50, cores: 0.05, rssMB: 150, teardownRatio: 1.2 };
const settleMs = 10_000;
const relistMetric = 'kubelet_pleg_relist_duration_seconds';

/** The agent's kubelet API on a loopback port, with a client CA of the bench's and the bench's client certificate. */
export interface KubeletApiAccess {
  port: number;
  client: KeyPairPem;
  /** The agent's flags that serve it so. */
  flags: string[];
}

export async function kubeletApiAccess(dir: string): Promise<KubeletApiAccess> {
  const pki = join(dir, 'kubelet-api-pki');
  const ca = await ensurePki(pki, { nodeName: benchNode, apiServerHosts: ['127.0.0.1'] });
  const client = await issueClientCert(ca, { name: 'nodelet-bench', groups: [] });
  const port = await freePort();
  return { port, client, flags: ['--client-ca-file', join(pki, 'ca.crt'), '--address', '127.0.0.1', '--port', String(port)] };
}

interface Histogram {
  /** Cumulative counts by upper bound (seconds), +Inf last. */
  buckets: [number, number][];
  sum: number;
  count: number;
}

function metricsText(access: KubeletApiAccess): Promise<string> {
  return new Promise((resolve, reject) => {
    // The agent's serving certificate is its own self-signed one (standalone): the bench trusts the loopback port it chose.
    const req = request({ host: '127.0.0.1', port: access.port, path: '/metrics', cert: access.client.certPem, key: access.client.keyPem, rejectUnauthorized: false, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`/metrics answered ${res.statusCode}: ${body.slice(0, 200)}`))));
    });
    req.on('timeout', () => req.destroy(new Error('/metrics did not answer within 10 s')));
    req.on('error', reject);
    req.end();
  });
}

export function parseHistogram(text: string, name: string): Histogram {
  const h: Histogram = { buckets: [], sum: 0, count: 0 };
  for (const line of text.split('\n')) {
    const bucket = new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`).exec(line);
    if (bucket) h.buckets.push([bucket[1] === '+Inf' ? Infinity : Number(bucket[1]), Number(bucket[2])]);
    else if (line.startsWith(`${name}_sum `)) h.sum = Number(line.slice(name.length + 5));
    else if (line.startsWith(`${name}_count `)) h.count = Number(line.slice(name.length + 7));
  }
  if (h.buckets.length === 0) throw new Error(`no ${name} histogram in the agent's /metrics`);
  return h;
}

/** The observations between two readings of one histogram. */
export function histogramDelta(a: Histogram, b: Histogram): Histogram {
  return { buckets: b.buckets.map(([le, n], i) => [le, n - (a.buckets[i]?.[1] ?? 0)]), sum: b.sum - a.sum, count: b.count - a.count };
}

/** The upper bound (ms) of the bucket holding quantile q: the histogram's resolution is its buckets'. */
export function bucketQuantileMs(h: Histogram, q: number): number {
  const rank = q * h.count;
  const found = h.buckets.find(([, n]) => n >= rank);
  return found ? found[0] * 1000 : NaN;
}

export interface SteadyState {
  pods: number;
  windowSeconds: number;
  relist: { count: number; meanMs: number; p50AtMostMs: number; p99AtMostMs: number; maxAtMostMs: number };
  agent: { avgCores: number; rssMB: { avg: number; max: number; atStart: number; atEnd: number }; spawnHelperRssMB: number };
}

/** With the pods running: settles, then watches the agent for `seconds`. */
export async function steadyState(bench: Bench, access: KubeletApiAccess, pods: number, seconds: number): Promise<SteadyState> {
  const agent = bench.agent!;
  const pid = agent.pid!;
  progress(`density: all ${pods} pods running; settling ${settleMs / 1000} s, then ${seconds} s of steady state...`);
  await delay(settleMs, undefined, { signal: bench.signal });
  const h0 = parseHistogram(await metricsText(access), relistMetric);
  const cpu0 = agent.cpuMs().self;
  const w0 = now();
  const rss: number[] = [];
  for (let k = 1; k <= seconds; k++) {
    await delay(Math.max(0, w0 + k * 1000 - now()), undefined, { signal: bench.signal });
    if (!agent.running) throw new Error(`nodelet exited during the steady state:\n${agent.recentOutput()}`);
    rss.push(memoryMB(pid, 'VmRSS'));
    if (k % 30 === 0) progress(`  ${k}/${seconds} s: agent ${((agent.cpuMs().self - cpu0) / (now() - w0)).toFixed(3)} cores so far, RSS ${rss.at(-1)!.toFixed(1)} MB`);
  }
  const cores = (agent.cpuMs().self - cpu0) / (now() - w0);
  const windowSeconds = (now() - w0) / 1000;
  const h = histogramDelta(h0, parseHistogram(await metricsText(access), relistMetric));
  return {
    pods,
    windowSeconds: round1(windowSeconds),
    relist: {
      count: h.count,
      meanMs: round1((h.sum / h.count) * 1000),
      p50AtMostMs: bucketQuantileMs(h, 0.5),
      p99AtMostMs: bucketQuantileMs(h, 0.99),
      maxAtMostMs: bucketQuantileMs(h, 1),
    },
    agent: {
      avgCores: round3(cores),
      rssMB: { avg: round1(rss.reduce((a, b) => a + b, 0) / rss.length), max: round1(Math.max(...rss)), atStart: round1(rss[0]!), atEnd: round1(rss.at(-1)!) },
      spawnHelperRssMB: round1(agent.spawnHelperRssMB()),
    },
  };
}
