import { describe, expect, it } from "vitest";
import { callSchema } from "./call-schema.js";
import { hasFourDigitYear, isoText, isoTextLength, isoTextOfTime } from "./iso-text.js";

/** A small seeded generator, so a failure can be reproduced. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("isoText", () => {
  it("writes what toISOString writes, across the whole Date range", () => {
    const random = seeded(7);
    const spans = [8.64e15, 2.6e14, 6.3e13, 4e12, 1e10]; // all of Date, years 0000-9999, around now, ...
    for (let i = 0; i < 200_000; i++) {
      const span = spans[i % spans.length]!;
      const date = new Date(Math.round((random() * 2 - 1) * span));
      expect(isoText(date)).toBe(date.toISOString());
    }
  });

  it("gets the edges right: leap days, century years, the epoch, year 0000 and 9999, and beyond", () => {
    const edges = [
      "1970-01-01T00:00:00.000Z",
      "1969-12-31T23:59:59.999Z",
      "2000-02-29T12:00:00.001Z",
      "1900-02-28T23:59:59.999Z",
      "1900-03-01T00:00:00.000Z",
      "2024-02-29T00:00:00.000Z",
      "2100-03-01T00:00:00.000Z",
      "0000-01-01T00:00:00.000Z",
      "0000-02-29T00:00:00.000Z",
      "9999-12-31T23:59:59.999Z",
      "+010000-01-01T00:00:00.000Z",
      "-000001-12-31T23:59:59.999Z",
    ].map((text) => new Date(text));
    for (const date of [...edges, new Date(8.64e15), new Date(-8.64e15)]) expect(isoText(date)).toBe(date.toISOString());
  });

  it("writes a time in milliseconds as a Date made of it would, fractions of a millisecond dropped", () => {
    const random = seeded(11);
    for (let i = 0; i < 50_000; i++) {
      const time = (random() * 2 - 1) * (i % 2 === 0 ? 8.64e15 : 4e12);
      expect(isoTextOfTime(time)).toBe(new Date(time).toISOString());
    }
    for (const time of [0.9, -0.5, 1.5e12 + 0.999, -62_167_219_200_000.5]) expect(isoTextOfTime(time)).toBe(new Date(time).toISOString());
  });

  it("names an invalid Date instead of throwing", () => {
    expect(isoText(new Date(Number.NaN))).toBe("Invalid Date");
  });

  it("tells the Dates whose text the timestamp rule accepts, and their text's length, without building it", () => {
    const random = seeded(11);
    const edges = [-62_167_219_200_000, 253_402_300_799_999].flatMap((millis) => [millis - 1, millis, millis + 1]);
    const spans = [8.64e15, 2.6e14, 6.3e13];
    const dates = [
      ...edges.map((millis) => new Date(millis)),
      new Date(Number.NaN),
      ...Array.from({ length: 3_000 }, (_, i) => new Date(Math.round((random() * 2 - 1) * spans[i % spans.length]!))),
    ];
    for (const date of dates) {
      const accepted = callSchema.safeParse({ type: "identify", userId: "u", timestamp: isoText(date) }).success;
      expect(hasFourDigitYear(date)).toBe(accepted);
      expect(isoTextLength(date)).toBe(isoText(date).length);
    }
  });
});
