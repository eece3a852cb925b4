// `nodelet pods` output: kubectl's STATUS/READY/RESTARTS/AGE rules, column layout, the JSON list, and `-w`.
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { withImagePulls, type PodWatchEvent } from '../../../src/agent/status-api.js';
import { formatPodJson, formatPodJsonDocument, formatPodTable, humanDuration, podRow, PodWatchPrinter } from '../../../src/cli/print-pods.js';

const NOW = new Date('2024-05-01T12:00:00Z');
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);

function pod(name: string, overrides: { spec?: Partial<NonNullable<V1Pod['spec']>>; status?: V1Pod['status']; metadata?: V1Pod['metadata'] } = {}): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', creationTimestamp: ago(300), ...overrides.metadata },
    spec: { nodeName: 'node1', containers: [{ name: 'main', image: 'busybox' }], ...overrides.spec },
    status: overrides.status ?? { phase: 'Pending' },
  };
}

function cs(name: string, state: V1ContainerStatus['state'], extra: Partial<V1ContainerStatus> = {}): V1ContainerStatus {
  return { name, image: 'busybox', imageID: '', ready: false, restartCount: 0, state, ...extra };
}

const running = { running: { startedAt: ago(100) } };

describe('podRow: STATUS, READY and RESTARTS as kubectl computes them', () => {
  const twoContainers = { containers: [{ name: 'a', image: 'busybox' }, { name: 'b', image: 'busybox' }] };
  const twoInits = { initContainers: [{ name: 'i1', image: 'busybox' }, { name: 'i2', image: 'busybox' }] };

  test.each<[string, V1Pod, { ready: string; status: string; restarts: string }]>([
    [
      'Running',
      pod('web', { status: { phase: 'Running', containerStatuses: [cs('main', running, { ready: true })] } }),
      { ready: '1/1', status: 'Running', restarts: '0' },
    ],
    ['Pending without statuses', pod('web'), { ready: '0/1', status: 'Pending', restarts: '0' }],
    [
      'ContainerCreating',
      pod('web', { status: { phase: 'Pending', containerStatuses: [cs('main', { waiting: { reason: 'ContainerCreating' } })] } }),
      { ready: '0/1', status: 'ContainerCreating', restarts: '0' },
    ],
    [
      'CrashLoopBackOff with restarts and time of the last one',
      pod('web', {
        status: {
          phase: 'Running',
          containerStatuses: [
            cs('main', { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s' } }, {
              restartCount: 3,
              lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: ago(25) } },
            }),
          ],
        },
      }),
      { ready: '0/1', status: 'CrashLoopBackOff', restarts: '3 (25s ago)' },
    ],
    [
      'restart time given as a string timestamp',
      pod('web', {
        status: {
          phase: 'Running',
          containerStatuses: [
            cs('main', running, {
              ready: true,
              restartCount: 1,
              lastState: { terminated: { exitCode: 137, finishedAt: '2024-05-01T11:57:50Z' as unknown as Date } },
            }),
          ],
        },
      }),
      { ready: '1/1', status: 'Running', restarts: '1 (2m10s ago)' },
    ],
    [
      'ImagePullBackOff',
      pod('web', { status: { phase: 'Pending', containerStatuses: [cs('main', { waiting: { reason: 'ImagePullBackOff' } })] } }),
      { ready: '0/1', status: 'ImagePullBackOff', restarts: '0' },
    ],
    [
      'Completed',
      pod('job', { status: { phase: 'Succeeded', containerStatuses: [cs('main', { terminated: { exitCode: 0, reason: 'Completed' } })] } }),
      { ready: '0/1', status: 'Completed', restarts: '0' },
    ],
    [
      'Error',
      pod('job', { status: { phase: 'Failed', containerStatuses: [cs('main', { terminated: { exitCode: 1, reason: 'Error' } })] } }),
      { ready: '0/1', status: 'Error', restarts: '0' },
    ],
    [
      'ExitCode:N without a reason',
      pod('job', { status: { phase: 'Failed', containerStatuses: [cs('main', { terminated: { exitCode: 2 } })] } }),
      { ready: '0/1', status: 'ExitCode:2', restarts: '0' },
    ],
    [
      'Signal:N without a reason',
      pod('job', { status: { phase: 'Failed', containerStatuses: [cs('main', { terminated: { exitCode: 137, signal: 9 } })] } }),
      { ready: '0/1', status: 'Signal:9', restarts: '0' },
    ],
    [
      'the first container decides the reason',
      pod('two', {
        spec: twoContainers,
        status: {
          phase: 'Pending',
          containerStatuses: [cs('a', { waiting: { reason: 'ErrImagePull' } }), cs('b', { waiting: { reason: 'ContainerCreating' } })],
        },
      }),
      { ready: '0/2', status: 'ErrImagePull', restarts: '0' },
    ],
    [
      'NotReady: one container completed, one running, pod not Ready',
      pod('two', {
        spec: twoContainers,
        status: {
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'False' }],
          containerStatuses: [cs('a', { terminated: { exitCode: 0, reason: 'Completed' } }), cs('b', running, { ready: true })],
        },
      }),
      { ready: '1/2', status: 'NotReady', restarts: '0' },
    ],
    [
      'Running: one container completed, one running, pod Ready',
      pod('two', {
        spec: twoContainers,
        status: {
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'True' }],
          containerStatuses: [cs('a', { terminated: { exitCode: 0, reason: 'Completed' } }), cs('b', running, { ready: true })],
        },
      }),
      { ready: '1/2', status: 'Running', restarts: '0' },
    ],
    [
      'running but not ready container counts as not ready',
      pod('web', { status: { phase: 'Running', containerStatuses: [cs('main', running, { ready: false })] } }),
      { ready: '0/1', status: 'Running', restarts: '0' },
    ],
    [
      'Init:x/y while an init container runs',
      pod('init', {
        spec: twoInits,
        status: {
          phase: 'Pending',
          initContainerStatuses: [cs('i1', { terminated: { exitCode: 0, reason: 'Completed' } }), cs('i2', running)],
          containerStatuses: [cs('main', { waiting: { reason: 'PodInitializing' } })],
        },
      }),
      { ready: '0/1', status: 'Init:1/2', restarts: '0' },
    ],
    [
      'Init:0/y before the first init container starts',
      pod('init', {
        spec: twoInits,
        status: { phase: 'Pending', initContainerStatuses: [cs('i1', { waiting: { reason: 'PodInitializing' } }), cs('i2', { waiting: {} })] },
      }),
      { ready: '0/1', status: 'Init:0/2', restarts: '0' },
    ],
    [
      'Init:Error',
      pod('init', {
        spec: twoInits,
        status: { phase: 'Pending', initContainerStatuses: [cs('i1', { terminated: { exitCode: 1, reason: 'Error' } }, { restartCount: 2 })] },
      }),
      { ready: '0/1', status: 'Init:Error', restarts: '2' },
    ],
    [
      'Init:CrashLoopBackOff with restarts counted from init containers',
      pod('init', {
        spec: twoInits,
        status: {
          phase: 'Pending',
          initContainerStatuses: [
            cs('i1', { waiting: { reason: 'CrashLoopBackOff' } }, { restartCount: 4, lastState: { terminated: { exitCode: 1, finishedAt: ago(7) } } }),
          ],
        },
      }),
      { ready: '0/1', status: 'Init:CrashLoopBackOff', restarts: '4 (7s ago)' },
    ],
    [
      'Init:ExitCode:N',
      pod('init', { spec: twoInits, status: { phase: 'Pending', initContainerStatuses: [cs('i1', { terminated: { exitCode: 3 } })] } }),
      { ready: '0/1', status: 'Init:ExitCode:3', restarts: '0' },
    ],
    [
      'Init:Signal:N',
      pod('init', { spec: twoInits, status: { phase: 'Pending', initContainerStatuses: [cs('i1', { terminated: { exitCode: 143, signal: 15 } })] } }),
      { ready: '0/1', status: 'Init:Signal:15', restarts: '0' },
    ],
    [
      'sidecar init container counts toward READY once started',
      pod('sidecar', {
        spec: { initContainers: [{ name: 'proxy', image: 'busybox', restartPolicy: 'Always' }] },
        status: {
          phase: 'Running',
          conditions: [{ type: 'Initialized', status: 'True' }],
          initContainerStatuses: [cs('proxy', running, { ready: true, started: true, restartCount: 1 })],
          containerStatuses: [cs('main', running, { ready: true })],
        },
      }),
      { ready: '2/2', status: 'Running', restarts: '1' },
    ],
    [
      'Terminating when a deletion timestamp is set',
      pod('web', {
        metadata: { name: 'web', deletionTimestamp: ago(1) },
        status: { phase: 'Running', containerStatuses: [cs('main', running, { ready: true })] },
      }),
      { ready: '1/1', status: 'Terminating', restarts: '0' },
    ],
    [
      'a terminal pod being deleted keeps its status',
      pod('job', {
        metadata: { name: 'job', deletionTimestamp: ago(1) },
        status: { phase: 'Succeeded', containerStatuses: [cs('main', { terminated: { exitCode: 0, reason: 'Completed' } })] },
      }),
      { ready: '0/1', status: 'Completed', restarts: '0' },
    ],
    ['status.reason wins over phase', pod('web', { status: { phase: 'Failed', reason: 'Evicted' } }), { ready: '0/1', status: 'Evicted', restarts: '0' }],
  ])('%s', (_name, p, expected) => {
    expect(podRow(p, NOW)).toMatchObject(expected);
  });
});

