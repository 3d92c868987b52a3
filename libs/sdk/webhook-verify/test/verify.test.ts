import { describe, expect, it } from "vitest";
import {
  generateSigningSecret,
  isValidSigningSecret,
  signStandardWebhook,
  signXSignature,
  verifyStandardWebhook,
  verifyXSignature,
} from "../src/index.js";

/**
 * Known vectors, computed independently of this library:
 * - X-Signature is HMAC-SHA1; RFC 2202 test case 2 pins it.
 * - Standard Webhooks: the example from the Standard Webhooks / Svix documentation.
 */
const RFC2202 = { key: "Jefe", data: "what do ya want for nothing?", hex: "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79" };
const SW = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const SW_NOW = SW.timestamp * 1000;
const swHeaders = (signature = SW.signature, overrides: Record<string, string> = {}) => ({
  "webhook-id": SW.id,
  "webhook-timestamp": String(SW.timestamp),
  "webhook-signature": signature,
  ...overrides,
});

describe("X-Signature", () => {
  it("matches the RFC 2202 HMAC-SHA1 vector", () => {
    expect(signXSignature(RFC2202.data, RFC2202.key)).toBe(RFC2202.hex);
    expect(verifyXSignature(Buffer.from(RFC2202.data), RFC2202.hex, RFC2202.key)).toBe(true);
    expect(verifyXSignature(RFC2202.data, RFC2202.hex.toUpperCase(), RFC2202.key)).toBe(true);
    expect(verifyXSignature(new TextEncoder().encode(RFC2202.data).buffer, [RFC2202.hex], RFC2202.key)).toBe(true);
  });

  it("refuses a wrong secret, a changed body and a changed signature", () => {
    expect(verifyXSignature(RFC2202.data, RFC2202.hex, "jefe")).toBe(false);
    expect(verifyXSignature(RFC2202.data + " ", RFC2202.hex, RFC2202.key)).toBe(false);
    const flipped = (RFC2202.hex[0] === "e" ? "f" : "e") + RFC2202.hex.slice(1);
    expect(verifyXSignature(RFC2202.data, flipped, RFC2202.key)).toBe(false);
  });

  it.each([undefined, null, "", "abc", RFC2202.hex + "00", RFC2202.hex.slice(2), "z".repeat(40), `sha1=${RFC2202.hex}`])(
    "returns false without throwing for malformed signature %j",
    (signature) => {
      expect(verifyXSignature(RFC2202.data, signature as string, RFC2202.key)).toBe(false);
    },
  );

  it("returns false for an empty or non-string secret, and for a body of the wrong type", () => {
    expect(verifyXSignature(RFC2202.data, RFC2202.hex, "")).toBe(false);
    expect(verifyXSignature(RFC2202.data, RFC2202.hex, undefined as unknown as string)).toBe(false);
    expect(verifyXSignature(42 as unknown as string, RFC2202.hex, RFC2202.key)).toBe(false);
  });
});

