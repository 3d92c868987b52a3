import { isUtf8 } from "node:buffer";

/**
 * The size of a call's JSON form, computed from its protobuf bytes without
 * building the JSON.
 *
 * The limits (32 KB a call, 500 KB a batch) are defined on the UTF-8 size of
 * `JSON.stringify(protoCallToJson(call))`. The scanner adds up that size
 * piece by piece while it walks the call once. The result is an upper bound
 * that is exact except where noted, derived as follows:
 *
 * - Objects: `{` + members joined by `,` + `}`; a member is `"key":value`, so
 *   it costs the key's string size + 1 for the colon + the value's size, plus
 *   1 for the comma before every member but the first. An empty object is 2.
 *   Arrays likewise with `[`, `]` and no keys.
 * - Strings (keys and values): JSON.stringify copies every character except
 *   `"` and `\` (escaped as 2 characters), the control characters U+0000 to
 *   U+001F (`\b \t \n \f \r` as 2 characters, the others as `\u00XX`, 6), and
 *   lone surrogates (6). On valid UTF-8 (the only kind passed through; other
 *   text takes the exact path) there are no lone surrogates, and every other
 *   character is re-encoded to exactly its original UTF-8 bytes. So the size
 *   is: 2 quotes + the UTF-8 bytes + for each escaped byte 1 or 5 more. Exact.
 *   (At most 6 bytes per input byte, the worst case being `\u00XX`.)
 * - Numbers (google.protobuf.Value number_value, a double in 9 wire bytes):
 *   NaN and ±Infinity print as `null` (4). An integer below 1e21 prints as its
 *   digits, plus 1 for a minus sign (-0 prints as `0`): exact. Any other double
 *   is bounded by 25 characters: the shortest round-trip form has at most 17
 *   significant digits, and the longest layout Number#toString can choose is
 *   `-0.00000ddddddddddddddddd` (sign, "0.", 5 zeros, 17 digits = 25); the
 *   exponent form is at most `-d.dddddddddddddddde-308` (24) and the plain
 *   forms at most 22 (`-` and 21 digits). This is the only inexact part.
 * - `null` 4, `true` 4, `false` 5: exact.
 * - A key that appears twice in one Struct is kept once by the decoder (the
 *   last value wins) but counted twice here, which only makes the bound larger.
 *   What the decoder drops or changes otherwise (a map entry without a value,
 *   a Value without a kind) makes the call irregular, and an irregular call is
 *   measured exactly instead; text that is not UTF-8 is refused.
 * - Timestamps are converted to their ISO text anyway, so their size is exact.
 *
 * Where the bound is over a limit, the caller measures the exact size instead
 * (full decode + JSON.stringify), so a bound never refuses a valid call.
 */

/** Extra bytes JSON.stringify adds when it escapes a byte of UTF-8 text; 0 for bytes it copies. */
const ESCAPE_EXTRA = new Uint8Array(256);
for (let byte = 0; byte < 0x20; byte++) ESCAPE_EXTRA[byte] = 5; // \u00XX
for (const char of '"\\\b\t\n\f\r') ESCAPE_EXTRA[char.charCodeAt(0)] = 1; // \" \\ \b \t \n \f \r

/** Marks text that is not valid UTF-8, which the fast path does not pass through. */
export const INVALID_UTF8 = -1;

/**
 * Size of the JSON string (quotes included) of the UTF-8 text in
 * buf[start, end), or INVALID_UTF8.
 */
export function jsonStringSize(buf: Buffer, start: number, end: number): number {
  let extra = 0;
  let highBits = 0;
  let index = start;
  // Four bytes a round: nearly every byte of a call is in a string, so this loop is much of a call's scan.
  for (; index + 4 <= end; index += 4) {
    const a = buf[index]!;
    const b = buf[index + 1]!;
    const c = buf[index + 2]!;
    const d = buf[index + 3]!;
    extra += ESCAPE_EXTRA[a]! + ESCAPE_EXTRA[b]! + ESCAPE_EXTRA[c]! + ESCAPE_EXTRA[d]!;
    highBits |= a | b | c | d;
  }
  for (; index < end; index++) {
    const byte = buf[index]!;
    extra += ESCAPE_EXTRA[byte]!;
    highBits |= byte;
  }
  // Only non-ASCII text can be invalid UTF-8; the native check is worth its call only then.
  if (highBits >= 0x80 && !isUtf8(buf.subarray(start, end))) return INVALID_UTF8;
  return end - start + 2 + extra;
}

/** The most characters Number#toString produces for a finite double (see above). */
export const MAX_NUMBER_JSON_SIZE = 25;
export const NULL_JSON_SIZE = 4;
export const TRUE_JSON_SIZE = 4;
export const FALSE_JSON_SIZE = 5;

/** Size of a number in JSON: exact for integers below 1e21 and non-finite numbers, otherwise the 25-character bound. */
export function jsonNumberSize(value: number): number {
  if (!Number.isFinite(value)) return NULL_JSON_SIZE;
  if (!Number.isInteger(value)) return MAX_NUMBER_JSON_SIZE;
  const magnitude = Math.abs(value);
  if (magnitude >= 1e21) return MAX_NUMBER_JSON_SIZE;
  let digits = 1;
  // Powers of ten up to 1e21 are exact doubles, so the comparisons are exact.
  for (let power = 10; magnitude >= power; power *= 10) digits++;
  return value < 0 ? digits + 1 : digits;
}

/** Size of one object member `"key":value` (with a key of `keySize` JSON bytes, quotes included), without its comma. */
export function memberSize(keySize: number, valueSize: number): number {
  return keySize + 1 + valueSize;
}

/** Size of a JSON object or array with these members' total size: brackets plus the commas between members. */
export function containerSize(memberCount: number, membersSize: number): number {
  return 2 + membersSize + (memberCount > 0 ? memberCount - 1 : 0);
}

/** Adds up the size of a JSON object member by member. */
export class JsonObjectSize {
  private members = 0;
  private membersSize = 0;

  /** A member whose key is plain ASCII without escapes, as the call's own keys are. */
  add(key: string, valueSize: number): void {
    this.members++;
    this.membersSize += memberSize(key.length + 2, valueSize);
  }

  get total(): number {
    return containerSize(this.members, this.membersSize);
  }
}
