import { describe, expect, it } from "vitest";
import { MAX_BATCH_BYTES, MAX_BATCH_CALLS, MAX_CALL_BYTES, SMALLEST_CALL_JSON_BYTES } from "./limits.js";
import { checkCall } from "./validate.js";

function rejectionOf(raw: unknown) {
  const check = checkCall(raw, 3);
  if (check.ok) throw new Error(`expected a rejection for ${JSON.stringify(raw)}`);
  return check.rejection;
}

describe("checkCall", () => {
  it.each([
    ["identify", { type: "identify", userId: "u", traits: { plan: "pro" } }],
    ["identify by anonymousId", { type: "identify", anonymousId: "a" }],
    ["track", { type: "track", userId: "u", event: "E", properties: { n: 1 } }],
    ["page without userId", { type: "page", anonymousId: "a", name: "Home", category: "Docs", properties: { url: "https://x" } }],
    ["screen", { type: "screen", userId: "u", name: "Home", context: { os: { name: "iOS" } } }],
    ["group", { type: "group", userId: "u", groupId: "g", traits: {} }],
    ["alias", { type: "alias", userId: "u", previousId: "p" }],
    ["historical timestamp with offset", { type: "track", userId: "u", event: "E", timestamp: "2024-01-02T03:04:05+02:00" }],
    ["integrations with an object value", { type: "track", userId: "u", event: "E", integrations: { All: false, Webhooks: { x: 1 } } }],
    ["unknown top-level keys (ignored)", { type: "track", userId: "u", event: "E", sentAt: "2024-01-01", _metadata: {} }],
  ])("accepts %s", (_name, raw) => {
    expect(checkCall(raw, 0).ok).toBe(true);
  });

  it.each([
    ["not an object", "track", "", "type", /call: must be a JSON object/],
    ["no type", { userId: "u" }, "type", "call_type", /type: must be one of/],
    ["unknown type", { type: "purchase", userId: "u" }, "type", "call_type", /type: must be one of/],
    ["delete from a client", { type: "delete", userId: "u" }, "type", "call_type", /type: must be one of/],
    ["identify without identity", { type: "identify" }, "userId", "identity_required", /userId or anonymousId/],
    ["track without identity", { type: "track", event: "E" }, "userId", "identity_required", /userId or anonymousId/],
    ["page without identity", { type: "page" }, "userId", "identity_required", /userId or anonymousId/],
    ["group without identity", { type: "group", groupId: "g" }, "userId", "identity_required", /userId or anonymousId/],
    ["track without event", { type: "track", userId: "u" }, "event", "required", /event: is required/],
    ["track with empty event", { type: "track", userId: "u", event: "" }, "event", "not_empty", /event: must not be empty/],
    ["group without groupId", { type: "group", userId: "u" }, "groupId", "required", /groupId: is required/],
    ["alias without previousId", { type: "alias", userId: "u" }, "previousId", "required", /previousId: is required/],
    ["alias without userId", { type: "alias", anonymousId: "a", previousId: "p" }, "userId", "required", /userId: is required/],
    ["numeric userId", { type: "track", userId: 5, event: "E" }, "userId", "type", /userId: must be a string/],
    ["empty userId", { type: "track", userId: "", event: "E" }, "userId", "not_empty", /must not be empty/],
    [
      "overlong messageId",
      { type: "track", userId: "u", event: "E", messageId: "m".repeat(129) },
      "messageId",
      "max_length",
      /at most 128/,
    ],
    ["array properties", { type: "track", userId: "u", event: "E", properties: [] }, "properties", "type", /must be a JSON object/],
    ["string traits", { type: "identify", userId: "u", traits: "vip" }, "traits", "type", /must be a JSON object/],
    ["null context", { type: "track", userId: "u", event: "E", context: null }, "context", "type", /must be a JSON object/],
    [
      "bad integrations value",
      { type: "track", userId: "u", event: "E", integrations: { Webhooks: 1 } },
      "integrations.Webhooks",
      "value",
      /true, false or an object/,
    ],
    ["free-text timestamp", { type: "track", userId: "u", event: "E", timestamp: "yesterday" }, "timestamp", "format", /ISO 8601/],
    ["impossible date", { type: "track", userId: "u", event: "E", timestamp: "2024-13-45T00:00:00Z" }, "timestamp", "format", /ISO 8601/],
    ["numeric name", { type: "page", userId: "u", name: 1 }, "name", "type", /name: must be a string/],
  ])("refuses %s", (_name, raw, field, rule, message) => {
    const rejection = rejectionOf(raw);
    expect(rejection).toMatchObject({ index: 3, field, rule });
    expect(rejection.message).toMatch(message);
  });

  it("refuses a call over 32 KB of JSON, naming the limit, and accepts one just under", () => {
    const base = { type: "track", userId: "u", event: "E", properties: { blob: "" } };
    const overhead = JSON.stringify(base).length;
    const atLimit = { ...base, properties: { blob: "x".repeat(MAX_CALL_BYTES - overhead) } };
    expect(JSON.stringify(atLimit).length).toBe(MAX_CALL_BYTES);
    expect(checkCall(atLimit, 0).ok).toBe(true);
    const over = { ...base, properties: { blob: "x".repeat(33 * 1024) } };
    expect(rejectionOf(over)).toMatchObject({ rule: "max_size", field: "", message: expect.stringMatching(/32 KB/) });
  });

  it("counts size in UTF-8 bytes, not characters", () => {
    const multiByte = { type: "track", userId: "u", event: "E", properties: { text: "é".repeat(17_000) } };
    expect(JSON.stringify(multiByte).length).toBeLessThan(MAX_CALL_BYTES);
    expect(rejectionOf(multiByte).rule).toBe("max_size");
  });

  it("never echoes the offending value in the message", () => {
    const rejection = rejectionOf({ type: "track", userId: "u", event: "E", timestamp: "secret-ish-value" });
    expect(rejection.message).not.toContain("secret-ish-value");
  });

  it("reports the messageId of a refused call when it had one", () => {
    expect(rejectionOf({ type: "track", userId: "u", messageId: "m-1" }).messageId).toBe("m-1");
  });

  it("refuses a call nested too deeply to serialise (max_depth) instead of throwing", () => {
    const properties = JSON.parse(`{"v":${"[".repeat(50_000)}${"]".repeat(50_000)}}`) as unknown;
    expect(rejectionOf({ type: "track", userId: "u", event: "E", properties })).toMatchObject({ field: "", rule: "max_depth" });
  });
});

describe("the batch call-count limit", () => {
  it("rests on a call the rules accept, and on none smaller being possible", () => {
    expect(checkCall({ type: "page", userId: "a" }, 0).ok).toBe(true);
    expect(Buffer.byteLength(JSON.stringify({ type: "page", userId: "a" }))).toBe(SMALLEST_CALL_JSON_BYTES);
    // Without an id, or with an empty one, even the shortest type is refused.
    expect(checkCall({ type: "page" }, 0).ok).toBe(false);
    expect(checkCall({ type: "page", userId: "" }, 0).ok).toBe(false);
    expect(MAX_BATCH_CALLS * SMALLEST_CALL_JSON_BYTES).toBeLessThanOrEqual(MAX_BATCH_BYTES);
    expect((MAX_BATCH_CALLS + 1) * SMALLEST_CALL_JSON_BYTES).toBeGreaterThan(MAX_BATCH_BYTES);
    expect(MAX_BATCH_CALLS).toBe(18_285); // as docs/api.md and the IngestService comment state it
  });
});
