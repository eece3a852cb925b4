// What one probe run yields, and the error of a run that could not be judged at all.

/**
 * kubelet's probe.Result with the run's output: `warning` counts as success but is reported
 * (e.g. an HTTP redirect to another host that was not followed).
 */
export interface ProbeOutcome {
  result: 'success' | 'failure' | 'warning';
  output: string;
}

/**
 * A run that errored (named port missing, host refused, runtime call failed): kubelet reports it
 * (kubelet 1.37: "<Type> probe errored and resulted in unknown state: <error>") and throws the run away, so it counts toward no threshold.
 */
export class ProbeError extends Error {
  override readonly name = 'ProbeError';

  constructor(
    message: string,
    /** The manifest field at fault, when the probe's own spec is the cause. */
    readonly field?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** kubelet keeps at most 10 KiB of a probe's output (exec output, HTTP body). */
export const maxProbeOutputBytes = 10 * 1024;
