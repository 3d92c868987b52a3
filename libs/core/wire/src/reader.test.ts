import { Call, CallField, Timestamp } from "@switchyard/contracts";
import { callArbitrary } from "@switchyard/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MalformedWireError, UNUSUAL, WireReader } from "./reader.js";
import { WireType } from "./tags.js";

const callFieldSlots = () => new Int32Array(2 * (Math.max(...Object.values(CallField)) + 1));

describe("WireReader", () => {
  it("finds the same length-delimited fields of a generated encoding by its checked and its plain reads", () => {
    fc.assert(
      fc.property(callArbitrary, (call) => {
        const bytes = Buffer.from(Call.encode(call).finish());
        const checked = callFieldSlots().fill(-1);
        const reader = new WireReader(bytes);
        while (reader.pos < bytes.length) {
          const tag = reader.tag(bytes.length);
          if ((tag & 7) === WireType.LEN) {
            const end = reader.delimitedEnd(bytes.length);
            checked[2 * (tag >>> 3)] = reader.pos;
            checked[2 * (tag >>> 3) + 1] = end;
            reader.pos = end;
          } else reader.skipField(tag, bytes.length);
        }
        const plain = callFieldSlots();
        const plainReader = new WireReader(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
        plainReader.fieldRanges(bytes.length, plain);
        expect([...plain]).toEqual([...checked]);
      }),
      { numRuns: 500 },
    );
  });

  it("reads a Timestamp's milliseconds as the generated decoder makes its Date, leaving times before 1970 to it", () => {
    fc.assert(
      fc.property(fc.date({ noInvalidDate: true }), (date) => {
        const bytes = Timestamp.encode({
          seconds: Math.trunc(date.getTime() / 1_000),
          nanos: (date.getTime() % 1_000) * 1_000_000,
        }).finish();
        const reader = new WireReader(bytes);
        if (date.getTime() < 0) expect(() => reader.timestampMillis(0, bytes.length)).toThrow(UNUSUAL);
        else expect(reader.timestampMillis(0, bytes.length)).toBe(date.getTime());
      }),
    );
  });

  it("refuses what is not wire data in its checked reads, and leaves it to the decoder in its plain reads", () => {
    const zeroTag = Buffer.from([0x00, 0x01]);
    expect(() => new WireReader(zeroTag).tag(zeroTag.length)).toThrow(MalformedWireError);
    expect(() => new WireReader(zeroTag).fieldRanges(zeroTag.length, callFieldSlots())).toThrow(UNUSUAL);
    const pastEnd = Buffer.from([0x0a, 0x05, 0x61]);
    const checked = new WireReader(pastEnd);
    checked.tag(pastEnd.length);
    expect(() => checked.delimitedEnd(pastEnd.length)).toThrow(/past the end/);
    expect(() => new WireReader(pastEnd).fieldRanges(pastEnd.length, callFieldSlots())).toThrow(UNUSUAL);
  });
});
