// What a probe concluded about a container, as the decisions read it: the prober produces these, compute-actions and status consume them.

export type ProbeType = 'startup' | 'readiness' | 'liveness';

export type ProbeResult = 'success' | 'failure' | 'unknown';

/** Read access for the pod lifecycle: undefined when no worker has published for the container. */
export type ProbeResultLookup = (containerId: string) => ProbeResult | undefined;
