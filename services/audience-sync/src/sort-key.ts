/**
 * Members are kept in (hash, userId) order: a 30-bit FNV-1a hash of the user
 * id, then the id itself to break ties. The order is arbitrary but stable, and
 * it lets millions of ids be sorted by number (a radix sort), with string
 * comparisons only for the few ids that share a hash.
 */
export const HASH_BITS = 30;
/** The most entries one snapshot may carry. */
export const MAX_SNAPSHOT_ENTRIES = 2 ** 23;
/** The widest digit a radix pass sorts by: 2^11 counters, two passes for the 22 bits within a bucket. */
const MAX_DIGIT_BITS = 11;
const MIN_DIGIT_BITS = 4;

export function userHash(userId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < userId.length; i++) {
    hash ^= userId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) & 0x3fffffff;
}

/**
 * userHash of an id given as UTF-8 bytes, if it is ASCII (then its bytes are
 * its UTF-16 code units); -1 if it is not.
 */
export function asciiHash(bytes: Uint8Array, start: number, length: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < start + length; i++) {
    const byte = bytes[i]!;
    if (byte >= 0x80) return -1;
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) & 0x3fffffff;
}

/** -1, 0 or 1 by (hash, userId). */
export function compareKeys(hashA: number, idA: string, hashB: number, idB: string): number {
  if (hashA !== hashB) return hashA < hashB ? -1 : 1;
  return idA < idB ? -1 : idA > idB ? 1 : 0;
}

/**
 * The positions 0 … hashes.length - 1 in (hash, userId) order, for hashes
 * that differ only in their low `bits` bits: a stable LSD radix sort of those
 * bits, then each run of equal hashes (rare: a few hundred per million)
 * sorted with `compareIds(positionA, positionB)`.
 *
 * Each pass clears and sums one counter per digit value, so the digit is
 * sized to the input: up to 11 bits (two passes for a bucket's 22 bits) for
 * the thousands of entries a bucket holds at a million members, fewer bits
 * and a pass more for the few hundred it holds at 100,000, where 2^11
 * counters a pass would cost more than the entries.
 */
export function sortedOrder(hashes: Uint32Array, compareIds: (a: number, b: number) => number, bits = HASH_BITS): Uint32Array {
  let order = new Uint32Array(hashes.length);
  let spare = new Uint32Array(hashes.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  const widest = Math.min(MAX_DIGIT_BITS, Math.max(MIN_DIGIT_BITS, Math.ceil(Math.log2(hashes.length + 1))));
  const digitBits = Math.ceil(bits / Math.ceil(bits / widest)); // the same width for every pass
  const radix = 1 << digitBits;
  const mask = radix - 1;
  const counts = new Uint32Array(radix + 1);
  for (let shift = 0; shift < bits; shift += digitBits) {
    counts.fill(0);
    for (let i = 0; i < order.length; i++) counts[((hashes[order[i]!]! >>> shift) & mask) + 1]!++;
    for (let digit = 1; digit <= radix; digit++) counts[digit]! += counts[digit - 1]!;
    for (let i = 0; i < order.length; i++) {
      const position = order[i]!;
      spare[counts[(hashes[position]! >>> shift) & mask]!++] = position;
    }
    [order, spare] = [spare, order];
  }

  for (let start = 0; start < order.length;) {
    let end = start + 1;
    while (end < order.length && hashes[order[end]!] === hashes[order[start]!]) end++;
    if (end - start > 1) order.set(Array.from(order.subarray(start, end)).sort(compareIds), start);
    start = end;
  }
  return order;
}
