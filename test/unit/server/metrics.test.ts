// kubelet's Prometheus metrics through prom-client: names, types, labels and buckets as kubelet v1.32 exposes them,
// the runtime operations of the instrumented CRI, and probe series that go with their worker.
import { instrumentRuntime } from '../../../src/cri/instrumented.js';
import { CriError } from '../../../src/cri/errors.js';
import { KubeletMetrics } from '../../../src/server/metrics.js';

const metrics = () => new KubeletMetrics('node-a', () => 1_700_000_000_000);

describe('/metrics', () => {
  test("the node name, kubelet's gauges and the process and Node.js metrics", async () => {
    const m = metrics();
    m.runtimeCounts(3, { created: 1, running: 5, exited: 2, unknown: 0 });
    const text = await m.registry.metrics();
    expect(text).toContain('# TYPE kubelet_node_name gauge\nkubelet_node_name{node="node-a"} 1\n');
    expect(text).toContain('# TYPE kubelet_running_pods gauge\nkubelet_running_pods 3\n');
    expect(text).toContain('kubelet_running_containers{container_state="running"} 5\n');
    expect(text).toContain('kubelet_running_containers{container_state="unknown"} 0\n');
    expect(text).toMatch(/^process_resident_memory_bytes \d+$/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d+$/m);
  });

  test("runtime operations: counted, timed in kubelet's exponential buckets, failures counted apart", async () => {
    const m = metrics();
    let clock = 0;
    const runtime = instrumentRuntime(
      {
        listPodSandbox: async () => {
          clock += 7;
          return [];
        },
        removeContainer: async () => {
          clock += 1;
          throw new CriError('Unknown', 'RemoveContainer', 'boom');
        },
        notCri: () => 'untouched',
      },
      m,
      () => clock,
    );
    await runtime.listPodSandbox();
    await expect(runtime.removeContainer()).rejects.toThrow('boom');
    expect(runtime.notCri()).toBe('untouched');
    const text = await m.registry.metrics();
    expect(text).toContain('kubelet_runtime_operations_total{operation_type="list_podsandbox"} 1\n');
    expect(text).toContain('kubelet_runtime_operations_total{operation_type="remove_container"} 1\n');
    expect(text).toContain('kubelet_runtime_operations_errors_total{operation_type="remove_container"} 1\n');
    expect(text).not.toContain('kubelet_runtime_operations_errors_total{operation_type="list_podsandbox"}');
    // ExponentialBuckets(.005, 2.5, 14): 7 ms falls in the second bucket (0.0125).
    expect(text).toContain('kubelet_runtime_operations_duration_seconds_bucket{le="0.005",operation_type="list_podsandbox"} 0\n');
    expect(text).toContain('kubelet_runtime_operations_duration_seconds_bucket{le="0.0125",operation_type="list_podsandbox"} 1\n');
    expect(text).toContain('kubelet_runtime_operations_duration_seconds_bucket{le="745.0580596923828",operation_type="list_podsandbox"} 1\n');
  });

  test('pod start, worker, relist and started counters', async () => {
    const m = metrics();
    m.podStarted(2.5);
    m.podStartSli(1.2, true);
    m.podWorkerSync('create', 0.03);
    m.relist(0.01, undefined);
    m.relist(0.01, 1.0);
    m.sandboxStarted(false);
    m.sandboxStarted(true);
    m.containerStarted('init_container');
    m.containerStartFailed('init_container', 'Unknown');
    const text = await m.registry.metrics();
    expect(text).toContain('kubelet_pod_start_duration_seconds_bucket{le="3"} 1\n');
    expect(text).toContain('kubelet_pod_start_duration_seconds_bucket{le="2"} 0\n');
    expect(text).toContain('kubelet_pod_start_sli_duration_seconds_count{first_with_network="true"} 1\n');
    expect(text).toContain('kubelet_pod_worker_duration_seconds_bucket{le="0.05",operation_type="create"} 1\n');
    expect(text).toContain('kubelet_pleg_relist_duration_seconds_count 2\n');
    expect(text).toContain('kubelet_pleg_relist_interval_seconds_count 1\n');
    expect(text).toContain('kubelet_pleg_last_seen_seconds 1700000000\n');
    expect(text).toContain('kubelet_started_pods_total 2\n');
    expect(text).toContain('kubelet_started_pods_errors_total 1\n');
    expect(text).toContain('kubelet_started_containers_total{container_type="init_container"} 1\n');
    expect(text).toContain('kubelet_started_containers_errors_total{container_type="init_container",code="Unknown"} 1\n');
  });
});

describe("kubelet 1.37's start-up metrics", () => {
  test('kubelet_cgroup_version: 0 until the check sets it', async () => {
    const m = metrics();
    expect(await m.registry.metrics()).toContain('# HELP kubelet_cgroup_version cgroup version on the hosts.\n# TYPE kubelet_cgroup_version gauge\nkubelet_cgroup_version 0\n');
    m.cgroupVersion(1);
    expect(await m.registry.metrics()).toContain('kubelet_cgroup_version 1\n');
  });

  test('kubelet_cri_losing_support: absent until a runtime without RuntimeConfig is met, then 1 for the release', async () => {
    const m = metrics();
    expect(await m.registry.metrics()).not.toContain('kubelet_cri_losing_support');
    m.criLosingSupport('1.38.0');
    const text = await m.registry.metrics();
    expect(text).toContain(
      '# HELP kubelet_cri_losing_support the Kubernetes version that the currently running CRI implementation will lose support on if not upgraded.\n' +
        '# TYPE kubelet_cri_losing_support gauge\nkubelet_cri_losing_support{version="1.38.0"} 1\n',
    );
  });

  test('RuntimeConfig is the instrumented runtime\'s runtime_config operation', async () => {
    const m = metrics();
    const runtime = instrumentRuntime({ runtimeConfig: async () => ({}) }, m, () => 0);
    await runtime.runtimeConfig();
    expect(await m.registry.metrics()).toContain('kubelet_runtime_operations_total{operation_type="runtime_config"} 1\n');
  });
});

describe('/metrics/probes', () => {
  test("prober_probe_total by result with kubelet's labels; the series go with the worker", async () => {
    const m = metrics();
    const target = { probeType: 'readiness' as const, container: 'c', pod: 'p', namespace: 'ns', podUid: 'uid-1' };
    m.probeResult(target, 'successful', 0.002);
    m.probeResult(target, 'successful', 0.002);
    m.probeResult(target, 'failed', 1);
    let text = await m.probeRegistry.metrics();
    expect(text).toContain('# TYPE prober_probe_total counter\n');
    expect(text).toContain('prober_probe_total{probe_type="Readiness",result="successful",container="c",pod="p",namespace="ns",pod_uid="uid-1"} 2\n');
    expect(text).toContain('prober_probe_total{probe_type="Readiness",result="failed",container="c",pod="p",namespace="ns",pod_uid="uid-1"} 1\n');
    // Only successful runs are timed.
    expect(text).toContain('prober_probe_duration_seconds_count{probe_type="Readiness",container="c",pod="p",namespace="ns"} 2\n');
    expect(await m.registry.metrics()).not.toContain('prober_probe_total');
    m.probeWorkerStopped(target);
    text = await m.probeRegistry.metrics();
    expect(text).not.toContain('pod_uid="uid-1"');
  });
});
