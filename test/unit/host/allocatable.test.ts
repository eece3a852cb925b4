// The node's capacity and allocatable as kubelet computes them from the machine and the reservations.
import { parseQuantity } from '../../../src/core/quantity.js';
import { formatResourceList, internalCapacity, nodeAllocatable, nodeCapacity, type NodeReservation } from '../../../src/host/allocatable.js';
import type { MachineInfo } from '../../../src/host/machine-info.js';
import { defaultReservation, machine } from '../fakes/machine.js';


describe('capacity and allocatable', () => {
  test('capacity as kubelet reports it: cores, memory and disk in bytes (printed in Ki), pods, hugepages pools', () => {
    expect(formatResourceList(nodeCapacity(machine, 110))).toEqual({
      cpu: '2',
      memory: '24684096Ki',
      'ephemeral-storage': '100Gi',
      pods: '110',
      'hugepages-2Mi': '0',
      'hugepages-1Gi': '0',
    });
  });

  test('default allocatable: memory less 100Mi, ephemeral-storage less float32(10%) of it, the rest as capacity', () => {
    const capacity = nodeCapacity(machine, 110);
    expect(formatResourceList(nodeAllocatable(capacity, defaultReservation))).toEqual({
      cpu: '2',
      memory: '24581696Ki',
      // 100Gi - int64(107374182400 * float64(float32(0.1))) = 107374182400 - 10737418400, not a multiple of 1024.
      'ephemeral-storage': '96636764000',
      pods: '110',
      'hugepages-2Mi': '0',
      'hugepages-1Gi': '0',
    });
  });

  test('systemReserved + kubeReserved + evictionHard are subtracted; pid has no capacity so changes nothing', () => {
    const reservation: NodeReservation = {
      systemReserved: { cpu: parseQuantity('500m'), memory: parseQuantity('1Gi'), pid: parseQuantity('100') },
      kubeReserved: { cpu: parseQuantity('250m'), 'ephemeral-storage': parseQuantity('10Gi') },
      evictionHard: { 'memory.available': { quantity: parseQuantity('100Mi') } },
    };
    const a = formatResourceList(nodeAllocatable(nodeCapacity(machine, 20), reservation));
    expect(a.cpu).toBe('1250m');
    expect(a.memory).toBe(`${24684096 - 1048576 - 102400}Ki`);
    expect(a['ephemeral-storage']).toBe('90Gi');
    expect(a.pods).toBe('20');
    expect(a).not.toHaveProperty('pid');
  });

  test("kubepods' internal capacity adds the machine's task limit as pid, and the pid reservations come off it", () => {
    const capacity = nodeCapacity(machine, 110);
    expect(internalCapacity(capacity, {})).toBe(capacity);
    const internal = internalCapacity(capacity, { maxPID: 32768 });
    expect(formatResourceList(internal).pid).toBe('32768');
    expect(capacity).not.toHaveProperty('pid');
    const reservation: NodeReservation = { systemReserved: { pid: parseQuantity('1000') }, kubeReserved: { pid: parseQuantity('768') }, evictionHard: {} };
    expect(nodeAllocatable(internal, reservation).pid?.value()).toBe(31000n);
  });

  test('a percentage threshold is a share of the capacity; allocatable never goes negative; hugepages leave memory', () => {
    const big: MachineInfo = { ...machine, hugePages: [{ pageSizeKiB: 2048, numPages: 512 }] };
    const capacity = nodeCapacity(big, 110);
    expect(capacity['hugepages-2Mi']!.toString()).toBe('1Gi');
    const reservation: NodeReservation = {
      systemReserved: { cpu: parseQuantity('3') },
      kubeReserved: {},
      evictionHard: { 'memory.available': { percentage: Math.fround(Math.fround(50) / 100) } },
    };
    const a = formatResourceList(nodeAllocatable(capacity, reservation));
    expect(a.cpu).toBe('0');
    expect(a.memory).toBe(`${24684096 / 2 - 1048576}Ki`);
    expect(a['hugepages-2Mi']).toBe('1Gi');
    expect(a['ephemeral-storage']).toBe('100Gi');
  });
});
