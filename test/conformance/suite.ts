// What `npm run conformance` runs of Kubernetes' e2e suite, and how it reads the outcome: the default focus, the skip
// list (each entry with its reason), the command line of ginkgo and e2e.test, and the summary of ginkgo's JSON report.
// Pure: run.ts does the running.

/** The default focus: every [Conformance] test of sig-node, and sig-storage's for the volume types nodelet supports. */
export const DEFAULT_FOCUS = [
  String.raw`\[sig-node\].*\[Conformance\]`,
  String.raw`\[sig-storage\] (ConfigMap|Secrets|Projected|Downward API|EmptyDir).*\[Conformance\]`,
  // hostPath has no [Conformance] test; its [NodeConformance] ones are the node's share of it.
  String.raw`\[sig-storage\] HostPath .*\[NodeConformance\]`,
].join('|');

/**
 * Tests this single-node, cloudless cluster cannot host, whatever the focus, each with its reason. None matches the
 * default focus; they matter when --focus widens it. Tests that need two or more nodes are not listed: upstream's
 * skip themselves on a smaller cluster (e2eskipper.SkipUnlessNodeCountIsAtLeast), and the summary shows them as
 * skipped by the test itself, with that reason.
 */
export const SKIP_LIST: { pattern: string; reason: string }[] = [
  { pattern: String.raw`\[Feature:LoadBalancer\]`, reason: 'needs a cloud provider that provisions LoadBalancer Services' },
  { pattern: String.raw`\[Provider:[^\]]+\]|\[Feature:GKENodePool\]`, reason: 'needs that cloud provider (--provider=local is none)' },
  { pattern: String.raw`\[Feature:NodeOutOfServiceVolumeDetach\]`, reason: 'takes a node out of service and moves its pods to another node' },
];

export const DEFAULT_SKIP = SKIP_LIST.map((s) => s.pattern).join('|');

/**
 * `--node-conformance`: the node's tests beyond the conformance set, upstream's [NodeConformance] tag without the
 * [Conformance] tests the default focus runs.
 */
export const NODE_CONFORMANCE_FOCUS = String.raw`\[NodeConformance\]`;
export const NODE_CONFORMANCE_SKIP = [String.raw`\[Conformance\]`, DEFAULT_SKIP].join('|');

export interface RunPlan {
  focus: string;
  skip: string;
  procs: number;
  adminKubeconfig: string;
  reportDir: string;
  e2eTest: string;
  /** Whole-suite timeout (ginkgo's --timeout, a Go duration). */
  timeout: string;
}

/**
 * ginkgo's arguments: e2e.test run in `procs` parallel processes. Specs marked [Serial] carry ginkgo's Serial decorator
 * (the e2e framework adds it), so ginkgo runs them on process 1 once every parallel spec is done: alone, as a second
 * non-parallel pass would.
 */
export function ginkgoArgs(plan: RunPlan): string[] {
  return [
    ...(plan.procs > 1 ? ['-p', `--procs=${plan.procs}`] : []),
    `--timeout=${plan.timeout}`,
    '--no-color',
    plan.e2eTest,
    '--',
    '--provider=local',
    `--kubeconfig=${plan.adminKubeconfig}`,
    `--report-dir=${plan.reportDir}`,
    // ginkgo's JSON report as well as the JUnit one: the summary is read from it.
    '--report-complete-ginkgo',
    // The log dump of a failed test shells out to cluster/log-dump (not here); the runner keeps every log instead.
    '--dump-logs-on-failure=false',
    `--ginkgo.focus=${plan.focus}`,
    ...(plan.skip ? [`--ginkgo.skip=${plan.skip}`] : []),
  ];
}

/** The part of ginkgo's JSON report (types.Report) the summary reads. */
export interface GinkgoSpecReport {
  ContainerHierarchyTexts?: string[] | null;
  LeafNodeText?: string;
  LeafNodeType?: string;
  State?: string;
  RunTime?: number;
  Failure?: { Message?: string; Location?: { FileName?: string; LineNumber?: number } };
}
export interface GinkgoReport {
  SuiteSucceeded?: boolean;
  SpecReports?: GinkgoSpecReport[] | null;
}

export interface SpecOutcome {
  name: string;
  sig: string;
  state: 'passed' | 'failed' | 'skipped';
  /** Failed: the failure's first line; skipped: why the test skipped itself. */
  message: string;
  location: string;
  seconds: number;
}

export interface Summary {
  specs: SpecOutcome[];
  bySig: { sig: string; passed: number; failed: number; skipped: number }[];
  passed: number;
  failed: number;
  skipped: number;
}

