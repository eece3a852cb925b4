// The container's environment as kubelet makes it, read from the container's own log.
import { readFile } from 'node:fs/promises';
import { busybox, staticName, testNode, testAgent } from '../helpers/agent.js';

const { agent, uids } = await testAgent();

beforeAll(async () => {
  await agent.start();
});



test('env values, $(VAR) expansion with $$ escapes, and fieldRef values reach the process', async () => {
  await agent.writeManifest('env.yaml', `apiVersion: v1
kind: Pod
metadata:
  name: envpod
  labels: {app: demo}
  annotations: {team: nodes}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: ${busybox}
    env:
    - {name: GREETING, value: hello}
    - {name: MESSAGE, value: "$(GREETING) world, $$(GREETING) stays"}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: TEAM, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['team']"}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MEM_LIMIT_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    resources:
      limits: {memory: 64Mi}
    command: ["sh", "-c", "env | sort"]
  - name: args
    image: ${busybox}
    env:
    - {name: GREETING, value: hello}
    command: ["echo"]
    args: ["ARG=$(GREETING)", "$$(GREETING)", "$(NOT_DEFINED)"]
`);
  const pod = await agent.waitForPod('envpod', 'Succeeded', (p) => p.status?.phase === 'Succeeded');
  uids.add(pod.metadata!.uid!);
  const log = await readFile(`${agent.podLogsDir}/default_${staticName('envpod')}_${pod.metadata!.uid}/main/0.log`, 'utf8');
  const vars = new Map(
    log.split('\n').map((l) => l.split(' ').slice(3).join(' ')).filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  expect(Object.fromEntries(vars)).toMatchObject({
    GREETING: 'hello',
    MESSAGE: 'hello world, $(GREETING) stays',
    POD_NAME: staticName('envpod'),
    POD_NAMESPACE: 'default',
    POD_UID: pod.metadata!.uid,
    APP: 'demo',
    TEAM: 'nodes',
    NODE: testNode,
    HOST_IP: pod.status!.hostIP,
    POD_IP: pod.status!.podIP,
    MEM_LIMIT_MI: '64',
  });
  const args = await readFile(`${agent.podLogsDir}/default_${staticName('envpod')}_${pod.metadata!.uid}/args/0.log`, 'utf8');
  expect(args.split(' ').slice(3).join(' ').trim()).toBe('ARG=hello $(GREETING) $(NOT_DEFINED)');
});

test('an unknown fieldRef path leaves the container waiting with CreateContainerConfigError, naming the field', async () => {
  await agent.writeManifest('badenv.yaml', `apiVersion: v1
kind: Pod
metadata: {name: badenv}
spec:
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    env:
    - {name: X, valueFrom: {fieldRef: {fieldPath: spec.nothing}}}
`);
  const pod = await agent.waitForPod('badenv', 'CreateContainerConfigError', (p) =>
    p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError');
  uids.add(pod.metadata!.uid!);
  expect(pod.status!.containerStatuses![0]!.state!.waiting!.message).toContain('spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.nothing"');
});

test('fileKeyRef: an init container writes an env file into an emptyDir, the main container gets its keys', async () => {
  await agent.writeManifest('envfile.yaml', `apiVersion: v1
kind: Pod
metadata: {name: envfile}
spec:
  restartPolicy: Never
  volumes:
  - {name: config, emptyDir: {}}
  initContainers:
  - name: setup
    image: ${busybox}
    volumeMounts: [{name: config, mountPath: /data}]
    command:
    - sh
    - -c
    - |
      mkdir -p /data/sub
      printf '%s\\n' "# written by setup" "DB_ADDRESS='db.local:5432' # the db" "MULTI='one" "two'" > /data/sub/config.env
  containers:
  - name: main
    image: ${busybox}
    command: ["sh", "-c", 'echo "DB=$DB_ADDRESS"; echo "MULTI=$MULTI"; echo "OPT=\${OPT-unset}"']
    env:
    - {name: DB_ADDRESS, valueFrom: {fileKeyRef: {volumeName: config, path: sub/config.env, key: DB_ADDRESS}}}
    - {name: MULTI, valueFrom: {fileKeyRef: {volumeName: config, path: sub/config.env, key: MULTI}}}
    - {name: OPT, valueFrom: {fileKeyRef: {volumeName: config, path: sub/config.env, key: NOT_THERE, optional: true}}}
`);
  const pod = await agent.waitForPod('envfile', 'Succeeded', (p) => p.status?.phase === 'Succeeded');
  uids.add(pod.metadata!.uid!);
  const log = await readFile(`${agent.podLogsDir}/default_${staticName('envfile')}_${pod.metadata!.uid}/main/0.log`, 'utf8');
  expect(log.split('\n').filter(Boolean).map((l) => l.split(' ').slice(3).join(' '))).toEqual(['DB=db.local:5432', 'MULTI=one', 'two', 'OPT=unset']);
});

test('fileKeyRef: a key the file lacks leaves the container waiting with CreateContainerConfigError and kubelet\'s message', async () => {
  await agent.writeManifest('envfile-missing.yaml', `apiVersion: v1
kind: Pod
metadata: {name: envfile-missing}
spec:
  volumes:
  - {name: config, emptyDir: {}}
  initContainers:
  - name: setup
    image: ${busybox}
    volumeMounts: [{name: config, mountPath: /data}]
    command:
    - sh
    - -c
    - echo "OTHER='x'" > /data/config.env
  containers:
  - name: main
    image: ${busybox}
    command: ["sleep", "3600"]
    env:
    - {name: DB_ADDRESS, valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: DB_ADDRESS}}}
`);
  const pod = await agent.waitForPod('envfile-missing', 'CreateContainerConfigError', (p) =>
    p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError');
  uids.add(pod.metadata!.uid!);
  expect(pod.status!.containerStatuses![0]!.state!.waiting!.message).toMatch(
    /^environment variable key "DB_ADDRESS" not found in file ".*\/volumes\/kubernetes\.io~empty-dir\/config\/config\.env"$/,
  );
});