describe('humanDuration (kubectl AGE)', () => {
  test.each([
    [0, '0s'],
    [-1500, '0s'],
    [-3000, '<invalid>'],
    [5_000, '5s'],
    [119_000, '119s'],
    [130_000, '2m10s'],
    [300_000, '5m'],
    [45 * 60_000, '45m'],
    [179 * 60_000, '179m'],
    [(3 * 60 + 4) * 60_000, '3h4m'],
    [5 * 3_600_000, '5h'],
    [30 * 3_600_000, '30h'],
    [51 * 3_600_000, '2d3h'],
    [7 * 86_400_000, '7d'],
    [100 * 86_400_000, '100d'],
    [800 * 86_400_000, '2y70d'],
    [3000 * 86_400_000, '8y'],
  ])('%i ms -> %s', (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });
});

describe('formatPodTable', () => {
  const web = pod('web-node1', {
    metadata: { name: 'web-node1', namespace: 'default', creationTimestamp: ago(5) },
    status: { phase: 'Running', podIP: '10.99.0.12', podIPs: [{ ip: '10.99.0.12' }], containerStatuses: [cs('main', running, { ready: true })] },
  });
  const crash = pod('crashy-node1', {
    metadata: { name: 'crashy-node1', namespace: 'kube-system', creationTimestamp: ago(3 * 3600 + 240) },
    status: {
      phase: 'Running',
      podIP: '10.99.0.13',
      containerStatuses: [
        cs('main', { waiting: { reason: 'CrashLoopBackOff' } }, { restartCount: 12, lastState: { terminated: { exitCode: 1, finishedAt: ago(25) } } }),
      ],
    },
  });

  test('default columns, sorted by namespace and name, padded like kubectl', () => {
    expect(formatPodTable([web, crash], { wide: false, now: NOW, showNamespace: false })).toBe(
      [
        'NAME           READY   STATUS             RESTARTS       AGE',
        'web-node1      1/1     Running            0              5s',
        'crashy-node1   0/1     CrashLoopBackOff   12 (25s ago)   3h4m',
        '',
      ].join('\n'),
    );
  });

  test('with namespaces and wide columns', () => {
    const gated = pod('gated', {
      metadata: { name: 'gated', namespace: 'default', creationTimestamp: undefined },
      spec: { nodeName: '', readinessGates: [{ conditionType: 'example.com/lb' }, { conditionType: 'example.com/dns' }] },
      status: { phase: 'Pending', nominatedNodeName: 'node2', startTime: ago(61), conditions: [{ type: 'example.com/lb', status: 'True' }] },
    });
    expect(formatPodTable([web, crash, gated], { wide: true, now: NOW, showNamespace: true })).toBe(
      [
        'NAMESPACE     NAME           READY   STATUS             RESTARTS       AGE    IP           NODE     NOMINATED NODE   READINESS GATES',
        'default       gated          0/1     Pending            0              61s    <none>       <none>   node2            1/2',
        'default       web-node1      1/1     Running            0              5s     10.99.0.12   node1    <none>           <none>',
        'kube-system   crashy-node1   0/1     CrashLoopBackOff   12 (25s ago)   3h4m   10.99.0.13   node1    <none>           <none>',
        '',
      ].join('\n'),
    );
  });

  test('no pods: no output (kubectl reports "No resources found" on stderr)', () => {
    expect(formatPodTable([], { wide: false, now: NOW, showNamespace: false })).toBe('');
  });

  test('AGE falls back to startTime, else <unknown>', () => {
    const noCreation = pod('a', { metadata: { name: 'a', creationTimestamp: undefined } });
    expect(podRow(noCreation, NOW).age).toBe('<unknown>');
    noCreation.status = { phase: 'Pending', startTime: ago(90) };
    expect(podRow(noCreation, NOW).age).toBe('90s');
  });
});

