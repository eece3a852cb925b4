// Probe results per container ID and probe type (kubelet's results managers), and what a result means while none is known.
import type { ProbeResult, ProbeType } from '../core/probe-results.js';

/**
 * What a worker publishes for a container it has not probed yet, as kubelet's worker does:
 * not ready until a readiness probe succeeds, alive until a liveness probe fails, not started until
 * a startup probe succeeds.
 */
export function initialResult(type: ProbeType): ProbeResult {
  switch (type) {
    case 'readiness':
      return 'failure';
    case 'liveness':
      return 'success';
    case 'startup':
      return 'unknown';
  }
}

export class ProbeResultStore {
  private readonly byType = new Map<ProbeType, Map<string, ProbeResult>>();

  get(type: ProbeType, containerId: string): ProbeResult | undefined {
    return this.byType.get(type)?.get(containerId);
  }

  /**
   * Records a result; true when it changes what the pod lifecycle sees. A container without a
   * result reads as the type's initial result, so publishing that first changes nothing.
   */
  set(type: ProbeType, containerId: string, result: ProbeResult): boolean {
    let results = this.byType.get(type);
    if (!results) this.byType.set(type, (results = new Map()));
    const before = results.get(containerId) ?? initialResult(type);
    results.set(containerId, result);
    return before !== result;
  }

  remove(type: ProbeType, containerId: string): void {
    this.byType.get(type)?.delete(containerId);
  }
}
