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

describe("checkCall keeps data as sent or refuses it", () => {
  const track = (extra: Record<string, unknown>) => ({ type: "track", userId: "u", event: "E", ...extra });

  it.each([
    ["line feed", "m\n1"],
    ["carriage return", "m\r1"],
    ["NUL", "\u0000"],
    ["DEL", "m\u007f"],
    ["C1 next line", "m\u0085"],
    ["C1 last", "m\u009f"],
  ])("refuses a messageId with a control character (%s)", (_name, messageId) => {
    expect(rejectionOf(track({ messageId }))).toMatchObject({
      field: "messageId",
      rule: "control_characters",
      message: "messageId: must not contain control characters",
    });
  });

  it("accepts emoji and other non-control Unicode in a messageId, and control characters in the other ids", () => {
    expect(checkCall(track({ messageId: "m-😀-é-\u00a0-\u2028" }), 0).ok).toBe(true);
    expect(checkCall({ type: "alias", userId: "u\n1", previousId: "p\r\n", anonymousId: "a\t" }, 0).ok).toBe(true);
    expect(checkCall({ type: "group", userId: "u", groupId: "g\u0000" }, 0).ok).toBe(true);
  });

  it.each([
    ["1e309 (JSON)", JSON.parse('{"price":1e309}') as Record<string, unknown>, "properties.price"],
    ["-Infinity", { price: -Infinity }, "properties.price"],
    ["NaN in a list", { items: [{ price: 1 }, { price: Number.NaN }] }, "properties.items.1.price"],
  ])("refuses a non-finite number: %s", (_name, properties, field) => {
    expect(rejectionOf(track({ properties }))).toMatchObject({
      field,
      rule: "finite_number",
      message: `${field}: must be a finite number`,
    });
  });

  it("refuses non-finite numbers in context, traits and integrations too", () => {
    expect(rejectionOf(track({ context: { screen: { density: Infinity } } })).field).toBe("context.screen.density");
    expect(rejectionOf({ type: "identify", userId: "u", traits: { age: Number.NaN } }).field).toBe("traits.age");
    expect(rejectionOf(track({ integrations: { Webhooks: { weight: Infinity } } })).field).toBe("integrations.Webhooks.weight");
  });

  it("refuses lone surrogates in values, keys and text fields, naming the field", () => {
    const parsed = JSON.parse('{"name":"\\ud800x"}') as Record<string, unknown>;
    expect(rejectionOf(track({ properties: parsed }))).toMatchObject({
      field: "properties.name",
      rule: "unicode",
      message: "properties.name: must be valid Unicode (lone surrogate)",
    });
    expect(rejectionOf(track({ properties: { list: ["a", "\udc00"] } })).field).toBe("properties.list.1");
    expect(rejectionOf(track({ context: { "k\ud800": 1 } }))).toMatchObject({
      field: "context",
      rule: "unicode",
      message: "context: keys must be valid Unicode (lone surrogate)",
    });
    expect(rejectionOf({ type: "track", userId: "u\ud800", event: "E" })).toMatchObject({ field: "userId", rule: "unicode" });
    expect(rejectionOf({ type: "track", userId: "u", event: "\udfff" })).toMatchObject({ field: "event", rule: "unicode" });
    expect(checkCall(track({ properties: { emoji: "😀", pair: "\ud83d\ude00" } }), 0).ok).toBe(true);
  });

  it.each([
    "2026-02-30",
    "2026-02-29T00:00:00Z",
    "1900-02-29",
    "2026-04-31T10:00:00Z",
    "2026-00-10",
    "2026-01-00",
    "2026-01-01T24:00:00Z",
    "2026-01-01T23:60:00Z",
    "2016-12-31T23:59:60Z",
    "2026-01-01T10:00:00+24:00",
    "2026-01-01T10:00:00+01:60",
  ])("refuses the impossible timestamp %s", (timestamp) => {
    expect(rejectionOf(track({ timestamp }))).toMatchObject({
      field: "timestamp",
      rule: "format",
      message: "timestamp: must be a valid ISO 8601 date-time",
    });
  });

  it.each(["2024-02-29", "2000-02-29T12:00:00Z", "2026-12-31T23:59:59.999999999Z", "2026-01-01 10:00+0100", "2026-01-01T10:00:00-23:59"])(
    "accepts the timestamp %s",
    (timestamp) => {
      expect(checkCall(track({ timestamp }), 0).ok).toBe(true);
    },
  );

  it("keeps __proto__, constructor and prototype as ordinary keys", () => {
    const raw = JSON.parse(
      '{"type":"identify","userId":"u","traits":{"__proto__":{"a":1},"constructor":"c","prototype":2},"context":{"__proto__":"x"},"integrations":{"__proto__":true}}',
    ) as Record<string, unknown>;
    const check = checkCall(raw, 0);
    if (!check.ok) throw new Error(check.rejection.message);
    const call = check.call as Record<string, unknown>;
    for (const field of ["traits", "context", "integrations"]) expect(JSON.stringify(call[field])).toBe(JSON.stringify(raw[field]));
    expect(Object.keys((check.call as { traits: object }).traits)).toEqual(["__proto__", "constructor", "prototype"]);
  });

  it("checks an integrations value under __proto__ like any other", () => {
    const raw = JSON.parse('{"type":"track","userId":"u","event":"E","integrations":{"__proto__":5}}') as unknown;
    expect(rejectionOf(raw)).toMatchObject({ field: "integrations.__proto__", rule: "value" });
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
