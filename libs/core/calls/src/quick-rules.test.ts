import type { Call } from "@switchyard/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { anyCall, callArbitrary, makeCall } from "@switchyard/testkit";
import { FREE_FORM_FIELDS } from "./call-schema.js";
import { CLIENT_TEXT_KEYS } from "./common-fields.js";
import { unfaithfulValue } from "./faithful-values.js";
import { MAX_CALL_BYTES, MAX_ID_LENGTH } from "./limits.js";
import { protoCallToJson } from "./proto-json.js";
import { passesQuickly, ScannedText, type ScannedCallFacts } from "./quick-rules.js";
import { CHECK_RULES, checkCall, type CallCheck } from "./validate.js";

/** The slow path's refusal names the field (or the call) and a known rule. */
function expectNamedRefusal(check: CallCheck): void {
  if (check.ok) throw new Error("expected a refusal");
  const { field, rule, message } = check.rejection;
  expect(CHECK_RULES.has(rule) && rule !== "invalid", `rule ${rule}`).toBe(true);
  expect(message.startsWith(`${field || "call"}: `), message).toBe(true);
}

/** The payload's text fields in field order, as a scan numbers them from PAYLOAD_TEXT_0. */
function payloadTexts(call: Call): string[] {
  const payload = call.payload;
  switch (payload?.$case) {
    case "track":
      return [payload.value.event];
    case "page":
    case "screen":
      return [payload.value.name, payload.value.category];
    case "group":
      return [payload.value.groupId];
    case "alias":
      return [payload.value.previousId];
    default:
      return [];
  }
}

/**
 * What a scan of the call's bytes would find, and the JSON checkCall sees; undefined for a call a
 * scan never hands to the quick rules (over the size limit, or holding a value that cannot be
 * stored as it is, which a scan sends to the exact path or refuses).
 */
function scanned(call: Call): { facts: ScannedCallFacts; json: Record<string, unknown> } | undefined {
  const json = protoCallToJson(call);
  if (Buffer.byteLength(JSON.stringify(json)) > MAX_CALL_BYTES) return undefined;
  if (FREE_FORM_FIELDS.some((key) => json[key] !== undefined && unfaithfulValue(json[key], [key]) !== undefined)) return undefined;
  const own = call as unknown as Record<string, string>;
  const texts = [...CLIENT_TEXT_KEYS.map((key) => own[key]), ...payloadTexts(call)];
  const facts: ScannedCallFacts = {
    type: call.payload?.$case,
    messageId: call.messageId,
    timestamp: call.timestamp,
    integrations: call.integrations,
    textBytes: (field) => Buffer.byteLength(texts[field] ?? ""),
  };
  return { facts, json };
}

/** An id the quick rules leave to checkCall: over the limit in UTF-8 bytes, which may still be within it in characters. */
function hasLongId(facts: ScannedCallFacts): boolean {
  const ids = [ScannedText.MESSAGE_ID, ScannedText.USER_ID, ScannedText.ANONYMOUS_ID, ScannedText.PAYLOAD_TEXT_0];
  return ids.some((field) => facts.textBytes(field) > MAX_ID_LENGTH);
}

const call = (value: Partial<Call>): Call =>
  makeCall({ messageId: "", userId: "u", payload: { $case: "identify", value: { traits: undefined } }, ...value });

function factsOf(value: Call): ScannedCallFacts {
  const scan = scanned(value);
  if (!scan) throw new Error("a call the quick rules never see");
  return scan.facts;
}

describe("quick call rules (passesQuickly)", () => {
  it("pass only calls checkCall accepts, and every one of them but those with an id over the limit in bytes", () => {
    let passed = 0;
    let refused = 0;
    const check = (value: Call) => {
      const scan = scanned(value);
      if (!scan) return;
      const quick = passesQuickly(scan.facts);
      const result = checkCall(scan.json, 0);
      if (quick) expect(result.ok).toBe(true);
      else if (result.ok) expect(hasLongId(scan.facts)).toBe(true);
      else expectNamedRefusal(result);
      if (quick) passed++;
      if (!result.ok) refused++;
    };
    fc.assert(fc.property(anyCall, check), { numRuns: 3000 });
    fc.assert(fc.property(callArbitrary, check), { numRuns: 2000 });
    // Both kinds were seen, so neither half of the property held vacuously.
    expect(passed).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });

  it.each([
    ["an id of 128 two-byte characters", call({ userId: "é".repeat(128) })],
    [
      "a groupId of 64 astral characters (128 UTF-16 units)",
      call({ payload: { $case: "group", value: { groupId: "😀".repeat(64), traits: undefined } } }),
    ],
  ])("leaves %s (within the limit in characters, over it in bytes) to checkCall, which accepts it", (_name, value) => {
    expect(passesQuickly(factsOf(value))).toBe(false);
    expect(checkCall(protoCallToJson(value), 0).ok).toBe(true);
  });

  it.each([
    ["no identity", call({ userId: "" })],
    ["a delete call", call({ payload: { $case: "delete", value: {} } })],
    ["no payload", call({ payload: undefined })],
    ["a track call without event", call({ payload: { $case: "track", value: { event: "", properties: undefined } } })],
    ["a group call without groupId", call({ payload: { $case: "group", value: { groupId: "", traits: undefined } } })],
    ["a groupId of 129 characters", call({ payload: { $case: "group", value: { groupId: "g".repeat(129), traits: undefined } } })],
    [
      "an alias call with only an anonymousId",
      call({ userId: "", anonymousId: "a", payload: { $case: "alias", value: { previousId: "p" } } }),
    ],
    ["an alias call without previousId", call({ payload: { $case: "alias", value: { previousId: "" } } })],
    ["a timestamp in year 10000", call({ timestamp: new Date("+010000-01-01T00:00:00Z") })],
    ["an integrations value that is a list", call({ integrations: { Webhooks: [true] } })],
    ["an integrations value that is null", call({ integrations: { Webhooks: null } })],
    ["a userId of 129 characters", call({ userId: "u".repeat(129) })],
    ["a messageId of 129 characters", call({ messageId: "m".repeat(129) })],
    ["a messageId with a line break", call({ messageId: "m\r\n" })],
  ])("does not pass %s, which checkCall refuses naming the field and rule", (_name, value) => {
    expect(passesQuickly(factsOf(value))).toBe(false);
    const result = checkCall(protoCallToJson(value), 0);
    expect(result.ok).toBe(false);
    expectNamedRefusal(result);
  });

  it.each([
    ["an identify call", call({})],
    ["ids of exactly 128 characters", call({ messageId: "m".repeat(128), anonymousId: "a".repeat(128) })],
    ["a timestamp on the last day of 9999", call({ timestamp: new Date("9999-12-31T23:59:59.999Z") })],
    ["integrations of booleans and objects", call({ integrations: { All: false, Webhooks: { retries: 2 } } })],
    ["a track call", call({ anonymousId: "a", userId: "", payload: { $case: "track", value: { event: "E", properties: {} } } })],
    ["a page call without name", call({ payload: { $case: "page", value: { name: "", category: "", properties: undefined } } })],
    ["an alias call", call({ payload: { $case: "alias", value: { previousId: "p".repeat(128) } } })],
  ])("passes %s", (_name, value) => {
    expect(passesQuickly(factsOf(value))).toBe(true);
    expect(checkCall(protoCallToJson(value), 0).ok).toBe(true);
  });
});
