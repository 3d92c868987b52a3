import { makeCall } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { checkCall } from "./validate.js";
import { protoCallToJson, validCallToProto } from "./proto-json.js";

describe("conversion between Segment JSON and the protobuf Call", () => {
  const receivedAt = new Date("2026-11-21T10:00:00.000Z");

  it.each([
    { type: "identify", userId: "u", traits: { a: 1 } },
    { type: "track", userId: "u", anonymousId: "a", event: "E", properties: { nested: { list: [1, "x", null, true] } } },
    { type: "page", anonymousId: "a", name: "Home", category: "Docs", properties: { url: "https://example.com" } },
    { type: "screen", userId: "u", name: "Home", context: { device: { model: "X" } } },
    { type: "group", userId: "u", groupId: "g", traits: { n: 2 } },
    { type: "alias", userId: "u", previousId: "p", integrations: { All: false, Webhooks: true } },
  ])("round-trips $type", (json) => {
    const check = checkCall({ ...json, messageId: "m1", timestamp: "2024-01-01T00:00:00.000Z" }, 0);
    if (!check.ok) throw new Error(check.rejection.message);
    const proto = validCallToProto(check.call, { messageId: "generated", receivedAt });
    expect(proto.messageId).toBe("m1");
    expect(proto.receivedAt).toEqual(receivedAt);
    expect(protoCallToJson(proto)).toEqual({ ...json, messageId: "m1", timestamp: "2024-01-01T00:00:00.000Z" });
  });

  it("fills in messageId and uses the accept time when the client gave no timestamp", () => {
    const check = checkCall({ type: "track", userId: "u", event: "E" }, 0);
    if (!check.ok) throw new Error(check.rejection.message);
    const proto = validCallToProto(check.call, { messageId: "generated", receivedAt });
    expect(proto.messageId).toBe("generated");
    expect(proto.timestamp).toEqual(receivedAt);
  });
});

describe("a timestamp outside the range of a JS Date", () => {
  it("is refused by the timestamp rule instead of throwing", () => {
    const json = protoCallToJson(
      makeCall({
        messageId: "m1",
        userId: "u",
        timestamp: new Date(1e15 * 1000),
        payload: { $case: "track", value: { event: "E", properties: undefined } },
      }),
    );
    const check = checkCall(json, 0);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.rejection).toMatchObject({ field: "timestamp", rule: "format", messageId: "m1" });
  });
});