describe('formatPodJson', () => {
  test('a v1 List with sorted keys, 4-space indent and RFC 3339 times', () => {
    const p: V1Pod = {
      metadata: { name: 'web', namespace: 'default', creationTimestamp: new Date('2024-05-01T11:59:55.123Z') },
      spec: { containers: [{ name: 'main', image: 'busybox' }] },
      status: { phase: 'Running' },
    };
    const text = formatPodJson([p]);
    expect(text.endsWith('}\n')).toBe(true);
    expect(JSON.parse(text)).toEqual({
      apiVersion: 'v1',
      items: [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { creationTimestamp: '2024-05-01T11:59:55Z', name: 'web', namespace: 'default' },
          spec: { containers: [{ image: 'busybox', name: 'main' }] },
          status: { phase: 'Running' },
        },
      ],
      kind: 'List',
      metadata: { resourceVersion: '' },
    });
    expect(text.split('\n').slice(0, 5)).toEqual(['{', '    "apiVersion": "v1",', '    "items": [', '        {', '            "apiVersion": "v1",']);
    expect(Object.keys(JSON.parse(text).items[0].metadata)).toEqual(['creationTimestamp', 'name', 'namespace']);
  });

  test('no pods: an empty list', () => {
    expect(JSON.parse(formatPodJson([]))).toEqual({ apiVersion: 'v1', items: [], kind: 'List', metadata: { resourceVersion: '' } });
  });
});

