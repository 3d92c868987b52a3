import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ValidationError } from "./errors.js";
import { prepareCall } from "./prepare-call.js";
import { LIBRARY } from "./version.js";

function refusal(type: Parameters<typeof prepareCall>[0], message: unknown): { field: string; rule: string; message: string } {
  try {
    prepareCall(type, message);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    const { field, rule, message: text } = error as ValidationError;
    return { field, rule, message: text };
  }
  throw new Error("the call was accepted");
}

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe("validation when a call is made", () => {
  it.each([
    ["a message that is not an object", "track", "Order", "", "type"],
    ["identify without userId or anonymousId", "identify", { traits: {} }, "userId", "identity_required"],
    ["track without userId or anonymousId", "track", { event: "E" }, "userId", "identity_required"],
    ["page without userId or anonymousId", "page", { name: "Home" }, "userId", "identity_required"],
    ["screen without userId or anonymousId", "screen", { name: "Home" }, "userId", "identity_required"],
    ["group without userId or anonymousId", "group", { groupId: "g" }, "userId", "identity_required"],
    ["track without event", "track", { userId: "u" }, "event", "required"],
    ["track with an empty event", "track", { userId: "u", event: "" }, "event", "not_empty"],
    ["track with a non-string event", "track", { userId: "u", event: 7 }, "event", "type"],
    ["group without groupId", "group", { userId: "u" }, "groupId", "required"],
    ["alias without userId", "alias", { previousId: "p", anonymousId: "a" }, "userId", "required"],
    ["alias without previousId", "alias", { userId: "u" }, "previousId", "required"],
    ["an empty userId", "identify", { userId: "" }, "userId", "not_empty"],
    ["a userId over 128 characters", "identify", { userId: "u".repeat(129) }, "userId", "max_length"],
    ["a messageId over 128 characters", "identify", { userId: "u", messageId: "m".repeat(129) }, "messageId", "max_length"],
    ["a timestamp that is not ISO 8601", "track", { userId: "u", event: "E", timestamp: "yesterday" }, "timestamp", "format"],
    ["an invalid Date", "track", { userId: "u", event: "E", timestamp: new Date(Number.NaN) }, "timestamp", "format"],
    ["properties that are not an object", "track", { userId: "u", event: "E", properties: [1] }, "properties", "type"],
    ["traits that are not an object", "identify", { userId: "u", traits: "vip" }, "traits", "type"],
    ["context that is not an object", "identify", { userId: "u", context: 5 }, "context", "type"],
    ["a page name that is not a string", "page", { userId: "u", name: 5 }, "name", "type"],
    [
      "an integrations value that is not a boolean or object",
      "track",
      { userId: "u", event: "E", integrations: { All: "no" } },
      "integrations.All",
      "value",
    ],
    ["a BigInt value (not JSON)", "track", { userId: "u", event: "E", properties: { n: 1n } }, "", "type"],
    ["properties nested too deeply to be stored", "track", { userId: "u", event: "E", properties: nested(60) }, "properties", "max_depth"],
  ])("refuses %s, naming the field and the rule", (_what, type, message, field, rule) => {
    const refused = refusal(type as Parameters<typeof prepareCall>[0], message);
    expect(refused).toMatchObject({ field, rule });
    expect(refused.message).toContain(`rule: ${rule}`);
    if (field) expect(refused.message).toContain(field);
  });

  it("refuses a circular message as nested too deeply", () => {
    const properties: Record<string, unknown> = {};
    properties.self = properties;
    expect(refusal("track", { userId: "u", event: "E", properties })).toMatchObject({ field: "properties", rule: "max_depth" });
  });

  it("refuses a 33 KB message and accepts one just under 32 KB", () => {
    const big = refusal("track", { userId: "u", event: "E", properties: { blob: "x".repeat(33 * 1024) } });
    expect(big).toMatchObject({ field: "", rule: "max_size" });
    expect(big.message).toContain("32 KB");
    const fits = prepareCall("track", { userId: "u", event: "E", properties: { blob: "x".repeat(31 * 1024) } });
    expect(fits.jsonBytes).toBeLessThanOrEqual(32 * 1024);
  });

  it("accepts a page with only an anonymousId, like ingest, and an alias with userId and previousId", () => {
    expect(() => prepareCall("page", { anonymousId: "a" })).not.toThrow();
    expect(() => prepareCall("alias", { userId: "u", previousId: "p" })).not.toThrow();
  });

  it("adds context.library, keeping the caller's context", () => {
    const prepared = prepareCall("track", { userId: "u", event: "E", context: { ip: "1.2.3.4", library: { name: "other" } } });
    expect(prepared.jsonBytes).toBeGreaterThan(0);
    expect(LIBRARY.version).toBe(JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version);
  });
});
