// Pod and container security contexts merged and converted to CRI settings, and kubelet's runAsNonRoot decisions.
import type { V1Container, V1Pod, V1PodSecurityContext, V1SecurityContext } from '@kubernetes/client-node';
import type { NamespaceOption } from '../../../src/cri/types.js';
import {
  containerSecurityContext,
  effectiveSecurityContext,
  podSysctls,
  sandboxSecurityContext,
  verifyRunAsNonRoot,
  type ImageUser,
} from '../../../src/execution/security-context.js';
import { SyncError } from '../../../src/core/sync-result.js';

const ns: NamespaceOption = { network: 'POD', pid: 'CONTAINER', ipc: 'POD' };
const root: ImageUser = { username: '' };

function container(securityContext?: V1SecurityContext, name = 'app'): V1Container {
  return { name, image: 'img', ...(securityContext ? { securityContext } : {}) };
}

function pod(securityContext?: V1PodSecurityContext, containers: V1Container[] = [container()], initContainers: V1Container[] = []): V1Pod {
  return { metadata: { name: 'web', namespace: 'default', uid: 'u1' }, spec: { containers, initContainers, ...(securityContext ? { securityContext } : {}) } };
}

describe('effectiveSecurityContext', () => {
  test('nothing set: empty', () => {
    expect(effectiveSecurityContext(pod(), container())).toEqual({});
  });

  test('pod defaults apply; container fields override them one by one', () => {
    const p = pod({ runAsUser: 1000, runAsGroup: 2000, runAsNonRoot: true, fsGroup: 3000, supplementalGroups: [4000] });
    expect(effectiveSecurityContext(p, container())).toEqual({ runAsUser: 1000, runAsGroup: 2000, runAsNonRoot: true });
    const c = container({ runAsUser: 1001, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] }, allowPrivilegeEscalation: false });
    expect(effectiveSecurityContext(p, c)).toEqual({
      runAsUser: 1001,
      runAsGroup: 2000,
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      allowPrivilegeEscalation: false,
    });
    expect(effectiveSecurityContext(p, container({ runAsNonRoot: false })).runAsNonRoot).toBe(false);
  });
});

describe('verifyRunAsNonRoot', () => {
  const refused = (p: V1Pod, c: V1Container, image: ImageUser): string | undefined => {
    try {
      verifyRunAsNonRoot(p, c, image);
      return undefined;
    } catch (err) {
      expect(err).toBeInstanceOf(SyncError);
      expect((err as SyncError).code).toBe('CreateContainerConfigError');
      return (err as Error).message;
    }
  };
  const where = '(pod: "web_default(u1)", container: app)';

  const cases: Array<[string, V1PodSecurityContext | undefined, V1SecurityContext | undefined, ImageUser, string | undefined]> = [
    ['not asked', undefined, undefined, root, undefined],
    ['asked false', { runAsNonRoot: false }, undefined, root, undefined],
    ['root image', { runAsNonRoot: true }, undefined, root, `container has runAsNonRoot and image will run as root ${where}`],
    ['image uid 0', undefined, { runAsNonRoot: true }, { uid: 0, username: '' }, `container has runAsNonRoot and image will run as root ${where}`],
    ['image uid 1000', { runAsNonRoot: true }, undefined, { uid: 1000, username: '' }, undefined],
    [
      'image user by name',
      { runAsNonRoot: true },
      undefined,
      { username: 'nginx' },
      `container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root ${where}`,
    ],
    ['runAsUser 1000 on a root image', { runAsNonRoot: true, runAsUser: 1000 }, undefined, root, undefined],
    ['runAsUser 0', { runAsNonRoot: true }, { runAsUser: 0 }, { uid: 1000, username: '' }, `container's runAsUser breaks non-root policy ${where}`],
    ['container overrides pod runAsNonRoot', { runAsNonRoot: true }, { runAsNonRoot: false }, root, undefined],
  ];
  test.each(cases)('%s', (_name, podSc, containerSc, image, message) => {
    const c = container(containerSc);
    expect(refused(pod(podSc, [c]), c, image)).toBe(message);
  });
});

