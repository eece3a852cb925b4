// A stand-in for the pod network behind the shim server: records calls, answers a fixed result or fails.
import type { ShimBackend } from '../../../src/cni/shim-server.js';
import type { CniResult, CniRuntimeConf } from '../../../src/cni/types.js';

export const fakeResult: CniResult = {
  cniVersion: '1.0.0',
  interfaces: [{ name: 'eth0', mac: '02:00:00:00:00:03', sandbox: '/run/netns/x' }],
  ips: [{ address: '10.99.0.7/24', gateway: '10.99.0.1', interface: 0 }],
};

export class FakeBackend implements ShimBackend {
  calls: { op: string; rt: CniRuntimeConf }[] = [];
  fail: Error | undefined;
  gate: Promise<void> | undefined;
  async setUp(rt: CniRuntimeConf): Promise<CniResult> {
    this.calls.push({ op: 'setUp', rt });
    await this.gate;
    if (this.fail) throw this.fail;
    return fakeResult;
  }
  async tearDown(rt: CniRuntimeConf): Promise<void> {
    this.calls.push({ op: 'tearDown', rt });
    await this.gate;
    if (this.fail) throw this.fail;
  }
  async check(rt: CniRuntimeConf): Promise<void> {
    this.calls.push({ op: 'check', rt });
    if (this.fail) throw this.fail;
  }
}

