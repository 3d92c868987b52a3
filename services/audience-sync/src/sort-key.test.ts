import { describe, expect, it } from "vitest";
import { HASH_BITS, sortedOrder, userHash } from "./sort-key.js";

/** The order a comparison sort gives: by hash, then by id. */
function referenceOrder(hashes: Uint32Array, ids: string[]): number[] {
  return [...hashes.keys()].sort((a, b) => hashes[a]! - hashes[b]! || (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0));
}

describe("sortedOrder", () => {
  // Sizes on both sides of every digit width the sort picks, from 4 to 11 bits a pass.
  for (const size of [0, 1, 2, 15, 16, 17, 300, 1_000, 2_047, 2_048, 5_000, 70_000]) {
    it(`orders ${size} entries by hash, then id`, () => {
      const ids = Array.from({ length: size }, (_, i) => `user-${(i * 7919) % (size + 13)}-${i}`);
      const hashes = Uint32Array.from(ids, userHash);
      const compareIds = (a: number, b: number) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0);
      expect([...sortedOrder(hashes, compareIds)]).toEqual(referenceOrder(hashes, ids));
    });
  }

  it("sorts only the low bits it is told differ, and breaks ties of equal hashes by id", () => {
    // Equal top bits, as within one of the collector's buckets; every low bit varies, and one in ten shares a hash.
    const ids = Array.from({ length: 3_000 }, (_, i) => `id-${(i * 31) % 3_000}-${i}`);
    const hashes = Uint32Array.from(ids, (id, i) => (5 << 22) | (i % 10 === 0 ? 0x2a5a5 : userHash(id) & 0x3fffff));
    const compareIds = (a: number, b: number) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0);
    expect([...sortedOrder(hashes, compareIds, HASH_BITS - 8)]).toEqual(referenceOrder(hashes, ids));
  });
});
