import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { webhookSignature } from "./signature.js";

describe("webhookSignature", () => {
  it("matches the published HMAC-SHA1 test vector (RFC 2202, test case 2)", () => {
    expect(webhookSignature(Buffer.from("what do ya want for nothing?"), "Jefe")).toBe("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
  });

  it("matches the widely published 'quick brown fox' HMAC-SHA1 vector", () => {
    expect(webhookSignature(Buffer.from("The quick brown fox jumps over the lazy dog"), "key")).toBe(
      "de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9",
    );
  });

  it("is lowercase hex of 40 characters", () => {
    expect(webhookSignature(Buffer.from('{"type":"track"}'), "secret")).toMatch(/^[0-9a-f]{40}$/);
  });

  it("signs the exact bytes: a re-serialised body with other spacing gets another signature", () => {
    const sent = Buffer.from('{"type":"track","userId":"u1"}');
    const reformatted = Buffer.from('{ "type": "track", "userId": "u1" }');
    expect(webhookSignature(sent, "secret")).not.toBe(webhookSignature(reformatted, "secret"));
  });

  it("takes any Uint8Array, not only Buffers", () => {
    const bytes = Buffer.from('{"name":"Zoë ✓"}', "utf8");
    expect(webhookSignature(new Uint8Array(bytes), "secret")).toBe(webhookSignature(bytes, "secret"));
  });

  it("signs with each secret as node:crypto does with the secret's text, the same secret again and again", () => {
    const body = Buffer.from('{"type":"track"}');
    for (const secret of ["", "s", "Zoë's ✓ secret", "x".repeat(200), "s"]) {
      expect(webhookSignature(body, secret)).toBe(createHmac("sha1", secret).update(body).digest("hex"));
    }
  });
});
