// Table tests of validateObject (kube-apiserver's rules and messages for create, update and status writes) and unknownFields.
import { applyDefaults } from '../defaults.js';
import type { FieldError } from '../types.js';
import { unknownFields, validateObject } from '../validation.js';

type Obj = Record<string, unknown>;

const labelRegexMsg =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const subdomainRegexMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

function basePod(): Obj {
  const pod: Obj = {
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      containers: [{ name: 'app', image: 'busybox:1.35', ports: [{ containerPort: 80, name: 'http' }], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  };
  applyDefaults('Pod', pod);
  return pod;
}

type Mutation = (pod: Obj & { spec: Obj & { containers: Obj[] } }) => void;

describe('validateObject: Pod create', () => {
  it('accepts a defaulted pod', () => {
    expect(validateObject('Pod', basePod())).toEqual([]);
  });

  const cases: { name: string; mutate: Mutation; errors: FieldError[] }[] = [
    {
      name: 'no containers',
      mutate: (p) => {
        p.spec.containers = [];
      },
      errors: [{ type: 'FieldValueRequired', field: 'spec.containers', message: 'Required value' }],
    },
    {
      name: 'container name not a DNS label',
      mutate: (p) => {
        p.spec.containers[0]!.name = 'Bad_Name';
      },
      errors: [{ type: 'FieldValueInvalid', field: 'spec.containers[0].name', message: `Invalid value: "Bad_Name": ${labelRegexMsg}` }],
    },
    {
      name: 'duplicate container name across init containers',
      mutate: (p) => {
        p.spec.initContainers = [{ ...p.spec.containers[0]!, ports: undefined, volumeMounts: undefined }];
      },
      errors: [{ type: 'FieldValueDuplicate', field: 'spec.initContainers[0].name', message: 'Duplicate value: "app"' }],
    },
    {
      name: 'image required',
      mutate: (p) => {
        delete p.spec.containers[0]!.image;
      },
      errors: [{ type: 'FieldValueRequired', field: 'spec.containers[0].image', message: 'Required value' }],
    },
    {
      name: 'restartPolicy not supported',
      mutate: (p) => {
        p.spec.restartPolicy = 'Sometimes';
      },
      errors: [{ type: 'FieldValueNotSupported', field: 'spec.restartPolicy', message: 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"' }],
    },
    {
      name: 'containerPort out of range and bad protocol',
      mutate: (p) => {
        p.spec.containers[0]!.ports = [{ containerPort: 70000, protocol: 'HTTP' }];
      },
      errors: [
        { type: 'FieldValueInvalid', field: 'spec.containers[0].ports[0].containerPort', message: 'Invalid value: 70000: must be between 1 and 65535, inclusive' },
        { type: 'FieldValueNotSupported', field: 'spec.containers[0].ports[0].protocol', message: 'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"' },
      ],
    },
    {
      name: 'port name not an IANA_SVC_NAME',
      mutate: (p) => {
        p.spec.containers[0]!.ports = [{ containerPort: 80, protocol: 'TCP', name: '80' }];
      },
      errors: [{ type: 'FieldValueInvalid', field: 'spec.containers[0].ports[0].name', message: 'Invalid value: "80": must contain at least one letter (a-z)' }],
    },
    {
      name: 'env name with "=" (relaxed env var names are on in v1.32)',
      mutate: (p) => {
        p.spec.containers[0]!.env = [{ name: 'A=B', value: 'x' }, { name: 'my.var-1', value: 'ok' }];
      },
      errors: [{ type: 'FieldValueInvalid', field: 'spec.containers[0].env[0].name', message: `Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='` }],
    },
    {
      name: 'duplicate volume and two sources',
      mutate: (p) => {
        p.spec.volumes = [
          { name: 'data', emptyDir: {} },
          { name: 'data', emptyDir: {}, hostPath: { path: '/x', type: '' } },
        ];
      },
      errors: [
        { type: 'FieldValueDuplicate', field: 'spec.volumes[1].name', message: 'Duplicate value: "data"' },
        { type: 'FieldValueForbidden', field: 'spec.volumes[1].hostPath', message: 'Forbidden: may not specify more than 1 volume type' },
      ],
    },
    {
      name: 'volumeMount of a missing volume',
      mutate: (p) => {
        p.spec.containers[0]!.volumeMounts = [{ name: 'nope', mountPath: '/x' }];
      },
      errors: [{ type: 'FieldValueNotFound', field: 'spec.containers[0].volumeMounts[0].name', message: 'Not found: "nope"' }],
    },
    {
      name: 'requests above limits and a bad quantity',
      mutate: (p) => {
        p.spec.containers[0]!.resources = { limits: { cpu: '500m', memory: 'lots' }, requests: { cpu: '1' } };
      },
      errors: [
        { type: 'FieldValueInvalid', field: 'spec.containers[0].resources.limits[memory]', message: `Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'` },
        { type: 'FieldValueInvalid', field: 'spec.containers[0].resources.requests[cpu]', message: 'Invalid value: "1": must be less than or equal to cpu limit of 500m' },
      ],
    },
    {
      name: 'probe with two handlers',
      mutate: (p) => {
        p.spec.containers[0]!.livenessProbe = { exec: { command: ['true'] }, tcpSocket: { port: 80 }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 };
      },
      errors: [{ type: 'FieldValueForbidden', field: 'spec.containers[0].livenessProbe.tcpSocket', message: 'Forbidden: may not specify more than 1 handler type' }],
    },
    {
      name: 'probe without handler; liveness successThreshold must be 1',
      mutate: (p) => {
        p.spec.containers[0]!.livenessProbe = { successThreshold: 2, timeoutSeconds: 1, periodSeconds: 10, failureThreshold: 3 };
      },
      errors: [
        { type: 'FieldValueRequired', field: 'spec.containers[0].livenessProbe', message: 'Required value: must specify a handler type' },
        { type: 'FieldValueInvalid', field: 'spec.containers[0].livenessProbe.successThreshold', message: 'Invalid value: 2: must be 1' },
      ],
    },
    {
      name: 'negative terminationGracePeriodSeconds',
      mutate: (p) => {
        p.spec.terminationGracePeriodSeconds = -5;
      },
      errors: [{ type: 'FieldValueInvalid', field: 'spec.terminationGracePeriodSeconds', message: 'Invalid value: -5: must be greater than or equal to 0' }],
    },
    {
      name: 'name required, bad label, namespace required',
      mutate: (p) => {
        p.metadata = { labels: { 'bad key!': 'v' } };
      },
      errors: [
        { type: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' },
        { type: 'FieldValueRequired', field: 'metadata.namespace', message: 'Required value' },
        {
          type: 'FieldValueInvalid',
          field: 'metadata.labels',
          message: `Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
        },
      ],
    },
    {
      name: 'generateName with a trailing dash is fine',
      mutate: (p) => {
        p.metadata = { generateName: 'web-', name: 'web-x1', namespace: 'default' };
      },
      errors: [],
    },
    {
      name: 'ephemeral containers cannot be set on create',
      mutate: (p) => {
        p.spec.ephemeralContainers = [{ name: 'debug', image: 'x' }];
      },
      errors: [{ type: 'FieldValueForbidden', field: 'spec.ephemeralContainers', message: 'Forbidden: cannot be set on create' }],
    },
  ];
  it.each(cases)('$name', ({ mutate, errors }) => {
    const pod = basePod() as Obj & { spec: Obj & { containers: Obj[] } };
    mutate(pod);
    expect(validateObject('Pod', pod)).toEqual(errors);
  });
});

describe('validateObject: Pod update', () => {
  function stored(): Obj {
    const pod = basePod();
    Object.assign(pod.metadata as Obj, { uid: 'u1', resourceVersion: '5', creationTimestamp: '2024-01-01T00:00:00Z' });
    return pod;
  }

  it('allows changing a container image, activeDeadlineSeconds and adding tolerations', () => {
    const old = stored();
    const pod = structuredClone(old) as Obj & { spec: Obj & { containers: Obj[]; tolerations: Obj[] } };
    pod.spec.containers[0]!.image = 'busybox:1.36';
    pod.spec.activeDeadlineSeconds = 100;
    pod.spec.tolerations.push({ key: 'x', operator: 'Exists' });
    expect(validateObject('Pod', pod, old)).toEqual([]);
  });

  it('refuses other spec changes with kube message', () => {
    const old = stored();
    const pod = structuredClone(old) as Obj & { spec: Obj & { containers: Obj[] } };
    pod.spec.restartPolicy = 'Never';
    const errs = validateObject('Pod', pod, old);
    expect(errs).toHaveLength(1);
    expect(errs[0]!.type).toBe('FieldValueForbidden');
    expect(errs[0]!.field).toBe('spec');
    expect(errs[0]!.message).toMatch(
      /^Forbidden: pod updates may not change fields other than `spec.containers\[\*\].image`,`spec.initContainers\[\*\].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` \(only additions to existing tolerations\),`spec.terminationGracePeriodSeconds` \(allow it to be set to 1 if it was previously negative\)\n/,
    );
    expect(errs[0]!.message).toContain('spec.restartPolicy: "Always" -> "Never"');
  });

  const cases: { name: string; mutate: (pod: Obj & { spec: Obj & { containers: Obj[] }; metadata: Obj }) => void; errors: FieldError[] }[] = [
    {
      name: 'metadata uid and name are immutable',
      mutate: (p) => {
        p.metadata.uid = 'u2';
        p.metadata.name = 'other';
      },
      errors: [
        { type: 'FieldValueInvalid', field: 'metadata.name', message: 'Invalid value: "other": field is immutable' },
        { type: 'FieldValueInvalid', field: 'metadata.uid', message: 'Invalid value: "u2": field is immutable' },
      ],
    },
    {
      name: 'resourceVersion required',
      mutate: (p) => {
        delete p.metadata.resourceVersion;
      },
      errors: [{ type: 'FieldValueInvalid', field: 'metadata.resourceVersion', message: 'Invalid value: "": must be specified for an update' }],
    },
    {
      name: 'adding a container',
      mutate: (p) => {
        p.spec.containers.push({ ...p.spec.containers[0]!, name: 'two', ports: [] });
      },
      errors: [{ type: 'FieldValueForbidden', field: 'spec.containers', message: 'Forbidden: pod updates may not add or remove containers' }],
    },
    {
      name: 'removing a toleration',
      mutate: (p) => {
        p.spec.tolerations = [];
      },
      errors: [
        { type: 'FieldValueForbidden', field: 'spec.tolerations', message: 'Forbidden: existing toleration can not be modified except its tolerationSeconds' },
        { type: 'FieldValueForbidden', field: 'spec.tolerations', message: 'Forbidden: existing toleration can not be modified except its tolerationSeconds' },
      ],
    },
  ];
  it.each(cases)('$name', ({ mutate, errors }) => {
    const old = stored();
    const pod = structuredClone(old) as Obj & { spec: Obj & { containers: Obj[] }; metadata: Obj };
    mutate(pod);
    expect(validateObject('Pod', pod, old)).toEqual(errors);
  });
});

describe('validateObject: Pod status update', () => {
  function stored(restartPolicy: string): Obj {
    const pod = basePod();
    Object.assign(pod.metadata as Obj, { uid: 'u1', resourceVersion: '5' });
    Object.assign(pod.spec as Obj, { restartPolicy, nodeName: 'n1' });
    pod.status = {
      phase: 'Failed',
      qosClass: 'BestEffort',
      containerStatuses: [{ name: 'app', state: { terminated: { exitCode: 0 } } }],
    };
    return pod;
  }
  const running = { name: 'app', state: { running: { startedAt: '2024-01-01T00:00:00Z' } } };

  const cases: { name: string; restartPolicy: string; status: Obj; errors: FieldError[] }[] = [
    {
      name: 'a terminated container may not run again under restartPolicy Never',
      restartPolicy: 'Never',
      status: { phase: 'Running', qosClass: 'BestEffort', containerStatuses: [running] },
      errors: [{ type: 'FieldValueForbidden', field: 'status.containerStatuses[0].state', message: 'Forbidden: may not be transitioned to non-terminated state' }],
    },
    {
      name: 'restartPolicy Always lets it run again (kube has no terminal-phase rule)',
      restartPolicy: 'Always',
      status: { phase: 'Running', qosClass: 'BestEffort', containerStatuses: [running] },
      errors: [],
    },
    {
      name: 'qosClass is immutable',
      restartPolicy: 'Always',
      status: { phase: 'Running', qosClass: 'Guaranteed' },
      errors: [{ type: 'FieldValueInvalid', field: 'status.qosClass', message: 'Invalid value: "Guaranteed": field is immutable' }],
    },
    {
      name: 'podIPs must start with podIP and be valid',
      restartPolicy: 'Always',
      status: { phase: 'Running', qosClass: 'BestEffort', podIP: '10.99.0.5', podIPs: [{ ip: '10.99.0.6' }, { ip: 'nope' }] },
      errors: [
        { type: 'FieldValueInvalid', field: 'status.podIPs[0]', message: 'Invalid value: "10.99.0.6": must be equal to podIP' },
        { type: 'FieldValueInvalid', field: 'status.podIPs[1]', message: 'Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)' },
      ],
    },
    {
      name: 'consistent podIP/podIPs and hostIP/hostIPs',
      restartPolicy: 'Always',
      status: { phase: 'Running', qosClass: 'BestEffort', podIP: '10.99.0.5', podIPs: [{ ip: '10.99.0.5' }, { ip: 'fd00::5' }], hostIP: '192.168.1.2', hostIPs: [{ ip: '192.168.1.2' }] },
      errors: [],
    },
  ];
  it.each(cases)('$name', ({ restartPolicy, status, errors }) => {
    const old = stored(restartPolicy);
    const pod = { ...structuredClone(old), status };
    expect(validateObject('Pod', pod, old, 'status')).toEqual(errors);
  });
});

describe('validateObject: other kinds', () => {
  const cases: { name: string; kind: string; obj: Obj; old?: Obj; errors: FieldError[] }[] = [
    {
      name: 'Namespace names are DNS labels and not namespaced',
      kind: 'Namespace',
      obj: { metadata: { name: 'a.b', namespace: 'x' } },
      errors: [
        { type: 'FieldValueInvalid', field: 'metadata.name', message: 'Invalid value: "a.b": must not contain dots' },
        { type: 'FieldValueForbidden', field: 'metadata.namespace', message: 'Forbidden: not allowed on this type' },
      ],
    },
    {
      name: 'Node names are DNS subdomains',
      kind: 'Node',
      obj: { metadata: { name: 'Node_1' } },
      errors: [{ type: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: "Node_1": ${subdomainRegexMsg}` }],
    },
    {
      name: 'Node podCIDRs may be set once',
      kind: 'Node',
      obj: { metadata: { name: 'n1', resourceVersion: '2' }, spec: { podCIDR: '10.1.0.0/24', podCIDRs: ['10.1.0.0/24'] } },
      old: { metadata: { name: 'n1', resourceVersion: '1' }, spec: { podCIDR: '10.0.0.0/24', podCIDRs: ['10.0.0.0/24'] } },
      errors: [{ type: 'FieldValueForbidden', field: 'spec.podCIDRs', message: 'Forbidden: node updates may not change podCIDR except from "" to valid' }],
    },
    {
      name: 'Node podCIDRs from empty to set is allowed',
      kind: 'Node',
      obj: { metadata: { name: 'n1', resourceVersion: '2' }, spec: { podCIDR: '10.1.0.0/24', podCIDRs: ['10.1.0.0/24'] } },
      old: { metadata: { name: 'n1', resourceVersion: '1' }, spec: {} },
      errors: [],
    },
    {
      name: 'Node duplicate addresses',
      kind: 'Node',
      obj: { metadata: { name: 'n1' }, status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }, { type: 'InternalIP', address: '10.0.0.1' }] } },
      errors: [{ type: 'FieldValueDuplicate', field: 'status.addresses[1]', message: 'Duplicate value: "core.NodeAddress{Type:\\"InternalIP\\", Address:\\"10.0.0.1\\"}"' }],
    },
    {
      name: 'ConfigMap keys',
      kind: 'ConfigMap',
      obj: { metadata: { name: 'c', namespace: 'default' }, data: { 'ok.key': 'v', 'bad/key': 'v' } },
      errors: [
        {
          type: 'FieldValueInvalid',
          field: 'data[bad/key]',
          message: `Invalid value: "bad/key": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
        },
      ],
    },
    {
      name: 'ConfigMap total size',
      kind: 'ConfigMap',
      obj: { metadata: { name: 'c', namespace: 'default' }, data: { big: 'x'.repeat(1024 * 1024 + 1) } },
      errors: [{ type: 'FieldValueTooLong', field: '', message: 'Too long: may not be more than 1048576 bytes' }],
    },
    {
      name: 'Secret data must be base64; type immutable',
      kind: 'Secret',
      obj: { metadata: { name: 's', namespace: 'default', resourceVersion: '2' }, type: 'Opaque', data: { a: 'aGVsbG8=', b: 'not base64!' } },
      old: { metadata: { name: 's', namespace: 'default', resourceVersion: '1' }, type: 'kubernetes.io/tls', data: {} },
      errors: [
        { type: 'FieldValueInvalid', field: 'data[b]', message: 'Invalid value: "<secret contents redacted>": illegal base64 data at input byte 3' },
        { type: 'FieldValueInvalid', field: 'type', message: 'Invalid value: "Opaque": field is immutable' },
      ],
    },
    {
      name: 'Lease spec fields',
      kind: 'Lease',
      obj: { metadata: { name: 'n1', namespace: 'kube-node-lease' }, spec: { holderIdentity: 'n1', leaseDurationSeconds: 0, leaseTransitions: -1, renewTime: 'yesterday' } },
      errors: [
        { type: 'FieldValueInvalid', field: 'spec.leaseDurationSeconds', message: 'Invalid value: 0: must be greater than 0' },
        { type: 'FieldValueInvalid', field: 'spec.leaseTransitions', message: 'Invalid value: -1: must be greater than or equal to 0' },
        { type: 'FieldValueInvalid', field: 'spec.renewTime', message: 'Invalid value: "yesterday": must be an RFC 3339 time' },
      ],
    },
    {
      name: 'core/v1 Event namespace must match its involvedObject',
      kind: 'Event',
      obj: { metadata: { name: 'e', namespace: 'default' }, involvedObject: { kind: 'Pod', name: 'p', namespace: 'other' }, reason: 'Started' },
      errors: [{ type: 'FieldValueInvalid', field: 'involvedObject.namespace', message: 'Invalid value: "other": does not match event.namespace' }],
    },
    {
      name: 'events.k8s.io/v1 Event needs reportingController, reportingInstance and action',
      kind: 'Event',
      obj: { apiVersion: 'events.k8s.io/v1', metadata: { name: 'e', namespace: 'default' }, eventTime: '2024-01-01T00:00:00.000000Z', regarding: { namespace: 'default' }, reason: 'Started' },
      errors: [
        { type: 'FieldValueRequired', field: 'reportingController', message: 'Required value' },
        { type: 'FieldValueInvalid', field: 'reportingController', message: "Invalid value: \"\": name part must be non-empty" },
        {
          type: 'FieldValueInvalid',
          field: 'reportingController',
          message: `Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
        },
        { type: 'FieldValueRequired', field: 'reportingInstance', message: 'Required value' },
        { type: 'FieldValueRequired', field: 'action', message: 'Required value' },
      ],
    },
    { name: 'ServiceAccount metadata only', kind: 'ServiceAccount', obj: { metadata: { name: 'default', namespace: 'default' } }, errors: [] },
  ];
  it.each(cases)('$name', ({ kind, obj, old, errors }) => {
    expect(validateObject(kind, obj, old)).toEqual(errors);
  });
});

describe('unknownFields', () => {
  const cases: { name: string; kind: string; obj: Obj; unknown: string[] }[] = [
    { name: 'a valid defaulted pod', kind: 'Pod', obj: basePod(), unknown: [] },
    {
      name: 'typos at several depths',
      kind: 'Pod',
      obj: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p', labels: { any: 'key' }, bogus: 1 },
        spec: { containers: [{ name: 'a', imagee: 'x', resources: { limits: { cpu: '1' } }, ports: [{ containerPort: 1, hostPortt: 2 }] }] },
        status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, extra: true }] },
      },
      unknown: ['metadata.bogus', 'spec.containers[0].imagee', 'spec.containers[0].ports[0].hostPortt', 'status.conditions[0].extra'],
    },
    { name: 'top-level field', kind: 'ConfigMap', obj: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { k: 'v' }, dat: {} }, unknown: ['dat'] },
    { name: 'free-form managedFields', kind: 'Node', obj: { metadata: { name: 'n', managedFields: [{ fieldsV1: { 'f:spec': {} } }] }, status: { nodeInfo: { kubeletVersion: 'v1', x: 1 } } }, unknown: ['status.nodeInfo.x'] },
    { name: 'core/v1 Event', kind: 'Event', obj: { metadata: { name: 'e' }, involvedObject: { kind: 'Pod' }, count: 2, note: 'x' }, unknown: ['note'] },
    { name: 'events.k8s.io/v1 Event', kind: 'Event', obj: { apiVersion: 'events.k8s.io/v1', metadata: { name: 'e' }, regarding: { kind: 'Pod' }, note: 'x', message: 'y' }, unknown: ['message'] },
    { name: 'Lease', kind: 'Lease', obj: { spec: { holderIdentity: 'n', renewTime: '2024-01-01T00:00:00.000000Z', renewtime: 'x' } }, unknown: ['spec.renewtime'] },
    { name: 'Binding', kind: 'Binding', obj: { metadata: { name: 'p' }, target: { kind: 'Node', name: 'n1', nodeName: 'n1' } }, unknown: ['target.nodeName'] },
    { name: 'DeleteOptions', kind: 'DeleteOptions', obj: { gracePeriodSeconds: 0, preconditions: { uid: 'u' }, grace: 1 }, unknown: ['grace'] },
    { name: 'TokenRequest', kind: 'TokenRequest', obj: { spec: { audiences: ['a'], expirationSeconds: 600, boundObjectRef: { kind: 'Pod', name: 'p', uid: 'u' } } }, unknown: [] },
    { name: 'unknown kind', kind: 'Widget', obj: { anything: 1 }, unknown: [] },
  ];
  it.each(cases)('$name', ({ kind, obj, unknown }) => {
    expect(unknownFields(kind, obj)).toEqual(unknown);
  });
});
