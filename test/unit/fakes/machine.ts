// A fixed machine (2 cores, ~23.5 GiB, a 100 GiB root fs, no huge pages) and kubelet's default reservation, for the node's capacity tests.
import { defaultKubeletConfiguration } from '../../../src/agent/kubelet-config.js';
import type { NodeReservation } from '../../../src/host/allocatable.js';
import type { MachineInfo } from '../../../src/host/machine-info.js';

export const GiB = 1024n ** 3n;

export const machine: MachineInfo = {
  machineID: '3d1219c7c4c5404aaa1f6d2a48adfda4',
  systemUUID: '',
  bootID: 'bd9e3de8-b529-43b2-9652-69416df45e0f',
  kernelVersion: '6.1.0-13-amd64',
  osImage: 'Debian GNU/Linux 12 (bookworm)',
  architecture: 'amd64',
  numCores: 2,
  memoryCapacityBytes: 24684096n * 1024n,
  hugePages: [
    { pageSizeKiB: 2048, numPages: 0 },
    { pageSizeKiB: 1048576, numPages: 0 },
  ],
  rootFsCapacityBytes: 100n * GiB,
};

/** No system or kube reservation, kubelet's default evictionHard. */
export const defaultReservation: NodeReservation = { systemReserved: {}, kubeReserved: {}, evictionHard: defaultKubeletConfiguration().evictionHard };
