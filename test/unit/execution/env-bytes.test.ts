// Env values carry bytes: UTF-8 text reads as it is, any other byte survives the string round trip exactly.
import { envString, envValueBytes } from '../../../src/execution/env-bytes.js';
import { expandVars } from '../../../src/core/env-expansion.js';

test.each([
  ['ascii', Buffer.from('hello')],
  ['utf-8 text', Buffer.from('größe 😀 ✓')],
  ['lone continuation and invalid lead bytes', Buffer.from([0x61, 0x80, 0xff, 0xfe, 0x62])],
  ['a truncated sequence at the end', Buffer.from([0x41, 0xe2, 0x82])],
  ['overlong and surrogate encodings', Buffer.from([0xc0, 0xaf, 0xe0, 0x80, 0xaf, 0xed, 0xa0, 0x80, 0xf4, 0x90, 0x80, 0x80])],
  ['NUL and high bytes mixed with text', Buffer.from([0x00, 0xc3, 0xa9, 0xc3, 0x28, 0xf0, 0x9f, 0x98, 0x80, 0xf0])],
  ['every byte', Buffer.from(Array.from({ length: 256 }, (_, i) => i))],
])('%s round-trips', (_name, bytes) => {
  expect(envValueBytes(envString(bytes)).equals(bytes)).toBe(true);
});

test('valid UTF-8 reads as text; an invalid byte becomes a lone surrogate only', () => {
  expect(envString(Buffer.from('größe'))).toBe('größe');
  expect(envString(Buffer.from([0x61, 0xff, 0xc3, 0xa9]))).toBe('a\udcffé');
  // A real surrogate pair (an emoji) is text, not an escape.
  expect(envValueBytes('\ud83d\ude00')).toEqual(Buffer.from('😀'));
});

test('$(VAR) expansion keeps the bytes of a binary value, as kubelet concatenates Go strings', () => {
  const secret = envString(Buffer.from([0xde, 0xad, 0xbe, 0xef]));
  const expanded = expandVars('x=$(S)!', new Map([['S', secret]]));
  expect(envValueBytes(expanded)).toEqual(Buffer.from([0x78, 0x3d, 0xde, 0xad, 0xbe, 0xef, 0x21]));
});
