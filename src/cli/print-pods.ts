// `kubectl get pods`-style output: the table with kubectl's STATUS/READY/RESTARTS/AGE rules, `-o json`, and `-w`.
import type { V1ContainerStatus, V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { imagePullAnnotation, type PodWatchEvent } from '../agent/status-api.js';
import { compareStrings } from '../core/compare.js';

export interface PodTableOptions {
  /** `-o wide`: adds IP, NODE, NOMINATED NODE, READINESS GATES (and IMAGE PULL while a listed pod waits for a pull). */
  wide: boolean;
  /** The moment ages are measured from. */
  now: Date;
  /** `--all-namespaces`: adds the NAMESPACE column. */
  showNamespace: boolean;
}

/** One table row's computed values, as kubectl's printPod derives them. */
export interface PodRow {
  namespace: string;
  name: string;
  ready: string;
  status: string;
  restarts: string;
  age: string;
  ip: string;
  node: string;
  nominatedNode: string;
  readinessGates: string;
  /** The agent's imagePullAnnotation: the pull the pod waits for and its progress; '' for none. */
  imagePull: string;
}

// Timestamps are Date in the client model but strings in pods decoded from JSON; accept both.
type Timestamp = Date | string | null | undefined;

function toMillis(t: Timestamp): number | undefined {
  if (t === null || t === undefined || t === '') return undefined;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

/** apimachinery's duration.HumanDuration: about two significant units (5s, 2m10s, 45m, 3h4m, 2d3h, 400d, 3y20d). */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${days}d` : `${days}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.trunc(days / 365);
  if (hours < 24 * 365 * 8) {
    const d = days % 365;
    return d === 0 ? `${years}y` : `${years}y${d}d`;
  }
  return `${years}y`;
}

function since(t: Timestamp, now: Date): string {
  const ms = toMillis(t);
  return ms === undefined ? '<unknown>' : humanDuration(now.getTime() - ms);
}

function conditionTrue(conditions: V1PodCondition[] | undefined, type: string): boolean {
  return (conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

function lastTerminationFinished(status: V1ContainerStatus): number | undefined {
  return toMillis(status.lastState?.terminated?.finishedAt as Timestamp);
}

/** kubectl's printPod: READY, STATUS and RESTARTS from the pod's status, with its precedence rules. */
export function podRow(pod: V1Pod, now: Date): PodRow {
  const spec = pod.spec;
  const status = pod.status ?? {};
  const initContainers = spec?.initContainers ?? [];
  // Sidecars (init containers with restartPolicy Always) count as containers of the pod.
  const restartableInit = new Set(initContainers.filter((c) => c.restartPolicy === 'Always').map((c) => c.name));
  const totalContainers = (spec?.containers.length ?? 0) + restartableInit.size;
  let readyContainers = 0;
  let restarts = 0;
  let lastRestart = 0;
  let sidecarRestarts = 0;
  let lastSidecarRestart = 0;

  let reason = status.reason || status.phase || '';
  if ((status.conditions ?? []).some((c) => c.type === 'PodScheduled' && c.reason === 'SchedulingGated')) reason = 'SchedulingGated';

  let initializing = false;
  const initStatuses = status.initContainerStatuses ?? [];
  for (const [i, c] of initStatuses.entries()) {
    restarts += c.restartCount ?? 0;
    const finished = lastTerminationFinished(c);
    if (finished !== undefined) lastRestart = Math.max(lastRestart, finished);
    const sidecar = restartableInit.has(c.name);
    if (sidecar) {
      sidecarRestarts += c.restartCount ?? 0;
      if (finished !== undefined) lastSidecarRestart = Math.max(lastSidecarRestart, finished);
    }
    const terminated = c.state?.terminated;
    const waiting = c.state?.waiting;
    if (terminated && terminated.exitCode === 0) continue;
    if (sidecar && c.started === true) {
      if (c.ready) readyContainers++;
      continue;
    }
    if (terminated) {
      if (terminated.reason) reason = `Init:${terminated.reason}`;
      else reason = terminated.signal ? `Init:Signal:${terminated.signal}` : `Init:ExitCode:${terminated.exitCode}`;
    } else if (waiting?.reason && waiting.reason !== 'PodInitializing') {
      reason = `Init:${waiting.reason}`;
    } else {
      reason = `Init:${i}/${initContainers.length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || conditionTrue(status.conditions, 'Initialized')) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const statuses = status.containerStatuses ?? [];
    // Walk backwards so the first container's state decides the reason, as kubectl does.
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i]!;
      restarts += c.restartCount ?? 0;
      const finished = lastTerminationFinished(c);
      if (finished !== undefined) lastRestart = Math.max(lastRestart, finished);
      const { waiting, terminated, running } = c.state ?? {};
      if (waiting?.reason) reason = waiting.reason;
      else if (terminated?.reason) reason = terminated.reason;
      else if (terminated) reason = terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode}`;
      else if (c.ready && running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    // A finished container next to a running one: the pod is still running.
    if (reason === 'Completed' && hasRunning) reason = conditionTrue(status.conditions, 'Ready') ? 'Running' : 'NotReady';
  }

  const terminal = status.phase === 'Succeeded' || status.phase === 'Failed';
  if (pod.metadata?.deletionTimestamp && status.reason === 'NodeLost') reason = 'Unknown';
  else if (pod.metadata?.deletionTimestamp && !terminal) reason = 'Terminating';

  const restartsText = restarts !== 0 && lastRestart > 0 ? `${restarts} (${humanDuration(now.getTime() - lastRestart)} ago)` : String(restarts);

  const gates = spec?.readinessGates ?? [];
  const trueGates = gates.filter((g) => {
    const condition = (status.conditions ?? []).find((c) => c.type === g.conditionType);
    return condition?.status === 'True';
  }).length;

  return {
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    ready: `${readyContainers}/${totalContainers}`,
    status: reason,
    restarts: restartsText,
    age: since((pod.metadata?.creationTimestamp ?? status.startTime) as Timestamp, now),
    ip: status.podIPs?.[0]?.ip || status.podIP || '<none>',
    node: spec?.nodeName || '<none>',
    nominatedNode: status.nominatedNodeName || '<none>',
    readinessGates: gates.length > 0 ? `${trueGates}/${gates.length}` : '<none>',
    imagePull: pod.metadata?.annotations?.[imagePullAnnotation] ?? '',
  };
}

/** Lays cells out like Go's tabwriter as kubectl configures it: columns padded to the widest cell plus 3 spaces. */
export function formatColumns(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd((widths[i] ?? 0) + 3))).join('') + '\n')
    .join('');
}

/**
 * The `kubectl get pods` table, sorted by namespace and name. Returns "" for no pods: kubectl prints
 * "No resources found" on stderr instead of a header.
 */
export function formatPodTable(pods: V1Pod[], opts: PodTableOptions): string {
  if (pods.length === 0) return '';
  const rows = pods.map((p) => podRow(p, opts.now)).sort((a, b) => (a.namespace === b.namespace ? compareStrings(a.name, b.name) : compareStrings(a.namespace, b.namespace)));
  // nodelet's own column, after kubectl's, only while a pod waits for an image pull.
  const pulling = opts.wide && rows.some((r) => r.imagePull !== '');
  const cells = rows.map((r) => [...rowCells(r, opts), ...(pulling ? [r.imagePull || '<none>'] : [])]);
  return formatColumns([[...tableHeader(opts), ...(pulling ? ['IMAGE PULL'] : [])], ...cells]);
}

function tableHeader(opts: PodTableOptions): string[] {
  const header = ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE'];
  if (opts.showNamespace) header.unshift('NAMESPACE');
  if (opts.wide) header.push('IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES');
  return header;
}

function rowCells(r: PodRow, opts: PodTableOptions): string[] {
  const cells = [r.name, r.ready, r.status, r.restarts, r.age];
  if (opts.showNamespace) cells.unshift(r.namespace);
  if (opts.wide) cells.push(r.ip, r.node, r.nominatedNode, r.readinessGates);
  return cells;
}

/**
 * `kubectl get pods -o json`: a v1 List with keys sorted as kubectl prints unstructured objects, 4-space
 * indent, timestamps in RFC 3339 at second precision like metav1.Time.
 */
export function formatPodJson(pods: V1Pod[]): string {
  const list = { apiVersion: 'v1', items: pods.map(withTypeMeta), kind: 'List', metadata: { resourceVersion: '' } };
  return `${JSON.stringify(sortedForJson(list), null, 4)}\n`;
}

/** `kubectl get pod -o json`: one pod as kubectl prints it, alone (what `-w` prints per pod and per event). */
export function formatPodJsonDocument(pod: V1Pod): string {
  return `${JSON.stringify(sortedForJson(withTypeMeta(pod)), null, 4)}\n`;
}

function withTypeMeta(pod: V1Pod): V1Pod {
  return { ...pod, apiVersion: pod.apiVersion ?? 'v1', kind: pod.kind ?? 'Pod' };
}

function sortedForJson(value: unknown): unknown {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString().replace(/\.\d{3}Z$/, 'Z');
  if (Array.isArray(value)) return value.map(sortedForJson);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = sortedForJson(v);
  }
  return out;
}

export interface PodWatchOutput {
  /** -o: '' (the table), wide, or json. */
  output: '' | 'wide' | 'json';
  showNamespace: boolean;
}

/**
 * `kubectl get pods -w`: the pods present when the watch starts (its events up to the initial-events-end bookmark) as one
 * table, then a line per event, deleted pods included, without the header again. kubectl flushes its tabwriter after each
 * event, so every such row is laid out on its own and need not line up with the table; a watch that starts with no pods
 * prints the header with the first row. With -o json, each pod and each event's pod as a JSON document of its own.
 */
export class PodWatchPrinter {
  /** The pods before the initial-events-end bookmark; undefined after it. */
  private initial: V1Pod[] | undefined = [];
  private headerPrinted = false;

  constructor(private readonly opts: PodWatchOutput) {}

  /** The text to print for this event (often none until the bookmark). */
  print(event: PodWatchEvent, now: Date): string {
    if (this.initial) {
      if (event.type !== 'BOOKMARK') {
        this.initial.push(event.object);
        return '';
      }
      const pods = this.initial;
      this.initial = undefined;
      if (this.opts.output === 'json') return pods.map(formatPodJsonDocument).join('');
      const table = formatPodTable(pods, this.tableOptions(now));
      this.headerPrinted ||= table !== '';
      return table;
    }
    if (event.type === 'BOOKMARK') return '';
    if (this.opts.output === 'json') return formatPodJsonDocument(event.object);
    const opts = this.tableOptions(now);
    const cells = rowCells(podRow(event.object, now), opts);
    const text = formatColumns(this.headerPrinted ? [cells] : [tableHeader(opts), cells]);
    this.headerPrinted = true;
    return text;
  }

  private tableOptions(now: Date): PodTableOptions {
    return { wide: this.opts.output === 'wide', now, showNamespace: this.opts.showNamespace };
  }
}
