import { describe, expect, it } from "vitest";
import { CommittedStateCache } from "./committed-state-cache.js";

const blob = (bytes: number, fill = 1) => Buffer.alloc(bytes, fill);

describe("committed state cache", () => {
  it("serves a blob only for the revision its commit produced", () => {
    const cache = new CommittedStateCache(100);
    const committed = blob(10);
    cache.set("audience.crm.a", 7, committed);
    expect(cache.get("audience.crm.a", 7)).toBe(committed);
    expect(cache.get("audience.crm.a", 8)).toBeUndefined(); // changed since, by anyone
    expect(cache.get("audience.crm.b", 7)).toBeUndefined();
  });

  it("replaces a key's blob and counts its bytes once", () => {
    const cache = new CommittedStateCache(100);
    cache.set("k", 1, blob(60));
    cache.set("k", 2, blob(70));
    expect(cache.get("k", 1)).toBeUndefined();
    expect(cache.get("k", 2)).toHaveLength(70);
    expect(cache.size).toEqual({ entries: 1, bytes: 70 });
  });

  it("stays within its budget, dropping the least recently used first", () => {
    const cache = new CommittedStateCache(100);
    cache.set("a", 1, blob(40));
    cache.set("b", 1, blob(40));
    cache.get("a", 1); // a is now more recent than b
    cache.set("c", 1, blob(40));
    expect(cache.get("b", 1)).toBeUndefined();
    expect(cache.get("a", 1)).toHaveLength(40);
    expect(cache.get("c", 1)).toHaveLength(40);
    expect(cache.size).toEqual({ entries: 2, bytes: 80 });
  });

  it("keeps nothing larger than the budget, and nothing at all with a budget of 0", () => {
    const cache = new CommittedStateCache(100);
    cache.set("a", 1, blob(40));
    cache.set("huge", 1, blob(101));
    expect(cache.get("huge", 1)).toBeUndefined();
    expect(cache.get("a", 1)).toHaveLength(40);
    const none = new CommittedStateCache(0);
    none.set("a", 1, blob(1));
    expect(none.size).toEqual({ entries: 0, bytes: 0 });
  });
});
