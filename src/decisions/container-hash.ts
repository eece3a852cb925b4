// A stable hash of a container's spec: a running container whose hash differs from its spec is replaced.
import { createHash } from 'node:crypto';
import type { V1Container } from '@kubernetes/client-node';
import { canonicalJson } from '../core/canonical-json.js';


export function containerHash(container: V1Container): string {
  return createHash('sha256').update(canonicalJson(container)).digest('hex').slice(0, 8);
}
