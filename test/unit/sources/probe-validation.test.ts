// Probe validation of static pod manifests (apiserver field paths and messages) and the defaults kubelet's decoder applies.
import { parsePodManifests } from '../../../src/sources/manifest.js';

const container = (probes: string) => `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: localhost/nodelet/busybox:1.35
    ports: [{name: http, containerPort: 8080}]
${probes}`;

const errorsOf = (text: string) => parsePodManifests('/m/web.yaml', text, 'node-1').errors.map((e) => ({ field: e.field, message: e.message }));
const p = 'spec.containers[0]';

describe('probe validation', () => {
  const cases: Array<{ name: string; probes: string; errors: Array<{ field: string; message: string }> }> = [
    { name: 'valid probes of every handler', probes: `    livenessProbe: {exec: {command: [cat, /tmp/healthy]}, periodSeconds: 1}
    readinessProbe: {httpGet: {port: http, path: /ready, scheme: HTTPS, httpHeaders: [{name: X-Probe, value: "1"}]}, successThreshold: 2}
    startupProbe: {tcpSocket: {port: 8080}, failureThreshold: 30, terminationGracePeriodSeconds: 5}
`, errors: [] },
    { name: 'no handler', probes: '    livenessProbe: {periodSeconds: 1}\n', errors: [{ field: `${p}.livenessProbe`, message: 'Required value: must specify a handler type' }] },
    {
      name: 'two handlers',
      probes: '    readinessProbe: {exec: {command: ["true"]}, tcpSocket: {port: 80}}\n',
      errors: [{ field: `${p}.readinessProbe.tcpSocket`, message: 'Forbidden: may not specify more than 1 handler type' }],
    },
    { name: 'exec without command', probes: '    livenessProbe: {exec: {}}\n', errors: [{ field: `${p}.livenessProbe.exec.command`, message: 'Required value' }] },
    {
      name: 'port out of range',
      probes: '    livenessProbe: {tcpSocket: {port: 70000}}\n',
      errors: [{ field: `${p}.livenessProbe.tcpSocket.port`, message: 'Invalid value: 70000: must be between 1 and 65535, inclusive' }],
    },
    {
      name: 'port name not a valid name',
      probes: '    livenessProbe: {httpGet: {port: Web_Port}}\n',
      errors: [
        { field: `${p}.livenessProbe.httpGet.port`, message: 'Invalid value: "Web_Port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)' },
      ],
    },
    { name: 'httpGet without port', probes: '    livenessProbe: {httpGet: {path: /}}\n', errors: [{ field: `${p}.livenessProbe.httpGet.port`, message: 'Invalid value: 0: must be between 1 and 65535, inclusive' }] },
    {
      name: 'unsupported scheme',
      probes: '    readinessProbe: {httpGet: {port: 80, scheme: FTP}}\n',
      errors: [{ field: `${p}.readinessProbe.httpGet.scheme`, message: 'Unsupported value: "FTP": supported values: "HTTP", "HTTPS"' }],
    },
    {
      name: 'bad header name',
      probes: '    readinessProbe: {httpGet: {port: 80, httpHeaders: [{name: "X Bad", value: v}]}}\n',
      errors: [
        {
          field: `${p}.readinessProbe.httpGet.httpHeaders`,
          message: `Invalid value: "X Bad": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')`,
        },
      ],
    },
    {
      name: 'negative numbers',
      probes: '    readinessProbe: {tcpSocket: {port: 80}, timeoutSeconds: -1, failureThreshold: -2}\n',
      errors: [
        { field: `${p}.readinessProbe.timeoutSeconds`, message: 'Invalid value: -1: must be greater than or equal to 0' },
        { field: `${p}.readinessProbe.failureThreshold`, message: 'Invalid value: -2: must be greater than or equal to 0' },
      ],
    },
    {
      name: 'successThreshold other than 1 for liveness and startup',
      probes: '    livenessProbe: {tcpSocket: {port: 80}, successThreshold: 2}\n    startupProbe: {tcpSocket: {port: 80}, successThreshold: 3}\n',
      errors: [
        { field: `${p}.livenessProbe.successThreshold`, message: 'Invalid value: 2: must be 1' },
        { field: `${p}.startupProbe.successThreshold`, message: 'Invalid value: 3: must be 1' },
      ],
    },
    {
      name: 'terminationGracePeriodSeconds: not for readiness, positive for the others',
      probes: '    readinessProbe: {tcpSocket: {port: 80}, terminationGracePeriodSeconds: 5}\n    livenessProbe: {tcpSocket: {port: 80}, terminationGracePeriodSeconds: 0}\n',
      errors: [
        { field: `${p}.livenessProbe.terminationGracePeriodSeconds`, message: 'Invalid value: 0: must be greater than 0' },
        { field: `${p}.readinessProbe.terminationGracePeriodSeconds`, message: 'Invalid value: 5: must not be set for readinessProbes' },
      ],
    },
  ];
  test.each(cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    expect(errorsOf(container(c.probes))).toEqual(expect.arrayContaining(c.errors));
    expect(errorsOf(container(c.probes))).toHaveLength(c.errors.length);
  });

  test('init containers without restartPolicy Always may not have probes', () => {
    const text = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  initContainers:
  - {name: setup, image: busybox, readinessProbe: {exec: {command: ["true"]}}}
  containers:
  - {name: app, image: busybox}
`;
    expect(errorsOf(text)).toEqual([{ field: 'spec.initContainers[0].readinessProbe', message: 'Forbidden: may not be set for init containers without restartPolicy=Always' }]);
  });
});

describe('probe defaults', () => {
  test('periodSeconds 10, timeoutSeconds 1, successThreshold 1, failureThreshold 3; httpGet path / and scheme HTTP; 0 means default', () => {
    const { pods } = parsePodManifests('/m/web.yaml', container('    readinessProbe: {httpGet: {port: http}, timeoutSeconds: 0}\n    livenessProbe: {exec: {command: [x]}, periodSeconds: 2}\n'), 'node-1');
    const app = pods[0]!.spec!.containers[0]!;
    expect(app.readinessProbe).toEqual({
      httpGet: { port: 'http', path: '/', scheme: 'HTTP' },
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
    expect(app.livenessProbe).toMatchObject({ periodSeconds: 2, timeoutSeconds: 1 });
  });
});
