// The resources the test API server serves: names, scope, verbs, subresources and selectable fields, as kube-apiserver registers them.

export type Obj = Record<string, unknown>;

export interface SubresourceDef {
  name: string;
  /** Kind of the subresource's body (Binding, TokenRequest, ...). */
  kind: string;
  verbs: string[];
  /** Set when the body's group/version differ from the parent's (pods/eviction is policy/v1). */
  group?: string;
  version?: string;
}

export interface ResourceDef {
  group: string;
  version: string;
  /** Plural, lower case, as in URLs. */
  resource: string;
  kind: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  verbs: string[];
  subresources: SubresourceDef[];
  /** Key under which objects are stored; events of both groups share one storage, as in kube. */
  storage: string;
  /** Field labels accepted by fieldSelector, besides metadata.name and (namespaced) metadata.namespace. */
  fieldLabels: string[];
  /** Values of fieldLabels for an object (stored form). */
  fields(obj: Obj): Record<string, string>;
}

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function rec(v: unknown): Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}

function bool(v: unknown): string {
  return v === true ? 'true' : 'false';
}

function eventFields(e: Obj): Record<string, string> {
  const involved = rec(e.involvedObject);
  return {
    'involvedObject.kind': str(involved.kind),
    'involvedObject.namespace': str(involved.namespace),
    'involvedObject.name': str(involved.name),
    'involvedObject.uid': str(involved.uid),
    'involvedObject.apiVersion': str(involved.apiVersion),
    'involvedObject.resourceVersion': str(involved.resourceVersion),
    'involvedObject.fieldPath': str(involved.fieldPath),
    reason: str(e.reason),
    reportingComponent: str(e.reportingComponent),
    source: str(rec(e.source).component),
    type: str(e.type),
  };
}

const EVENT_FIELD_LABELS = Object.keys(eventFields({}));

const eventResource = {
  version: 'v1',
  resource: 'events',
  kind: 'Event',
  singular: 'event',
  namespaced: true,
  shortNames: ['ev'],
  categories: [],
  verbs: ALL_VERBS,
  subresources: [],
  storage: 'events',
  fieldLabels: EVENT_FIELD_LABELS,
  fields: eventFields,
} satisfies Omit<ResourceDef, 'group'>;

