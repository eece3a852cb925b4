// What `npm run conformance` selects of Kubernetes' e2e suite and how it reads ginkgo's report.
import { DEFAULT_FOCUS, DEFAULT_SKIP, NODE_CONFORMANCE_FOCUS, NODE_CONFORMANCE_SKIP, SKIP_LIST, firstErrorLine, formatSummary, ginkgoArgs, summarize, type GinkgoSpecReport } from '../../conformance/suite.js';

// Spec names as e2e.test --list-tests prints them (v1.32.13).
const focused = [
  '[sig-node] Pods should get a host IP [NodeConformance] [Conformance]',
  '[sig-node] NoExecuteTaintManager Single Pod [Serial] removing taint cancels eviction [Disruptive] [Conformance]',
  '[sig-storage] ConfigMap should be consumable from pods in volume [NodeConformance] [Conformance]',
  '[sig-storage] Secrets should be immutable if `immutable` field is set [Conformance]',
  '[sig-storage] Projected downwardAPI should provide podname only [NodeConformance] [Conformance]',
  '[sig-storage] Downward API volume should set mode on item file [LinuxOnly] [NodeConformance] [Conformance]',
  '[sig-storage] EmptyDir wrapper volumes should not conflict [Conformance]',
  '[sig-storage] HostPath should support subPath [NodeConformance]',
];
const notFocused = [
  '[sig-node] Pods should cap back-off at MaxContainerBackOff [Slow] [NodeConformance]',
  '[sig-storage] CSIInlineVolumes should support CSIVolumeSource in Pod API [Conformance]',
  '[sig-storage] PersistentVolumes CSI Conformance should run through the lifecycle of a PV and a PVC [Conformance]',
  '[sig-network] Services should serve a basic endpoint from pods [Conformance]',
  '[sig-apps] Daemon set [Serial] should rollback without unnecessary restarts [Conformance]',
];

test('the default focus takes sig-node conformance and the supported volume types, nothing else', () => {
  const focus = new RegExp(DEFAULT_FOCUS);
  for (const name of focused) expect([name, focus.test(name)]).toEqual([name, true]);
  for (const name of notFocused) expect([name, focus.test(name)]).toEqual([name, false]);
});

test('the skip list leaves every default-focus test in and takes out LoadBalancer and cloud-provider tests', () => {
  const skip = new RegExp(DEFAULT_SKIP);
  for (const name of [...focused, ...notFocused]) expect([name, skip.test(name)]).toEqual([name, false]);
  expect(skip.test('[sig-network] LoadBalancers [Feature:LoadBalancer] should be able to change the type and ports of a TCP service [Slow]')).toBe(true);
  expect(skip.test('[sig-cloud-provider-gcp] Nodes [Disruptive] Resize [Provider:GCE] should be able to add nodes')).toBe(true);
  for (const entry of SKIP_LIST) expect(entry.reason).not.toBe('');
});

test('--node-conformance: the [NodeConformance] tests that are not [Conformance] ones', () => {
  const runs = (name: string) => new RegExp(NODE_CONFORMANCE_FOCUS).test(name) && !new RegExp(NODE_CONFORMANCE_SKIP).test(name);
  expect(runs('[sig-node] Pods should cap back-off at MaxContainerBackOff [Slow] [NodeConformance]')).toBe(true);
  expect(runs('[sig-storage] HostPath should support r/w [NodeConformance]')).toBe(true);
  expect(runs('[sig-node] Pods should get a host IP [NodeConformance] [Conformance]')).toBe(false);
  expect(runs('[sig-network] Services should serve a basic endpoint from pods [Conformance]')).toBe(false);
});

test('ginkgo runs e2e.test in parallel with the focus, the skip list and the reports', () => {
  const args = ginkgoArgs({ focus: 'F', skip: 'S', procs: 3, adminKubeconfig: '/k', reportDir: '/r', e2eTest: '/e/e2e.test', timeout: '6h' });
  expect(args.slice(0, args.indexOf('/e/e2e.test'))).toEqual(['-p', '--procs=3', '--timeout=6h', '--no-color']);
  expect(args.slice(args.indexOf('--') + 1)).toEqual(expect.arrayContaining(['--provider=local', '--kubeconfig=/k', '--report-dir=/r',
    '--report-complete-ginkgo', '--ginkgo.focus=F', '--ginkgo.skip=S']));
  expect(ginkgoArgs({ focus: 'F', skip: '', procs: 1, adminKubeconfig: '/k', reportDir: '/r', e2eTest: '/e2e.test', timeout: '1h' }))
    .not.toEqual(expect.arrayContaining(['-p', '--ginkgo.skip=']));
});

