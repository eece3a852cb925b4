// Static pod manifest decoding: validation messages per field, kubelet's defaults, and UID stability.
import { CONFIG_HASH_ANNOTATION, CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../../../src/core/config-annotations.js';
import { InvalidImageReferenceError, defaultImagePullPolicy, parseImageReference } from '../../../src/core/image-reference.js';
import { parsePodManifests, type ManifestError } from '../../../src/sources/manifest.js';

const FILE = '/etc/nodelet/manifests/web.yaml';
const NODE = 'Node-1';
const SEEN = new Date('2024-05-01T10:00:00Z');

const goodPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: web
    image: localhost/nodelet/busybox:1.35
    command: ["httpd", "-f", "-p", "8080"]
    ports:
    - containerPort: 8080
      name: http
`;

function parse(text: string, file = FILE) {
  return parsePodManifests(file, text, NODE, SEEN);
}

/** A one-container pod document with the given spec lines merged in. */
function podYaml(containerLines: string, specLines = '', metaLines = '  name: web\n'): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n${metaLines}spec:\n${specLines}  containers:\n${containerLines}`;
}

describe('parsePodManifests: invalid manifests', () => {
  const cases: Array<{ name: string; text: string; errors: Array<Partial<ManifestError>> }> = [
    {
      name: 'YAML syntax error names line and column',
      text: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: [web\nspec: {}\n',
      errors: [{ field: '', document: 0, message: expect.stringMatching(/at line \d+, column \d+$/) as unknown as string }],
    },
    {
      name: 'missing name',
      text: podYaml('  - name: web\n    image: busybox\n', '', '  labels: {app: web}\n'),
      errors: [{ field: 'metadata.name', message: 'Required value: name or generateName is required' }],
    },
    {
      name: 'name not a DNS-1123 subdomain',
      text: podYaml('  - name: web\n    image: busybox\n', '', '  name: Web_1\n'),
      errors: [{ field: 'metadata.name', message: expect.stringContaining('Invalid value: "Web_1-node-1": a lowercase RFC 1123 subdomain') as unknown as string }],
    },
    {
      name: 'namespace not a DNS-1123 label',
      text: podYaml('  - name: web\n    image: busybox\n', '', '  name: web\n  namespace: kube.system\n'),
      errors: [{ field: 'metadata.namespace', message: expect.stringContaining('a lowercase RFC 1123 label must consist of') as unknown as string }],
    },
    {
      name: 'missing containers',
      text: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  restartPolicy: Never\n',
      errors: [{ field: 'spec.containers', message: 'Required value' }],
    },
    {
      name: 'empty containers',
      text: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: []\n',
      errors: [{ field: 'spec.containers', message: 'Required value' }],
    },
    {
      name: 'missing spec',
      text: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n',
      errors: [{ field: 'spec.containers', message: 'Required value' }],
    },
    {
      name: 'container without name and image',
      text: podYaml('  - command: [sh]\n'),
      errors: [
        { field: 'spec.containers[0].name', message: 'Required value' },
        { field: 'spec.containers[0].image', message: 'Required value' },
      ],
    },
    {
      name: 'invalid image reference (uppercase)',
      text: podYaml('  - name: web\n    image: localhost/Nodelet/busybox:1.35\n'),
      errors: [
        {
          field: 'spec.containers[0].image',
          message: 'Invalid value: "localhost/Nodelet/busybox:1.35": invalid reference format: repository name must be lowercase',
        },
      ],
    },
    {
      name: 'invalid image reference (bad tag)',
      text: podYaml('  - name: web\n    image: "busybox:1.35:x"\n'),
      errors: [{ field: 'spec.containers[0].image', message: 'Invalid value: "busybox:1.35:x": invalid reference format' }],
    },
    {
      name: 'image with surrounding whitespace',
      text: podYaml('  - name: web\n    image: " busybox"\n'),
      errors: [{ field: 'spec.containers[0].image', message: 'Invalid value: " busybox": must not have leading or trailing whitespace' }],
    },
    {
      name: 'duplicate container names across init and regular containers',
      text: podYaml(
        '  - name: web\n    image: busybox\n  - name: init\n    image: busybox\n',
        '  initContainers:\n  - name: init\n    image: busybox\n',
      ),
      errors: [{ field: 'spec.containers[1].name', message: 'Duplicate value: "init"' }],
    },
    {
      name: 'duplicate container names',
      text: podYaml('  - name: web\n    image: busybox\n  - name: web\n    image: busybox\n'),
      errors: [{ field: 'spec.containers[1].name', message: 'Duplicate value: "web"' }],
    },
    {
      name: 'container name not a DNS-1123 label',
      text: podYaml('  - name: Web\n    image: busybox\n'),
      errors: [
        {
          field: 'spec.containers[0].name',
          message:
            "Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        },
      ],
    },
    {
      name: 'restartPolicy and imagePullPolicy not supported',
      text: podYaml('  - name: web\n    image: busybox\n    imagePullPolicy: Sometimes\n', '  restartPolicy: Maybe\n'),
      errors: [
        { field: 'spec.containers[0].imagePullPolicy', message: 'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"' },
        { field: 'spec.restartPolicy', message: 'Unsupported value: "Maybe": supported values: "Always", "OnFailure", "Never"' },
      ],
    },
    {
      name: 'ports: range, protocol, name',
      text: podYaml(
        '  - name: web\n    image: busybox\n    ports:\n    - containerPort: 70000\n      protocol: HTTP\n    - containerPort: 80\n      name: Web--1\n    - name: p\n',
      ),
      errors: [
        { field: 'spec.containers[0].ports[0].containerPort', message: 'Invalid value: 70000: must be between 1 and 65535, inclusive' },
        { field: 'spec.containers[0].ports[0].protocol', message: 'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"' },
        { field: 'spec.containers[0].ports[1].name', message: 'Invalid value: "Web--1": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)' },
        { field: 'spec.containers[0].ports[1].name', message: 'Invalid value: "Web--1": must not contain consecutive hyphens' },
        { field: 'spec.containers[0].ports[2].containerPort', message: 'Required value' },
      ],
    },
    {
      name: 'hostNetwork requires hostPort == containerPort',
      text: podYaml('  - name: web\n    image: busybox\n    ports:\n    - containerPort: 80\n      hostPort: 8080\n', '  hostNetwork: true\n'),
      errors: [{ field: 'spec.containers[0].ports[0].hostPort', message: 'Invalid value: 8080: must match `containerPort` when `hostNetwork` is true' }],
    },
    {
      name: 'hostNetwork must be a boolean',
      text: podYaml('  - name: web\n    image: busybox\n', '  hostNetwork: "true"\n'),
      errors: [{ field: 'spec.hostNetwork', message: 'Invalid value: "true": must be a boolean' }],
    },
    {
      name: 'negative terminationGracePeriodSeconds',
      text: podYaml('  - name: web\n    image: busybox\n', '  terminationGracePeriodSeconds: -5\n'),
      errors: [{ field: 'spec.terminationGracePeriodSeconds', message: 'Invalid value: -5: must be greater than or equal to 0' }],
    },
    {
      name: 'env names',
      text: podYaml('  - name: web\n    image: busybox\n    env:\n    - name: 9LIVES\n      value: x\n    - name: OK.name-1\n      value: "1"\n    - value: x\n'),
      errors: [
        { field: 'spec.containers[0].env[0].name', message: expect.stringContaining('Invalid value: "9LIVES": a valid environment variable name') as unknown as string },
        { field: 'spec.containers[0].env[2].name', message: 'Required value' },
      ],
    },
    {
      name: 'containers of the wrong type',
      text: podYaml('    web\n'),
      errors: [{ field: 'spec.containers', message: 'Invalid value: "web": must be a list' }],
    },
    {
      name: 'not a Pod',
      text: 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n',
      errors: [
        { field: 'kind', message: 'Unsupported value: "Deployment": supported values: "Pod"' },
        { field: 'apiVersion', message: 'Unsupported value: "apps/v1": supported values: "v1"' },
      ],
    },
    {
      name: 'missing kind',
      text: 'apiVersion: v1\nmetadata:\n  name: web\n',
      errors: [{ field: 'kind', message: 'Required value' }],
    },
    {
      name: 'document that is not an object',
      text: '- a\n- b\n',
      errors: [{ field: '', message: 'must be a Pod object, not a list' }],
    },
  ];

  test.each(cases)('$name', ({ text, errors }) => {
    const result = parse(text);
    expect(result.pods).toEqual([]);
    expect(result.errors).toEqual(errors.map((e) => ({ file: FILE, document: 0, ...e })));
  });
});

describe('parsePodManifests: multiple documents', () => {
  test('a bad document is reported while the good ones load; empty documents are skipped', () => {
    const text = `---\n${goodPod}---\n# just a comment\n---\n${podYaml('  - name: web\n    image: busybox\n', '', '  name: bad\n  namespace: Bad\n')}---\n${goodPod.replace('name: web\nspec', 'name: api\nspec')}`;
    const { pods, errors } = parse(text);
    expect(pods.map((p) => p.metadata?.name)).toEqual(['web-node-1', 'api-node-1']);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ document: 2, field: 'metadata.namespace' });
  });

  test('two documents defining the same pod: the later one is a duplicate', () => {
    const { pods, errors } = parse(`${goodPod}---\n${goodPod.replace('8080', '9090')}`);
    expect(pods).toHaveLength(1);
    expect(errors).toEqual([{ file: FILE, document: 1, field: 'metadata.name', message: 'Duplicate value: "default/web-node-1"' }]);
  });

  test('a syntax error anywhere drops the whole file with one error', () => {
    const { pods, errors } = parse(`${goodPod}---\nkind: Pod\n  bad: indent\n`);
    expect(pods).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ document: 1, field: '' });
    // Lines count from the top of the file, not of the document.
    expect(errors[0]!.message).toMatch(/at line 14, column \d+$/);
  });

  test('an empty or comment-only file has no pods and no errors', () => {
    expect(parse('')).toEqual({ pods: [], errors: [] });
    expect(parse('# nothing yet\n')).toEqual({ pods: [], errors: [] });
  });

  test('JSON manifests', () => {
    const json = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'kube-system' },
      spec: { containers: [{ name: 'web', image: 'busybox:1.35' }] },
    });
    const { pods, errors } = parse(json, '/m/web.json');
    expect(errors).toEqual([]);
    expect(pods[0]?.metadata).toMatchObject({ name: 'web-node-1', namespace: 'kube-system' });
  });
});