describe("Standard Webhooks", () => {
  it("reproduces and accepts the documented example", () => {
    expect(signStandardWebhook({ id: SW.id, timestamp: SW.timestamp, body: SW.body }, SW.secret)).toBe(SW.signature);
    expect(verifyStandardWebhook(SW.body, swHeaders(), SW.secret, { now: SW_NOW })).toEqual({
      valid: true,
      id: SW.id,
      timestamp: SW.timestamp,
    });
  });

  it("accepts a secret without its prefix, a Fetch Headers object and mixed-case header names", () => {
    expect(verifyStandardWebhook(SW.body, swHeaders(), SW.secret.slice("whsec_".length), { now: SW_NOW }).valid).toBe(true);
    expect(verifyStandardWebhook(SW.body, new Headers(swHeaders()), SW.secret, { now: SW_NOW }).valid).toBe(true);
    const mixed = { "Webhook-Id": SW.id, "Webhook-Timestamp": String(SW.timestamp), "Webhook-Signature": SW.signature };
    expect(verifyStandardWebhook(Buffer.from(SW.body), mixed, SW.secret, { now: SW_NOW }).valid).toBe(true);
  });

  it("finds the matching entry among several (rotation) and among other schemes", () => {
    const other = generateSigningSecret();
    const both = signStandardWebhook({ id: SW.id, timestamp: SW.timestamp, body: SW.body }, [other, SW.secret]);
    expect(both.split(" ")).toHaveLength(2);
    expect(both.split(" ")[1]).toBe(SW.signature);
    expect(verifyStandardWebhook(SW.body, swHeaders(both), SW.secret, { now: SW_NOW }).valid).toBe(true);
    expect(verifyStandardWebhook(SW.body, swHeaders(both), other, { now: SW_NOW }).valid).toBe(true);
    expect(verifyStandardWebhook(SW.body, swHeaders(`v1a,AAAA ${SW.signature}`), SW.secret, { now: SW_NOW }).valid).toBe(true);
    // A receiver that is itself rotating may pass several secrets.
    expect(verifyStandardWebhook(SW.body, swHeaders(), [other, SW.secret], { now: SW_NOW }).valid).toBe(true);
  });

  it("refuses a changed body, id or timestamp, and a wrong secret", () => {
    const refuse = (body: string, headers: Record<string, string>, secret = SW.secret) =>
      verifyStandardWebhook(body, headers, secret, { now: SW_NOW });
    expect(refuse(SW.body + " ", swHeaders())).toMatchObject({ valid: false, reason: "no_matching_signature" });
    expect(refuse(SW.body, swHeaders(SW.signature, { "webhook-id": "msg_other" }))).toMatchObject({ reason: "no_matching_signature" });
    expect(refuse(SW.body, swHeaders(SW.signature, { "webhook-timestamp": String(SW.timestamp + 1) }))).toMatchObject({
      reason: "no_matching_signature",
    });
    expect(refuse(SW.body, swHeaders(), generateSigningSecret())).toMatchObject({ reason: "no_matching_signature" });
  });

  it("enforces the timestamp tolerance both ways (default 5 minutes)", () => {
    const at = (offsetSeconds: number, toleranceSeconds?: number) =>
      verifyStandardWebhook(SW.body, swHeaders(), SW.secret, {
        now: SW_NOW + offsetSeconds * 1000,
        ...(toleranceSeconds === undefined ? {} : { toleranceSeconds }),
      });
    expect(at(300).valid).toBe(true);
    expect(at(-300).valid).toBe(true);
    expect(at(301)).toMatchObject({ valid: false, reason: "timestamp_too_old" });
    expect(at(-301)).toMatchObject({ valid: false, reason: "timestamp_too_new" });
    expect(at(30, 10)).toMatchObject({ valid: false, reason: "timestamp_too_old" });
  });

  it.each([
    [{ "webhook-id": "" }, "missing_id"],
    [{ "webhook-timestamp": "" }, "missing_timestamp"],
    [{ "webhook-signature": "" }, "missing_signature"],
    [{ "webhook-timestamp": "1614265330.5" }, "invalid_timestamp"],
    [{ "webhook-timestamp": "-1" }, "invalid_timestamp"],
    [{ "webhook-signature": "v1,not base64!" }, "no_matching_signature"],
    [{ "webhook-signature": "v1,AAAA" }, "no_matching_signature"],
    [{ "webhook-signature": "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" }, "no_matching_signature"],
    [{ "webhook-signature": "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" }, "no_matching_signature"],
  ] as const)("never throws on malformed headers %j: %s", (overrides, reason) => {
    const result = verifyStandardWebhook(SW.body, swHeaders(SW.signature, overrides), SW.secret, { now: SW_NOW });
    expect(result).toMatchObject({ valid: false, reason });
    if (!result.valid) expect(result.message).toMatch(/^webhook-/);
  });

  it("reports an unusable secret instead of throwing", () => {
    for (const secret of ["", "whsec_", "whsec_not*base64", "whsec_abc"]) {
      expect(verifyStandardWebhook(SW.body, swHeaders(), secret, { now: SW_NOW })).toMatchObject({
        valid: false,
        reason: "invalid_secret",
      });
    }
    expect(verifyStandardWebhook(SW.body, swHeaders(), [], { now: SW_NOW })).toMatchObject({ reason: "invalid_secret" });
    expect(() => signStandardWebhook({ id: "m", timestamp: 1, body: "" }, "whsec_abc")).toThrow(/secrets\[0\]/);
  });

  it("validates and generates secrets as Standard Webhooks asks (whsec_ + base64 of 24 to 64 bytes)", () => {
    const secret = generateSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(isValidSigningSecret(secret)).toBe(true);
    expect(isValidSigningSecret(SW.secret)).toBe(true); // 24 bytes
    expect(isValidSigningSecret(`whsec_${Buffer.alloc(23).toString("base64")}`)).toBe(false);
    expect(isValidSigningSecret(`whsec_${Buffer.alloc(65).toString("base64")}`)).toBe(false);
    expect(isValidSigningSecret(SW.secret.slice("whsec_".length))).toBe(false);
  });
});
