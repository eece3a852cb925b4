// The soak's leak accounting finds a pod's cgroups by their directory names under either cgroup driver.
import { podUidOfCgroup } from '../../../bench/leaks.js';

const uid = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';

test("a pod's UID from its cgroup directory: pod<uid> (cgroupfs) or the systemd slice with underscores", () => {
  expect(podUidOfCgroup(`pod${uid}`)).toBe(uid);
  expect(podUidOfCgroup(`kubepods-burstable-pod${uid.replaceAll('-', '_')}.slice`)).toBe(uid);
  expect(podUidOfCgroup(`kubepods-pod${uid.replaceAll('-', '_')}.slice`)).toBe(uid);
  for (const other of ['kubepods', 'kubepods-burstable.slice', `cri-containerd-${'a'.repeat(64)}.scope`, `pod${uid}x`, 'besteffort']) {
    expect(podUidOfCgroup(other)).toBeUndefined();
  }
});
