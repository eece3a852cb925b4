// API pod source: the pods bound to this node (list + watch with spec.nodeName), split into pods to run and mirror pods.
import type { V1Pod } from '@kubernetes/client-node';
import { isMirrorPod } from '../core/config-annotations.js';
import type { Logger } from '../core/log.js';
import { Reflector, type ListWatchClient, type ReflectorOptions } from '../kubeapi/reflector.js';

export interface ApiPodSourceOptions {
  client: ListWatchClient;
  nodeName: string;
  log: Logger;
  /**
   * The complete set after the first list and after every change: `pods` are the pods to run (mirror pods are not
   * pods to run), `mirrorPods` the API copies of static pods. Must not block.
   */
  onPods: (pods: V1Pod[], mirrorPods: V1Pod[]) => void;
  /** Test seams of the reflector (back-off, sleeping, watch timeout). */
  reflector?: Pick<ReflectorOptions<V1Pod>, 'backoff' | 'clock' | 'random' | 'watchTimeoutSeconds'>;
}

export class ApiPodSource {
  private readonly reflector: Reflector<V1Pod>;

  constructor(opts: ApiPodSourceOptions) {
    this.reflector = new Reflector<V1Pod>({
      ...opts.reflector,
      client: opts.client,
      path: '/api/v1/pods',
      fieldSelector: `spec.nodeName=${opts.nodeName}`,
      what: `pods bound to node ${opts.nodeName}`,
      log: opts.log,
      onChange: (all) => {
        // The field selector is the server's promise; a pod moved elsewhere is never ours to run.
        const bound = all.filter((p) => p.spec?.nodeName === opts.nodeName);
        opts.onPods(bound.filter((p) => !isMirrorPod(p)), bound.filter(isMirrorPod));
      },
    });
  }

  /** Whether the first list has been reported. */
  get hasSynced(): boolean {
    return this.reflector.hasSynced;
  }

  run(signal: AbortSignal): Promise<void> {
    return this.reflector.run(signal);
  }
}