export const RESOURCES: readonly ResourceDef[] = [
  {
    group: '',
    version: 'v1',
    resource: 'namespaces',
    kind: 'Namespace',
    singular: 'namespace',
    namespaced: false,
    shortNames: ['ns'],
    categories: [],
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    subresources: [{ name: 'status', kind: 'Namespace', verbs: ['get', 'patch', 'update'] }],
    storage: 'namespaces',
    fieldLabels: ['status.phase'],
    fields: (o) => ({ 'status.phase': str(rec(o.status).phase) }),
  },
  {
    group: '',
    version: 'v1',
    resource: 'pods',
    kind: 'Pod',
    singular: 'pod',
    namespaced: true,
    shortNames: ['po'],
    categories: ['all'],
    verbs: ALL_VERBS,
    subresources: [
      { name: 'binding', kind: 'Binding', verbs: ['create'] },
      { name: 'eviction', kind: 'Eviction', verbs: ['create'], group: 'policy', version: 'v1' },
      { name: 'log', kind: 'Pod', verbs: ['get'] },
      { name: 'status', kind: 'Pod', verbs: ['get', 'patch', 'update'] },
    ],
    storage: 'pods',
    fieldLabels: [
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      'spec.hostNetwork',
      'status.phase',
      'status.podIP',
      'status.nominatedNodeName',
    ],
    fields: (o) => {
      const spec = rec(o.spec);
      const status = rec(o.status);
      return {
        'spec.nodeName': str(spec.nodeName),
        'spec.restartPolicy': str(spec.restartPolicy),
        'spec.schedulerName': str(spec.schedulerName),
        'spec.serviceAccountName': str(spec.serviceAccountName),
        'spec.hostNetwork': bool(spec.hostNetwork),
        'status.phase': str(status.phase),
        'status.podIP': str(status.podIP),
        'status.nominatedNodeName': str(status.nominatedNodeName),
      };
    },
  },
  {
    // The legacy binding endpoint (POST namespaces/<ns>/bindings), which client libraries' createNamespacedBinding use.
    group: '',
    version: 'v1',
    resource: 'bindings',
    kind: 'Binding',
    singular: 'binding',
    namespaced: true,
    shortNames: [],
    categories: [],
    verbs: ['create'],
    subresources: [],
    storage: 'bindings',
    fieldLabels: [],
    fields: () => ({}),
  },
  {
    group: '',
    version: 'v1',
    resource: 'nodes',
    kind: 'Node',
    singular: 'node',
    namespaced: false,
    shortNames: ['no'],
    categories: [],
    verbs: ALL_VERBS,
    subresources: [{ name: 'status', kind: 'Node', verbs: ['get', 'patch', 'update'] }],
    storage: 'nodes',
    fieldLabels: ['spec.unschedulable'],
    fields: (o) => ({ 'spec.unschedulable': bool(rec(o.spec).unschedulable) }),
  },
  {
    group: '',
    version: 'v1',
    resource: 'configmaps',
    kind: 'ConfigMap',
    singular: 'configmap',
    namespaced: true,
    shortNames: ['cm'],
    categories: [],
    verbs: ALL_VERBS,
    subresources: [],
    storage: 'configmaps',
    fieldLabels: [],
    fields: () => ({}),
  },
  {
    group: '',
    version: 'v1',
    resource: 'services',
    kind: 'Service',
    singular: 'service',
    namespaced: true,
    shortNames: ['svc'],
    categories: ['all'],
    verbs: ALL_VERBS,
    subresources: [],
    storage: 'services',
    fieldLabels: [],
    fields: () => ({}),
  },
  {
    group: '',
    version: 'v1',
    resource: 'secrets',
    kind: 'Secret',
    singular: 'secret',
    namespaced: true,
    shortNames: [],
    categories: [],
    verbs: ALL_VERBS,
    subresources: [],
    storage: 'secrets',
    fieldLabels: ['type'],
    fields: (o) => ({ type: str(o.type) }),
  },
  {
    group: '',
    version: 'v1',
    resource: 'serviceaccounts',
    kind: 'ServiceAccount',
    singular: 'serviceaccount',
    namespaced: true,
    shortNames: ['sa'],
    categories: [],
    verbs: ALL_VERBS,
    subresources: [{ name: 'token', kind: 'TokenRequest', verbs: ['create'], group: 'authentication.k8s.io', version: 'v1' }],
    storage: 'serviceaccounts',
    fieldLabels: [],
    fields: () => ({}),
  },
  // One store, served in both groups (the core/v1 and events.k8s.io/v1 shapes are converted on the way).
  { group: '', ...eventResource },
  { group: 'events.k8s.io', ...eventResource },
  {
    group: 'coordination.k8s.io',
    version: 'v1',
    resource: 'leases',
    kind: 'Lease',
    singular: 'lease',
    namespaced: true,
    shortNames: [],
    categories: [],
    verbs: ALL_VERBS,
    subresources: [],
    storage: 'leases',
    fieldLabels: [],
    fields: () => ({}),
  },
];

/** The resource with this group, version and plural name, or undefined. */
export function findResource(group: string, version: string, resource: string): ResourceDef | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.resource === resource);
}

/** The core/v1 definition of a storage (the form objects are stored in). */
export function storageResource(storage: string): ResourceDef {
  const def = RESOURCES.find((r) => r.storage === storage && r.group === '') ?? RESOURCES.find((r) => r.storage === storage);
  if (!def) throw new Error(`no resource stored as ${storage}`);
  return def;
}

export function apiVersionOf(def: { group: string; version: string }): string {
  return def.group === '' ? def.version : `${def.group}/${def.version}`;
}

/** Every field label of a resource, metadata ones included. */
export function allFieldLabels(def: ResourceDef): string[] {
  return def.namespaced ? ['metadata.name', 'metadata.namespace', ...def.fieldLabels] : ['metadata.name', ...def.fieldLabels];
}

export function objectFields(def: ResourceDef, obj: Obj): Record<string, string> {
  const meta = rec(obj.metadata);
  const base: Record<string, string> = { 'metadata.name': str(meta.name) };
  if (def.namespaced) base['metadata.namespace'] = str(meta.namespace);
  return { ...base, ...def.fields(obj) };
}

/** events.k8s.io/v1 field labels in terms of the stored core/v1 Event's fields. */
export function eventsV1FieldLabel(label: string): string {
  if (label.startsWith('regarding.')) return `involvedObject.${label.slice('regarding.'.length)}`;
  if (label === 'reportingController') return 'reportingComponent';
  if (label === 'deprecatedSource') return 'source';
  return label;
}
