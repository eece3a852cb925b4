// kubelet's container hash (pkg/kubelet/container HashContainer, the same in 1.32 and 1.37): FNV-32a of the spew dump of the JSON of the
// container's name and image, the only fields of a running container that may change. The same value kubelet writes in
// io.kubernetes.container.hash, so either agent reads the other's containers as current. A running container whose
// hash differs from its spec is replaced.
import type { V1Container } from '@kubernetes/client-node';

/** Go's json.Marshal of a string: JSON.stringify plus Go's HTML-safe escapes. */
function goJsonString(s: string): string {
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** FNV-1a, 32 bits, over bytes. */
function fnv32a(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}

export function containerHash(container: V1Container): string {
  // json.Marshal of map[string]string{"name", "image"}: keys sorted.
  const json = Buffer.from(`{"image":${goJsonString(container.image ?? '')},"name":${goJsonString(container.name)}}`, 'utf8');
  // dump.ForHash: spew's %#v of a []byte, "([]uint8)[b0 b1 ...]" (capacities disabled).
  const dumped = `([]uint8)[${[...json].join(' ')}]`;
  return fnv32a(Buffer.from(dumped, 'utf8')).toString(16);
}
