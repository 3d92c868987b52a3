import { checkCall } from "@switchyard/calls";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { quickAccept } from "./quick-accept.js";

const ids = fc.constantFrom<unknown>(undefined, "", "u", "ü-1", "x".repeat(128), "x".repeat(129), 5, null, {});
const texts = fc.constantFrom<unknown>(undefined, "", "Home", 5, null);
const timestamps = fc.constantFrom<unknown>(
  undefined,
  "2026-11-21T10:00:00.000Z",
  "2026-11-21T10:00:00Z",
  "2026-11-21",
  "2026-11-21T10:00:00+02:00",
  "2026-13-45T10:00:00.000Z",
  "yesterday",
  1_700_000_000,
  null,
);
const objects = fc.constantFrom<unknown>(undefined, {}, { a: 1, b: [1, "x"] }, Object.create(null), [], null, "x", new Date(0), new Map());
const integrationMaps = fc.constantFrom<unknown>(
  undefined,
  {},
  { All: false, Webhooks: true },
  { A: {} },
  { A: "no" },
  { A: null },
  { A: 1 },
  [],
);

const messages = fc.record(
  {
    type: fc.constantFrom<unknown>("identify", "track", "page", "screen", "group", "alias", "delete", undefined),
    messageId: ids,
    userId: ids,
    anonymousId: ids,
    timestamp: timestamps,
    context: objects,
    integrations: integrationMaps,
    traits: objects,
    properties: objects,
    event: texts,
    name: texts,
    category: texts,
    groupId: ids,
    previousId: ids,
  },
  { requiredKeys: ["type"] },
);

describe("quickAccept", () => {
  it("accepts only what the call rules accept", () => {
    let quick = 0;
    fc.assert(
      fc.property(messages, (raw) => {
        const accepted = quickAccept(raw as Record<string, unknown>);
        if (accepted) {
          quick++;
          expect(checkCall(raw, 0, 0).ok).toBe(true);
        }
      }),
      { numRuns: 20_000 },
    );
    // It must also be a shortcut worth having: it takes a fair share of the valid messages.
    expect(quick).toBeGreaterThan(50);
  });

  it("takes the usual calls of every type", () => {
    const common = { messageId: "m1", timestamp: "2026-11-21T10:00:00.000Z", context: { ip: "1.2.3.4" }, integrations: { All: true } };
    for (const raw of [
      { type: "identify", userId: "u", traits: { a: 1 } },
      { type: "track", anonymousId: "a", event: "E", properties: {} },
      { type: "page", userId: "u", name: "Home", category: "Docs", properties: {} },
      { type: "screen", userId: "u", name: "Home" },
      { type: "group", userId: "u", groupId: "g", traits: {} },
      { type: "alias", userId: "u", previousId: "p" },
    ]) {
      expect(quickAccept({ ...common, ...raw })).toBe(true);
    }
  });
});
