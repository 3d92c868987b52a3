import fc from "fast-check";
import { headers } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { headerSafeId } from "./header-safe-id.js";
import { NATS_MSG_ID_HEADER } from "./headers.js";

describe("headerSafeId", () => {
  it("keeps ids that are visible ASCII, as SDKs make them", () => {
    expect(headerSafeId("ajs-next-1f0c2b6e-3a41-4c5e-9f0e-5d6f7a8b9c0d")).toBe("ajs-next-1f0c2b6e-3a41-4c5e-9f0e-5d6f7a8b9c0d");
    expect(headerSafeId("m-1:dest-a")).toBe("m-1:dest-a");
  });

  it("hashes ids with line breaks, NUL, spaces, emoji or past 128 characters, and never collides with a plain id", () => {
    for (const id of ["bad\nid", "a\r\nb", "nul\0", " lead", "trail ", "😀", "x".repeat(129), "h_looks-hashed"]) {
      expect(headerSafeId(id)).toMatch(/^h_[A-Za-z0-9_-]{43}$/);
    }
    expect(headerSafeId("a b")).not.toBe(headerSafeId("a  b"));
  });

  it("gives a value every NATS header accepts unchanged, for any string, and the same value for the same id", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (id) => {
        const safe = headerSafeId(id);
        const set = headers();
        set.set(NATS_MSG_ID_HEADER, safe);
        expect(set.get(NATS_MSG_ID_HEADER)).toBe(safe);
        expect(headerSafeId(id)).toBe(safe);
      }),
    );
  });
});
