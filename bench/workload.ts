// The pods the bench starts: the start-up pod (the same for the floor and nodelet) and the probe-load pod, as manifests.
import type { V1PodSpec } from '@kubernetes/client-node';

export const busybox = 'localhost/nodelet/busybox:1.35';
/** Node name given to the agent: static pods are named `<name>-nodelet-bench`. */
export const benchNode = 'nodelet-bench';
/** Every bench pod (floor and nodelet) lives in this namespace, so cleanup finds exactly the bench's runtime objects. */
export const benchNamespace = 'nodelet-bench';
/** The label kubelet (and nodelet) gives CRI sandboxes and containers with the pod's namespace: it finds the bench's. */
export const podNamespaceLabel = 'io.kubernetes.pod.namespace';
/** The CRI filter of the bench's sandboxes and containers. */
export const benchPods = { labelSelector: { [podNamespaceLabel]: benchNamespace } };

/** The same pod for the floor and for nodelet: busybox sleeping, leaving promptly on SIGTERM so teardown is quick. */
export function podSpec(): V1PodSpec {
  return {
    terminationGracePeriodSeconds: 5,
    containers: [{
      name: 'main',
      image: busybox,
      command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"],
    }],
  };
}

export function manifestText(name: string): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: benchNamespace, labels: { app: 'nodelet-bench' } }, spec: podSpec() }, null, 2) + '\n';
}

export const probePeriods = { readiness: 2, liveness: 5 };

/**
 * A probe-load pod: busybox httpd serving /www (its shell leaves at once on SIGTERM), an exec readiness probe every 2 s
 * and an httpGet liveness probe every 5 s against it.
 */
export function probeManifestText(name: string): string {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: benchNamespace, labels: { app: 'nodelet-bench-probes' } },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{
        name: 'web',
        image: busybox,
        command: ['sh', '-c', "mkdir -p /www && echo ok > /www/index.html || exit 1; trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"],
        ports: [{ containerPort: 8080 }],
        readinessProbe: { exec: { command: ['cat', '/www/index.html'] }, periodSeconds: probePeriods.readiness },
        livenessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: probePeriods.liveness },
      }],
    },
  };
  return JSON.stringify(pod, null, 2) + '\n';
}
