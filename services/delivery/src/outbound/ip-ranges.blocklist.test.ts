import { describe, expect, it } from "vitest";
import { AddressPolicy } from "./address-policy.js";
import { CidrSet, blockedRangeOf, formatIp, parseCidr, parseIp, type Cidr, type IpAddress } from "./ip-ranges.js";

const ip = (text: string): IpAddress => {
  const address = parseIp(text);
  if (!address) throw new Error(`test address ${text} did not parse`);
  return address;
};

/** The arithmetic BlockList replaces, as the reference. */
const bits = (version: 4 | 6) => (version === 4 ? 32 : 128);
const contains = (cidr: Cidr, address: IpAddress) => {
  const hostBits = BigInt(bits(cidr.version) - cidr.prefix);
  return cidr.version === address.version && address.value >> hostBits === cidr.network >> hostBits;
};

describe("CidrSet (node:net BlockList)", () => {
  const ranges = [
    "0.0.0.0/0",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "169.254.169.254/32",
    "172.16.0.0/12",
    "198.18.0.0/15",
    "255.255.255.255/32",
    "::/0",
    "::/96",
    "::1/128",
    "::ffff:0:0/96",
    "100::/64",
    "2001::/23",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
  ];

  it.each(ranges)("%s agrees with prefix arithmetic at both edges", (text) => {
    const cidr = parseCidr(text);
    const set = new CidrSet([cidr]);
    const size = 1n << BigInt(bits(cidr.version) - cidr.prefix);
    const max = (1n << BigInt(bits(cidr.version))) - 1n;
    const values = [cidr.network - 1n, cidr.network, cidr.network + size / 2n, cidr.network + size - 1n, cidr.network + size];
    for (const value of values.filter((v) => v >= 0n && v <= max)) {
      for (const version of [4, 6] as const) {
        if (value > (1n << BigInt(bits(version))) - 1n) continue;
        const address: IpAddress = { version, value };
        expect(set.has(address), `${text} has ${formatIp(address)}`).toBe(contains(cidr, address));
      }
    }
  });

  it("keeps IP versions apart, unlike a bare BlockList", () => {
    expect(new CidrSet([parseCidr("::/0")]).has(ip("8.8.8.8"))).toBe(false);
    expect(new CidrSet([parseCidr("::ffff:0:0/96")]).has(ip("127.0.0.1"))).toBe(false);
    expect(new CidrSet([parseCidr("0.0.0.0/0")]).has(ip("::ffff:127.0.0.1"))).toBe(false);
    expect(new CidrSet([]).has(ip("127.0.0.1"))).toBe(false);
  });

  it("matches any of several ranges", () => {
    const set = new CidrSet(["10.0.0.0/8", "fd00::/8"].map((text) => parseCidr(text)));
    expect(set.has(ip("10.9.8.7"))).toBe(true);
    expect(set.has(ip("fd00::1"))).toBe(true);
    expect(set.has(ip("11.0.0.1"))).toBe(false);
    expect(set.has(ip("fe00::1"))).toBe(false);
  });
});

describe("AddressPolicy allowlist across IP versions", () => {
  it("an IPv6 entry does not allow IPv4 addresses", () => {
    expect(AddressPolicy.fromList("::/0").checkText("127.0.0.1")).toMatchObject({ allowed: false });
    expect(AddressPolicy.fromList("::/0").checkText("::1")).toEqual({ allowed: true });
    expect(AddressPolicy.fromList("::ffff:127.0.0.0/104").checkText("127.0.0.1")).toMatchObject({ allowed: false });
    expect(AddressPolicy.fromList("::ffff:127.0.0.0/104").checkText("::ffff:127.0.0.1")).toEqual({ allowed: true });
  });

  it("an IPv4 entry allows the NAT64 and 6to4 forms too, as the IPv4 address is where they go", () => {
    const policy = AddressPolicy.fromList("10.0.0.0/8");
    expect(policy.checkText("64:ff9b::10.0.0.1")).toEqual({ allowed: true });
    expect(policy.checkText("2002:a00:1::1")).toEqual({ allowed: true });
    expect(policy.checkText("2002:b00:1::1")).toEqual({ allowed: true }); // 11.0.0.1 inside: public
    expect(policy.checkText("64:ff9b::127.0.0.1")).toMatchObject({ allowed: false });
  });
});

describe("formatIp", () => {
  it.each([
    ["0:0:0:0:0:0:0:2", "::2"],
    ["0:0:0:0:0:0:1:0", "::1:0"],
    ["::127.0.0.1", "::7f00:1"],
    ["::ffff:0:1", "::ffff:0.0.0.1"],
    ["0:0:0:0:ffff:0:0:1", "::ffff:0:0:1"],
    ["1:0:0:2:0:0:0:3", "1:0:0:2::3"],
    ["1:0:1:0:1:0:1:0", "1:0:1:0:1:0:1:0"],
    ["1:0:0:1:0:0:1:1", "1::1:0:0:1:1"],
    ["FE80:0:0:0:0:0:0:1", "fe80::1"],
  ])("%s is written %s, and reads back", (text, formatted) => {
    expect(formatIp(ip(text))).toBe(formatted);
    expect(parseIp(formatted)).toEqual(ip(text));
  });
});

describe("special-purpose IPv6 ranges the first list missed", () => {
  it.each([
    ["64:ff9b:1::a9fe:a9fe", "local-use IPv4/IPv6 translation", "64:ff9b:1::/48"],
    ["64:ff9b:1:ffff::1", "local-use IPv4/IPv6 translation", "64:ff9b:1::/48"],
    ["3fff::1", "documentation", "3fff::/20"],
    ["3fff:fff:ffff::1", "documentation", "3fff::/20"],
    ["5f00::1", "SRv6 segment identifiers", "5f00::/16"],
    ["5f00:ffff::1", "SRv6 segment identifiers", "5f00::/16"],
  ])("%s is %s (%s)", (text, kind, cidr) => {
    expect(blockedRangeOf(ip(text))).toEqual({ kind, cidr });
  });

  it.each(["64:ff9b:2::1", "3fff:1000::1", "3ffe:ffff::1", "5f01::1", "5eff::1"])("%s next to them is not refused", (text) => {
    expect(blockedRangeOf(ip(text))).toBeUndefined();
  });
});
