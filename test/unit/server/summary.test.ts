// The stats summary's pure parts: cpu rates between scrapes, memory and filesystem stats, a pod's ephemeral storage,
// and /metrics/resource as kubelet's collector writes it.
import { apiTime, CpuRates, ephemeralStorage, fsStats, memoryStats, networkStats, resourceMetrics, type Summary } from '../../../src/server/summary.js';

const t0 = Date.parse('2026-01-02T03:04:05.678Z');

describe('CpuRates', () => {
  test('the first sample has no rate; the next one the nanocores between them; a scrape forgets keys it did not see', () => {
    const rates = new CpuRates();
    expect(rates.sample('c', t0, 1e9)).toEqual({ timeMs: t0, usageCoreNanoSeconds: 1e9 });
    rates.rotate();
    // Half a core over two seconds.
    expect(rates.sample('c', t0 + 2000, 2e9).usageNanoCores).toBe(5e8);
    rates.rotate();
    rates.rotate();
    expect(rates.sample('c', t0 + 4000, 3e9).usageNanoCores).toBeUndefined();
  });

  test('a counter that went back (a restarted container under the same key) gives no rate', () => {
    const rates = new CpuRates();
    rates.sample('c', t0, 5e9);
    rates.rotate();
    expect(rates.sample('c', t0 + 1000, 1e9).usageNanoCores).toBeUndefined();
  });
});

describe('stats shapes', () => {
  test('times are RFC 3339 with whole seconds, as metav1.Time', () => {
    expect(apiTime(t0)).toBe('2026-01-02T03:04:05Z');
  });

  test('memory: available is what the limit (else the node) leaves of the working set', () => {
    const m = { usageBytes: 300, workingSetBytes: 200, rssBytes: 100, pageFaults: 7, majorPageFaults: 1 };
    expect(memoryStats({ ...m, limitBytes: 1000 }, t0, 5000)).toEqual({
      time: '2026-01-02T03:04:05Z', availableBytes: 800, usageBytes: 300, workingSetBytes: 200, rssBytes: 100, pageFaults: 7, majorPageFaults: 1,
    });
    expect(memoryStats(m, t0, 5000)?.availableBytes).toBe(4800);
    expect(memoryStats(undefined, t0, 5000)).toBeUndefined();
  });

  test('network: eth0 first, loopback left out', () => {
    const i = (name: string) => ({ name, rxBytes: 1, rxErrors: 0, txBytes: 2, txErrors: 0 });
    const n = networkStats([i('lo'), i('net1'), i('eth0')], t0);
    expect(n).toMatchObject({ name: 'eth0', rxBytes: 1, txBytes: 2 });
    expect(n?.interfaces?.map((x) => x.name)).toEqual(['net1', 'eth0']);
    expect(networkStats([i('lo')], t0)).toBeUndefined();
  });

  test("ephemeral storage adds the containers' writable layers and logs and the local volumes, on the node filesystem", () => {
    const fs = { capacityBytes: 1000, availableBytes: 400, inodes: 50, inodesFree: 20 };
    const c = (root: number, logs: number) => ({
      name: 'c', startTime: apiTime(t0),
      rootfs: fsStats(fs, t0, { bytes: root, inodes: 1 }), logs: fsStats(fs, t0, { bytes: logs, inodes: 2 }),
    });
    const volume = { name: 'v', ...fsStats(fs, t0, { bytes: 30, inodes: 4 }) };
    expect(ephemeralStorage([c(10, 5), c(1, 1)], [volume], fs, t0)).toEqual({
      time: '2026-01-02T03:04:05Z', availableBytes: 400, capacityBytes: 1000, usedBytes: 47, inodesFree: 20, inodes: 50, inodesUsed: 10,
    });
  });
});

describe('/metrics/resource', () => {
  const summary: Summary = {
    node: {
      nodeName: 'n1', startTime: apiTime(t0),
      cpu: { time: apiTime(t0), usageCoreNanoSeconds: 12.5e9 },
      memory: { time: apiTime(t0), workingSetBytes: 1024 },
    },
    pods: [{
      podRef: { name: 'web', namespace: 'default', uid: 'u1' },
      startTime: apiTime(t0),
      cpu: { time: apiTime(t0), usageCoreNanoSeconds: 2e9 },
      memory: { time: apiTime(t0), workingSetBytes: 300 },
      containers: [
        { name: 'httpd', startTime: apiTime(t0), cpu: { time: apiTime(t0), usageCoreNanoSeconds: 1.5e9 }, memory: { time: apiTime(t0), workingSetBytes: 200 } },
        { name: 'odd"name', startTime: apiTime(t0) },
      ],
    }],
  };

  test("kubelet's families, types, labels and sample timestamps (ms)", () => {
    const ts = Date.parse(apiTime(t0));
    expect(resourceMetrics(summary)).toBe(
      '# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds\n' +
      '# TYPE container_cpu_usage_seconds_total counter\n' +
      `container_cpu_usage_seconds_total{container="httpd",pod="web",namespace="default"} 1.5 ${ts}\n` +
      '# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes\n' +
      '# TYPE container_memory_working_set_bytes gauge\n' +
      `container_memory_working_set_bytes{container="httpd",pod="web",namespace="default"} 200 ${ts}\n` +
      '# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds\n' +
      '# TYPE container_start_time_seconds gauge\n' +
      `container_start_time_seconds{container="httpd",pod="web",namespace="default"} ${ts / 1000}\n` +
      `container_start_time_seconds{container="odd\\"name",pod="web",namespace="default"} ${ts / 1000}\n` +
      '# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds\n' +
      '# TYPE node_cpu_usage_seconds_total counter\n' +
      `node_cpu_usage_seconds_total 12.5 ${ts}\n` +
      '# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes\n' +
      '# TYPE node_memory_working_set_bytes gauge\n' +
      `node_memory_working_set_bytes 1024 ${ts}\n` +
      '# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds\n' +
      '# TYPE pod_cpu_usage_seconds_total counter\n' +
      `pod_cpu_usage_seconds_total{pod="web",namespace="default"} 2 ${ts}\n` +
      '# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes\n' +
      '# TYPE pod_memory_working_set_bytes gauge\n' +
      `pod_memory_working_set_bytes{pod="web",namespace="default"} 300 ${ts}\n` +
      '# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n' +
      '# TYPE resource_scrape_error gauge\n' +
      'resource_scrape_error 0\n' +
      '# HELP scrape_error [ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise\n' +
      '# TYPE scrape_error gauge\n' +
      'scrape_error 0\n',
    );
  });

  test('a summary that could not be read is the scrape error alone', () => {
    const text = resourceMetrics(undefined);
    expect(text).toContain('resource_scrape_error 1\n');
    expect(text).toContain('scrape_error 1\n');
    expect(text).not.toContain('node_cpu_usage_seconds_total');
  });
});
