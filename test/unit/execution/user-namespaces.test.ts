// A pod's user namespace in its CRI configs and its sync, on the in-memory runtime (which refuses, as containerd, a
// container whose user namespace differs from its sandbox's): POD mode with the pod's range in the sandbox, every
// container and every mount; none for a pod in the host's; kubelet's refusals as sync results and events; release at the end.
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { UserNamespace } from '../../../src/cri/types.js';
import { computePodActions } from '../../../src/decisions/compute-actions.js';
import { buildContainerConfig, buildSandboxConfig } from '../../../src/execution/runtime-config.js';
import { crashBackoffKey, executePodActions, terminatePod } from '../../../src/execution/sync-pod.js';
import { parseMappingsFile } from '../../../src/host/user-namespaces.js';
import { lifecycleFakes, nodeSettings, testImage, type LifecycleFakes } from '../fakes/lifecycle-deps.js';

const log = pino({ level: 'silent' });
const uid = 'uid-userns';

function pod(hostUsers?: boolean): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid },
    spec: {
      ...(hostUsers === undefined ? {} : { hostUsers }),
      containers: [
        { name: 'app', image: testImage, securityContext: { procMount: 'Unmasked' } },
        { name: 'other', image: testImage },
      ],
    },
  };
}

const userns: UserNamespace = {
  mode: 'POD',
  uids: [{ hostId: 196608, containerId: 0, length: 65536 }],
  gids: [{ hostId: 196608, containerId: 0, length: 65536 }],
};

describe('the CRI configs', () => {
  test("hostUsers false: the sandbox's and the container's namespace options carry it, every mount its mappings", () => {
    const sandbox = buildSandboxConfig(pod(false), 0, nodeSettings, undefined, userns);
    expect(sandbox.linux!.securityContext!.namespaceOptions).toEqual({ network: 'POD', pid: 'CONTAINER', ipc: 'POD', usernsOptions: userns });
    const mounts = [{ containerPath: '/data', hostPath: '/var/lib/nodelet/pods/x/volumes/kubernetes.io~empty-dir/data' }];
    const container = buildContainerConfig(pod(false), pod(false).spec!.containers[0]!, 0, new Map(), { mounts, userNamespace: userns });
    expect(container.linux!.securityContext!.namespaceOptions!.usernsOptions).toEqual(userns);
    expect(container.mounts).toEqual([{ ...mounts[0], uidMappings: userns.uids, gidMappings: userns.gids }]);
    // procMount Unmasked: nothing masked or read-only.
    expect(container.linux!.securityContext).toMatchObject({ maskedPaths: [], readonlyPaths: [] });
  });

  test("a pod in the host's user namespace sends no user namespace option and plain mounts", () => {
    const sandbox = buildSandboxConfig(pod(), 0, nodeSettings);
    expect(sandbox.linux!.securityContext!.namespaceOptions).toEqual({ network: 'POD', pid: 'CONTAINER', ipc: 'POD' });
    const mounts = [{ containerPath: '/data', hostPath: '/tmp/data' }];
    const container = buildContainerConfig(pod(), pod().spec!.containers[1]!, 0, new Map(), { mounts });
    expect(container.linux!.securityContext!.namespaceOptions).toEqual({ network: 'POD', pid: 'CONTAINER', ipc: 'POD' });
    expect(container.mounts).toEqual(mounts);
  });
});

describe('the sync', () => {
  async function sync(f: LifecycleFakes, p: V1Pod) {
    const state = await f.observer.observePod(uid);
    const actions = computePodActions(p, state, {
      now: f.clock.now(),
      backoffPolicy: f.crashBackoff.policy,
      crashBackoff: (name) => f.crashBackoff.get(crashBackoffKey(p, name)),
      liveness: () => undefined,
    });
    return executePodActions(f.deps, p, actions, state, log);
  }

  test("hostUsers false: the sandbox and its containers get the pod's range; termination releases it", async () => {
    const f = lifecycleFakes();
    const results = await sync(f, pod(false));
    expect(results.filter((r) => r.error)).toEqual([]);
    const range = parseMappingsFile(f.usernsStore.files.get(uid)!);
    const sandboxId = f.runtime.peek().sandboxes[0]!.id;
    const sandboxUserns = f.runtime.sandboxConfig(sandboxId).linux!.securityContext!.namespaceOptions!.usernsOptions!;
    expect(sandboxUserns).toEqual({
      mode: 'POD',
      uids: [{ hostId: range.firstId, containerId: 0, length: 65536 }],
      gids: [{ hostId: range.firstId, containerId: 0, length: 65536 }],
    });
    const containers = f.runtime.peek().containers;
    expect(containers.map((c) => c.name)).toEqual(['app', 'other']);
    for (const c of containers) {
      expect(c.config.linux!.securityContext!.namespaceOptions!.usernsOptions).toEqual(sandboxUserns);
      // The pod's /etc/hosts and termination message files are mounted idmapped too.
      expect(c.config.mounts.length).toBeGreaterThan(0);
      for (const m of c.config.mounts) expect([m.uidMappings, m.gidMappings]).toEqual([sandboxUserns.uids, sandboxUserns.gids]);
    }

    await terminatePod(f.deps, pod(false), await f.observer.observePod(uid), 2, undefined, log);
    expect(f.usernsStore.files.has(uid)).toBe(false);
  });

  test("a runtime without user namespaces: FailedCreatePodSandBox with kubelet's message, no sandbox, nothing allocated", async () => {
    const f = lifecycleFakes();
    f.runtime.setRuntimeHandlers([{ name: '', recursiveReadOnlyMounts: true, userNamespaces: false }]);
    const results = await sync(f, pod(false));
    const message = "can't set `spec.hostUsers: false`, runtime does not support user namespaces";
    expect(results).toEqual([{ action: 'CreatePodSandbox', target: '', error: { code: 'ErrCreatePodSandbox', message } }]);
    expect(f.events.events).toContainEqual({ type: 'Warning', reason: 'FailedCreatePodSandBox', message: `Failed to create pod sandbox: ${message}` });
    expect(f.runtime.peek().sandboxes).toEqual([]);
    expect(f.usernsStore.files.size).toBe(0);
  });

  test('once the sandbox exists, a runtime that lost user namespaces fails the container starts with CreateContainerConfigError', async () => {
    const f = lifecycleFakes();
    await sync(f, pod(false));
    const runtime = f.runtime.peek();
    await f.runtime.stopContainer(runtime.containers[1]!.id, 0);
    f.runtime.setRuntimeHandlers([]);
    // The handlers are asked again after kubelet's runtime status period.
    await f.clock.advance(5_000);
    const results = await sync(f, pod(false));
    expect(results.filter((r) => r.error).map((r) => [r.target, r.error!.code])).toEqual([['other', 'CreateContainerConfigError']]);
  });
});
