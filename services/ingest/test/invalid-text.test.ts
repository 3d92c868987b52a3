import { Call } from "@switchyard/contracts";
import { describe, expect, it } from "vitest";
import { lengthDelimited, makeCall } from "@switchyard/testkit";
import { grpcCall } from "../src/grpc-calls.js";
import { scanCall } from "@switchyard/wire";

const BAD = Buffer.from([0x61, 0xff]);
const entry = (key: Buffer | string, value: Buffer) =>
  lengthDelimited(1, Buffer.concat([lengthDelimited(1, Buffer.from(key)), lengthDelimited(2, value)]));
const stringValue = (text: Buffer | string) => lengthDelimited(3, Buffer.from(text));
const structValue = (...entries: Buffer[]) => lengthDelimited(5, Buffer.concat(entries));
const listValue = (...values: Buffer[]) => lengthDelimited(6, Buffer.concat(values.map((value) => lengthDelimited(1, value))));
const userId = lengthDelimited(2, Buffer.from("u"));

describe("text that is not UTF-8 in a gRPC call", () => {
  it.each([
    ["messageId", lengthDelimited(1, BAD), "messageId: must be valid UTF-8"],
    ["anonymousId", lengthDelimited(3, BAD), "anonymousId: must be valid UTF-8"],
    ["a context key", lengthDelimited(5, entry(BAD, stringValue("x"))), "context: keys must be valid UTF-8"],
    [
      "a nested context value",
      lengthDelimited(5, entry("os", structValue(entry("name", stringValue(BAD))))),
      "context.os.name: must be valid UTF-8",
    ],
    [
      "an integrations setting",
      lengthDelimited(6, entry("Webhooks", structValue(entry("k", stringValue(BAD))))),
      "integrations.Webhooks.k: must be valid UTF-8",
    ],
    ["a track's event", lengthDelimited(11, lengthDelimited(1, BAD)), "event: must be valid UTF-8"],
    [
      "a list item in page properties",
      lengthDelimited(12, lengthDelimited(3, entry("tags", listValue(stringValue("ok"), stringValue(BAD))))),
      "properties.tags.1: must be valid UTF-8",
    ],
    [
      "a key of a nested object",
      lengthDelimited(5, entry("os", structValue(entry(BAD, stringValue("x"))))),
      "context.os: keys must be valid UTF-8",
    ],
    [
      "an object in a list in a list",
      lengthDelimited(5, entry("a", listValue(listValue(stringValue("x"), structValue(entry("b", stringValue(BAD))))))),
      "context.a.0.1.b: must be valid UTF-8",
    ],
    ["a group's groupId", lengthDelimited(14, lengthDelimited(1, BAD)), "groupId: must be valid UTF-8"],
    [
      "identify traits, value before key",
      lengthDelimited(
        10,
        lengthDelimited(
          1,
          lengthDelimited(1, Buffer.concat([lengthDelimited(2, stringValue(BAD)), lengthDelimited(1, Buffer.from("plan"))])),
        ),
      ),
      "traits.plan: must be valid UTF-8",
    ],
  ])("refuses %s, naming the field (rule utf8)", (_name, field, message) => {
    const bytes = Buffer.concat([userId, field]);
    expect(scanCall(bytes).invalidText?.message).toBe(message);
    const check = grpcCall(bytes).check(4);
    expect(check).toEqual({ ok: false, rejection: { index: 4, messageId: "", field: message.replace(/: .*/, ""), rule: "utf8", message } });
    // With a readable messageId, the refusal carries it.
    const withId = grpcCall(Buffer.concat([lengthDelimited(1, Buffer.from("m-1")), bytes])).check(0);
    if (!field.equals(lengthDelimited(1, BAD))) expect(withId.ok ? undefined : withId.rejection.messageId).toBe("m-1");
  });

  it("finds nothing in valid text, emoji and U+FFFD sent as such included", () => {
    const bytes = Buffer.from(
      Call.encode(
        makeCall({
          messageId: "m-😀",
          userId: "u\ufffd",
          context: { é: ["x", { y: "z" }] },
          integrations: { All: true },
          payload: { $case: "track", value: { event: "E", properties: { a: "\ufffd" } } },
        }),
      ).finish(),
    );
    expect(scanCall(bytes).invalidText).toBeUndefined();
    expect(grpcCall(bytes).check(0).ok).toBe(true);
  });
});
