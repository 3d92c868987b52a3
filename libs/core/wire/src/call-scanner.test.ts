import { protoCallToJson } from "@switchyard/calls";
import { Call, IngestBatchRequest } from "@switchyard/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { callBytes, lengthDelimited, varint, makeCall } from "@switchyard/testkit";
import { scanCall, type ScannedCall } from "./call-scanner.js";
import { MAX_MESSAGE_LEVEL } from "./struct-walker.js";
import { MalformedWireError } from "./reader.js";

const EMPTY: Call = makeCall({ messageId: "", userId: "", payload: undefined });

const encode = (call: Partial<Call>) => Buffer.from(Call.encode({ ...EMPTY, ...call }).finish());
const tag = (field: number, wireType: number) => varint((field << 3) | wireType);
/** A Struct field (`field` of Call or of a payload) holding these raw map entries. */
const structField = (field: number, ...entries: Buffer[]) =>
  lengthDelimited(field, Buffer.concat(entries.map((entry) => lengthDelimited(1, entry))));
const key = (text: string | Buffer) => lengthDelimited(1, Buffer.from(text));
const value = (body: Buffer) => lengthDelimited(2, body);
const stringValue = (text: string) => lengthDelimited(3, Buffer.from(text));
const track = (body: Buffer) => lengthDelimited(11, body);
const doubleBytes = (number: number) => {
  const bytes = Buffer.alloc(8);
  bytes.writeDoubleLE(number);
  return bytes;
};

/** The generated decoder's reading of a call, decoded where ingest decodes it: inside its request (nesting levels count). */
function decodeInRequest(bytes: Buffer): Call {
  const call = IngestBatchRequest.decode(Buffer.concat([lengthDelimited(2, bytes)])).calls[0];
  if (!call) throw new Error("no call");
  return call;
}

/** What the outline must be: the decoded call with each free-form Struct replaced by a `{}` placeholder. */
function expectedOutline(call: Call): Call {
  const placeholder = (struct: object | undefined) => (struct === undefined ? undefined : {});
  const payload = call.payload;
  let outlinePayload: Call["payload"] = payload;
  if (payload?.$case === "identify" || payload?.$case === "group") {
    outlinePayload = { ...payload, value: { ...payload.value, traits: placeholder(payload.value.traits) } } as Call["payload"];
  } else if (payload?.$case === "track" || payload?.$case === "page" || payload?.$case === "screen") {
    outlinePayload = { ...payload, value: { ...payload.value, properties: placeholder(payload.value.properties) } } as Call["payload"];
  }
  return { ...call, context: placeholder(call.context), receivedAt: undefined, payload: outlinePayload };
}

function malformation(bytes: Buffer): string | undefined {
  try {
    scanCall(bytes);
    return undefined;
  } catch (error) {
    if (error instanceof MalformedWireError) return error.message;
    throw error;
  }
}

