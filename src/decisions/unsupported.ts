// Pod fields nodelet cannot honour yet: such a pod is refused (phase Failed) instead of run half right.
import type { V1Pod } from '@kubernetes/client-node';
import type { WaitingReason } from './status.js';
import { unsupportedVolumeFields } from '../volume/unsupported.js';

/**
 * The unsupported fields of a pod, as the reason and message a refused pod reports. (Fields that read API objects
 * need no check here: standalone, every pod is static, and the file source refuses static pods that reference any.)
 */
export function unsupportedPodFields(pod: V1Pod): WaitingReason | undefined {
  const spec = pod.spec;
  const fields: string[] = [];
  fields.push(...unsupportedVolumeFields(pod));
  // Pod-level resources (beta, on since 1.34) would size the pod's cgroup and its containers' limits; not built yet.
  if (spec?.resources && (Object.keys(spec.resources.requests ?? {}).length > 0 || Object.keys(spec.resources.limits ?? {}).length > 0)) fields.push('spec.resources');
  const lists = [['spec.initContainers', spec?.initContainers ?? []], ['spec.containers', spec?.containers ?? []]] as const;
  for (const [path, list] of lists) {
    list.forEach((c, i) => {
      // The prober runs the probes of regular containers and sidecars; a plain init container runs to completion and
      // cannot be probed.
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
        if (path === 'spec.initContainers' && c.restartPolicy !== 'Always' && c[probe]) fields.push(`${path}[${i}].${probe}`);
      }
    });
  }
  if (fields.length === 0) return undefined;
  const m = pod.metadata ?? {};
  return { reason: 'UnsupportedPodSpec', message: `Pod ${m.namespace}/${m.name} uses fields nodelet does not support yet: ${fields.join(', ')}` };
}
