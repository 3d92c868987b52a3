import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { holdsMaskedValues, keepMaskedValues, maskHeaders, maskUrl, maskValue } from "./masking.js";

type Entry = { url: string; headers: Record<string, string> };

const fp = (value: string) => `[set:sha256:${createHash("sha256").update(value).digest("hex").slice(0, 8)}]`;

describe("maskValue", () => {
  it("is the first 8 hex digits of the value's SHA-256; an empty value stays empty", () => {
    expect(maskValue("abc")).toBe("[set:sha256:ba7816bf]");
    expect(maskValue("")).toBe("");
    expect(maskHeaders({ Authorization: "Bearer x", "X-Empty": "" })).toEqual({ Authorization: fp("Bearer x"), "X-Empty": "" });
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

  it("recognises a percent-encoded mask and keeps the rest of the URL as sent", () => {
    const sent: Entry[] = [{ url: `https://a.example/one?x=2&token=${encodeURIComponent(fp("t1"))}&flag`, headers: {} }];
    expect(keepMaskedValues(sent, stored)).toEqual([{ url: "https://a.example/one?x=2&token=t1&flag", headers: {} }]);
  });

  it("holdsMaskedValues is false for plain values", () => {
    expect(holdsMaskedValues(stored)).toBe(false);
  });
});
