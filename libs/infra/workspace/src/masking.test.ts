import { createHash, createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { holdsMaskedValues, isMaskedValue, Masker } from "./masking.js";

type Entry = { url: string; headers: Record<string, string> };

const KEY = Buffer.alloc(32, 0x5a);
const masker = new Masker(KEY);
const maskUrl = (url: string) => masker.maskUrl(url);
const keepMaskedValues = (entries: Entry[], stored: readonly Entry[]) => masker.keepMaskedValues(entries, stored);
const fp = (value: string) => `[set:hmac:${createHmac("sha256", KEY).update(value).digest("hex").slice(0, 8)}]`;
/** The unkeyed form reads gave before. */
const unkeyed = (value: string) => `[set:sha256:${createHash("sha256").update(value).digest("hex").slice(0, 8)}]`;

describe("maskValue", () => {
  it("is the first 8 hex digits of the value's HMAC-SHA256 under the key; an empty value stays empty", () => {
    // openssl dgst -sha256 -mac HMAC -macopt hexkey:5a5a… gives the same digits.
    expect(masker.maskValue("abc")).toBe(fp("abc"));
    expect(masker.maskValue("abc")).toMatch(/^\[set:hmac:[0-9a-f]{8}\]$/);
    expect(masker.maskValue("")).toBe("");
    expect(masker.maskHeaders({ Authorization: "Bearer x", "X-Empty": "" })).toEqual({ Authorization: fp("Bearer x"), "X-Empty": "" });
  });

  it("depends on the key: without it, a guess cannot be checked against a read", () => {
    expect(masker.maskValue("abc")).not.toBe(unkeyed("abc").replace("sha256", "hmac"));
    expect(new Masker(Buffer.alloc(32, 1)).maskValue("abc")).not.toBe(masker.maskValue("abc"));
    // The same key gives the same mask, in any process (every replica reads one key).
    expect(new Masker(Buffer.from(KEY)).maskValue("abc")).toBe(masker.maskValue("abc"));
  });

  it("refuses a key shorter than 32 bytes", () => {
    expect(() => new Masker(Buffer.alloc(16))).toThrow("the masking key must be at least 32 bytes");
  });

  it("recognises both the keyed form and the unkeyed one reads gave before", () => {
    expect(isMaskedValue(fp("abc"))).toBe(true);
    expect(isMaskedValue("[set:sha256:ba7816bf]")).toBe(true);
    expect(isMaskedValue("[set:hmac:ba7816b]")).toBe(false);
    expect(isMaskedValue("[set:md5:ba7816bf]")).toBe(false);
  });
});

describe("maskUrl", () => {
  it.each([
    ["https://h.example/p", "https://h.example/p"],
    ["https://h.example/p?", "https://h.example/p?"],
    ["https://h.example:8443/a/b?token=abc", `https://h.example:8443/a/b?token=${fp("abc")}`],
    ["https://h.example/?a=1&flag&empty=&a=2", `https://h.example/?a=${fp("1")}&flag&empty=&a=${fp("2")}`],
    ["http://[::1]:8080/p?k=v%20w", `http://[::1]:8080/p?k=${fp("v%20w")}`],
    ["https://user:pw@h.example/p?k=v", `https://user:${fp("pw")}@h.example/p?k=${fp("v")}`],
    ["https://h.example/p?k=v#frag", `https://h.example/p?k=${fp("v")}#frag`],
    ["https://tok3n@h.example/p", `https://${fp("tok3n")}@h.example/p`],
  ])("%s → %s", (url, shown) => {
    expect(maskUrl(url)).toBe(shown);
  });
});

describe("keepMaskedValues", () => {
  const stored: Entry[] = [
    { url: "https://a.example/one?token=t1&token=t2&x=1", headers: { Authorization: "Bearer one" } },
    { url: "https://b.example/two?key=k2", headers: { Authorization: "Bearer two", "X-Team": "growth" } },
  ];

  it("puts stored values back for masks of the same origin, name (any case) and fingerprint, in any order", () => {
    const sent: Entry[] = [
      { url: maskUrl(stored[1]!.url), headers: { authorization: fp("Bearer two"), "X-Team": "new value" } },
      { url: "https://a.example/moved?token=" + fp("t2") + "&token=" + fp("t1"), headers: { Authorization: fp("Bearer one") } },
    ];
    expect(keepMaskedValues(sent, stored)).toEqual([
      { url: "https://b.example/two?key=k2", headers: { authorization: "Bearer two", "X-Team": "new value" } },
      { url: "https://a.example/moved?token=t2&token=t1", headers: { Authorization: "Bearer one" } },
    ]);
  });

  it("leaves masks that match nothing: another origin (host, port or scheme), another name, another fingerprint", () => {
    const unmatched: Entry[] = [
      { url: `https://evil.example/one?token=${fp("t1")}`, headers: { Authorization: fp("Bearer one") } },
      { url: `https://a.example:444/one?token=${fp("t1")}`, headers: {} },
      { url: `http://a.example/one?token=${fp("t1")}`, headers: {} },
      { url: `https://a.example/one?other=${fp("t1")}`, headers: { "X-Authorization": fp("Bearer one") } },
      { url: "https://a.example/one", headers: { Authorization: fp("Bearer two") } },
    ];
    expect(keepMaskedValues(unmatched, stored)).toEqual(unmatched);
    expect(unmatched.every((entry) => holdsMaskedValues([entry]))).toBe(true);
  });

  it("never matches the unkeyed form reads gave before: it is left for the schema to refuse", () => {
    const sent: Entry[] = [{ url: `https://a.example/one?token=${unkeyed("t1")}`, headers: { Authorization: unkeyed("Bearer one") } }];
    expect(keepMaskedValues(sent, stored)).toEqual(sent);
    expect(holdsMaskedValues(sent)).toBe(true);
  });

  it("recognises a percent-encoded mask and keeps the rest of the URL as sent", () => {
    const sent: Entry[] = [{ url: `https://a.example/one?x=2&token=${encodeURIComponent(fp("t1"))}&flag`, headers: {} }];
    expect(keepMaskedValues(sent, stored)).toEqual([{ url: "https://a.example/one?x=2&token=t1&flag", headers: {} }]);
  });

  it("holdsMaskedValues is false for plain values", () => {
    expect(holdsMaskedValues(stored)).toBe(false);
  });
});
