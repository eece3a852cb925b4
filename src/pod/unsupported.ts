// Pod fields nodelet cannot honour yet: such a pod is refused (phase Failed) instead of run half right.
import type { V1Pod } from '@kubernetes/client-node';
import type { WaitingReason } from './status.js';
import { unsupportedVolumeFields } from '../volume/unsupported.js';

/** The first unsupported field of a pod, as the reason and message a refused pod reports. */
export function unsupportedPodFields(pod: V1Pod): WaitingReason | undefined {
  const spec = pod.spec;
  const fields: string[] = [];
  if (spec?.ephemeralContainers?.length) fields.push('spec.ephemeralContainers');
  fields.push(...unsupportedVolumeFields(pod));
  const lists = [['spec.initContainers', spec?.initContainers ?? []], ['spec.containers', spec?.containers ?? []]] as const;
  for (const [path, list] of lists) {
    list.forEach((c, i) => {
      if (c.envFrom?.length) fields.push(`${path}[${i}].envFrom`);
      // The prober runs exec, httpGet and tcpSocket probes of regular containers and sidecars (not gRPC);
      // a plain init container runs to completion and cannot be probed.
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
        if (path === 'spec.initContainers' && c.restartPolicy !== 'Always' && c[probe]) fields.push(`${path}[${i}].${probe}`);
        else if (c[probe]?.grpc) fields.push(`${path}[${i}].${probe}.grpc`);
      }
      (c.env ?? []).forEach((e, j) => {
        // fieldRef and resourceFieldRef are the downward API's; the other sources need an API server.
        for (const source of ['configMapKeyRef', 'secretKeyRef'] as const) {
          if (e.valueFrom?.[source]) fields.push(`${path}[${i}].env[${j}].valueFrom.${source}`);
        }
      });
    });
  }
  if (fields.length === 0) return undefined;
  const m = pod.metadata ?? {};
  return {
    reason: 'UnsupportedPodSpec',
    message: `Pod ${m.namespace}/${m.name} uses fields nodelet does not support yet: ${fields.join(', ')}`,
  };
}
