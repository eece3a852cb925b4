// Probes nodelet runs (regular containers and sidecars, every handler) are accepted; a plain init container's probe is refused rather than silently skipped.
import type { V1Pod } from '@kubernetes/client-node';
import { unsupportedPodFields } from '../../../src/decisions/unsupported.js';

const pod = (spec: V1Pod['spec']): V1Pod => ({ metadata: { name: 'p', namespace: 'default', uid: 'u' }, spec });

describe('unsupportedPodFields and probes', () => {
  test('exec, httpGet, tcpSocket and grpc probes of regular containers are supported', () => {
    expect(
      unsupportedPodFields(
        pod({
          containers: [
            {
              name: 'app',
              livenessProbe: { exec: { command: ['true'] } },
              readinessProbe: { httpGet: { port: 80 } },
              startupProbe: { tcpSocket: { port: 80 } },
            },
            { name: 'api', livenessProbe: { grpc: { port: 9000, service: 'api' } } },
          ],
        }),
      ),
    ).toBeUndefined();
  });

  test("a sidecar's probes are supported, a plain init container's probe is named as unsupported", () => {
    const r = unsupportedPodFields(
      pod({
        initContainers: [
          { name: 'proxy', restartPolicy: 'Always', readinessProbe: { tcpSocket: { port: 80 } } },
          { name: 'setup', livenessProbe: { grpc: { port: 9000 } } },
        ],
        containers: [{ name: 'app' }],
      }),
    );
    expect(r?.reason).toBe('UnsupportedPodSpec');
    expect(r?.message).not.toContain('spec.initContainers[0]');
    expect(r?.message).toContain('spec.initContainers[1].livenessProbe');
  });
});
