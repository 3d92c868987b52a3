import { checkCall, quickAccept } from "@switchyard/calls";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CallType } from "./messages.js";
import { rawCall } from "./prepare-call.js";

// The quick check and its cases live with the rules (@switchyard/calls, quick-accept.test.ts);
// this holds it to the call prepareCall actually makes of a message.
const messages = fc.record(
  {
    messageId: fc.constantFrom<unknown>(undefined, "", "m1", "x".repeat(129), "m\r\n"),
    userId: fc.constantFrom<unknown>(undefined, "", "u", 5),
    anonymousId: fc.constantFrom<unknown>(undefined, "a"),
    timestamp: fc.constantFrom<unknown>(
      undefined,
      "2026-11-21T10:00:00.000Z",
      "2026-02-30T10:00:00Z",
      new Date("2026-11-21T10:00:00.123Z"),
      new Date(253_402_300_800_000),
    ),
    event: fc.constantFrom<unknown>(undefined, "", "E"),
    groupId: fc.constantFrom<unknown>(undefined, "g", "x".repeat(129)),
    previousId: fc.constantFrom<unknown>(undefined, "p"),
    traits: fc.constantFrom<unknown>(undefined, {}, []),
    properties: fc.constantFrom<unknown>(undefined, { a: 1 }, "x"),
  },
  { requiredKeys: [] },
);
const types = fc.constantFrom<CallType>("identify", "track", "page", "screen", "group", "alias");

describe("quickAccept in prepareCall", () => {
  it("accepts only messages whose call, as prepareCall makes it, the rules accept", () => {
    let quick = 0;
    fc.assert(
      fc.property(types, messages, (type, fields) => {
        if (!quickAccept(type, fields)) return;
        quick++;
        expect(checkCall(rawCall(type, fields), 0, 0).ok).toBe(true);
      }),
      { numRuns: 5_000 },
    );
    expect(quick).toBeGreaterThan(50);
  });
});
