import { describe, expect, it } from "vitest";
import { CallBatch } from "@switchyard/contracts";
import { validCallToProto } from "./proto-json.js";
import type { ValidCall } from "./call-schema.js";
import { tooDeeplyNestedField } from "./nesting.js";
import { checkCall } from "./validate.js";

/** An object nested `depth` levels deep: {a: {a: ... {}}}. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

function decodesInBatch(properties: Record<string, unknown>): boolean {
  const check = checkCall({ type: "track", userId: "u", event: "E", properties }, 0);
  if (!check.ok) throw new Error(check.rejection.message);
  const call = validCallToProto(check.call, { messageId: "m", receivedAt: new Date() });
  const bytes = CallBatch.encode({ batchId: "b", sourceId: "s", receivedAt: new Date(), calls: [call] }).finish();
  try {
    CallBatch.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

describe("tooDeeplyNestedField", () => {
  it("agrees with the generated decoder at the limit", () => {
    let deepestAccepted = 0;
    for (let depth = 20; depth <= 40; depth++) {
      const check = checkCall({ type: "track", userId: "u", event: "E", properties: nested(depth) }, 0);
      if (!check.ok) throw new Error(check.rejection.message);
      const refused = tooDeeplyNestedField(check.call) !== undefined;
      expect(refused, `depth ${depth}`).toBe(!decodesInBatch(nested(depth)));
      if (!refused) deepestAccepted = depth;
    }
    expect(deepestAccepted).toBeGreaterThan(25);
  });

  it("names the field and stops early on absurd depth", () => {
    const check = checkCall({ type: "identify", userId: "u", context: nested(5000) }, 0, 10);
    if (!check.ok) throw new Error(check.rejection.message);
    expect(tooDeeplyNestedField(check.call)).toBe("context");
  });

  it("passes a member that is no object, such as traits: null on a track call, instead of failing on it", () => {
    // As the client library's shortcut hands it over: the caller's message, not the rules' copy of it.
    const call = { type: "track", userId: "u", event: "E", traits: null, properties: {} } as unknown as ValidCall;
    expect(tooDeeplyNestedField(call)).toBeUndefined();
  });
});
