/**
 * Members are kept in (hash, userId) order: a 30-bit FNV-1a hash of the user
 * id, then the id itself to break ties. The order is arbitrary but stable, and
 * it lets a snapshot of millions of ids be sorted with one native typed-array
 * sort: hash × 2^23 + position is an exact integer below 2^53.
 */
export const MAX_SNAPSHOT_ENTRIES = 2 ** 23;
const POSITION_RANGE = 2 ** 23;

export function userHash(userId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < userId.length; i++) {
    hash ^= userId.charCodeAt(i);
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
 * The positions of `userIds` in (hash, userId) order. Ties on the hash are
 * rare (a few hundred per million) and sorted by id afterwards.
 */
export function sortedOrder(userIds: readonly string[], hashes: Uint32Array): Uint32Array {
  const keys = new Float64Array(userIds.length);
  for (let i = 0; i < userIds.length; i++) keys[i] = hashes[i]! * POSITION_RANGE + i;
  keys.sort();
  const order = new Uint32Array(userIds.length);
  for (let i = 0; i < keys.length; i++) order[i] = keys[i]! % POSITION_RANGE;

  for (let start = 0; start < order.length;) {
    let end = start + 1;
    while (end < order.length && hashes[order[end]!] === hashes[order[start]!]) end++;
    if (end - start > 1) {
      const run = Array.from(order.subarray(start, end)).sort((a, b) => compareKeys(0, userIds[a]!, 0, userIds[b]!));
      order.set(run, start);
    }
    start = end;
  }
  return order;
}
