// Pod fields nodelet cannot honour yet: such a pod is refused (phase Failed) instead of run half right.
import type { V1Pod } from '@kubernetes/client-node';
import type { WaitingReason } from './status.js';
import { unsupportedVolumeFields, volumeFieldsNeedingApiServer } from '../volume/unsupported.js';

/** Fields that need an API server: configMap, secret and projected volumes, envFrom, configMapKeyRef, secretKeyRef. */
function fieldsNeedingApiServer(pod: V1Pod): string[] {
  const fields = volumeFieldsNeedingApiServer(pod);
  const lists = [['spec.initContainers', pod.spec?.initContainers ?? []], ['spec.containers', pod.spec?.containers ?? []]] as const;
  for (const [path, list] of lists) {
    list.forEach((c, i) => {
      if (c.envFrom?.length) fields.push(`${path}[${i}].envFrom`);
      (c.env ?? []).forEach((e, j) => {
        for (const source of ['configMapKeyRef', 'secretKeyRef'] as const) {
          if (e.valueFrom?.[source]) fields.push(`${path}[${i}].env[${j}].valueFrom.${source}`);
        }
      });
    });
  }
  return fields;
}

/**
 * The unsupported fields of a pod, as the reason and message a refused pod reports. Without an API server
 * (`apiServer` false: standalone mode) the fields that read API objects are refused too, saying so.
 */
export function unsupportedPodFields(pod: V1Pod, opts: { apiServer: boolean } = { apiServer: false }): WaitingReason | undefined {
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
  const needApi = opts.apiServer ? [] : fieldsNeedingApiServer(pod);
  if (fields.length === 0 && needApi.length === 0) return undefined;
  const m = pod.metadata ?? {};
  const parts = [
    ...(fields.length ? [`uses fields nodelet does not support yet: ${fields.join(', ')}`] : []),
    ...(needApi.length ? [`uses fields that need an API server (nodelet runs standalone; start it with --kubeconfig): ${needApi.join(', ')}`] : []),
  ];
  return { reason: 'UnsupportedPodSpec', message: `Pod ${m.namespace}/${m.name} ${parts.join('; and ')}` };
}
