// kubelet's instrumented runtime service: every CRI call counted and timed by kubelet's operation_type, its failures
// counted apart (kubelet_runtime_operations_total / _duration_seconds / _errors_total).
import type { NodeMetrics } from '../core/metrics.js';

/** nodelet's CRI client methods and kubelet's operation_type for each. */
const operationTypes: Record<string, string> = {
  version: 'version',
  status: 'status',
  statusInfo: 'status',
  runtimeConfig: 'runtime_config',
  runPodSandbox: 'run_podsandbox',
  stopPodSandbox: 'stop_podsandbox',
  removePodSandbox: 'remove_podsandbox',
  podSandboxStatus: 'podsandbox_status',
  listPodSandbox: 'list_podsandbox',
  createContainer: 'create_container',
  startContainer: 'start_container',
  stopContainer: 'stop_container',
  removeContainer: 'remove_container',
  listContainers: 'list_containers',
  containerStatus: 'container_status',
  execSync: 'exec_sync',
  updateContainerResources: 'update_container',
  updatePodSandboxResources: 'update_podsandbox_resources',
  exec: 'exec',
  attach: 'attach',
  portForward: 'port_forward',
  listContainerStats: 'list_container_stats',
  imageFsInfo: 'image_fs_info',
  listImages: 'list_images',
  imageStatus: 'image_status',
  pullImage: 'pull_image',
  removeImage: 'remove_image',
};

/** The runtime with each CRI call recorded; other members pass through untouched. */
export function instrumentRuntime<T extends object>(runtime: T, metrics: Pick<NodeMetrics, 'runtimeOperation'>, now: () => number = performance.now.bind(performance)): T {
  return new Proxy(runtime, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      const operation = typeof key === 'string' ? operationTypes[key] : undefined;
      if (operation === undefined || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const started = now();
        try {
          const result: unknown = await (value as (...a: unknown[]) => unknown).apply(target, args);
          metrics.runtimeOperation(operation, (now() - started) / 1000, false);
          return result;
        } catch (err) {
          metrics.runtimeOperation(operation, (now() - started) / 1000, true);
          throw err;
        }
      };
    },
  });
}
