// Table tests of applyDefaults (kube's v1 defaulting plus the pod fields set on create) and of the pod QoS class.
import { applyDefaults, podQOSClass } from '../defaults.js';

type Obj = Record<string, unknown>;

function defaulted(kind: string, obj: Obj): Obj {
  const copy = structuredClone(obj);
  applyDefaults(kind, copy);
  return copy;
}

function pod(spec: Obj, metadata: Obj = { name: 'p', namespace: 'default' }): Obj {
  return { metadata, spec };
}

describe('applyDefaults: Pod', () => {
  const minimal = defaulted('Pod', pod({ containers: [{ name: 'app', image: 'busybox' }] }));

  it('fills the pod spec defaults kubelet relies on', () => {
    expect(minimal).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'default' },
      spec: {
        containers: [
          {
            name: 'app',
            image: 'busybox',
            imagePullPolicy: 'Always',
            terminationMessagePath: '/dev/termination-log',
            terminationMessagePolicy: 'File',
            resources: {},
          },
        ],
        dnsPolicy: 'ClusterFirst',
        restartPolicy: 'Always',
        securityContext: {},
        terminationGracePeriodSeconds: 30,
        schedulerName: 'default-scheduler',
        enableServiceLinks: true,
        serviceAccountName: 'default',
        serviceAccount: 'default',
        priority: 0,
        preemptionPolicy: 'PreemptLowerPriority',
        tolerations: [
          { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
          { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        ],
      },
      status: { phase: 'Pending', qosClass: 'BestEffort' },
    });
  });

  it('is idempotent', () => {
    expect(defaulted('Pod', minimal)).toEqual(minimal);
  });

  const pullPolicies: [string, string][] = [
    ['busybox', 'Always'],
    ['busybox:latest', 'Always'],
    ['busybox:1.35', 'IfNotPresent'],
    ['localhost:5000/busybox', 'Always'],
    ['localhost:5000/busybox:1.0', 'IfNotPresent'],
    ['busybox@sha256:0123', 'IfNotPresent'],
  ];
  it.each(pullPolicies)('image %s -> imagePullPolicy %s', (image, policy) => {
    const p = defaulted('Pod', pod({ containers: [{ name: 'a', image }] }));
    expect(((p.spec as Obj).containers as Obj[])[0]!.imagePullPolicy).toBe(policy);
  });

  it('defaults ports, probes, env fieldRefs, requests from limits, and init containers', () => {
    const p = defaulted(
      'Pod',
      pod({
        initContainers: [{ name: 'init', image: 'x:1' }],
        containers: [
          {
            name: 'a',
            image: 'x:1',
            ports: [{ containerPort: 80 }],
            livenessProbe: { httpGet: { port: 80 } },
            readinessProbe: { exec: { command: ['true'] }, periodSeconds: 5 },
            lifecycle: { preStop: { httpGet: { port: 80, path: '/stop' } } },
            env: [{ name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
            resources: { limits: { cpu: '500m', memory: '64Mi' }, requests: { cpu: '100m' } },
          },
        ],
      }),
    );
    const spec = p.spec as Obj;
    const c = (spec.containers as Obj[])[0]!;
    expect(c.ports).toEqual([{ containerPort: 80, protocol: 'TCP' }]);
    expect(c.livenessProbe).toEqual({ httpGet: { port: 80, path: '/', scheme: 'HTTP' }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 });
    expect(c.readinessProbe).toEqual({ exec: { command: ['true'] }, timeoutSeconds: 1, periodSeconds: 5, successThreshold: 1, failureThreshold: 3 });
    expect(c.lifecycle).toEqual({ preStop: { httpGet: { port: 80, path: '/stop', scheme: 'HTTP' } } });
    expect(c.env).toEqual([{ name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName', apiVersion: 'v1' } } }]);
    expect(c.resources).toEqual({ limits: { cpu: '500m', memory: '64Mi' }, requests: { cpu: '100m', memory: '64Mi' } });
    expect((spec.initContainers as Obj[])[0]).toMatchObject({ imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File', resources: {} });
    expect((p.status as Obj).qosClass).toBe('Burstable');
  });

  it('defaults volume sources and modes', () => {
    const p = defaulted(
      'Pod',
      pod({
        containers: [{ name: 'a', image: 'x' }],
        volumes: [
          { name: 'scratch' },
          { name: 'cm', configMap: { name: 'c' } },
          { name: 'sec', secret: { secretName: 's', defaultMode: 256 } },
          { name: 'host', hostPath: { path: '/tmp' } },
          { name: 'dapi', downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name' } }] } },
          { name: 'proj', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } },
        ],
      }),
    );
    expect((p.spec as Obj).volumes).toEqual([
      { name: 'scratch', emptyDir: {} },
      { name: 'cm', configMap: { name: 'c', defaultMode: 420 } },
      { name: 'sec', secret: { secretName: 's', defaultMode: 256 } },
      { name: 'host', hostPath: { path: '/tmp', type: '' } },
      { name: 'dapi', downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name', apiVersion: 'v1' } }], defaultMode: 420 } },
      { name: 'proj', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }], defaultMode: 420 } },
    ]);
  });

  it('keeps tolerations that already cover the not-ready/unreachable taints', () => {
    const p = defaulted('Pod', pod({ containers: [{ name: 'a', image: 'x' }], tolerations: [{ operator: 'Exists' }] }));
    expect((p.spec as Obj).tolerations).toEqual([{ operator: 'Exists' }]);
  });

  it('mirror pods get no service account; system priority classes get their priority', () => {
    const p = defaulted(
      'Pod',
      pod({ containers: [{ name: 'a', image: 'x' }], priorityClassName: 'system-node-critical', hostNetwork: true }, {
        name: 'm',
        namespace: 'kube-system',
        annotations: { 'kubernetes.io/config.mirror': 'hash' },
      }),
    );
    const spec = p.spec as Obj;
    expect(spec.serviceAccountName).toBeUndefined();
    expect(spec.priority).toBe(2000001000);
  });

  it('hostNetwork pods get hostPort = containerPort', () => {
    const p = defaulted('Pod', pod({ hostNetwork: true, containers: [{ name: 'a', image: 'x', ports: [{ containerPort: 8080 }] }] }));
    expect(((p.spec as Obj).containers as Obj[])[0]!.ports).toEqual([{ containerPort: 8080, hostPort: 8080, protocol: 'TCP' }]);
  });
});

describe('podQOSClass', () => {
  const res = (requests?: Obj, limits?: Obj): Obj => ({ name: 'c', image: 'x', resources: { ...(requests && { requests }), ...(limits && { limits }) } });
  const cases: { name: string; containers: Obj[]; qos: string }[] = [
    { name: 'no resources', containers: [res()], qos: 'BestEffort' },
    { name: 'only extended resources', containers: [res({ 'example.com/gpu': '1' })], qos: 'BestEffort' },
    { name: 'requests == limits for cpu and memory', containers: [res({ cpu: '1', memory: '1Gi' }, { cpu: '1000m', memory: '1Gi' })], qos: 'Guaranteed' },
    { name: 'limits only (requests default to them)', containers: [res(undefined, { cpu: '1', memory: '1Gi' })], qos: 'Guaranteed' },
    { name: 'requests below limits', containers: [res({ cpu: '500m', memory: '1Gi' }, { cpu: '1', memory: '1Gi' })], qos: 'Burstable' },
    { name: 'one container without memory limit', containers: [res({ cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' }), res({ cpu: '1' }, { cpu: '1' })], qos: 'Burstable' },
    { name: 'requests only', containers: [res({ memory: '10Mi' })], qos: 'Burstable' },
  ];
  it.each(cases)('$name -> $qos', ({ containers, qos }) => {
    const p = defaulted('Pod', pod({ containers }));
    expect(podQOSClass(p)).toBe(qos);
    expect((p.status as Obj).qosClass).toBe(qos);
  });
});

describe('applyDefaults: other kinds', () => {
  const cases: { kind: string; obj: Obj; result: Obj }[] = [
    { kind: 'Secret', obj: { metadata: { name: 's' } }, result: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, type: 'Opaque' } },
    {
      kind: 'Namespace',
      obj: { metadata: { name: 'team' } },
      result: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team', labels: { 'kubernetes.io/metadata.name': 'team' } }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } },
    },
    {
      kind: 'Node',
      obj: { metadata: { name: 'n' }, status: { capacity: { cpu: '2', pods: '110' } } },
      result: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' }, status: { capacity: { cpu: '2', pods: '110' }, allocatable: { cpu: '2', pods: '110' } } },
    },
    { kind: 'Lease', obj: { metadata: { name: 'n' }, spec: {} }, result: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'n' }, spec: {} } },
    {
      kind: 'Event',
      obj: { apiVersion: 'events.k8s.io/v1', metadata: { name: 'e' } },
      result: { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'e' } },
    },
    { kind: 'ConfigMap', obj: { metadata: { name: 'c' } }, result: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } } },
  ];
  it.each(cases)('$kind', ({ kind, obj, result }) => {
    expect(defaulted(kind, obj)).toEqual(result);
  });
});
