import { makeCall } from "@switchyard/testkit";
import { Call, DeferredCalls } from "@switchyard/contracts";
import { describe, expect, it } from "vitest";
import { encodeDeferral } from "./retry-queue.js";

function call(messageId: string, propertyBytes: number): Call {
  return makeCall({
    messageId,
    userId: "user-1",
    timestamp: new Date("2026-11-25T18:00:00.000Z"),
    context: { ip: "203.0.113.9" },
    receivedAt: new Date("2026-11-25T18:00:00.123Z"),
    payload: { $case: "track", value: { event: "Order Completed", properties: { note: "x".repeat(propertyBytes), revenue: 10 } } },
  });
}

describe("encodeDeferral", () => {
  it("writes what the generated encoder writes, once decoded, for calls given decoded or as their bytes", () => {
    // Calls whose length takes one, two and three varint bytes.
    const calls = [call("m-small", 10), call("m-medium", 300), call("m-large", 20_000)];
    const group = {
      sourceId: "web",
      destinationId: "hook",
      windowStart: new Date("2026-11-25T18:00:00.123Z"),
      notBefore: new Date("2026-11-25T18:00:05.000Z"),
    };
    const expected = DeferredCalls.decode(DeferredCalls.encode({ ...group, calls }).finish());
    const asBytes = calls.map((c) => Call.encode(c).finish());
    expect(DeferredCalls.decode(encodeDeferral({ ...group, calls: asBytes }))).toEqual(expected);
    expect(DeferredCalls.decode(encodeDeferral({ ...group, calls: [asBytes[0]!, calls[1]!, asBytes[2]!] }))).toEqual(expected);
    expect(DeferredCalls.decode(encodeDeferral({ ...group, calls: [] }))).toEqual({ ...expected, calls: [] });
  });
});