describe('parsePodManifests: static pod defaults', () => {
  test('kubelet and apiserver defaults', () => {
    const { pods, errors } = parse(goodPod);
    expect(errors).toEqual([]);
    const pod = pods[0]!;
    const uid = pod.metadata!.uid!;
    expect(uid).toMatch(/^[0-9a-f]{32}$/);
    expect(pod).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'web-node-1',
        namespace: 'default',
        uid,
        annotations: {
          [CONFIG_HASH_ANNOTATION]: uid,
          [CONFIG_SEEN_ANNOTATION]: '2024-05-01T10:00:00.000Z',
          [CONFIG_SOURCE_ANNOTATION]: 'file',
        },
      },
      spec: {
        nodeName: NODE,
        containers: [
          {
            name: 'web',
            image: 'localhost/nodelet/busybox:1.35',
            command: ['httpd', '-f', '-p', '8080'],
            ports: [{ containerPort: 8080, name: 'http', protocol: 'TCP' }],
            imagePullPolicy: 'IfNotPresent',
            terminationMessagePath: '/dev/termination-log',
            terminationMessagePolicy: 'File',
            resources: {},
          },
        ],
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 30,
        dnsPolicy: 'ClusterFirst',
        schedulerName: 'default-scheduler',
        securityContext: {},
        enableServiceLinks: true,
        priority: 0,
        tolerations: [{ operator: 'Exists', effect: 'NoExecute' }],
      },
      status: { phase: 'Pending' },
    });
  });

  test('explicit values are kept; uid from the manifest; hostNetwork defaults hostPort; nulls are absent', () => {
    const text = `apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
  uid: fixed-uid
  creationTimestamp: null
  annotations: {team: infra}
spec:
  hostNetwork: true
  priorityClassName: system-node-critical
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 0
  tolerations:
  - {operator: Exists, effect: NoExecute}
  containers:
  - name: etcd
    image: registry.k8s.io/etcd@sha256:${'a'.repeat(64)}
    imagePullPolicy: Never
    resources: null
    ports: [{containerPort: 2379, protocol: UDP}]
status: {}
`;
    const { pods, errors } = parse(text);
    expect(errors).toEqual([]);
    const pod = pods[0]!;
    expect(pod.metadata).toEqual({
      name: 'etcd-node-1',
      namespace: 'kube-system',
      uid: 'fixed-uid',
      annotations: {
        team: 'infra',
        [CONFIG_HASH_ANNOTATION]: 'fixed-uid',
        [CONFIG_SEEN_ANNOTATION]: SEEN.toISOString(),
        [CONFIG_SOURCE_ANNOTATION]: 'file',
      },
    });
    expect(pod.spec).toMatchObject({ restartPolicy: 'OnFailure', terminationGracePeriodSeconds: 0, priority: 2000001000 });
    expect(pod.spec?.tolerations).toEqual([{ operator: 'Exists', effect: 'NoExecute' }]);
    expect(pod.spec?.containers[0]).toMatchObject({ imagePullPolicy: 'Never', resources: {}, ports: [{ containerPort: 2379, protocol: 'UDP', hostPort: 2379 }] });
    expect(pod.status).toEqual({ phase: 'Pending' });
  });

  test.each([
    ['busybox', 'Always'],
    ['busybox:latest', 'Always'],
    ['busybox:1.35', 'IfNotPresent'],
    [`busybox@sha256:${'b'.repeat(64)}`, 'IfNotPresent'],
    [`busybox:latest@sha256:${'b'.repeat(64)}`, 'Always'],
    ['localhost:5000/app', 'Always'],
  ])('imagePullPolicy default for %s is %s, for a container and an image volume (unset or empty)', (image, policy) => {
    expect(defaultImagePullPolicy(image)).toBe(policy);
    const volumes = `  volumes:\n  - name: v\n    image: {reference: "${image}"}\n  - name: w\n    image: {reference: "${image}", pullPolicy: ""}\n  - name: x\n    image: {reference: "${image}", pullPolicy: Never}\n`;
    const { pods } = parse(podYaml(`  - name: c\n    image: "${image}"\n`, volumes));
    expect(pods[0]?.spec?.containers[0]?.imagePullPolicy).toBe(policy);
    expect(pods[0]?.spec?.volumes?.map((v) => v.image?.pullPolicy)).toEqual([policy, policy, 'Never']);
  });

  test('YAML 1.1 like kubelet: octal modes and yes/no booleans', () => {
    const { pods, errors } = parse(
      podYaml('  - name: web\n    image: busybox\n    stdin: yes\n', '  volumes:\n  - name: v\n    downwardAPI: {defaultMode: 0644}\n'),
    );
    expect(errors).toEqual([]);
    expect(pods[0]?.spec?.volumes?.[0]?.downwardAPI?.defaultMode).toBe(0o644);
    expect(pods[0]?.spec?.containers[0]?.stdin).toBe(true);
  });
});

