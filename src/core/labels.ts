// The label and annotation keys kubelet puts on CRI sandboxes and containers; nodelet adopts runtime objects by them.
export const podNameLabel = 'io.kubernetes.pod.name';
export const podNamespaceLabel = 'io.kubernetes.pod.namespace';
export const podUidLabel = 'io.kubernetes.pod.uid';
export const containerNameLabel = 'io.kubernetes.container.name';

export const containerHashAnnotation = 'io.kubernetes.container.hash';
export const containerRestartCountAnnotation = 'io.kubernetes.container.restartCount';
export const containerTerminationMessagePathAnnotation = 'io.kubernetes.container.terminationMessagePath';
export const containerTerminationMessagePolicyAnnotation = 'io.kubernetes.container.terminationMessagePolicy';
export const containerPortsAnnotation = 'io.kubernetes.container.ports';
export const containerPreStopHandlerAnnotation = 'io.kubernetes.container.preStopHandler';
export const podTerminationGracePeriodAnnotation = 'io.kubernetes.pod.terminationGracePeriod';

/** containerd's namespace for what its CRI plugin runs (its task service and its shims' arguments name it). */
export const CONTAINERD_CRI_NAMESPACE = 'k8s.io';
