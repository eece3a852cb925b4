// node.status.runtimeHandlers as kubelet's RuntimeHandlers setter reports them, with what nodelet does on the node:
// recursive read-only mounts as the handler has them; user namespaces where it has them and the kernel mounts tmpfs idmapped.
import { nodeRuntimeHandlers, RuntimeState, setNodeStatus, type NodeStatusInputs } from '../../../src/controllers/node-status.js';
import type { RuntimeHandler } from '../../../src/cri/types.js';
import { defaultReservation, machine } from '../fakes/machine.js';

const handlers: RuntimeHandler[] = [
  { name: '', recursiveReadOnlyMounts: true, userNamespaces: true },
  { name: 'runc', recursiveReadOnlyMounts: true, userNamespaces: true },
  { name: 'old', recursiveReadOnlyMounts: false, userNamespaces: false },
];

test('each handler with its features as nodelet honours them', () => {
  expect(nodeRuntimeHandlers(handlers, '6.12.48+deb13-amd64')).toEqual([
    { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
    { name: 'runc', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
    { name: 'old', features: { recursiveReadOnlyMounts: false, userNamespaces: false } },
  ]);
  // Debian 12's 6.1 cannot mount tmpfs idmapped: nodelet refuses hostUsers false there, and says so.
  expect(nodeRuntimeHandlers(handlers, '6.1.0-28-amd64').map((h) => h.features!.userNamespaces)).toEqual([false, false, false]);
});

test("the Node reports the runtime's last answer; before one, the handlers already reported stay", () => {
  const state = new RuntimeState();
  const inputs: NodeStatusInputs = {
    nodeName: 'n1', hostname: 'n1', nodeIP: '192.0.2.10', machine: { ...machine, kernelVersion: '6.18.44' }, kubeletVersion: 'v1.37.0+nodelet.0.1.0',
    kubeletPort: 10250, maxPods: 110, reservation: defaultReservation, runtime: undefined, readyErrors: [], images: undefined, maxImages: 50,
    runtimeHandlers: state.handlers(), runtimeFeatures: undefined,
  };
  const before = setNodeStatus({ status: { runtimeHandlers: [{ name: 'kept' }] } }, inputs, new Date(0));
  expect(before.status!.runtimeHandlers).toEqual([{ name: 'kept' }]);
  state.update({ conditions: [], handlers: handlers.slice(0, 1) }, 0);
  const after = setNodeStatus(before, { ...inputs, runtimeHandlers: state.handlers() }, new Date(0));
  expect(after.status!.runtimeHandlers).toEqual([{ name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } }]);
});