describe('parsePodManifests: UID', () => {
  test('same manifest, node and file give the same UID; formatting does not matter', () => {
    const a = parse(goodPod).pods[0]!.metadata!.uid;
    const reformatted = `# a comment\n${goodPod.replace('command: ["httpd", "-f", "-p", "8080"]', 'command:\n    - httpd\n    - -f\n    - -p\n    - "8080"')}`;
    expect(parse(goodPod).pods[0]!.metadata!.uid).toBe(a);
    expect(parse(reformatted).pods[0]!.metadata!.uid).toBe(a);
    expect(parsePodManifests(FILE, goodPod, NODE, new Date(0)).pods[0]!.metadata!.uid).toBe(a);
  });

  test('a changed manifest, another file or another node give a new UID', () => {
    const a = parse(goodPod).pods[0]!.metadata!.uid;
    expect(parse(goodPod.replace('8080"]', '8081"]')).pods[0]!.metadata!.uid).not.toBe(a);
    expect(parse(goodPod, '/etc/nodelet/manifests/other.yaml').pods[0]!.metadata!.uid).not.toBe(a);
    expect(parsePodManifests(FILE, goodPod, 'node-2', SEEN).pods[0]!.metadata!.uid).not.toBe(a);
  });
});

describe('parseImageReference', () => {
  test.each([
    ['busybox', { domain: 'docker.io', path: 'library/busybox' }],
    ['busybox:1.35', { domain: 'docker.io', path: 'library/busybox', tag: '1.35' }],
    ['index.docker.io/user/app:v1', { domain: 'docker.io', path: 'user/app', tag: 'v1' }],
    ['localhost/nodelet/pause:1.0', { domain: 'localhost', path: 'nodelet/pause', tag: '1.0' }],
    ['localhost:5000/a/b_c.d__e-f', { domain: 'localhost:5000', path: 'a/b_c.d__e-f' }],
    ['registry.k8s.io/pause:3.9', { domain: 'registry.k8s.io', path: 'pause', tag: '3.9' }],
    ['[::1]:5000/app:v1', { domain: '[::1]:5000', path: 'app', tag: 'v1' }],
    [`app@sha256:${'c'.repeat(64)}`, { domain: 'docker.io', path: 'library/app', digest: `sha256:${'c'.repeat(64)}` }],
  ])('%s', (ref, expected) => {
    expect(parseImageReference(ref)).toEqual(expected);
  });

  test.each([
    ['', 'repository name must have at least one component'],
    ['Busybox', 'invalid reference format: repository name must be lowercase'],
    ['busybox:', 'invalid reference format'],
    ['busybox:-x', 'invalid reference format'],
    [`busybox:${'t'.repeat(129)}`, 'invalid reference format'],
    ['a//b', 'invalid reference format'],
    ['-a/b', 'invalid reference format'],
    ['busybox@sha256:abc', 'invalid reference format'],
    [`busybox@sha256:${'d'.repeat(63)}`, 'invalid checksum digest length'],
    [`busybox@md5:${'d'.repeat(32)}`, 'unsupported digest algorithm'],
    [`busybox@sha256:${'D'.repeat(64)}`, 'invalid checksum digest format'],
    [`${'a'.repeat(256)}`, 'repository name must not be more than 255 characters'],
  ])('rejects %j', (ref, message) => {
    expect(() => parseImageReference(ref)).toThrow(InvalidImageReferenceError);
    expect(() => parseImageReference(ref)).toThrow(message);
  });
});
