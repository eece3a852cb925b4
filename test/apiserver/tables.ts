// Server-side printing (meta.k8s.io/v1 Table) for kubectl get, with the columns and cell values of kube's printers.
import type { Obj } from './resources.js';
import { humanDuration } from '../../src/cli/print-pods.js';

export interface ColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface TableRow {
  cells: unknown[];
  conditions?: { type: string; status: string; reason: string; message: string }[];
  object?: Obj;
}

function col(name: string, type: string, description: string, priority = 0, format = ''): ColumnDefinition {
  return { name, type, format, description, priority };
}

const NAME = col('Name', 'string', 'Name must be unique within a namespace.', 0, 'name');
const AGE = col('Age', 'string', 'CreationTimestamp is a timestamp representing the server time when this object was created.');

function rec(v: unknown): Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}
function arr(v: unknown): Obj[] {
  return Array.isArray(v) ? (v as Obj[]) : [];
}
function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}


/** translateTimestampSince: `<unknown>` for a missing time. */
function since(timestamp: unknown, now: number): string {
  const t = typeof timestamp === 'string' ? Date.parse(timestamp) : NaN;
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(now - t);
}

const POD_COLUMNS = [
  NAME,
  col('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
  col('Status', 'string', 'The aggregate status of the containers in this pod.'),
  col('Restarts', 'string', 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.'),
  AGE,
  col('IP', 'string', 'podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.', 1),
  col('Node', 'string', 'NodeName indicates in which node this pod is scheduled.', 1),
  col('Nominated Node', 'string', 'nominatedNodeName is set when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.', 1),
  col('Readiness Gates', 'string', 'If specified, all readiness gates will be evaluated for pod readiness.', 1),
];

function isRestartableInit(container: Obj | undefined): boolean {
  return container?.restartPolicy === 'Always';
}

function conditionTrue(status: Obj, type: string): boolean {
  return arr(status.conditions).some((c) => c.type === type && c.status === 'True');
}

function laterOf(current: number, timestamp: unknown): number {
  const t = typeof timestamp === 'string' ? Date.parse(timestamp) : NaN;
  return !Number.isNaN(t) && t > current ? t : current;
}

function podRow(pod: Obj, now: number): TableRow {
  const spec = rec(pod.spec);
  const status = rec(pod.status);
  const meta = rec(pod.metadata);
  const initSpecs = arr(spec.initContainers);
  let restarts = 0;
  let restartableInitRestarts = 0;
  let totalContainers = arr(spec.containers).length;
  let readyContainers = 0;
  let lastRestart = 0;
  let lastRestartableInitRestart = 0;
  const phase = str(status.phase);
  let reason = str(status.reason) || phase;
  for (const c of arr(status.conditions)) {
    if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';
  }
  const row: TableRow = { cells: [] };
  if (phase === 'Succeeded') row.conditions = [{ type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' }];
  if (phase === 'Failed') row.conditions = [{ type: 'Completed', status: 'True', reason: 'Failed', message: 'The pod failed.' }];

  const initByName = new Map(initSpecs.map((c) => [str(c.name), c]));
  for (const c of initSpecs) if (isRestartableInit(c)) totalContainers++;

  let initializing = false;
  const initStatuses = arr(status.initContainerStatuses);
  for (let i = 0; i < initStatuses.length; i++) {
    const cs = initStatuses[i] as Obj;
    const state = rec(cs.state);
    const terminated = state.terminated ? rec(state.terminated) : undefined;
    const waiting = state.waiting ? rec(state.waiting) : undefined;
    const lastTerminated = rec(rec(cs.lastState).terminated);
    restarts += Number(cs.restartCount ?? 0);
    lastRestart = laterOf(lastRestart, lastTerminated.finishedAt);
    const restartable = isRestartableInit(initByName.get(str(cs.name)));
    if (restartable) {
      restartableInitRestarts += Number(cs.restartCount ?? 0);
      lastRestartableInitRestart = laterOf(lastRestartableInitRestart, lastTerminated.finishedAt);
    }
    if (terminated && Number(terminated.exitCode ?? 0) === 0) continue;
    if (restartable && cs.started === true) {
      if (cs.ready === true) readyContainers++;
      continue;
    }
    if (terminated) {
      if (!str(terminated.reason)) {
        reason = Number(terminated.signal ?? 0) !== 0 ? `Init:Signal:${String(terminated.signal)}` : `Init:ExitCode:${String(terminated.exitCode ?? 0)}`;
      } else {
        reason = `Init:${str(terminated.reason)}`;
      }
    } else if (waiting && str(waiting.reason) && waiting.reason !== 'PodInitializing') {
      reason = `Init:${str(waiting.reason)}`;
    } else {
      reason = `Init:${i}/${initSpecs.length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || conditionTrue(status, 'Initialized')) {
    restarts = restartableInitRestarts;
    lastRestart = lastRestartableInitRestart;
    let hasRunning = false;
    const statuses = arr(status.containerStatuses);
    for (let i = statuses.length - 1; i >= 0; i--) {
      const cs = statuses[i] as Obj;
      const state = rec(cs.state);
      restarts += Number(cs.restartCount ?? 0);
      lastRestart = laterOf(lastRestart, rec(rec(cs.lastState).terminated).finishedAt);
      const waiting = state.waiting ? rec(state.waiting) : undefined;
      const terminated = state.terminated ? rec(state.terminated) : undefined;
      if (waiting && str(waiting.reason)) {
        reason = str(waiting.reason);
      } else if (terminated && str(terminated.reason)) {
        reason = str(terminated.reason);
      } else if (terminated) {
        reason = Number(terminated.signal ?? 0) !== 0 ? `Signal:${String(terminated.signal)}` : `ExitCode:${String(terminated.exitCode ?? 0)}`;
      } else if (cs.ready === true && state.running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    if (reason === 'Completed' && hasRunning) reason = conditionTrue(status, 'Ready') ? 'Running' : 'NotReady';
  }

  if (meta.deletionTimestamp && status.reason === 'NodeLost') {
    reason = 'Unknown';
  } else if (meta.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed') {
    reason = 'Terminating';
  }

  let restartsText = String(restarts);
  if (restarts !== 0 && lastRestart !== 0) restartsText = `${restarts} (${humanDuration(now - lastRestart)} ago)`;

  const podIPs = arr(status.podIPs);
  const podIP = str(podIPs[0]?.ip) || '<none>';
  let readinessGates = '<none>';
  const gates = arr(spec.readinessGates);
  if (gates.length > 0) {
    const trueCount = gates.filter((g) => arr(status.conditions).some((c) => c.type === g.conditionType && c.status === 'True')).length;
    readinessGates = `${trueCount}/${gates.length}`;
  }
  row.cells = [
    str(meta.name),
    `${readyContainers}/${totalContainers}`,
    reason,
    restartsText,
    since(meta.creationTimestamp, now),
    podIP,
    str(spec.nodeName) || '<none>',
    str(status.nominatedNodeName) || '<none>',
    readinessGates,
  ];
  return row;
}

const NODE_COLUMNS = [
  NAME,
  col('Status', 'string', 'The status of the node'),
  col('Roles', 'string', 'The roles of the node'),
  AGE,
  col('Version', 'string', 'Kubelet Version reported by the node.'),
  col('Internal-IP', 'string', 'List of addresses reachable to the node.', 1),
  col('External-IP', 'string', 'List of addresses reachable to the node.', 1),
  col('OS-Image', 'string', 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).', 1),
  col('Kernel-Version', 'string', "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
  col('Container-Runtime', 'string', 'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).', 1),
];

function nodeRoles(labels: Obj): string[] {
  const roles = new Set<string>();
  for (const [key, value] of Object.entries(labels)) {
    if (key.startsWith('node-role.kubernetes.io/')) {
      const role = key.slice('node-role.kubernetes.io/'.length);
      if (role) roles.add(role);
    } else if (key === 'kubernetes.io/role' && typeof value === 'string' && value) {
      roles.add(value);
    }
  }
  return [...roles].sort();
}

function nodeRow(node: Obj, now: number): TableRow {
  const meta = rec(node.metadata);
  const status = rec(node.status);
  const info = rec(status.nodeInfo);
  const ready = arr(status.conditions).find((c) => c.type === 'Ready');
  const states: string[] = [];
  if (ready) states.push(ready.status === 'True' ? 'Ready' : 'NotReady');
  if (states.length === 0) states.push('Unknown');
  if (rec(node.spec).unschedulable === true) states.push('SchedulingDisabled');
  const roles = nodeRoles(rec(meta.labels)).join(',') || '<none>';
  const address = (type: string): string => str(arr(status.addresses).find((a) => a.type === type)?.address) || '<none>';
  return {
    cells: [
      str(meta.name),
      states.join(','),
      roles,
      since(meta.creationTimestamp, now),
      str(info.kubeletVersion),
      address('InternalIP'),
      address('ExternalIP'),
      str(info.osImage) || '<unknown>',
      str(info.kernelVersion) || '<unknown>',
      str(info.containerRuntimeVersion) || '<unknown>',
    ],
  };
}

const EVENT_COLUMNS = [
  col('Last Seen', 'string', 'The time at which the most recent occurrence of this event was recorded.'),
  col('Type', 'string', 'Type of this event (Normal, Warning), new types could be added in the future'),
  col('Reason', 'string', 'This should be a short, machine understandable string that gives the reason for the transition into the object\'s current status.'),
  col('Object', 'string', 'The object that this event is about.'),
  col('Subobject', 'string', 'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].', 1),
  col('Source', 'string', 'The component reporting this event. Should be a short machine understandable string.', 1),
  col('Message', 'string', 'A human-readable description of the status of this operation.'),
  col('First Seen', 'string', 'The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)', 1),
  col('Count', 'string', 'The number of times this event has occurred.', 1),
  col('Name', 'string', 'Name must be unique within a namespace.', 1, 'name'),
];

/** Rows of the core/v1 form of an Event (events.k8s.io ones are converted before). */
function eventRow(event: Obj, now: number): TableRow {
  const meta = rec(event.metadata);
  const involved = rec(event.involvedObject);
  const source = rec(event.source);
  const series = event.series ? rec(event.series) : undefined;
  let first = since(event.firstTimestamp, now);
  if (!event.firstTimestamp) first = since(event.eventTime, now);
  let last = event.lastTimestamp ? since(event.lastTimestamp, now) : first;
  let count = Number(event.count ?? 0);
  if (series) {
    last = since(series.lastObservedTime, now);
    count = Number(series.count ?? 0);
  } else if (count === 0) {
    count = 1;
  }
  const kind = str(involved.kind).toLowerCase();
  const target = str(involved.name) ? `${kind}/${str(involved.name)}` : kind;
  const component = str(source.component) || str(event.reportingComponent);
  const instance = str(source.host) || str(event.reportingInstance);
  return {
    cells: [
      last,
      str(event.type),
      str(event.reason),
      target,
      str(involved.fieldPath),
      instance ? `${component}, ${instance}` : component,
      str(event.message).trim(),
      first,
      count,
      str(meta.name),
    ],
  };
}

function simple(columns: ColumnDefinition[], cells: (obj: Obj) => unknown[]): Printer {
  return { columns, row: (obj, now) => ({ cells: [str(rec(obj.metadata).name), ...cells(obj), since(rec(obj.metadata).creationTimestamp, now)] }) };
}

interface Printer {
  columns: ColumnDefinition[];
  row(obj: Obj, now: number): TableRow;
}

const PRINTERS: Record<string, Printer> = {
  pods: { columns: POD_COLUMNS, row: podRow },
  nodes: { columns: NODE_COLUMNS, row: nodeRow },
  events: { columns: EVENT_COLUMNS, row: eventRow },
  namespaces: simple([NAME, col('Status', 'string', 'The status of the namespace'), AGE], (o) => [str(rec(o.status).phase)]),
  configmaps: simple([NAME, col('Data', 'string', 'Data contains the configuration data.'), AGE], (o) => [
    Object.keys(rec(o.data)).length + Object.keys(rec(o.binaryData)).length,
  ]),
  secrets: simple([NAME, col('Type', 'string', 'Used to facilitate programmatic handling of secret data.'), col('Data', 'string', 'Data contains the secret data.'), AGE], (o) => [
    str(o.type),
    Object.keys(rec(o.data)).length,
  ]),
  serviceaccounts: simple([NAME, col('Secrets', 'string', 'Secrets are the list of secrets allowed to be used by pods running using this ServiceAccount.'), AGE], (o) => [
    arr(o.secrets).length,
  ]),
  services: simple([NAME, col('Type', 'string', 'type determines how the Service is exposed.'), col('Cluster-IP', 'string', 'clusterIP is the IP address of the service.'), AGE], (o) => [
    str(rec(o.spec).type) || 'ClusterIP',
    str(rec(o.spec).clusterIP) || '<none>',
  ]),
  leases: simple([NAME, col('Holder', 'string', 'The holder of the lease.'), AGE], (o) => [str(rec(o.spec).holderIdentity)]),
};

export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** Builds the Table of objects of a storage (in their core form); the row object is included as includeObject says. */
export function toTable(
  storage: string,
  objects: Obj[],
  options: { resourceVersion: string; includeObject: IncludeObject; now?: number; continueToken?: string },
): Obj {
  const printer = PRINTERS[storage] as Printer;
  const now = options.now ?? Date.now();
  const rows = objects.map((obj) => {
    const row = printer.row(obj, now);
    if (options.includeObject === 'Object') {
      row.object = obj;
    } else if (options.includeObject === 'Metadata') {
      row.object = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: rec(obj.metadata) };
    }
    return row;
  });
  const metadata: Obj = { resourceVersion: options.resourceVersion };
  if (options.continueToken) metadata.continue = options.continueToken;
  return { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata, columnDefinitions: printer.columns, rows };
}
