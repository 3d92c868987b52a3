import { describe, expect, it } from "vitest";
import { deliveryEnvSchema } from "../config.js";
import { AddressPolicy, refusalReason } from "./address-policy.js";

describe("AddressPolicy", () => {
  it("allows public addresses and refuses special-purpose ones by default", () => {
    const policy = new AddressPolicy();
    expect(policy.checkText("93.184.216.34")).toEqual({ allowed: true });
    expect(policy.checkText("127.0.0.1")).toEqual({
      allowed: false,
      address: "127.0.0.1",
      blocked: { kind: "loopback", cidr: "127.0.0.0/8" },
    });
    expect(policy.checkText("169.254.169.254")).toMatchObject({ allowed: false, blocked: { kind: "cloud metadata" } });
  });

  it("lets the allowlist permit special-purpose ranges, and nothing more", () => {
    const policy = AddressPolicy.fromList("127.0.0.0/8, ::1/128,,10.1.0.0/16");
    expect(policy.allowlist).toEqual(["127.0.0.0/8", "::1/128", "10.1.0.0/16"]);
    expect(policy.checkText("127.0.0.1")).toEqual({ allowed: true });
    expect(policy.checkText("::1")).toEqual({ allowed: true });
    expect(policy.checkText("10.1.200.3")).toEqual({ allowed: true });
    expect(policy.checkText("10.2.0.1")).toMatchObject({ allowed: false });
    expect(policy.checkText("169.254.169.254")).toMatchObject({ allowed: false });
  });

  it("an IPv4 allowlist entry covers the IPv4-mapped IPv6 form, and vice versa is not needed", () => {
    const policy = AddressPolicy.fromList("127.0.0.0/8");
    expect(policy.checkText("::ffff:127.0.0.1")).toEqual({ allowed: true });
    expect(policy.checkText("::1")).toMatchObject({ allowed: false });
  });

  it("gives an address asked again (its verdict kept) the same verdict, per IP version", () => {
    const policy = AddressPolicy.fromList("127.0.0.0/8");
    for (let round = 0; round < 2; round++) {
      expect(policy.checkText("127.0.0.1")).toEqual({ allowed: true });
      expect(policy.checkText("10.0.0.1")).toMatchObject({ allowed: false, address: "10.0.0.1", blocked: { kind: "private (RFC 1918)" } });
      // ::a00:1 holds the same number as 10.0.0.1, in the other version (a deprecated IPv4-compatible form).
      expect(policy.checkText("::a00:1")).toMatchObject({ allowed: false, blocked: { kind: "IPv4-compatible (deprecated)" } });
      expect(policy.checkText("93.184.216.34")).toEqual({ allowed: true });
    }
  });

  it("refuses text that is not an IP address", () => {
    expect(new AddressPolicy().checkText("localhost")).toMatchObject({ allowed: false, blocked: { kind: "not an IP address" } });
  });

  it("names the bad entry of a list", () => {
    expect(() => AddressPolicy.fromList("127.0.0.0/8,10.0.0.0/40")).toThrow('"10.0.0.0/40" is not a CIDR range');
  });

  it("writes a reason that names the host, the address, the range and the variable", () => {
    const verdict = new AddressPolicy().checkText("127.0.0.1");
    if (verdict.allowed) throw new Error("expected a refusal");
    expect(refusalReason("localhost", verdict)).toBe(
      "localhost resolves to 127.0.0.1: loopback (127.0.0.0/8), not in DELIVERY_ALLOWED_CIDRS",
    );
    expect(refusalReason("127.0.0.1", verdict)).toBe("127.0.0.1: loopback (127.0.0.0/8), not in DELIVERY_ALLOWED_CIDRS");
  });
});

describe("DELIVERY_ALLOWED_CIDRS", () => {
  it("is empty (public addresses only) by default", () => {
    const config = deliveryEnvSchema.parse({});
    expect(config.DELIVERY_ALLOWED_CIDRS.allowlist).toEqual([]);
  });

  it("refuses a bad entry with a message naming the variable", () => {
    const result = deliveryEnvSchema.safeParse({ DELIVERY_ALLOWED_CIDRS: "127.0.0.0/8,not-a-cidr" });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]).toMatchObject({ path: ["DELIVERY_ALLOWED_CIDRS"] });
    expect(result.error?.issues[0]?.message).toContain('"not-a-cidr" is not a CIDR range');
  });
});
