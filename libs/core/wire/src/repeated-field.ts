import { lengthTag } from "./tags.js";

/** Where each value of a repeated length-delimited field lies: value i is bytes[starts[i], starts[i] + lengths[i]). */
export interface FieldRanges {
  starts: number[];
  lengths: number[];
}

/**
 * The values of a message made of one repeated length-delimited field and nothing else (a
 * FileDescriptorSet's files, a snapshot request's user ids), as ranges of its bytes, so that none
 * is copied or decoded; undefined for any other bytes: another field, a tag or length written in
 * more bytes than needed beyond five, a length past the end. The field's number is below 16 (a
 * one-byte tag).
 */
export function repeatedFieldRanges(bytes: Uint8Array, field: number): FieldRanges | undefined {
  const tag = lengthTag(field);
  if (tag >= 0x80) throw new Error(`field ${field}: its tag takes more than a byte`);
  const ranges: FieldRanges = { starts: [], lengths: [] };
  let position = 0;
  while (position < bytes.length) {
    if (bytes[position++] !== tag) return undefined;
    let length = 0;
    for (let scale = 1; ; scale *= 128) {
      if (position >= bytes.length || scale > 2 ** 28) return undefined;
      const byte = bytes[position++]!;
      length += (byte & 0x7f) * scale;
      if (byte < 0x80) break;
    }
    if (position + length > bytes.length) return undefined;
    ranges.starts.push(position);
    ranges.lengths.push(length);
    position += length;
  }
  return ranges;
}
