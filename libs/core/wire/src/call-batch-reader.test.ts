import { callBatchArbitrary, canonical, damagedBatchBytes, makeCall } from "@switchyard/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readCallBatch } from "./call-batch-reader.js";
import { CallBatch, type Call } from "@switchyard/contracts";

/** The generated decoder's answer: the batch, or that it threw. */
function generated(bytes: Uint8Array): string {
  try {
    return canonical(CallBatch.decode(bytes));
  } catch {
    return "throws";
  }
}

function ours(bytes: Uint8Array): string {
  try {
    return canonical(readCallBatch(bytes));
  } catch {
    return "throws";
  }
}

/** An encoded batch of one call with this context. */
function batchWithContext(context: Record<string, unknown>): Uint8Array {
  const only: Call = makeCall({ messageId: "m", userId: "u", context, payload: undefined });
  return CallBatch.encode({ batchId: "b", sourceId: "s", receivedAt: undefined, calls: [only] }).finish();
}

describe("readCallBatch", () => {
  it("returns what the generated decoder returns for any CallBatch", () => {
    fc.assert(
      fc.property(callBatchArbitrary, (value) => {
        const bytes = CallBatch.encode(value).finish();
        expect(ours(bytes)).toBe(generated(bytes));
      }),
      { numRuns: 500 },
    );
  });

  it("agrees with the generated decoder on damaged bytes: the same batch, or both throw", () => {
    fc.assert(
      fc.property(
        damagedBatchBytes((batch) => CallBatch.encode(batch).finish()),
        (bytes) => {
          expect(ours(bytes)).toBe(generated(bytes));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('keeps a "__proto__" key as an ordinary member, like the generated decoder with struct-keys.ts (never setting a prototype from data)', () => {
    const context = JSON.parse('{"__proto__":{"polluted":true},"constructor":1,"kept":"yes"}') as Record<string, unknown>;
    // The generated encoder (as struct-keys.ts replaces its wrap) writes the key like any other.
    const bytes = batchWithContext(context);
    expect(Buffer.from(bytes).includes("__proto__")).toBe(true);
    expect(ours(bytes)).toBe(generated(bytes));
    const decoded = readCallBatch(bytes).calls[0]!.context!;
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(Object.keys(decoded)).toEqual(["__proto__", "constructor", "kept"]);
    expect(JSON.stringify(decoded)).toBe('{"__proto__":{"polluted":true},"constructor":1,"kept":"yes"}');
    expect(JSON.stringify(CallBatch.decode(bytes).calls[0]!.context)).toBe(JSON.stringify(decoded));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("turns invalid UTF-8 into U+FFFD exactly as the generated decoder does", () => {
    const invalid = [
      [0xc3, 0x28], // a lead byte without its continuation
      [0x80], // a lone continuation byte
      [0xf0, 0x9f, 0x98], // a four-byte sequence cut short
      [0xed, 0xa0, 0x80], // an encoded surrogate
      [0xc0, 0xaf], // an overlong encoding
      [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
      [0x61, 0xe2, 0x82, 0x62, 0xff, 0x63], // mixed with valid text
    ];
    for (const sequence of invalid) {
      // A placeholder string of the same length, overwritten in the encoded bytes: the framing stays valid.
      const placeholder = "\u0001".repeat(sequence.length);
      const bytes = Buffer.from(batchWithContext({ k: placeholder }));
      // The Value's string_value field: tag 26, the length, the text.
      const at = bytes.indexOf(Buffer.concat([Buffer.from([26, sequence.length]), Buffer.from(placeholder)])) + 2;
      expect(at).toBeGreaterThan(1);
      Buffer.from(sequence).copy(bytes, at);
      const decoded = ours(bytes);
      expect(decoded, `bytes ${sequence.join(" ")}`).toBe(generated(bytes));
      expect(decoded).toContain("\ufffd");
    }
  });

  it("refuses nesting past the generated decoder's limit of 100 messages, like it", () => {
    const nested = (levels: number): Record<string, unknown> => (levels === 0 ? {} : { a: nested(levels - 1) });
    const answers: string[] = [];
    // Each object level is three messages deep (Struct, map entry, Value): 33 levels cross the limit.
    for (const levels of [31, 32, 33, 34]) {
      const bytes = batchWithContext(nested(levels));
      expect(ours(bytes), `${levels} levels`).toBe(generated(bytes));
      answers.push(ours(bytes));
    }
    expect(answers.map((answer) => answer === "throws")).toEqual([false, false, true, true]);
  });
});
