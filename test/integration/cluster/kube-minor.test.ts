// One nodelet build for every supported minor, against the real control plane: the v1.37 control plane run with
// --emulated-version=1.35 (the APIs and feature gates of 1.35; kube-apiserver's /version says so) makes nodelet serve
// 1.35 as a kubelet v1.35 would: the Node's kubeletVersion. (A v1.35 binary control plane needs a second Kubernetes build.)
import type { V1Node } from '@kubernetes/client-node';
import { nodeletVersion } from '../../../src/agent/version.js';
import { startRealCluster, stopAfterAll, type RealCluster } from '../helpers/real-cluster.js';

let cluster: RealCluster | undefined;
stopAfterAll(() => cluster);

beforeAll(async () => {
  cluster = await startRealCluster({ emulatedVersion: '1.35' });
}, 300_000);

test('an API server emulating 1.35: the Node reports kubeletVersion v1.35.0+nodelet.<version>', async () => {
  const c = cluster!;
  const { serverVersion } = JSON.parse(await c.kubectl.run('version', '-o', 'json')) as { serverVersion: Record<string, string> };
  expect(serverVersion).toMatchObject({ major: '1', minor: '37', emulationMajor: '1', emulationMinor: '35' });
  const node: V1Node = await c.node();
  expect(node.status?.nodeInfo?.kubeletVersion).toBe(`v1.35.0+nodelet.${nodeletVersion()}`);
  // Ready: the 1.35 node works with this control plane.
  expect(node.status?.conditions?.find((x) => x.type === 'Ready')?.status).toBe('True');
  const served = c.agent.output.split('\n').find((l) => l.includes("Serving the API server's Kubernetes minor"));
  expect(served).toContain('v1.35.0+nodelet.');
  expect(served).toMatch(/v1\.37\.\d+/);
});
