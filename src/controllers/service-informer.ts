// kubelet's Service informer: a list + watch of every Service of the cluster (RBAC's system:node role allows it), the
// source of the pods' service environment variables.
import type { V1Service } from '@kubernetes/client-node';
import type { ServiceLister } from '../core/api-objects.js';
import type { Logger } from '../core/log.js';
import { Reflector, type ListWatchClient, type ReflectorOptions } from '../kubeapi/reflector.js';

export interface ServiceInformerOptions {
  client: ListWatchClient;
  log: Logger;
  /** Reflector timing, for tests. */
  reflector?: Pick<ReflectorOptions<V1Service>, 'backoff' | 'clock' | 'random' | 'watchTimeoutSeconds' | 'listTimeoutMs'>;
}

export class ServiceInformer implements ServiceLister {
  private readonly reflector: Reflector<V1Service>;

  constructor(opts: ServiceInformerOptions) {
    this.reflector = new Reflector<V1Service>({
      ...opts.reflector,
      client: opts.client,
      path: '/api/v1/services',
      what: 'services',
      log: opts.log,
      // The reflector keeps the set; readers ask for it when a container is created.
      onChange: () => {},
    });
  }

  hasSynced(): boolean {
    return this.reflector.hasSynced;
  }

  list(): V1Service[] {
    return this.reflector.list();
  }

  /** Lists and watches until the signal aborts (relists on 410, reconnects with back-off). */
  run(signal: AbortSignal): Promise<void> {
    return this.reflector.run(signal);
  }
}
