// The real kubectl (/usr/bin/kubectl, v1.32) against the test API server: create, get -o wide, get nodes, events, delete.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Kubectl } from '../../integration/helpers/kubectl.js';
import { startTestApiServer, type TestApiServer } from '../test-apiserver.js';
import { bindPod } from '../scheduler.js';
import { PODS, node, ok } from './server-fixture.js';


let server: TestApiServer;
beforeAll(async () => {
  server = await startTestApiServer({ nodeNames: ['n1'] });
});
afterAll(async () => server.stop());

// A private cache dir: discovery is cached per server URL, and every test server has a new port.
const kubectl = (...args: string[]): Promise<string> => new Kubectl(server.adminKubeconfig, join(server.dir, 'kubectl-cache'), server.dir).run(...args);

const POD_YAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: c
    image: localhost/nodelet/busybox:1.35
    command: ["sleep", "3600"]
`;

test('kubectl creates, lists wide, describes and deletes a pod; shows nodes and events', async () => {
  const file = join(server.dir, 'pod.yaml');
  await writeFile(file, POD_YAML);
  expect(await kubectl('create', '-f', file)).toBe('pod/web created');

  await ok(server.node('n1'), 'POST', '/api/v1/nodes', { body: node('n1') });
  await bindPod(server, 'default', 'web', 'n1');
  await ok(server.node('n1'), 'PATCH', `${PODS}/web/status`, {
    contentType: 'application/strategic-merge-patch+json',
    body: {
      status: {
        phase: 'Running',
        podIP: '10.99.0.7',
        podIPs: [{ ip: '10.99.0.7' }],
        conditions: [{ type: 'Ready', status: 'True' }],
        containerStatuses: [{ name: 'c', ready: true, started: true, restartCount: 0, image: 'localhost/nodelet/busybox:1.35', imageID: '', state: { running: { startedAt: '2025-01-01T00:00:00Z' } } }],
      },
    },
  });
  const uid = String(((await ok<Record<string, unknown>>(server.admin, 'GET', `${PODS}/web`)).metadata as Record<string, unknown>).uid);
  await ok(server.node('n1'), 'POST', '/api/v1/namespaces/default/events', {
    body: {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'web.started' },
      // kubectl describe finds a pod's events by involvedObject.uid, which kubelet's events carry.
      involvedObject: { kind: 'Pod', namespace: 'default', name: 'web', uid, apiVersion: 'v1', fieldPath: 'spec.containers{c}' },
      reason: 'Started',
      message: 'Started container c',
      source: { component: 'kubelet', host: 'n1' },
      type: 'Normal',
      count: 1,
    },
  });

  const wide = (await kubectl('get', 'pods', '-o', 'wide')).split('\n');
  expect(wide[0]).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$/);
  expect(wide[1]).toMatch(/^web\s+1\/1\s+Running\s+0\s+\S+\s+10\.99\.0\.7\s+n1\s+<none>\s+<none>$/);

  const nodes = (await kubectl('get', 'nodes', '-o', 'wide')).split('\n');
  expect(nodes[1]).toMatch(/^n1\s+Ready\s+<none>\s+\S+\s+\S*\s+127\.0\.0\.1\s+<none>/);

  expect(await kubectl('wait', '--for=condition=Ready', 'pod/web', '--timeout=10s')).toBe('pod/web condition met');
  expect(await kubectl('describe', 'pod', 'web')).toMatch(/Normal\s+Started\s+\S+\s+kubelet\s+Started container c/);

  const events = (await kubectl('get', 'events')).split('\n');
  expect(events[0]).toMatch(/^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
  expect(events[1]).toMatch(/^\S+\s+Normal\s+Started\s+pod\/web\s+Started container c$/);

  expect(await kubectl('label', 'pod', 'web', 'tier=front')).toBe('pod/web labeled');
  expect(await kubectl('get', 'pods', '-l', 'tier=front', '-o', 'name')).toBe('pod/web');

  expect(await kubectl('delete', 'pod', 'web', '--wait=false')).toBe('pod "web" deleted');
  expect(await kubectl('get', 'pod', 'web', '--no-headers')).toMatch(/^web\s+1\/1\s+Terminating\s/);
});

test('kubectl apply creates, then patches with a strategic merge patch', async () => {
  const file = join(server.dir, 'cm.yaml');
  await writeFile(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: "1"\n');
  expect(await kubectl('apply', '-f', file)).toBe('configmap/cfg created');
  await writeFile(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  b: "2"\n');
  expect(await kubectl('apply', '-f', file)).toBe('configmap/cfg configured');
  expect(await kubectl('get', 'configmap', 'cfg', '-o', 'jsonpath={.data}')).toBe('{"b":"2"}');
});

test('kubectl reports the server-side validation errors', async () => {
  const file = join(server.dir, 'bad.yaml');
  await writeFile(file, 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: c\n    imagex: x\n');
  await expect(kubectl('create', '-f', file)).rejects.toThrow('strict decoding error: unknown field "spec.containers[0].imagex"');
});
