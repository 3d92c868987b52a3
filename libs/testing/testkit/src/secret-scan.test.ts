import { describe, expect, it } from "vitest";
import { leakedSecrets } from "./secret-scan.js";

describe("leakedSecrets", () => {
  const key = "wk_a_secret_key_0001";

  it("finds a secret as written, JSON-escaped, and inside Basic credentials", () => {
    expect(leakedSecrets(`{"msg":"x","key":"${key}"}`, [key])).toEqual([key]);
    expect(leakedSecrets(JSON.stringify({ v: 'se"cret-with-quote' }), ['se"cret-with-quote'])).toEqual(['se"cret-with-quote']);
    const basic = `Basic ${Buffer.from(`${key}:`).toString("base64")}`;
    expect(leakedSecrets(`{"authorization":"${basic}"}`, [key])).toEqual([key]);
    expect(leakedSecrets(`token ${Buffer.from(key).toString("base64")}`, [key])).toEqual([key]);
  });

  it("finds nothing in redacted output, and names only what leaked", () => {
    expect(leakedSecrets('{"authorization":"[redacted]"}', [key])).toEqual([]);
    expect(leakedSecrets(`... other-secret-000 ...`, [key, "other-secret-000"])).toEqual(["other-secret-000"]);
  });
});
