// A ClusterView over plain objects for the authentication/authorization unit tests.
import type { ClusterView } from '../types.js';

export class FakeView implements ClusterView {
  private readonly objects = new Map<string, Record<string, unknown>>();

  add(resource: string, obj: Record<string, unknown>): this {
    const meta = obj['metadata'] as { namespace?: string; name: string };
    this.objects.set(`${resource}/${meta.namespace ?? ''}/${meta.name}`, obj);
    return this;
  }

  get(resource: string, namespace: string, name: string): Record<string, unknown> | undefined {
    return this.objects.get(`${resource}/${namespace}/${name}`);
  }

  list(resource: string, namespace?: string): Record<string, unknown>[] {
    return [...this.objects.entries()]
      .filter(([key]) => key.startsWith(`${resource}/`) && (namespace === undefined || key.startsWith(`${resource}/${namespace}/`)))
      .map(([, obj]) => obj);
  }
}
