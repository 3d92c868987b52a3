import { protoCallToJson } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { anyText, callBytes, callNearSize, makeCall } from "@switchyard/testkit";
import { scanCall } from "./call-scanner.js";
import { INVALID_UTF8, jsonNumberSize, jsonStringSize } from "./json-size.js";
import { MalformedWireError } from "./reader.js";

const jsonBytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value), "utf8");

describe("JSON size from protobuf bytes", () => {
  it("measures a string's JSON exactly from its UTF-8 bytes", () => {
    fc.assert(
      fc.property(anyText(40), (text) => {
        const bytes = Buffer.from(text, "utf8");
        expect(jsonStringSize(bytes, 0, bytes.length)).toBe(jsonBytesOf(bytes.toString("utf8")));
      }),
      { numRuns: 2000 },
    );
  });

  it("measures a string inside a larger buffer", () => {
    const bytes = Buffer.from('xx"\u0001é\nyy');
    expect(jsonStringSize(bytes, 2, bytes.length - 2)).toBe(jsonBytesOf('"\u0001é\n'));
  });

  it("reports text that is not valid UTF-8", () => {
    for (const bad of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0x61, 0xe2, 0x82]]) {
      expect(jsonStringSize(Buffer.from(bad), 0, bad.length)).toBe(INVALID_UTF8);
    }
  });

  it("bounds every number's JSON, exactly for integers and non-finite numbers", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.double(), fc.integer(), fc.maxSafeInteger(), fc.constantFrom(-0, 1e20, 1e21, -1e21, 999999999999999900000)),
        (value) => {
          const exact = jsonBytesOf(value);
          expect(jsonNumberSize(value)).toBeGreaterThanOrEqual(exact);
          if (!Number.isFinite(value) || (Number.isInteger(value) && Math.abs(value) < 1e21)) expect(jsonNumberSize(value)).toBe(exact);
        },
      ),
      { numRuns: 5000 },
    );
  });

  it("never reports less than the exact JSON size of a call (the size the limits are defined on)", () => {
    fc.assert(
      fc.property(fc.oneof(callBytes, callNearSize()), (bytes) => {
        let bound: number;
        try {
          const scanned = scanCall(bytes);
          if (scanned.irregular) return; // irregular calls are measured exactly, never by the bound
          bound = scanned.jsonSizeBound;
        } catch (error) {
          if (error instanceof MalformedWireError) return;
          throw error;
        }
        expect(bound).toBeGreaterThanOrEqual(jsonBytesOf(protoCallToJson(Call.decode(bytes))));
      }),
      { numRuns: 1500 },
    );
  });

  it("is exact for a call without fractional numbers", () => {
    const call: Call = makeCall({
      messageId: "m-1",
      userId: 'u"\n',
      anonymousId: "é😀",
      timestamp: new Date("2024-02-03T04:05:06.789Z"),
      context: { ip: "203.0.113.7", nested: { list: [1, -2, null, true, false, "x\u0000"], empty: {} }, "k\t": [] },
      integrations: { All: false, Webhooks: { x: 1 } },
      payload: { $case: "page", value: { name: "Home", category: "", properties: { url: "https://example.com/?q=1" } } },
    });
    const bytes = Buffer.from(Call.encode(call).finish());
    expect(scanCall(bytes).jsonSizeBound).toBe(jsonBytesOf(protoCallToJson(Call.decode(bytes))));
  });
});
