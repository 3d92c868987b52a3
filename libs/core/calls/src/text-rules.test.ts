import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isValidIsoDateTime } from "./iso-date.js";
import { hasControlCharacter, isUtf8Bytes, isWellFormedText } from "./text-rules.js";

describe("hasControlCharacter", () => {
  it("finds C0, DEL and C1, and nothing else", () => {
    for (let code = 0; code <= 0x00ff; code++) {
      const control = code <= 0x1f || (code >= 0x7f && code <= 0x9f);
      expect(hasControlCharacter(`id-${String.fromCharCode(code)}-x`), `U+${code.toString(16)}`).toBe(control);
    }
    expect(hasControlCharacter("😀 \u00a0\u2028\ufeff\ufffd")).toBe(false);
  });
});

describe("isWellFormedText", () => {
  it("refuses lone surrogates only", () => {
    expect(isWellFormedText("a😀b\ud83d\ude00")).toBe(true);
    for (const text of ["\ud800", "a\udc00", "\ude00\ud83d", "x\ud83d"]) expect(isWellFormedText(text)).toBe(false);
  });
});

describe("isUtf8Bytes", () => {
  it("refuses what a UTF-8 decoder would replace with U+FFFD", () => {
    expect(isUtf8Bytes(Buffer.from("é😀\ufffd"))).toBe(true);
    for (const bytes of [[0xff], [0x80], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80]]) {
      expect(isUtf8Bytes(Buffer.from(bytes))).toBe(false);
    }
  });
});

describe("isValidIsoDateTime", () => {
  const two = (n: number) => String(n).padStart(2, "0");

  it("accepts a date-time exactly when every part exists, as a calendar built by Date.UTC says", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9999 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 0, max: 61 }),
        fc.integer({ min: 0, max: 61 }),
        (year, month, day, hour, minute, second) => {
          const text = `${String(year).padStart(4, "0")}-${two(month)}-${two(day)}T${two(hour)}:${two(minute)}:${two(second)}Z`;
          // Date.UTC rolls impossible parts over: the parts exist when they come back unchanged.
          const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
          date.setUTCFullYear(year, month - 1, day);
          const exists =
            date.getUTCFullYear() === year &&
            date.getUTCMonth() === month - 1 &&
            date.getUTCDate() === day &&
            date.getUTCHours() === hour &&
            date.getUTCMinutes() === minute &&
            date.getUTCSeconds() === second;
          expect(isValidIsoDateTime(text), text).toBe(exists);
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it("checks the offset's hours and minutes", () => {
    expect(isValidIsoDateTime("2026-01-01T00:00:00+23:59")).toBe(true);
    expect(isValidIsoDateTime("2026-01-01T00:00:00-0000")).toBe(true);
    expect(isValidIsoDateTime("2026-01-01T00:00:00+24:00")).toBe(false);
    expect(isValidIsoDateTime("2026-01-01T00:00:00-05:60")).toBe(false);
  });
});
