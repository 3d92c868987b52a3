import { Call } from "@switchyard/contracts";
import { callArbitrary, makeCall } from "@switchyard/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { callEvent } from "./call-event.js";
import { Mapping } from "./mapping.js";
import { Trigger } from "./trigger.js";

describe("callEvent", () => {
  it("is the call in Segment's event shape, with its times as ISO text", () => {
    const call = makeCall({
      messageId: "m-1",
      userId: "u-1",
      timestamp: new Date("2026-12-04T10:00:00.000Z"),
      receivedAt: new Date("2026-12-04T10:00:01.500Z"),
      context: { ip: "203.0.113.7" },
      payload: { $case: "track", value: { event: "Order Completed", properties: { total: 42 } } },
    });
    expect(callEvent(call)).toEqual({
      type: "track",
      messageId: "m-1",
      userId: "u-1",
      timestamp: "2026-12-04T10:00:00.000Z",
      context: { ip: "203.0.113.7" },
      event: "Order Completed",
      properties: { total: 42 },
      receivedAt: "2026-12-04T10:00:01.500Z",
    });
    const trigger = Trigger.parse('type = "track" and properties.total > 40');
    expect(trigger instanceof Trigger && trigger.matches(callEvent(call))).toBe(true);
  });

  it("is what the default mapping makes of any call the bus carries", () => {
    const whole = new Mapping({ "@path": "$." });
    fc.assert(
      // mapping-kit copies objects by assignment, which drops a key named "__proto__" (below).
      fc.property(
        callArbitrary.filter((call) => !JSON.stringify(Call.toJSON(call)).includes('"__proto__"')),
        (random) => {
          // As the bus carries it: decoded from its bytes.
          const call = Call.decode(Call.encode(random).finish());
          const event = callEvent(call);
          expect(whole.apply(event)).toEqual({ ok: true, value: event });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("loses a key named __proto__ on the way through mapping-kit, as Segment's does", () => {
    const event = callEvent(
      makeCall({ payload: { $case: "track", value: { event: "E", properties: JSON.parse('{"__proto__":1,"a":2}') } } }),
    );
    expect(Object.keys(event.properties as object)).toEqual(["__proto__", "a"]);
    expect(new Mapping({ "@path": "$." }).apply(event)).toEqual({ ok: true, value: { ...event, properties: { a: 2 } } });
  });
});
