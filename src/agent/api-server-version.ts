// The API server's version, read at start in cluster mode (GET /version, before the Node is registered or a client
// certificate requested): the Kubernetes minor nodelet serves, or the refusal of an unsupported one (core/kube-minor.ts).
import { ApiError, type KubeClient } from '../kubeapi/client.js';
import { kubeMinorFor, UnsupportedApiServerError, type KubeMinor, type ServerVersionInfo } from '../core/kube-minor.js';
import { systemClock, type Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { AgentConfigError } from './agent-config.js';
import { kubeletVersion, nodeletVersion } from './version.js';

const firstRetryMs = 1_000;
const maxRetryMs = 30_000;

/**
 * The minor nodelet serves for the API server `client` talks to. An API server not answering yet (down, starting,
 * 5xx, 429) is asked again with back-off until the signal aborts; an unsupported version, or a refusal of the request
 * (another 4xx), stops the agent with an AgentConfigError saying so.
 */
export async function readApiServerMinor(client: Pick<KubeClient, 'request' | 'server'>, log: Logger, signal: AbortSignal, clock: Pick<Clock, 'sleep'> = systemClock): Promise<KubeMinor> {
  for (let stepMs = firstRetryMs; ; stepMs = Math.min(stepMs * 2, maxRetryMs)) {
    try {
      const info = await client.request<ServerVersionInfo>({ method: 'GET', path: '/version', timeoutMs: 10_000, signal });
      const minor = kubeMinorFor(info, client.server, nodeletVersion());
      log.info({ server: client.server, apiServerVersion: info.gitVersion, kubeletVersion: kubeletVersion(minor) }, "Serving the API server's Kubernetes minor");
      return minor;
    } catch (err) {
      if (err instanceof UnsupportedApiServerError) throw new AgentConfigError(err.message, { cause: err });
      if (err instanceof ApiError && err.code >= 400 && err.code < 500 && err.code !== 429) {
        throw new AgentConfigError(`cannot read the version of the API server at ${client.server} (GET /version): ${err.message}`, { cause: err });
      }
      if (signal.aborted) throw err;
      log.warn({ err, server: client.server, retryInMs: stepMs }, "Cannot read the API server's version yet; the node starts once it answers");
      await clock.sleep(stepMs, signal);
    }
  }
}
