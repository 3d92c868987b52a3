import { describe, expect, it } from "vitest";
import { blockedRangeOf, cidrContains, embeddedIpv4, formatIp, parseCidr, parseIp } from "./ip-ranges.js";

const ip = (text: string) => {
  const address = parseIp(text);
  if (!address) throw new Error(`test address ${text} did not parse`);
  return address;
};

describe("parseIp and formatIp", () => {
  it.each([
    ["127.0.0.1", 4, 0x7f000001n],
    ["0.0.0.0", 4, 0n],
    ["255.255.255.255", 4, 0xffffffffn],
    ["::", 6, 0n],
    ["::1", 6, 1n],
    ["[::1]", 6, 1n],
    ["fe80::1%eth0", 6, (0xfe80n << 112n) | 1n],
    ["::ffff:127.0.0.1", 6, (0xffffn << 32n) | 0x7f000001n],
    ["::ffff:7f00:1", 6, (0xffffn << 32n) | 0x7f000001n],
    ["2001:db8:0:0:0:0:0:1", 6, (0x20010db8n << 96n) | 1n],
    ["1:2:3:4:5:6:7:8", 6, 0x00010002000300040005000600070008n],
  ])("%s is IPv%i %s", (text, version, value) => {
    expect(parseIp(text)).toEqual({ version, value });
  });

  it.each(["", "localhost", "256.0.0.1", "1.2.3", "01.2.3.4x", "::g", "1:2:3:4:5:6:7:8:9", "example.com"])(
    "%j is not an address",
    (text) => {
      expect(parseIp(text)).toBeUndefined();
    },
  );

  it.each([
    ["10.1.2.3", "10.1.2.3"],
    ["::1", "::1"],
    ["::", "::"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["fd00:ec2:0:0:0:0:0:254", "fd00:ec2::254"],
    ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
    ["::ffff:7f00:1", "::ffff:127.0.0.1"],
  ])("%s is written %s", (text, formatted) => {
    expect(formatIp(ip(text))).toBe(formatted);
  });
});

describe("parseCidr", () => {
  it("clears host bits and keeps the text", () => {
    expect(parseCidr("10.1.2.3/8")).toEqual({ version: 4, network: 0x0a000000n, prefix: 8, text: "10.1.2.3/8" });
    expect(parseCidr(" ::1/128 ")).toMatchObject({ version: 6, network: 1n, prefix: 128 });
  });

  it("takes a bare address as a single-address range", () => {
    expect(parseCidr("192.168.1.7")).toMatchObject({ version: 4, prefix: 32 });
    expect(parseCidr("fd00::5")).toMatchObject({ version: 6, prefix: 128 });
  });

  it("accepts /0", () => {
    expect(cidrContains(parseCidr("0.0.0.0/0"), ip("8.8.8.8"))).toBe(true);
    expect(cidrContains(parseCidr("::/0"), ip("2606:4700::1"))).toBe(true);
  });

  it.each([
    ["10.0.0.0/33", "the prefix length must be 0-32 for IPv4"],
    ["::/129", "the prefix length must be 0-128 for IPv6"],
    ["10.0.0.0/", "the prefix length must be 0-32 for IPv4"],
    ["10.0.0.0/-1", "the prefix length must be 0-32 for IPv4"],
    ["10.0.0.0/8x", "the prefix length must be 0-32 for IPv4"],
    ["localhost/8", '"localhost" is not an IPv4 or IPv6 address'],
    ["", '"" is not an IPv4 or IPv6 address'],
    ["fe80::1%eth0/64", "is not an IPv4 or IPv6 address"],
  ])("%j is refused: %s", (text, message) => {
    expect(() => parseCidr(text)).toThrow(message);
  });
});

describe("cidrContains", () => {
  it("compares within one IP version only", () => {
    const ten = parseCidr("10.0.0.0/8");
    expect(cidrContains(ten, ip("10.255.255.255"))).toBe(true);
    expect(cidrContains(ten, ip("11.0.0.0"))).toBe(false);
    expect(cidrContains(ten, ip("::ffff:10.0.0.1"))).toBe(false);
    expect(cidrContains(parseCidr("fc00::/7"), ip("fdff::1"))).toBe(true);
    expect(cidrContains(parseCidr("fc00::/7"), ip("fe00::1"))).toBe(false);
  });
});

describe("embeddedIpv4", () => {
  it.each([
    ["::ffff:169.254.169.254", "169.254.169.254"],
    ["64:ff9b::127.0.0.1", "127.0.0.1"],
    ["2002:0a00:0001::1", "10.0.0.1"],
  ])("%s carries %s", (text, inner) => {
    expect(embeddedIpv4(ip(text))).toEqual(ip(inner));
  });

  it("plain IPv6 and IPv4 carry nothing", () => {
    expect(embeddedIpv4(ip("2606:4700::1"))).toBeUndefined();
    expect(embeddedIpv4(ip("10.0.0.1"))).toBeUndefined();
  });
});

describe("blockedRangeOf", () => {
  it.each([
    ["127.0.0.1", "loopback", "127.0.0.0/8"],
    ["127.255.255.254", "loopback", "127.0.0.0/8"],
    ["10.0.0.1", "private (RFC 1918)", "10.0.0.0/8"],
    ["172.16.0.1", "private (RFC 1918)", "172.16.0.0/12"],
    ["172.31.255.255", "private (RFC 1918)", "172.16.0.0/12"],
    ["192.168.1.1", "private (RFC 1918)", "192.168.0.0/16"],
    ["100.64.0.1", "shared address space (carrier-grade NAT)", "100.64.0.0/10"],
    ["100.127.255.255", "shared address space (carrier-grade NAT)", "100.64.0.0/10"],
    ["169.254.169.254", "cloud metadata", "169.254.169.254/32"],
    ["169.254.1.1", "link-local", "169.254.0.0/16"],
    ["0.0.0.0", "unspecified ('this network')", "0.0.0.0/8"],
    ["224.0.0.1", "multicast", "224.0.0.0/4"],
    ["239.255.255.250", "multicast", "224.0.0.0/4"],
    ["255.255.255.255", "broadcast", "255.255.255.255/32"],
    ["240.0.0.1", "reserved", "240.0.0.0/4"],
    ["192.0.0.192", "IETF protocol assignments", "192.0.0.0/24"],
    ["198.18.0.1", "benchmarking", "198.18.0.0/15"],
    ["::1", "loopback", "::1/128"],
    ["::", "unspecified", "::/128"],
    ["fe80::1", "link-local", "fe80::/10"],
    ["febf::1", "link-local", "fe80::/10"],
    ["fc00::1", "unique local (private)", "fc00::/7"],
    ["fd12:3456::1", "unique local (private)", "fc00::/7"],
    ["fd00:ec2::254", "cloud metadata", "fd00:ec2::254/128"],
    ["ff02::1", "multicast", "ff00::/8"],
    ["2001:db8::1", "documentation", "2001:db8::/32"],
    // IPv6 forms of IPv4 addresses are judged by the IPv4 address inside.
    ["::ffff:127.0.0.1", "loopback", "127.0.0.0/8"],
    ["::ffff:7f00:1", "loopback", "127.0.0.0/8"],
    ["[::ffff:169.254.169.254]", "cloud metadata", "169.254.169.254/32"],
    ["::ffff:10.1.1.1", "private (RFC 1918)", "10.0.0.0/8"],
    ["64:ff9b::a9fe:a9fe", "cloud metadata", "169.254.169.254/32"],
    ["2002:7f00:1::", "loopback", "127.0.0.0/8"],
    ["::127.0.0.1", "IPv4-compatible (deprecated)", "::/96"],
  ])("%s is %s (%s)", (text, kind, cidr) => {
    expect(blockedRangeOf(ip(text))).toEqual({ kind, cidr });
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "169.253.255.255",
    "11.0.0.1",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2a00:1450:4001::1",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "fbff::1",
    "fe7f::1",
  ])("%s is public", (text) => {
    expect(blockedRangeOf(ip(text))).toBeUndefined();
  });
});
