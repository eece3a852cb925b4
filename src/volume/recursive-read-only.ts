// Recursive read-only mounts (RecursiveReadOnlyMounts, GA in 1.33): a read-only volumeMount whose submounts are
// read-only too, when the pod's runtime handler can make them so (CRI RuntimeHandlerFeatures.recursive_read_only_mounts:
// containerd with runc's "rro" mount option on a kernel of 5.12 or later). Pure, as kubelet's resolveRecursiveReadOnly.
import type { V1VolumeMount } from '@kubernetes/client-node';
import type { RuntimeHandler } from '../cri/types.js';

/**
 * kubelet's runtimeHandlerSupportsRecursiveReadOnlyMounts: what the runtime's Status says of the pod's handler (nodelet
 * runs every pod on the default one, named ''); false while the runtime has listed no handler.
 */
export function handlerSupportsRecursiveReadOnly(handlers: readonly RuntimeHandler[] | undefined, handler = ''): boolean {
  return handlers?.find((h) => h.name === handler)?.recursiveReadOnlyMounts ?? false;
}

/**
 * kubelet's resolveRecursiveReadOnly: whether the mount is made recursively read-only. Disabled (or unset) never;
 * IfPossible when the handler supports it; Enabled must be, or it is an error (kubelet's words), as is either mode on a
 * mount that is not read-only or that propagates.
 */
export function resolveRecursiveReadOnly(m: V1VolumeMount, handlerSupports: boolean): boolean {
  const mode = m.recursiveReadOnly;
  if (mode === undefined || mode === 'Disabled') return false;
  if (!m.readOnly) throw new Error(`volume "${m.name}" requested recursive read-only mode, but it is not read-only`);
  if (m.mountPropagation !== undefined && m.mountPropagation !== 'None') {
    throw new Error(`volume "${m.name}" requested recursive read-only mode, but it is not compatible with propagation "${m.mountPropagation}"`);
  }
  switch (mode) {
    case 'IfPossible':
      return handlerSupports;
    case 'Enabled':
      if (!handlerSupports) throw new Error(`volume "${m.name}" requested recursive read-only mode, but it is not supported by the runtime`);
      return true;
    default:
      throw new Error(`unknown recursive read-only mode "${mode}"`);
  }
}

/**
 * kubelet's status.volumeMounts[].recursiveReadOnly of a read-only mount: Enabled when the mount is made recursively
 * read-only, else Disabled (also when the request cannot be met: the container then does not start).
 */
export function recursiveReadOnlyStatus(m: V1VolumeMount, handlerSupports: boolean): 'Enabled' | 'Disabled' {
  try {
    return resolveRecursiveReadOnly(m, handlerSupports) ? 'Enabled' : 'Disabled';
  } catch {
    return 'Disabled';
  }
}
