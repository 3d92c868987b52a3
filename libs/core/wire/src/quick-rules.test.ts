import { checkCall, MAX_ID_LENGTH, passesQuickly, ScannedText, type ScannedCallFacts } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { anyCall, callBytes, makeCall } from "@switchyard/testkit";
import { scanCall, TextFieldId, type ScannedCall } from "./call-scanner.js";
import { MalformedWireError } from "./reader.js";

/** The calls quick rules see: scanned, regular (others are decoded and checked by checkCall alone). */
function regularScan(bytes: Buffer): ScannedCall | undefined {
  try {
    const scanned = scanCall(bytes);
    return scanned.irregular ? undefined : scanned;
  } catch (error) {
    if (error instanceof MalformedWireError) return undefined;
    throw error;
  }
}

/** An id the quick rules leave to checkCall: over the limit in UTF-8 bytes, which may still be within it in characters. */
function hasLongId(scanned: ScannedCall): boolean {
  const ids = [TextFieldId.MESSAGE_ID, TextFieldId.USER_ID, TextFieldId.ANONYMOUS_ID, TextFieldId.PAYLOAD_TEXT_0];
  return ids.some((field) => scanned.textBytes(field) > MAX_ID_LENGTH);
}

const encode = (value: Partial<Call>): Buffer =>
  Buffer.from(
    Call.encode(makeCall({ messageId: "", userId: "u", payload: { $case: "identify", value: { traits: undefined } }, ...value })).finish(),
  );

// The quick rules and their cases live with the schema (@switchyard/calls, quick-rules.test.ts);
// this holds them, end to end, to what the scan of real bytes finds.
describe("quick call rules on scanned calls", () => {
  it("read a scan as the rules number its text fields", () => {
    expect(TextFieldId).toEqual(ScannedText);
    const facts: ScannedCallFacts = scanCall(encode({}));
    expect(facts.textBytes(ScannedText.USER_ID)).toBe(1);
  });

  it("pass only calls checkCall accepts, and every one of them but those with an id over the limit in bytes", () => {
    let passed = 0;
    let refused = 0;
    const check = (bytes: Buffer) => {
      const scanned = regularScan(bytes);
      if (!scanned) return;
      const quick = passesQuickly(scanned);
      const { ok } = checkCall(scanned.json, 0, scanned.jsonSizeBound);
      if (quick) expect(ok).toBe(true);
      else if (ok) expect(hasLongId(scanned)).toBe(true);
      if (quick) passed++;
      if (!ok) refused++;
    };
    fc.assert(fc.property(callBytes, check), { numRuns: 3000 });
    fc.assert(
      fc.property(anyCall, (value) => check(Buffer.from(Call.encode(value).finish()))),
      { numRuns: 3000 },
    );
    // Both kinds were seen, so neither half of the property held vacuously.
    expect(passed).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });

  it.each([
    ["an id of 128 two-byte characters", encode({ userId: "é".repeat(128) })],
    [
      "a groupId of 64 astral characters (128 UTF-16 units)",
      encode({ payload: { $case: "group", value: { groupId: "😀".repeat(64), traits: undefined } } }),
    ],
  ])("leaves %s (within the limit in characters, over it in bytes) to checkCall, which accepts it", (_name, bytes) => {
    const scanned = scanCall(bytes);
    expect(passesQuickly(scanned)).toBe(false);
    expect(checkCall(scanned.json, 0).ok).toBe(true);
  });

  it.each([
    ["no identity", encode({ userId: "" })],
    ["a delete call", encode({ payload: { $case: "delete", value: {} } })],
    ["no payload", encode({ payload: undefined })],
    ["a track call without event", encode({ payload: { $case: "track", value: { event: "", properties: undefined } } })],
    [
      "an alias call with only an anonymousId",
      encode({ userId: "", anonymousId: "a", payload: { $case: "alias", value: { previousId: "p" } } }),
    ],
    ["a timestamp in year 10000", encode({ timestamp: new Date("+010000-01-01T00:00:00Z") })],
    ["an integrations value that is a list", encode({ integrations: { Webhooks: [true] } })],
    ["an integrations value that is null", encode({ integrations: { Webhooks: null } })],
    ["a userId of 129 characters", encode({ userId: "u".repeat(129) })],
  ])("does not pass %s", (_name, bytes) => {
    const scanned = scanCall(bytes);
    expect(passesQuickly(scanned)).toBe(false);
    expect(checkCall(scanned.json, 0).ok).toBe(false);
  });

  it.each([
    ["an identify call", encode({})],
    ["ids of exactly 128 characters", encode({ messageId: "m".repeat(128), anonymousId: "a".repeat(128) })],
    ["a timestamp on the last day of 9999", encode({ timestamp: new Date("9999-12-31T23:59:59.999Z") })],
    ["integrations of booleans and objects", encode({ integrations: { All: false, Webhooks: { retries: 2 } } })],
    ["an alias call", encode({ payload: { $case: "alias", value: { previousId: "p".repeat(128) } } })],
  ])("passes %s", (_name, bytes) => {
    const scanned = scanCall(bytes);
    expect(passesQuickly(scanned)).toBe(true);
    expect(checkCall(scanned.json, 0).ok).toBe(true);
  });
});
