import { describe, expect, it } from "vitest";
import { newMessageId } from "./message-id.js";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("newMessageId", () => {
  it("makes version 4 UUIDs, distinct across many refills of its pool of random bytes", () => {
    const ids = Array.from({ length: 2_000 }, () => newMessageId());
    for (const id of ids) expect(id).toMatch(UUID_V4);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("uses every hex digit in every free position", () => {
    // 2,000 ids: a position stuck at one value (a byte used twice, a digit table off by one) shows.
    const ids = Array.from({ length: 2_000 }, () => newMessageId());
    for (let position = 0; position < 36; position++) {
      const seen = new Set(ids.map((id) => id[position]));
      if ([8, 13, 18, 23].includes(position)) expect(seen).toEqual(new Set(["-"]));
      else if (position === 14) expect(seen).toEqual(new Set(["4"]));
      else if (position === 19) expect(seen).toEqual(new Set(["8", "9", "a", "b"]));
      else expect(seen.size, `position ${position}`).toBe(16);
    }
  });
});
