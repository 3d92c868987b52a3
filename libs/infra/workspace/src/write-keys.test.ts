import { describe, expect, it } from "vitest";
import { basicAuthorization, hashWriteKey, writeKeyFromAuthorization, writeKeyHashesEqual } from "./write-keys.js";

describe("write keys", () => {
  it("reads the key from Basic credentials with an empty password", () => {
    expect(writeKeyFromAuthorization(basicAuthorization("wk_abc"))).toBe("wk_abc");
    expect(writeKeyFromAuthorization(`basic ${Buffer.from("wk_abc:").toString("base64")}`)).toBe("wk_abc");
  });

  it("takes the user name when a password is given, and the whole value without a colon", () => {
    expect(writeKeyFromAuthorization(`Basic ${Buffer.from("wk_abc:ignored").toString("base64")}`)).toBe("wk_abc");
    expect(writeKeyFromAuthorization(`Basic ${Buffer.from("wk_abc").toString("base64")}`)).toBe("wk_abc");
  });

  it.each([undefined, "", "Bearer abc", "Basic", "Basic !!!", `Basic ${Buffer.from(":pw").toString("base64")}`])(
    "finds no key in %j",
    (header) => {
      expect(writeKeyFromAuthorization(header)).toBeUndefined();
    },
  );

  it("hashes with SHA-256 and compares hashes exactly", () => {
    const hash = hashWriteKey("wk_abc");
    expect(hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(writeKeyHashesEqual(hash, hashWriteKey("wk_abc"))).toBe(true);
    expect(writeKeyHashesEqual(hash, hashWriteKey("wk_abd"))).toBe(false);
    expect(writeKeyHashesEqual(hash, "sha256:short")).toBe(false);
  });
});