/**
 * A failure's first line; when that only says an Eventually timed out (or failed) on an error, with the error's own
 * message (the `message:` of an API status, else the line after the one that announces the error).
 */
export function firstErrorLine(text: string | undefined): string {
  const lines = (text ?? '').split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const first = lines[0] ?? '';
  if (!/^Timed out after|failed after/.test(first)) return first;
  const status = lines.find((l) => l.startsWith('message: '));
  // The line that says what was expected, or announces the error: the first after it that is not a Go type's dump.
  const announced = lines.findIndex((l, i) => i > 0 && (/error:$/.test(l) || /^expected .*got instead:$/i.test(l)));
  const after = announced >= 0 ? lines.slice(announced + 1).find((l) => !l.startsWith('<')) : undefined;
  const detail = status?.slice('message: '.length) ?? (announced >= 0 && /got instead:$/.test(lines[announced]!) ? lines[announced] : after) ?? lines[1];
  return detail ? `${first} ${detail}` : first;
}

/**
 * The specs the run selected and what became of each. Ginkgo reports the specs its focus and skip filtered out as
 * "skipped" with no message; those are left out. A spec that skipped itself (e2eskipper) carries its reason. Failed,
 * panicked, timed-out, interrupted and aborted specs all count as failed.
 */
export function summarize(reports: GinkgoReport[]): Summary {
  const specs: SpecOutcome[] = [];
  for (const report of reports) {
    for (const spec of report.SpecReports ?? []) {
      if (spec.LeafNodeType !== 'It') continue;
      const name = [...(spec.ContainerHierarchyTexts ?? []), spec.LeafNodeText ?? ''].filter((t) => t !== '').join(' ');
      const message = firstErrorLine(spec.Failure?.Message);
      let state: SpecOutcome['state'];
      if (spec.State === 'passed') state = 'passed';
      else if (spec.State === 'skipped' || spec.State === 'pending') {
        if (message === '') continue;
        state = 'skipped';
      } else state = 'failed';
      const loc = spec.Failure?.Location;
      specs.push({
        name,
        sig: /\[(sig-[a-z0-9-]+)\]/.exec(name)?.[1] ?? '(no sig)',
        state,
        message,
        location: loc?.FileName ? `${loc.FileName.replace(/^.*\/(k8s\.io\/kubernetes@[^/]+\/)/, '$1')}:${loc.LineNumber ?? 0}` : '',
        seconds: Math.round((spec.RunTime ?? 0) / 1e9),
      });
    }
  }
  specs.sort((a, b) => a.name.localeCompare(b.name));
  const sigs = new Map<string, { sig: string; passed: number; failed: number; skipped: number }>();
  for (const s of specs) {
    const row = sigs.get(s.sig) ?? { sig: s.sig, passed: 0, failed: 0, skipped: 0 };
    row[s.state]++;
    sigs.set(s.sig, row);
  }
  const count = (state: SpecOutcome['state']) => specs.filter((s) => s.state === state).length;
  return {
    specs,
    bySig: [...sigs.values()].sort((a, b) => a.sig.localeCompare(b.sig)),
    passed: count('passed'),
    failed: count('failed'),
    skipped: count('skipped'),
  };
}

/** The summary as text: the per-SIG table, then each failure with its first error line (and each self-skip's reason). */
export function formatSummary(summary: Summary): string {
  const rows = [['SIG', 'passed', 'failed', 'skipped'], ...summary.bySig.map((r) => [r.sig, String(r.passed), String(r.failed), String(r.skipped)]),
    ['total', String(summary.passed), String(summary.failed), String(summary.skipped)]];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const out = [line(rows[0]!), ...rows.slice(1, -1).map(line), widths.map((w) => '-'.repeat(w)).join('  '), line(rows[rows.length - 1]!)];
  const failed = summary.specs.filter((s) => s.state === 'failed');
  if (failed.length > 0) {
    out.push('', `Failed (${failed.length}):`);
    for (const s of failed) out.push(`- ${s.name}`, `    ${s.message || '(no failure message)'}${s.location ? ` [${s.location}]` : ''}`);
  }
  const skipped = summary.specs.filter((s) => s.state === 'skipped');
  if (skipped.length > 0) {
    out.push('', `Skipped by the test itself (${skipped.length}):`);
    for (const s of skipped) out.push(`- ${s.name}`, `    ${s.message}`);
  }
  return `${out.join('\n')}\n`;
}
