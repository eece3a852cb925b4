// A container's probes as nodelet runs them: the three kinds, their settings with the API defaults, their field paths.
import type { V1Container, V1Probe } from '@kubernetes/client-node';
import type { ProbeType } from '../core/probe-results.js';

/** In kubelet's AddPod order. */
export const probeTypes: readonly ProbeType[] = ['startup', 'readiness', 'liveness'];

/** How kubelet names a probe type in events and logs ("Liveness probe failed: ..."). */
export const probeTitles: Record<ProbeType, string> = { startup: 'Startup', readiness: 'Readiness', liveness: 'Liveness' };

export interface ProbeSettings {
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  successThreshold: number;
  failureThreshold: number;
}

/** The apiserver's SetDefaults_Probe; it also replaces an explicit 0, so 0 here means "the default". */
export const probeDefaults: Omit<ProbeSettings, 'initialDelaySeconds'> = {
  periodSeconds: 10,
  timeoutSeconds: 1,
  successThreshold: 1,
  failureThreshold: 3,
};

export function probeOf(container: V1Container, type: ProbeType): V1Probe | undefined {
  switch (type) {
    case 'startup':
      return container.startupProbe;
    case 'readiness':
      return container.readinessProbe;
    case 'liveness':
      return container.livenessProbe;
  }
}

export function probeSettings(probe: V1Probe): ProbeSettings {
  return {
    initialDelaySeconds: probe.initialDelaySeconds ?? 0,
    periodSeconds: probe.periodSeconds || probeDefaults.periodSeconds,
    timeoutSeconds: probe.timeoutSeconds || probeDefaults.timeoutSeconds,
    successThreshold: probe.successThreshold || probeDefaults.successThreshold,
    failureThreshold: probe.failureThreshold || probeDefaults.failureThreshold,
  };
}

/** The manifest field of a container's probe, e.g. `spec.containers[0].livenessProbe`. */
/** The probe's manifest field, under its container's field (e.g. `spec.initContainers[0]`). */
export function probeField(containerField: string, type: ProbeType): string {
  return `${containerField}.${type}Probe`;
}