const apiStatusTimeout = `Timed out after 60.000s.
The function passed to Eventually returned the following error:
    <*errors.StatusError | 0x20c9286aea00>:
    the server has asked for the client to provide credentials (get pods client-containers-1322d0e6)
    {
        ErrStatus:
            code: 401
            message: the server has asked for the client to provide credentials (get pods client-containers-1322d0e6)
            reason: Unauthorized
    }`;

test("a failure's first line, with the error an Eventually timed out on", () => {
  expect(firstErrorLine('\n  expected pod to be running\nmore')).toBe('expected pod to be running');
  expect(firstErrorLine(apiStatusTimeout)).toBe('Timed out after 60.000s. the server has asked for the client to provide credentials (get pods client-containers-1322d0e6)');
  expect(firstErrorLine('Timed out after 5.000s.\nThe function passed to Eventually returned the following error:\n    pod is Pending')).toBe('Timed out after 5.000s. pod is Pending');
  expect(firstErrorLine('Timed out after 300.000s.\nThe matcher passed to Eventually returned the following error:\n    <*errors.errorString | 0x1afe>: \n' +
    '    Expected pod "p" to be terminated with reason "DeadlineExceeded", got reason: ""\n    {\n')).toBe(
    'Timed out after 300.000s. Expected pod "p" to be terminated with reason "DeadlineExceeded", got reason: ""');
  expect(firstErrorLine('Timed out after 60.001s.\nexpected pod to be container debugger running, got instead:\n    <*v1.Pod | 0x46d8>: \n        metadata:\n'))
    .toBe('Timed out after 60.001s. expected pod to be container debugger running, got instead:');
  expect(firstErrorLine(undefined)).toBe('');
});

const spec = (texts: string[], leaf: string, State: string, message?: string): GinkgoSpecReport => ({
  ContainerHierarchyTexts: texts, LeafNodeText: leaf, LeafNodeType: 'It', State, RunTime: 2.4e9,
  ...(message ? { Failure: { Message: message, Location: { FileName: '/go/mod/k8s.io/kubernetes@v1.32.13/test/e2e/common/node/pods.go', LineNumber: 42 } } } : {}),
});

test('the summary counts the selected specs per SIG, leaves out the filtered ones and names each failure', () => {
  const summary = summarize([{
    SuiteSucceeded: false,
    SpecReports: [
      { LeafNodeType: 'SynchronizedBeforeSuite', State: 'passed' },
      spec(['[sig-node] Pods'], 'should get a host IP [NodeConformance] [Conformance]', 'passed'),
      spec(['[sig-node] Pods'], 'should be updated [NodeConformance] [Conformance]', 'failed', 'pod not updated\nstack'),
      spec(['[sig-node] Probing container'], 'should be restarted [NodeConformance] [Conformance]', 'timedout', 'A suite timeout occurred'),
      spec(['[sig-storage] ConfigMap'], 'should be consumable [NodeConformance] [Conformance]', 'passed'),
      spec(['[sig-apps] Daemon set [Serial]'], 'should rollback [Conformance]', 'skipped', 'Requires at least 2 nodes (not 1)'),
      // Filtered out by the focus: skipped without a message.
      spec(['[sig-network] Services'], 'should serve [Conformance]', 'skipped'),
    ],
  }]);
  expect([summary.passed, summary.failed, summary.skipped]).toEqual([2, 2, 1]);
  expect(summary.bySig).toEqual([
    { sig: 'sig-apps', passed: 0, failed: 0, skipped: 1 },
    { sig: 'sig-node', passed: 1, failed: 2, skipped: 0 },
    { sig: 'sig-storage', passed: 1, failed: 0, skipped: 0 },
  ]);
  const failed = summary.specs.find((s) => s.state === 'failed' && s.name.includes('updated'))!;
  expect(failed).toMatchObject({ name: '[sig-node] Pods should be updated [NodeConformance] [Conformance]', message: 'pod not updated',
    location: 'k8s.io/kubernetes@v1.32.13/test/e2e/common/node/pods.go:42', seconds: 2 });
  const text = formatSummary(summary);
  expect(text).toContain('Failed (2):\n- [sig-node] Pods should be updated [NodeConformance] [Conformance]\n    pod not updated [k8s.io/kubernetes@v1.32.13/test/e2e/common/node/pods.go:42]');
  expect(text).toMatch(/^total +2 +2 +1$/m);
  expect(text).toContain('Requires at least 2 nodes (not 1)');
});
