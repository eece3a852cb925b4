// Probes nodelet runs (regular containers and sidecars) are accepted; gRPC probes are refused rather than silently skipped.
import type { V1Pod } from '@kubernetes/client-node';
import { unsupportedPodFields } from '../../../src/decisions/unsupported.js';

const pod = (spec: V1Pod['spec']): V1Pod => ({ metadata: { name: 'p', namespace: 'default', uid: 'u' }, spec });

describe('unsupportedPodFields and probes', () => {
  test('exec, httpGet and tcpSocket probes of regular containers are supported', () => {
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
          ],
        }),
      ),
    ).toBeUndefined();
  });

  test('a sidecar\'s probes are supported, a gRPC probe is named as unsupported', () => {
    const r = unsupportedPodFields(
      pod({
        initContainers: [{ name: 'proxy', restartPolicy: 'Always', readinessProbe: { tcpSocket: { port: 80 } } }],
        containers: [{ name: 'app', livenessProbe: { grpc: { port: 9000 } } }],
      }),
    );
    expect(r?.reason).toBe('UnsupportedPodSpec');
    expect(r?.message).not.toContain('spec.initContainers[0]');
    expect(r?.message).toContain('spec.containers[0].livenessProbe.grpc');
  });
});