describe("call scanner", () => {
  it("reads what the generated decoder reads, except the free-form Structs, and only passes through regular bytes", () => {
    fc.assert(
      fc.property(callBytes, (bytes) => {
        let scanned: ScannedCall;
        try {
          scanned = scanCall(bytes);
        } catch (error) {
          // Only wire data the decoder refuses too (here: a timestamp no Date can hold) is malformed.
          expect(error).toBeInstanceOf(MalformedWireError);
          expect(() => decodeInRequest(bytes)).toThrow();
          return;
        }
        const decoded = decodeInRequest(bytes);
        expect(scanned.outline).toEqual(expectedOutline(decoded));
        expect(scanned.json).toEqual(protoCallToJson(scanned.outline));
        if (!scanned.irregular) {
          // The kept bytes alone are the call without its timestamps: nothing else was dropped.
          const kept = Buffer.concat(
            Array.from({ length: scanned.keptRanges.length / 2 }, (_, i) =>
              bytes.subarray(scanned.keptRanges[2 * i], scanned.keptRanges[2 * i + 1]),
            ),
          );
          expect(Call.decode(kept)).toEqual({ ...decoded, timestamp: undefined, receivedAt: undefined });
        }
      }),
      { numRuns: 1500 },
    );
  });

  it("leaves out timestamp, received_at and unknown fields, and keeps the rest in order", () => {
    const head = encode({ messageId: "m", userId: "u" });
    const timestamp = encode({ timestamp: new Date(5_000) });
    const unknown = Buffer.concat([tag(99, 0), varint(7)]);
    const receivedAt = encode({ receivedAt: new Date(9_000) });
    const tail = encode({ payload: { $case: "track", value: { event: "E", properties: { a: 1 } } } });
    const bytes = Buffer.concat([head, timestamp, unknown, tail, receivedAt]);
    const scanned = scanCall(bytes);
    const tailStart = head.length + timestamp.length + unknown.length;
    expect(scanned.keptRanges).toEqual([0, head.length, tailStart, tailStart + tail.length]);
    expect(scanned.irregular).toBe(false);
    expect(scanned.outline.timestamp).toEqual(new Date(5_000));
  });

  it("decodes integrations in full and leaves the other Structs as placeholders", () => {
    const bytes = encode({
      userId: "u",
      context: { big: "x".repeat(100) },
      integrations: { All: false, Webhooks: { retries: 2 } },
      payload: { $case: "identify", value: { traits: { plan: "pro" } } },
    });
    const { outline, json } = scanCall(bytes);
    expect(outline.integrations).toEqual({ All: false, Webhooks: { retries: 2 } });
    expect(json).toEqual({
      type: "identify",
      userId: "u",
      context: {},
      integrations: { All: false, Webhooks: { retries: 2 } },
      traits: {},
    });
  });

  it("turns a timestamp outside the Date range into text the timestamp rule refuses", () => {
    const timestamp = lengthDelimited(4, Buffer.concat([tag(1, 0), varint(10n ** 15n)]));
    const { json } = scanCall(Buffer.concat([encode({ userId: "u" }), timestamp]));
    expect(json.timestamp).toBe("Invalid Date");
  });

  it.each([
    ["context twice", Buffer.concat([structField(5), structField(5)])],
    ["a payload twice", Buffer.concat([track(Buffer.alloc(0)), track(Buffer.alloc(0))])],
    ["properties twice", track(Buffer.concat([structField(2), structField(2)]))],
    ["an unknown field in a payload", track(Buffer.concat([tag(9, 0), varint(1)]))],
    ["an unknown field in a Struct", lengthDelimited(5, Buffer.concat([tag(2, 0), varint(1)]))],
    ["a map entry without a value", structField(5, key("a"))],
    ["a map entry with two values", structField(5, Buffer.concat([key("a"), value(stringValue("x")), value(stringValue("y"))]))],
    ["a Value without a kind", structField(5, Buffer.concat([key("a"), value(Buffer.alloc(0))]))],
    ["a Value with two kinds", structField(5, Buffer.concat([key("a"), value(Buffer.concat([stringValue("x"), tag(4, 0), varint(1)]))]))],
    ["a bool encoded as 2", structField(5, Buffer.concat([key("a"), value(Buffer.concat([tag(4, 0), varint(2)]))]))],
    ["a NULL_VALUE of 1", structField(5, Buffer.concat([key("a"), value(Buffer.concat([tag(1, 0), varint(1)]))]))],
    ["a number that is not finite", structField(5, Buffer.concat([key("a"), value(Buffer.concat([tag(2, 1), doubleBytes(Number.NaN)]))]))],
    [
      "an Infinity in a list",
      structField(
        5,
        Buffer.concat([key("a"), value(lengthDelimited(6, lengthDelimited(1, Buffer.concat([tag(2, 1), doubleBytes(Infinity)]))))]),
      ),
    ],
    ["a key that is not UTF-8", structField(5, Buffer.concat([key(Buffer.from([0xff])), value(stringValue("x"))]))],
    ["a string value that is not UTF-8", structField(5, Buffer.concat([key("a"), value(lengthDelimited(3, Buffer.from([0xc3])))]))],
    ["a userId that is not UTF-8", lengthDelimited(2, Buffer.from([0x61, 0xff]))],
    ["an event that is not UTF-8", track(lengthDelimited(1, Buffer.from([0xe2, 0x82])))],
    // Valid, and read the same by the decoder; the Struct walk's fast path reads one-byte tags only.
    [
      "a Struct key whose tag takes two bytes",
      structField(5, Buffer.concat([Buffer.from([0x8a, 0x00, 0x01]), Buffer.from("a"), value(stringValue("x"))])),
    ],
  ])("marks %s irregular, so the call is decoded and re-encoded instead", (_name, bytes) => {
    expect(scanCall(bytes).irregular).toBe(true);
  });

  it.each([
    ["a key that is not UTF-8", structField(5, Buffer.concat([key(Buffer.from([0xff])), value(stringValue("x"))]))],
    ["a string value that is not UTF-8", structField(5, Buffer.concat([key("a"), value(lengthDelimited(3, Buffer.from([0xc3])))]))],
    ["a userId that is not UTF-8", lengthDelimited(2, Buffer.from([0x61, 0xff]))],
    ["an event that is not UTF-8", track(lengthDelimited(1, Buffer.from([0xe2, 0x82])))],
    [
      "an earlier messageId that is not UTF-8",
      Buffer.concat([lengthDelimited(1, Buffer.from([0xc0, 0xaf])), lengthDelimited(1, Buffer.from("m"))]),
    ],
    [
      "an earlier payload's event that is not UTF-8",
      Buffer.concat([track(lengthDelimited(1, Buffer.from([0xff]))), track(lengthDelimited(1, Buffer.from("E")))]),
    ],
  ])("notes %s (invalidText), so the call is refused", (_name, bytes) => {
    expect(scanCall(bytes).invalidText).toBeDefined();
  });

  it('passes a "__proto__" key through like any other: the decoder keeps it as data', () => {
    const bytes = Buffer.concat([
      lengthDelimited(2, Buffer.from("u")),
      structField(5, Buffer.concat([key("__proto__"), value(stringValue("x"))])),
    ]);
    const scan = scanCall(bytes);
    expect([scan.irregular, scan.invalidText]).toEqual([false, undefined]);
    expect(JSON.stringify(decodeInRequest(bytes).context)).toBe('{"__proto__":"x"}');
  });

  it.each([
    ["a truncated field", encode({ userId: "user" }).subarray(0, 4)],
    ["a length past the end", Buffer.from([0x12, 0x05, 0x61])],
    ["field number 0", Buffer.from([0x00])],
    ["wire type 6", Buffer.from([0x0e])],
    ["wire type 7", Buffer.from([0x0f])],
    ["an end-group tag outside a group", Buffer.concat([tag(20, 4)])],
    ["a group that is not closed", Buffer.concat([tag(20, 3), tag(21, 0), varint(1)])],
    ["a group closed by another field", Buffer.concat([tag(20, 3), tag(21, 4)])],
    ["a varint of eleven bytes", Buffer.concat([tag(20, 0), Buffer.alloc(10, 0xff), Buffer.from([0x01])])],
    ["a tag over 32 bits", Buffer.from([0xff, 0xff, 0xff, 0xff, 0x7f])],
    ["timestamp seconds beyond the safe integer range", lengthDelimited(4, Buffer.concat([tag(1, 0), varint(2n ** 53n)]))],
    ["client received_at seconds beyond the safe integer range", lengthDelimited(7, Buffer.concat([tag(1, 0), varint(-(2n ** 60n))]))],
    ["a Struct cut short", lengthDelimited(5, Buffer.from([0x0a, 0x05, 0x0a]))],
    ["a number value of 7 bytes", structField(5, Buffer.concat([key("a"), value(Buffer.concat([tag(2, 1), Buffer.alloc(7)]))]))],
    ["a text field with a varint", Buffer.from([0x0a, 0x80])],
  ])("refuses %s as malformed", (_name, bytes) => {
    expect(malformation(bytes)).toBeDefined();
  });

  it("refuses nesting deeper than the generated decoder allows, exactly where it starts refusing", () => {
    // Call (level 2) > Track (3) > Struct (4) > entry (5) > Value (6), then each list adds ListValue and Value.
    const nested = (lists: number) => {
      let json: unknown = "leaf";
      for (let level = 0; level < lists; level++) json = [json];
      return encode({ userId: "u", payload: { $case: "track", value: { event: "E", properties: { json } } } });
    };
    const deepest = (MAX_MESSAGE_LEVEL - 6) / 2;
    expect(malformation(nested(deepest))).toBeUndefined();
    expect(() => decodeInRequest(nested(deepest))).not.toThrow();
    expect(malformation(nested(deepest + 1))).toMatch(/nested deeper/);
    expect(() => decodeInRequest(nested(deepest + 1))).toThrow(/recursion limit/);
  });
});
