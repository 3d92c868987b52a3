import { describe, expect, it } from "vitest";
import { CommittedStateCache } from "./committed-state-cache.js";

/** A blob with memory of its own (Buffer.alloc does not slice Node's shared pool). */
const blob = (bytes: number) => Buffer.alloc(bytes, 1);
/** What an entry of a blob of its own is counted as: its bytes plus a fixed overhead. */
const ENTRY = (bytes: number) => bytes + 256;

describe("committed state cache", () => {
  it("serves a blob only for the revision and object its commit produced", () => {
    const cache = new CommittedStateCache(10_000);
    const committed = blob(10);
    cache.set("audience.crm.a", 7, "obj-1", committed);
    expect(cache.get("audience.crm.a", 7, "obj-1")).toBe(committed);
    expect(cache.get("audience.crm.a", 8, "obj-1")).toBeUndefined(); // changed since, by anyone
    expect(cache.get("audience.crm.a", 7, "obj-2")).toBeUndefined(); // say, a bucket made again
    expect(cache.get("audience.crm.b", 7, "obj-1")).toBeUndefined();
  });

  it("replaces a key's blob and counts it once", () => {
    const cache = new CommittedStateCache(10_000);
    cache.set("k", 1, "obj-1", blob(600));
    cache.set("k", 2, "obj-2", blob(700));
    expect(cache.get("k", 1, "obj-1")).toBeUndefined();
    expect(cache.get("k", 2, "obj-2")).toHaveLength(700);
    expect(cache.size).toEqual({ entries: 1, bytes: ENTRY(700) });
  });

  it("stays within its budget, dropping the least recently used first", () => {
    const cache = new CommittedStateCache(2 * ENTRY(400) + 100);
    cache.set("a", 1, "a1", blob(400));
    cache.set("b", 1, "b1", blob(400));
    cache.get("a", 1, "a1"); // a is now more recent than b
    cache.set("c", 1, "c1", blob(400));
    expect(cache.get("b", 1, "b1")).toBeUndefined();
    expect(cache.get("a", 1, "a1")).toHaveLength(400);
    expect(cache.get("c", 1, "c1")).toHaveLength(400);
    expect(cache.size).toEqual({ entries: 2, bytes: 2 * ENTRY(400) });
  });

  it("counts a small blob by the shared pool it keeps alive", () => {
    const cache = new CommittedStateCache(4_096);
    const pooled = Buffer.allocUnsafe(16); // a slice of Node's 8 KiB pool
    expect(pooled.buffer.byteLength).toBeGreaterThan(4_096);
    cache.set("small", 1, "s1", pooled);
    expect(cache.get("small", 1, "s1")).toBeUndefined();
  });

  it("keeps nothing larger than the budget, and nothing at all with a budget of 0", () => {
    const cache = new CommittedStateCache(ENTRY(400));
    cache.set("a", 1, "a1", blob(400));
    cache.set("huge", 1, "h1", blob(401));
    expect(cache.get("huge", 1, "h1")).toBeUndefined();
    expect(cache.get("a", 1, "a1")).toHaveLength(400);
    const none = new CommittedStateCache(0);
    none.set("a", 1, "a1", blob(1));
    expect(none.size).toEqual({ entries: 0, bytes: 0 });
  });
});
