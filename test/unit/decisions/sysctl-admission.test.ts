// kubelet's sysctl admission: safe sysctls pass, others and host-namespace clashes refuse the pod with SysctlForbidden.
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { forbiddenSysctls } from '../../../src/decisions/sysctl-admission.js';

function pod(sysctls: Array<{ name: string; value: string }>, spec: Partial<V1PodSpec> = {}): V1Pod {
  return { metadata: { name: 'p', namespace: 'default', uid: 'u1' }, spec: { containers: [], securityContext: { sysctls }, ...spec } };
}

describe('forbiddenSysctls', () => {
  test('no sysctls, or only safe ones (in either notation): admitted', () => {
    expect(forbiddenSysctls({ spec: { containers: [] } })).toBeUndefined();
    expect(forbiddenSysctls(pod([{ name: 'kernel.shm_rmid_forced', value: '1' }, { name: 'net/ipv4/ip_local_port_range', value: '1024 65000' }]))).toBeUndefined();
  });

  test('an unsafe sysctl is not allowlisted', () => {
    expect(forbiddenSysctls(pod([{ name: 'kernel.shm_rmid_forced', value: '1' }, { name: 'kernel.msgmax', value: '65536' }]))).toEqual({
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "kernel.msgmax" not allowlisted',
    });
  });

  test('a safe sysctl of a namespace shared with the host is refused', () => {
    expect(forbiddenSysctls(pod([{ name: 'net.ipv4.ip_unprivileged_port_start', value: '80' }], { hostNetwork: true }))).toEqual({
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.ipv4.ip_unprivileged_port_start" not allowed with host net enabled',
    });
    expect(forbiddenSysctls(pod([{ name: 'kernel.shm_rmid_forced', value: '1' }], { hostIPC: true }))!.message).toBe(
      'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled',
    );
  });
});
