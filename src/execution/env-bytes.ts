// Env values are bytes, not text: a Secret's data (and an env file) may hold any bytes, and kubelet 1.37 hands them to the
// runtime as they are (CRI KeyValue.value became `bytes`, kubernetes#139132). nodelet keeps env values as JS strings,
// so $(VAR) expansion works on them, with every byte that is not part of valid UTF-8 carried as the lone surrogate
// U+DC80..U+DCFF (PEP 383's "surrogateescape"); envValueBytes turns such a string back into the exact bytes.
// (containerd then writes the environment into the OCI spec as JSON, where Go makes each such byte U+FFFD, as it does
// for kubelet's.)
import { isUtf8 } from 'node:buffer';

const ESCAPE_BASE = 0xdc00;

/** The length of the valid UTF-8 sequence at `i`, or 0 when the byte there starts none (RFC 3629, as Go's utf8). */
function sequenceLength(b: Buffer, i: number): number {
  const lead = b[i]!;
  const cont = (j: number, lo = 0x80, hi = 0xbf) => i + j < b.length && b[i + j]! >= lo && b[i + j]! <= hi;
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return cont(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    // No overlong forms (E0 A0..), no UTF-16 surrogates (ED ..9F).
    const [lo, hi] = lead === 0xe0 ? [0xa0, 0xbf] : lead === 0xed ? [0x80, 0x9f] : [0x80, 0xbf];
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    const [lo, hi] = lead === 0xf0 ? [0x90, 0xbf] : lead === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf];
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/** Bytes as an env value string: UTF-8 text as it reads, any other byte escaped so envValueBytes restores it. */
export function envString(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  let out = '';
  let start = 0;
  for (let i = 0; i < bytes.length; ) {
    const n = sequenceLength(bytes, i);
    if (n > 0) {
      i += n;
      continue;
    }
    out += bytes.toString('utf8', start, i) + String.fromCharCode(ESCAPE_BASE + bytes[i]!);
    i++;
    start = i;
  }
  return out + bytes.toString('utf8', start);
}

/** The bytes an env value string stands for (the inverse of envString): what goes into the CRI KeyValue. */
export function envValueBytes(value: string): Buffer {
  if (!/[\udc80-\udcff]/.test(value)) return Buffer.from(value, 'utf8');
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    // A lone low surrogate: not preceded by a high one.
    if (c >= 0xdc80 && c <= 0xdcff && !(i > 0 && value.charCodeAt(i - 1) >= 0xd800 && value.charCodeAt(i - 1) <= 0xdbff)) {
      parts.push(Buffer.from(value.slice(start, i), 'utf8'), Buffer.of(c - ESCAPE_BASE));
      start = i + 1;
    }
  }
  parts.push(Buffer.from(value.slice(start), 'utf8'));
  return Buffer.concat(parts);
}