describe('containerSecurityContext', () => {
  test('defaults: runs as the image user (root when unnamed), default masks, unconfined seccomp', () => {
    const sc = containerSecurityContext(pod(), container(), root, ns, '/var/lib/nodelet/seccomp');
    expect(sc).toEqual({
      namespaceOptions: ns,
      privileged: false,
      readonlyRootfs: false,
      noNewPrivs: false,
      seccomp: { profileType: 'Unconfined' },
      runAsUser: 0,
      maskedPaths: expect.arrayContaining(['/proc/kcore', '/sys/firmware']) as unknown as string[],
      readonlyPaths: expect.arrayContaining(['/proc/sys']) as unknown as string[],
    });
  });

  test('the image user applies when no runAsUser is set: numeric uid, else the name', () => {
    expect(containerSecurityContext(pod(), container(), { uid: 65534, username: '' }, ns).runAsUser).toBe(65534);
    const named = containerSecurityContext(pod(), container(), { username: 'www' }, ns);
    expect(named.runAsUser).toBeUndefined();
    expect(named.runAsUsername).toBe('www');
    expect(containerSecurityContext(pod({ runAsUser: 7 }), container(), { username: 'www' }, ns)).toMatchObject({ runAsUser: 7 });
  });

  test('users, groups, fsGroup first in the supplemental groups', () => {
    const p = pod({ runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000, 5000] });
    expect(containerSecurityContext(p, container(), root, ns)).toMatchObject({ runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [2000, 4000, 5000] });
  });

  test('supplementalGroupsPolicy goes to the container and the sandbox as set; unset is left to the runtime (Merge)', () => {
    for (const policy of ['Strict', 'Merge'] as const) {
      const p = pod({ supplementalGroups: [4000], supplementalGroupsPolicy: policy });
      expect(containerSecurityContext(p, container(), root, ns)).toMatchObject({ supplementalGroups: [4000], supplementalGroupsPolicy: policy });
      expect(sandboxSecurityContext(p, ns)).toMatchObject({ supplementalGroups: [4000], supplementalGroupsPolicy: policy });
    }
    expect(containerSecurityContext(pod({ supplementalGroups: [4000] }), container(), root, ns).supplementalGroupsPolicy).toBeUndefined();
    expect(sandboxSecurityContext(pod(), ns).supplementalGroupsPolicy).toBeUndefined();
  });

  test('capabilities as written, read-only rootfs, no_new_privs only when escalation is explicitly refused', () => {
    const c = container({ capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] }, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(containerSecurityContext(pod(), c, root, ns)).toMatchObject({
      capabilities: { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] },
      readonlyRootfs: true,
      noNewPrivs: true,
    });
    expect(containerSecurityContext(pod(), container({ allowPrivilegeEscalation: true }), root, ns).noNewPrivs).toBe(false);
  });

  test('privileged containers get no masked paths', () => {
    const sc = containerSecurityContext(pod(), container({ privileged: true }), root, ns);
    expect(sc.privileged).toBe(true);
    expect(sc.maskedPaths).toBeUndefined();
    expect(sc.readonlyPaths).toBeUndefined();
  });

  test('seccomp: container profile over pod profile; Localhost under the profile root', () => {
    const p = pod({ seccompProfile: { type: 'RuntimeDefault' } });
    expect(containerSecurityContext(p, container(), root, ns).seccomp).toEqual({ profileType: 'RuntimeDefault' });
    const c = container({ seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/audit.json' } });
    expect(containerSecurityContext(p, c, root, ns, '/var/lib/nodelet/seccomp').seccomp).toEqual({
      profileType: 'Localhost',
      localhostRef: '/var/lib/nodelet/seccomp/profiles/audit.json',
    });
    expect(containerSecurityContext(p, container({ seccompProfile: { type: 'Unconfined' } }), root, ns).seccomp).toEqual({ profileType: 'Unconfined' });
    expect(() => containerSecurityContext(p, container({ seccompProfile: { type: 'Localhost' } }), root, ns)).toThrow(SyncError);
  });

  test('runAsNonRoot is verified before anything is built', () => {
    expect(() => containerSecurityContext(pod({ runAsNonRoot: true }), container(), root, ns)).toThrow('image will run as root');
  });
});

describe('sandbox', () => {
  test('privileged when any container or init container is; RuntimeDefault seccomp; pod user and groups', () => {
    const p = pod({ runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000] }, [container()], [container({ privileged: true }, 'init')]);
    expect(sandboxSecurityContext(p, ns)).toEqual({
      namespaceOptions: ns,
      privileged: true,
      seccomp: { profileType: 'RuntimeDefault' },
      runAsUser: 1000,
      runAsGroup: 3000,
      supplementalGroups: [2000, 4000],
    });
    expect(sandboxSecurityContext(pod(), ns)).toEqual({ namespaceOptions: ns, privileged: false, seccomp: { profileType: 'RuntimeDefault' } });
  });

  test('sysctls keyed by their dotted names', () => {
    const p = pod({
      sysctls: [
        { name: 'kernel.shm_rmid_forced', value: '1' },
        { name: 'net/ipv4/ip_unprivileged_port_start', value: '80' },
        { name: 'net/ipv4/conf/eth0.100/rp_filter', value: '0' },
      ],
    });
    expect(podSysctls(p)).toEqual({
      'kernel.shm_rmid_forced': '1',
      'net.ipv4.ip_unprivileged_port_start': '80',
      'net.ipv4.conf.eth0/100.rp_filter': '0',
    });
    expect(podSysctls(pod())).toEqual({});
  });
});
