import { describe, expect, it } from "vitest";
import { hashPassword, parsePasswordHash, verifyPassword } from "./password-hash.js";

describe("password hashes", () => {
  it("verifies the password a hash was made of, and no other", async () => {
    const text = await hashPassword("correct horse battery staple");
    expect(text).toMatch(/^scrypt:16384:8:1:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$/);
    const hash = parsePasswordHash(text);
    expect(await verifyPassword("correct horse battery staple", hash)).toBe(true);
    expect(await verifyPassword("correct horse battery stapl", hash)).toBe(false);
    expect(await verifyPassword("", hash)).toBe(false);
    // Two hashes of one password differ (random salt).
    expect(await hashPassword("x")).not.toBe(await hashPassword("x"));
  });

  it("refuses malformed hashes and unusable cost settings, stating the rule", () => {
    expect(() => parsePasswordHash("hunter2")).toThrow(/scrypt:<N>:<r>:<p>:<salt>:<key>/);
    expect(() => parsePasswordHash("bcrypt:10:8:1:AAAAAAAAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")).toThrow(/scrypt:</);
    expect(() => parsePasswordHash("scrypt:1000:8:1:AAAAAAAAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")).toThrow(
      /power of two/,
    );
    expect(() => parsePasswordHash("scrypt:16384:99:1:AAAAAAAAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")).toThrow(
      /r must be/,
    );
  });
});
