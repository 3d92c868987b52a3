import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isoMillis, simpleIsoMillis } from "./iso-millis.js";

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the dates toISOString prints with four-digit years. */
const FOUR_DIGIT_YEARS = { min: -62_167_219_200_000, max: 253_402_300_799_999 };

describe("simpleIsoMillis", () => {
  it("reads toISOString's text, and the same without milliseconds or with fewer digits, as Date.parse does", () => {
    fc.assert(
      fc.property(fc.integer(FOUR_DIGIT_YEARS), (millis) => {
        const text = new Date(millis).toISOString();
        expect(simpleIsoMillis(text)).toBe(millis);
        for (const shorter of [text.slice(0, 19) + "Z", text.slice(0, 21) + "Z", text.slice(0, 22) + "Z"]) {
          expect(simpleIsoMillis(shorter)).toBe(Date.parse(shorter));
        }
      }),
      { numRuns: 20_000 },
    );
  });

  it("gives Date.parse's answer or NaN for any text of the shape, impossible dates included", () => {
    const twoDigits = fc.integer({ min: 0, max: 99 }).map((n) => String(n).padStart(2, "0"));
    const text = fc
      .tuple(
        fc.integer({ min: 0, max: 9999 }),
        twoDigits,
        twoDigits,
        twoDigits,
        twoDigits,
        twoDigits,
        fc.constantFrom("", ".5", ".05", ".123"),
      )
      .map(([year, month, day, hour, minute, second, fraction]) => {
        return `${String(year).padStart(4, "0")}-${month}-${day}T${hour}:${minute}:${second}${fraction}Z`;
      });
    fc.assert(
      fc.property(text, (value) => {
        const millis = simpleIsoMillis(value);
        if (!Number.isNaN(millis)) expect(millis).toBe(Date.parse(value));
      }),
      { numRuns: 20_000 },
    );
  });

  it.each([
    ["a leap day", "2024-02-29T12:00:00Z", Date.parse("2024-02-29T12:00:00Z")],
    ["the first day of year 0", "0000-01-01T00:00:00.000Z", FOUR_DIGIT_YEARS.min],
    ["the last millisecond of year 9999", "9999-12-31T23:59:59.999Z", FOUR_DIGIT_YEARS.max],
  ])("reads %s", (_what, text, millis) => {
    expect(simpleIsoMillis(text)).toBe(millis);
  });

  it.each([
    ["February 29 of a common year", "2026-02-29T00:00:00Z"],
    ["February 30", "2024-02-30T00:00:00Z"],
    ["April 31", "2026-04-31T00:00:00Z"],
    ["month 13", "2026-13-01T00:00:00Z"],
    ["day 0", "2026-01-00T00:00:00Z"],
    ["hour 24", "2026-01-01T24:00:00Z"],
    ["minute 60", "2026-01-01T23:60:00Z"],
    ["an offset", "2026-01-01T10:00:00+02:00"],
    ["no zone", "2026-01-01T10:00:00"],
    ["a date alone", "2026-01-01"],
    ["a space for T", "2026-01-01 10:00:00Z"],
    ["a dot without digits", "2026-01-01T10:00:00.Z"],
    ["four digits of fraction", "2026-01-01T10:00:00.1234Z"],
    ["a letter for a digit", "2026-01-0xT10:00:00Z"],
    ["a six-digit year", "+020260-01-01T10:00:00Z"],
    ["text", "yesterday"],
  ])("leaves %s to Date.parse", (_what, text) => {
    expect(simpleIsoMillis(text)).toBeNaN();
  });
});

describe("isoMillis", () => {
  it("falls back to Date.parse for the other forms", () => {
    for (const text of ["2026-01-01T10:00:00+02:00", "2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01", "yesterday"]) {
      expect(isoMillis(text)).toEqual(Date.parse(text));
    }
    expect(isoMillis("2026-11-21T10:00:00.123Z")).toBe(Date.parse("2026-11-21T10:00:00.123Z"));
  });
});
