import { describe, expect, it } from "vitest";
import { derivedMessageId, resolveBatchId } from "./batch-ids.js";

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
  });

  it("makes a fresh id when some call has no messageId of its own", () => {
    expect(resolveBatchId(undefined, ["m1", undefined])).not.toBe(resolveBatchId(undefined, ["m1", undefined]));
  });

  it("derives stable, distinct message ids per source, batch and position", () => {
    const id = derivedMessageId("web", "b-1", 0);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(derivedMessageId("web", "b-1", 0)).toBe(id);
    expect(
      new Set([id, derivedMessageId("web", "b-1", 1), derivedMessageId("web", "b-2", 0), derivedMessageId("app", "b-1", 0)]).size,
    ).toBe(4);
  });
});
