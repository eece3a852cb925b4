// Manifest validation of resources and security contexts, with the apiserver's field paths and messages, and the requests default.
import { parsePodManifests, type ManifestError } from '../../../src/sources/manifest.js';

const FILE = '/etc/nodelet/manifests/web.yaml';

function parse(text: string) {
  return parsePodManifests(FILE, text, 'node-1', new Date('2024-05-01T10:00:00Z'));
}

function podYaml(containerLines: string, specLines = ''): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n${specLines}  containers:\n  - name: app\n    image: busybox\n${containerLines}`;
}

const errorsOf = (text: string): Array<Pick<ManifestError, 'field' | 'message'>> => parse(text).errors.map(({ field, message }) => ({ field, message }));

describe('resources', () => {
  test('valid quantities in every notation are accepted', () => {
    const r = parse(podYaml('    resources:\n      requests: {cpu: 250m, memory: 64Mi}\n      limits: {cpu: "1", memory: 1e8, ephemeral-storage: 1Gi}\n'));
    expect(r.errors).toEqual([]);
  });

  test('limits without requests default the requests (SetDefaults_Pod)', () => {
    const r = parse(podYaml('    resources:\n      limits: {cpu: 500m, memory: 20Mi}\n      requests: {cpu: 100m}\n'));
    expect(r.pods[0]!.spec!.containers[0]!.resources).toEqual({ limits: { cpu: '500m', memory: '20Mi' }, requests: { cpu: '100m', memory: '20Mi' } });
  });

  const cases: Array<[string, string, Array<Pick<ManifestError, 'field' | 'message'>>]> = [
    [
      'unparsable quantity',
      '    resources:\n      limits: {memory: 20K}\n',
      [{ field: 'spec.containers[0].resources.limits[memory]', message: 'Invalid value: "20K": unable to parse quantity\'s suffix' }],
    ],
    [
      'not a quantity at all',
      '    resources:\n      requests: {cpu: 2 cores}\n',
      [
        {
          field: 'spec.containers[0].resources.requests[cpu]',
          message: "Invalid value: \"2 cores\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        },
      ],
    ],
    [
      'negative quantity',
      '    resources:\n      requests: {cpu: "-1"}\n',
      [{ field: 'spec.containers[0].resources.requests[cpu]', message: 'Invalid value: "-1": must be greater than or equal to 0' }],
    ],
    [
      'request above limit, shown in canonical form',
      '    resources:\n      requests: {memory: 2048Mi}\n      limits: {memory: 1Gi}\n',
      [{ field: 'spec.containers[0].resources.requests', message: 'Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi' }],
    ],
    [
      'unknown resource name',
      '    resources:\n      limits: {gpu: "1"}\n',
      [{ field: 'spec.containers[0].resources.limits[gpu]', message: 'Invalid value: "gpu": must be a standard resource for containers' }],
    ],
    [
      'extended resources: whole units, requests equal to limits',
      '    resources:\n      requests: {example.com/dongle: 500m}\n      limits: {example.com/dongle: "1"}\n',
      [
        { field: 'spec.containers[0].resources.requests[example.com/dongle]', message: 'Invalid value: "500m": must be an integer' },
        { field: 'spec.containers[0].resources.requests', message: 'Invalid value: "500m": must be equal to example.com/dongle limit of 1' },
      ],
    ],
  ];
  test.each(cases)('%s', (_name, lines, expected) => {
    expect(errorsOf(podYaml(lines))).toEqual(expected);
  });
});

describe('security contexts', () => {
  const cases: Array<[string, string, string, Array<Pick<ManifestError, 'field' | 'message'>>]> = [
    [
      'ids out of range',
      '    securityContext: {runAsUser: -1}\n',
      '  securityContext: {fsGroup: 3000000000, supplementalGroups: [1, -2]}\n',
      [
        { field: 'spec.containers[0].securityContext.runAsUser', message: 'Invalid value: -1: must be between 0 and 2147483647, inclusive' },
        { field: 'spec.securityContext.fsGroup', message: 'Invalid value: 3000000000: must be between 0 and 2147483647, inclusive' },
        { field: 'spec.securityContext.supplementalGroups[1]', message: 'Invalid value: -2: must be between 0 and 2147483647, inclusive' },
      ],
    ],
    [
      'hostnameOverride: a DNS subdomain of at most 64 characters, not with hostNetwork',
      '',
      `  hostNetwork: true\n  hostnameOverride: ${'a'.repeat(65)}_\n`,
      [
        { field: 'spec.hostnameOverride', message: 'Forbidden: may not be specified when hostNetwork is true' },
        { field: 'spec.hostnameOverride', message: 'Too long: must have at most 64 bytes' },
        {
          field: 'spec.hostnameOverride',
          message: `Invalid value: "${'a'.repeat(65)}_": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
        },
      ],
    ],
    [
      'an unknown supplementalGroupsPolicy',
      '',
      '  securityContext: {supplementalGroupsPolicy: Loose}\n',
      [{ field: 'spec.securityContext.supplementalGroupsPolicy', message: 'Unsupported value: "Loose": supported values: "Merge", "Strict"' }],
    ],
    [
      'privileged without privilege escalation',
      '    securityContext: {privileged: true, allowPrivilegeEscalation: false}\n',
      '',
      [
        {
          field: 'spec.containers[0].securityContext',
          message: 'Invalid value: {"privileged":true,"allowPrivilegeEscalation":false}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true',
        },
      ],
    ],
    [
      'CAP_SYS_ADMIN without privilege escalation',
      '    securityContext: {allowPrivilegeEscalation: false, capabilities: {add: [CAP_SYS_ADMIN]}}\n',
      '',
      [
        {
          field: 'spec.containers[0].securityContext',
          message: expect.stringContaining('cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN') as unknown as string,
        },
      ],
    ],
    [
      'unknown procMount and Unmasked without user namespaces',
      '    securityContext: {procMount: Unmasked}\n',
      '',
      [{ field: 'spec.containers[0].securityContext.procMount', message: 'Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`' }],
    ],
    [
      'seccomp Localhost without a profile, and an absolute one',
      '    securityContext: {seccompProfile: {type: Localhost}}\n',
      '  securityContext: {seccompProfile: {type: Localhost, localhostProfile: /etc/profile.json}}\n',
      [
        { field: 'spec.containers[0].securityContext.seccompProfile.localhostProfile', message: 'Required value: must be set when seccomp type is Localhost' },
        { field: 'spec.securityContext.seccompProfile.localhostProfile', message: 'Invalid value: "/etc/profile.json": must be a relative path' },
      ],
    ],
    [
      'seccomp type unknown',
      '    securityContext: {seccompProfile: {type: Strict}}\n',
      '',
      [
        {
          field: 'spec.containers[0].securityContext.seccompProfile.type',
          message: 'Unsupported value: "Strict": supported values: "Localhost", "RuntimeDefault", "Unconfined"',
        },
      ],
    ],
    [
      'sysctl names: format, duplicates, host namespaces',
      '',
      '  hostNetwork: true\n  securityContext:\n    sysctls:\n    - {name: Net.Bad, value: "1"}\n    - {name: kernel.shm_rmid_forced, value: "1"}\n    - {name: kernel.shm_rmid_forced, value: "0"}\n    - {name: net.ipv4.ip_unprivileged_port_start, value: "80"}\n',
      [
        {
          field: 'spec.securityContext.sysctls[0].name',
          message: 'Invalid value: "Net.Bad": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$',
        },
        { field: 'spec.securityContext.sysctls[2].name', message: 'Duplicate value: "kernel.shm_rmid_forced"' },
        { field: 'spec.securityContext.sysctls[3].name', message: "Invalid value: \"net.ipv4.ip_unprivileged_port_start\": may not be specified when 'hostNetwork' is true" },
      ],
    ],
    [
      'hostPID with shareProcessNamespace',
      '',
      '  hostPID: true\n  shareProcessNamespace: true\n  securityContext: {}\n',
      [{ field: 'spec.securityContext.shareProcessNamespace', message: 'Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled' }],
    ],
  ];
  test.each(cases)('%s', (_name, containerLines, specLines, expected) => {
    expect(errorsOf(podYaml(containerLines, specLines))).toEqual(expected);
  });

  test('a complete, valid security context passes', () => {
    const r = parse(
      podYaml(
        '    securityContext:\n      runAsUser: 1000\n      runAsGroup: 3000\n      runAsNonRoot: true\n      readOnlyRootFilesystem: true\n      allowPrivilegeEscalation: false\n      capabilities: {drop: [ALL], add: [NET_ADMIN]}\n      seccompProfile: {type: RuntimeDefault}\n      procMount: Default\n',
        '  securityContext:\n    fsGroup: 2000\n    supplementalGroups: [4000]\n    sysctls: [{name: net.ipv4.ip_unprivileged_port_start, value: "80"}]\n',
      ),
    );
    expect(r.errors).toEqual([]);
  });
});
