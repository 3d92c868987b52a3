import { describe, expect, it } from "vitest";
import { hashWriteKey } from "./write-keys.js";
import { liveRetiringKeys, rotateWriteKey } from "./key-rotation.js";
import type { SourceRecord } from "./schema.js";

const A = hashWriteKey("wk_key_a_000000000000");
const B = hashWriteKey("wk_key_b_000000000000");
const C = hashWriteKey("wk_key_c_000000000000");
const NOW = Date.parse("2026-11-22T10:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();

describe("rotateWriteKey", () => {
  it("makes the new key current and the old ones retiring until the grace ends", () => {
    const rotated = rotateWriteKey({ id: "web", name: "Web", writeKeyHashes: [A] }, B, 60_000, NOW);
    expect(rotated).toEqual({
      id: "web",
      name: "Web",
      writeKeyHashes: [B],
      retiringWriteKeys: [{ hash: A, expiresAt: iso(NOW + 60_000) }],
    });
  });

  it("with no grace, drops the old keys at once", () => {
    expect(
      rotateWriteKey({ id: "web", writeKeyHashes: [A], retiringWriteKeys: [{ hash: C, expiresAt: iso(NOW + 5_000) }] }, B, 0, NOW),
    ).toEqual({
      id: "web",
      writeKeyHashes: [B],
    });
  });

  it("keeps an earlier rotation's sooner end, shortens a later one, and drops expired keys", () => {
    const record: SourceRecord = {
      id: "web",
      writeKeyHashes: [B],
      retiringWriteKeys: [
        { hash: A, expiresAt: iso(NOW + 10_000) },
        { hash: C, expiresAt: iso(NOW - 1) },
      ],
    };
    expect(rotateWriteKey(record, C, 60_000, NOW).retiringWriteKeys).toEqual([
      { hash: A, expiresAt: iso(NOW + 10_000) },
      { hash: B, expiresAt: iso(NOW + 60_000) },
    ]);
    expect(rotateWriteKey(record, hashWriteKey("wk_key_d_000000000000"), 1_000, NOW).retiringWriteKeys).toEqual([
      { hash: A, expiresAt: iso(NOW + 1_000) },
      { hash: B, expiresAt: iso(NOW + 1_000) },
    ]);
  });

  it("rotating to a key that was retiring makes it current, not retiring", () => {
    const record: SourceRecord = { id: "web", writeKeyHashes: [B], retiringWriteKeys: [{ hash: A, expiresAt: iso(NOW + 10_000) }] };
    expect(rotateWriteKey(record, A, 60_000, NOW)).toEqual({
      id: "web",
      writeKeyHashes: [A],
      retiringWriteKeys: [{ hash: B, expiresAt: iso(NOW + 60_000) }],
    });
  });
});

describe("liveRetiringKeys", () => {
  it("counts the keys that still work and finds the last end", () => {
    const record: SourceRecord = {
      id: "web",
      writeKeyHashes: [C],
      retiringWriteKeys: [
        { hash: A, expiresAt: iso(NOW + 10_000) },
        { hash: B, expiresAt: iso(NOW + 20_000) },
      ],
    };
    expect(liveRetiringKeys(record, NOW)).toEqual({ count: 2, lastExpiresAtMs: NOW + 20_000 });
    expect(liveRetiringKeys(record, NOW + 15_000)).toEqual({ count: 1, lastExpiresAtMs: NOW + 20_000 });
    expect(liveRetiringKeys(record, NOW + 20_000)).toEqual({ count: 0, lastExpiresAtMs: undefined });
    expect(liveRetiringKeys({ id: "web", writeKeyHashes: [C] }, NOW)).toEqual({ count: 0, lastExpiresAtMs: undefined });
  });
});
