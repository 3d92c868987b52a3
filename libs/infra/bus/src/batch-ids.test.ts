import { describe, expect, it } from "vitest";
import { deterministicId, resolveBatchId } from "./batch-ids.js";

describe("batch ids", () => {
  it("keeps the client's batch id", () => {
    expect(resolveBatchId("b-1", [undefined])).toBe("b-1");
  });

  it("derives the same id from the same client messageIds, a different one otherwise", () => {
    const first = resolveBatchId(undefined, ["m1", "m2"]);
    expect(resolveBatchId(undefined, ["m1", "m2"])).toBe(first);
    expect(resolveBatchId(undefined, ["m2", "m1"])).not.toBe(first);
    expect(resolveBatchId(undefined, ["m1m2"])).not.toBe(resolveBatchId(undefined, ["m1", "m2"]));
    expect(resolveBatchId(undefined, ["a\nb"])).not.toBe(resolveBatchId(undefined, ["a", "b"]));
    expect(resolveBatchId(undefined, ["1:a"])).not.toBe(resolveBatchId(undefined, ["1:", "a"]));
    // Ids already stored depend on the digest: a batch re-sent after an upgrade must still be recognised.
    expect(resolveBatchId(undefined, ["m1", "ü-2"])).toBe("d-9b0bb42ff88e323b0fcf759684d0f3b0");
  });

  it("makes a fresh id when some call has no messageId of its own", () => {
    expect(resolveBatchId(undefined, ["m1", undefined])).not.toBe(resolveBatchId(undefined, ["m1", undefined]));
  });

  it("derives stable, distinct ids per source, batch and position", () => {
    const id = deterministicId("web", "b-1", "0");
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(deterministicId("web", "b-1", "0")).toBe(id);
    expect(
      new Set([id, deterministicId("web", "b-1", "1"), deterministicId("web", "b-2", "0"), deterministicId("app", "b-1", "0")]).size,
    ).toBe(4);
  });

  // Ids already stored and delivered (and receivers' de-duplication) depend on these values.
  it("keeps the ids ingest and audience-sync have always produced", () => {
    // ingest: a call without a messageId, in a batch with a client batch id (source, batch id, position)
    expect(deterministicId("web", "b-1", "0")).toBe("e650eb77-93c9-557a-5730-c08ce7a73783");
    // audience-sync: the trait part of a sync's batch ids, an identify call's messageId, a deletion call's messageId
    expect(deterministicId("high_value_users")).toBe("542ad278-5534-55bb-3edf-480291eb9276");
    expect(deterministicId("audience", "crm", "high_value_users", "sync-1", "user-0")).toBe("ca43a887-4a2f-541d-2e04-0011c5001fe9");
    expect(deterministicId("delete", "crm", "req-1", "user-1")).toBe("cd72091b-9629-5259-dc65-c732af04aace");
  });
});
