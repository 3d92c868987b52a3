import { randomFillSync } from "node:crypto";

/**
 * Random (version 4) UUIDs for the calls that come without a messageId, as crypto.randomUUID
 * makes them, from the same source (randomFillSync, drawn 256 ids at a time as randomUUID draws
 * 128). randomUUID returns its text as a string built of 20 joined pieces, which the encoder must
 * then flatten to read it: together about a twentieth of what a whole call costs. Here the text is
 * written as bytes and read out as one flat string.
 */

const UUID_BYTES = 16;
const pool = Buffer.allocUnsafeSlow(UUID_BYTES * 256);
let poolOffset = pool.length;
const text = Buffer.allocUnsafeSlow(36);
const HEX_DIGITS = Buffer.from("0123456789abcdef", "latin1");
const DASH = 0x2d;

/** A new random UUID, "xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx" in lower case (RFC 9562, version 4). */
export function newMessageId(): string {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  let out = 0;
  for (let index = 0; index < UUID_BYTES; index++) {
    let byte = pool[poolOffset + index]!;
    if (index === 6)
      byte = (byte & 0x0f) | 0x40; // version 4
    else if (index === 8) byte = (byte & 0x3f) | 0x80; // variant 10
    text[out++] = HEX_DIGITS[byte >>> 4]!;
    text[out++] = HEX_DIGITS[byte & 0x0f]!;
    if (index === 3 || index === 5 || index === 7 || index === 9) text[out++] = DASH;
  }
  poolOffset += UUID_BYTES;
  return text.toString("latin1", 0, 36);
}