describe('PodWatchPrinter (`nodelet pods -w`)', () => {
  const bookmark: PodWatchEvent = { type: 'BOOKMARK', object: { metadata: { annotations: { 'k8s.io/initial-events-end': 'true' } } } };
  const pending = pod('web-node1', { metadata: { name: 'web-node1', namespace: 'default', creationTimestamp: ago(2) } });
  const runningPod = pod('web-node1', {
    metadata: { name: 'web-node1', namespace: 'default', creationTimestamp: ago(2) },
    status: { phase: 'Running', podIP: '10.99.0.12', containerStatuses: [cs('main', running, { ready: true })] },
  });
  const other = pod('db-node1', { metadata: { name: 'db-node1', namespace: 'kube-system', creationTimestamp: ago(300) } });

  test('the initial pods as one table at the bookmark, then a row per event laid out on its own, deletions included', () => {
    const printer = new PodWatchPrinter({ output: '', showNamespace: true });
    expect(printer.print({ type: 'ADDED', object: pending }, NOW)).toBe('');
    expect(printer.print({ type: 'ADDED', object: other }, NOW)).toBe('');
    expect(printer.print(bookmark, NOW)).toBe(formatPodTable([pending, other], { wide: false, now: NOW, showNamespace: true }));
    expect(printer.print({ type: 'MODIFIED', object: runningPod }, NOW)).toBe('default   web-node1   1/1   Running   0   2s\n');
    expect(printer.print({ type: 'DELETED', object: runningPod }, new Date(NOW.getTime() + 60_000))).toBe('default   web-node1   1/1   Running   0   62s\n');
  });

  test('a watch that starts with no pods prints the header with the first row', () => {
    const printer = new PodWatchPrinter({ output: 'wide', showNamespace: false });
    expect(printer.print(bookmark, NOW)).toBe('');
    expect(printer.print({ type: 'ADDED', object: runningPod }, NOW)).toBe(
      [
        'NAME        READY   STATUS    RESTARTS   AGE   IP           NODE    NOMINATED NODE   READINESS GATES',
        'web-node1   1/1     Running   0          2s    10.99.0.12   node1   <none>           <none>',
        '',
      ].join('\n'),
    );
    expect(printer.print({ type: 'MODIFIED', object: pending }, NOW)).toBe('web-node1   0/1   Pending   0   2s   <none>   node1   <none>   <none>\n');
  });

  test("-o json: every pod and every event's pod as a JSON document of its own", () => {
    const printer = new PodWatchPrinter({ output: 'json', showNamespace: true });
    expect(printer.print({ type: 'ADDED', object: pending }, NOW)).toBe('');
    expect(printer.print({ type: 'ADDED', object: other }, NOW)).toBe('');
    expect(printer.print(bookmark, NOW)).toBe(formatPodJsonDocument(pending) + formatPodJsonDocument(other));
    expect(printer.print({ type: 'MODIFIED', object: runningPod }, NOW)).toBe(formatPodJsonDocument(runningPod));
    const doc = JSON.parse(formatPodJsonDocument(runningPod)) as V1Pod;
    expect(doc).toMatchObject({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-node1' }, status: { phase: 'Running' } });
    expect(formatPodJsonDocument(runningPod).split('\n').slice(0, 2)).toEqual(['{', '    "apiVersion": "v1",']);
  });
});

test("-o wide adds nodelet's IMAGE PULL column only while a listed pod waits for a pull (the status socket's annotation)", () => {
  const plain: V1Pod = { metadata: { name: 'a', namespace: 'default', uid: 'a' }, spec: { containers: [{ name: 'c' }] }, status: { phase: 'Running' } };
  const waiting: V1Pod = { metadata: { name: 'b', namespace: 'default', uid: 'b' }, spec: { containers: [{ name: 'c' }] }, status: { phase: 'Pending' } };
  const listed = withImagePulls([plain, waiting], (uid) => (uid === 'b' ? 'reg:5000/big:1 12.0MiB of 48.0MiB (25%)' : undefined));
  expect(listed[0]).toBe(plain);
  expect(waiting.metadata!.annotations).toBeUndefined();
  const table = formatPodTable(listed, { wide: true, now: NOW, showNamespace: false }).split('\n');
  expect(table[0]).toMatch(/READINESS GATES\s+IMAGE PULL$/);
  expect(table[1]).toMatch(/<none>\s+<none>$/);
  expect(table[2]).toMatch(/<none>\s+reg:5000\/big:1 12\.0MiB of 48\.0MiB \(25%\)$/);
  expect(formatPodTable(listed, { wide: false, now: NOW, showNamespace: false })).not.toContain('IMAGE PULL');
  expect(formatPodTable([plain], { wide: true, now: NOW, showNamespace: false })).not.toContain('IMAGE PULL');
});
