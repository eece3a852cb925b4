// Runs a container's postStart and preStop hooks (exec, httpGet, sleep) the way kubelet's handler runner does.
import type { V1Container, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../core/clock.js';
import type { RuntimeService } from '../cri/types.js';
import { runProbe } from '../prober/run-probe.js';
import { probeUserAgent } from '../prober/http-probe.js';
import type { KubeMinor } from '../core/kube-minor.js';

export type HookName = 'PostStart' | 'PreStop';

export class HookError extends Error {
  override readonly name = 'HookError';
}

export interface HookContext {
  pod: V1Pod;
  /** The container spec (for a container known only from the runtime: name and ports restored from annotations). */
  container: V1Container;
  containerId: string;
  podIPs: string[];
  hostIPs: string[];
  /** The node's pod network subnets: an httpGet or tcpSocket hook may name another pod of this node as its host. */
  podSubnets: string[];
  /** The Kubernetes minor the node serves: an httpGet hook's User-Agent names it. */
  kubeMinor: KubeMinor;
  runtime: Pick<RuntimeService, 'execSync'>;
  /** How long the hook may take. */
  timeoutSeconds: number;
  /** A sleep hook waits on it. */
  clock: Pick<Clock, 'sleep'>;
  signal?: AbortSignal;
}

function podDescription(pod: V1Pod): string {
  const m = pod.metadata ?? {};
  return `${m.name}_${m.namespace}(${m.uid})`;
}

/** Runs the hook; throws a HookError with kubelet's message when it fails. */
export async function runLifecycleHook(hook: HookName, handler: V1LifecycleHandler, ctx: HookContext): Promise<void> {
  const where = `for Container "${ctx.container.name}" in Pod "${podDescription(ctx.pod)}"`;
  if (handler.sleep) {
    await ctx.clock.sleep(Math.min(handler.sleep.seconds, ctx.timeoutSeconds) * 1000, ctx.signal);
    return;
  }
  const kind = handler.exec ? 'Exec' : handler.httpGet ? 'HTTP' : handler.tcpSocket ? 'TCP' : undefined;
  if (!kind) throw new HookError(`${hook} hook ${where} has no handler`);
  const what = handler.exec ? `[${(handler.exec.command ?? []).join(' ')}]` : handler.httpGet ? handler.httpGet.path || '/' : '';
  try {
    const outcome = await runProbe(
      { exec: handler.exec, httpGet: handler.httpGet, tcpSocket: handler.tcpSocket, timeoutSeconds: Math.max(1, ctx.timeoutSeconds) },
      {
        container: ctx.container,
        containerId: ctx.containerId,
        field: `lifecycle.${hook === 'PostStart' ? 'postStart' : 'preStop'}`,
        podIPs: ctx.podIPs,
        hostIPs: ctx.hostIPs,
        podSubnets: ctx.podSubnets,
        runtime: ctx.runtime,
        userAgent: probeUserAgent('lifecycle', ctx.kubeMinor),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      },
    );
    if (outcome.result === 'failure') throw new HookError(`${kind} lifecycle hook (${what}) ${where} failed - error: ${outcome.output.trim()}`);
  } catch (err) {
    if (err instanceof HookError) throw err;
    throw new HookError(`${kind} lifecycle hook (${what}) ${where} failed - error: ${(err as Error).message}`, { cause: err });
  }
}
