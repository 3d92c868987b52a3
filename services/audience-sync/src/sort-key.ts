/**
 * Members are kept in (hash, userId) order: a 30-bit FNV-1a hash of the user
 * id, then the id itself to break ties. The order is arbitrary but stable, and
 * it lets millions of ids be sorted by number (a radix sort), with string
 * comparisons only for the few ids that share a hash.
 */
export const HASH_BITS = 30;
/** The most entries one snapshot may carry. */
export const MAX_SNAPSHOT_ENTRIES = 2 ** 23;
const RADIX_BITS = 11;
const RADIX = 1 << RADIX_BITS;
const RADIX_MASK = RADIX - 1;

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
 * bits, 11 a pass, then each run of equal hashes (rare: a few hundred per
 * million) sorted with `compareIds(positionA, positionB)`.
 */
export function sortedOrder(hashes: Uint32Array, compareIds: (a: number, b: number) => number, bits = HASH_BITS): Uint32Array {
  let order = new Uint32Array(hashes.length);
  let spare = new Uint32Array(hashes.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  const counts = new Uint32Array(RADIX + 1);
  for (let shift = 0; shift < bits; shift += RADIX_BITS) {
    counts.fill(0);
    for (let i = 0; i < order.length; i++) counts[((hashes[order[i]!]! >>> shift) & RADIX_MASK) + 1]!++;
    for (let digit = 1; digit <= RADIX; digit++) counts[digit]! += counts[digit - 1]!;
    for (let i = 0; i < order.length; i++) {
      const position = order[i]!;
      spare[counts[(hashes[position]! >>> shift) & RADIX_MASK]!++] = position;
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
