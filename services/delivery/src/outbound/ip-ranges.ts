import { BlockList, SocketAddress, isIPv4, isIPv6 } from "node:net";

/**
 * IP addresses and CIDR ranges, and the ranges a webhook must not reach (SSRF
 * protection): pure functions, unit-tested without a network. Range matching
 * is node:net's BlockList; this module keeps what BlockList does not do:
 * parsing with messages that name the rule, the kind of each range, and the
 * IPv4 address inside IPv6 forms.
 *
 * An address is a 32-bit (IPv4) or 128-bit (IPv6) bigint. IPv6 forms that
 * carry an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d,
 * 6to4 2002:AABB:CCDD::) are judged by the IPv4 address inside, because that
 * is where the packets end up: ::ffff:127.0.0.1 is loopback.
 */

/** An IPv4 or IPv6 address as a number. */
export interface IpAddress {
  version: 4 | 6;
  value: bigint;
}

/** A CIDR range, as parsed by {@link parseCidr}. */
export interface Cidr {
  version: 4 | 6;
  /** The network address (host bits cleared). */
  network: bigint;
  prefix: number;
  /** As written, for messages. */
  text: string;
}

/** Parses an IPv4 or IPv6 address ("[::1]" brackets and a "%zone" suffix allowed); undefined if it is not one. */
export function parseIp(text: string): IpAddress | undefined {
  let address = text.trim();
  if (address.startsWith("[") && address.endsWith("]")) address = address.slice(1, -1);
  const zone = address.indexOf("%");
  if (zone !== -1) address = address.slice(0, zone);
  if (isIPv4(address)) return { version: 4, value: ipv4Value(address) };
  if (isIPv6(address)) return { version: 6, value: ipv6Value(address) };
  return undefined;
}

function ipv4Value(address: string): bigint {
  return address.split(".").reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n);
}

function ipv6Value(address: string): bigint {
  let text = address;
  // A trailing dotted IPv4 part stands for the last two groups.
  const lastColon = text.lastIndexOf(":");
  const tail = text.slice(lastColon + 1);
  if (tail.includes(".")) {
    const v4 = ipv4Value(tail);
    text = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = "", rest] = text.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = rest === undefined || rest === "" ? [] : rest.split(":");
  const missing = 8 - headGroups.length - tailGroups.length;
  const groups = rest === undefined ? headGroups : [...headGroups, ...Array<string>(missing).fill("0"), ...tailGroups];
  return groups.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

/** Renders an address in its usual short form (RFC 5952; IPv4-mapped with the IPv4 part dotted). */
export function formatIp(address: IpAddress): string {
  const { value } = address;
  if (address.version === 4) return [24n, 16n, 8n, 0n].map((shift) => ((value >> shift) & 0xffn).toString()).join(".");
  // IPv4-compatible (::/96): libuv would write ::2 as "::0.0.0.2"; keep the hexadecimal form.
  if (value >> 32n === 0n) {
    const low = (value & 0xffffn).toString(16);
    return value >> 16n === 0n ? `::${value === 0n ? "" : low}` : `::${(value >> 16n).toString(16)}:${low}`;
  }
  const groups = Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  return new SocketAddress({ address: groups.join(":"), family: "ipv6" }).address;
}

/**
 * Parses "a.b.c.d/n", "x:y::/n" or a bare address (a /32 or /128). Throws an
 * Error whose message names the value and says what is wrong with it.
 */
export function parseCidr(text: string): Cidr {
  const trimmed = text.trim();
  const slash = trimmed.indexOf("/");
  const addressText = slash === -1 ? trimmed : trimmed.slice(0, slash);
  const address = parseIp(addressText);
  if (!address || addressText.includes("%") || addressText.includes("[")) {
    throw new Error(`"${trimmed}" is not a CIDR range: "${addressText}" is not an IPv4 or IPv6 address`);
  }
  const bits = address.version === 4 ? 32 : 128;
  let prefix = bits;
  if (slash !== -1) {
    const prefixText = trimmed.slice(slash + 1);
    prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (!(prefix >= 0 && prefix <= bits)) {
      throw new Error(`"${trimmed}" is not a CIDR range: the prefix length must be 0-${bits} for IPv${address.version}`);
    }
  }
  const hostBits = BigInt(bits - prefix);
  return { version: address.version, network: (address.value >> hostBits) << hostBits, prefix, text: trimmed };
}

const FAMILY = { 4: "ipv4", 6: "ipv6" } as const;

/**
 * A set of CIDR ranges, matched by node:net's BlockList. One list per IP
 * version, because a BlockList alone also matches across versions through the
 * IPv4-mapped form (an IPv6 "::/0" would match 8.8.8.8); here an IPv6 range
 * matches only IPv6 addresses, and embedded IPv4 is the caller's explicit choice.
 */
export class CidrSet {
  private readonly lists = { 4: new BlockList(), 6: new BlockList() };

  constructor(cidrs: readonly Cidr[]) {
    for (const { version, network, prefix } of cidrs) {
      this.lists[version].addSubnet(formatIp({ version, value: network }), prefix, FAMILY[version]);
    }
  }

  /** Whether a range of the address's own IP version contains it. */
  has(address: IpAddress): boolean {
    return this.lists[address.version].check(formatIp(address), FAMILY[address.version]);
  }
}

/** Whether the range contains the address (same IP version only). */
export function cidrContains(cidr: Cidr, address: IpAddress): boolean {
  return new CidrSet([cidr]).has(address);
}

/**
 * The IPv4 address an IPv6 address carries, for the forms whose packets go to
 * that IPv4 address: IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96),
 * 6to4 (2002::/16, the address in bits 16-47).
 */
export function embeddedIpv4(address: IpAddress): IpAddress | undefined {
  if (address.version !== 6) return undefined;
  const value = address.value;
  if (value >> 32n === 0xffffn || value >> 32n === 0x64ff9b0000000000000000n) return { version: 4, value: value & 0xffffffffn };
  if (value >> 112n === 0x2002n) return { version: 4, value: (value >> 80n) & 0xffffffffn };
  return undefined;
}

/**
 * Most specific first: the first match names the kind. Besides the private,
 * loopback, link-local and multicast ranges, every other special-purpose range
 * (IANA registries) is refused too: none of them is a public receiver.
 */
const BLOCKED_RANGES = (
  [
    ["169.254.169.254/32", "cloud metadata"],
    ["fd00:ec2::254/128", "cloud metadata"],
    ["0.0.0.0/8", "unspecified ('this network')"],
    ["10.0.0.0/8", "private (RFC 1918)"],
    ["100.64.0.0/10", "shared address space (carrier-grade NAT)"],
    ["127.0.0.0/8", "loopback"],
    ["169.254.0.0/16", "link-local"],
    ["172.16.0.0/12", "private (RFC 1918)"],
    ["192.0.0.0/24", "IETF protocol assignments"],
    ["192.0.2.0/24", "documentation"],
    ["192.88.99.0/24", "6to4 relay anycast"],
    ["192.168.0.0/16", "private (RFC 1918)"],
    ["198.18.0.0/15", "benchmarking"],
    ["198.51.100.0/24", "documentation"],
    ["203.0.113.0/24", "documentation"],
    ["224.0.0.0/4", "multicast"],
    ["255.255.255.255/32", "broadcast"],
    ["240.0.0.0/4", "reserved"],
    ["::/128", "unspecified"],
    ["::1/128", "loopback"],
    ["::/96", "IPv4-compatible (deprecated)"],
    ["64:ff9b:1::/48", "local-use IPv4/IPv6 translation"],
    ["100::/64", "discard-only"],
    ["2001:db8::/32", "documentation"],
    ["2001::/23", "IETF protocol assignments"],
    ["3fff::/20", "documentation"],
    ["5f00::/16", "SRv6 segment identifiers"],
    ["fc00::/7", "unique local (private)"],
    ["fe80::/10", "link-local"],
    ["fec0::/10", "site-local (deprecated)"],
    ["ff00::/8", "multicast"],
  ] as const
).map(([text, kind]) => ({ kind, cidr: text, set: new CidrSet([parseCidr(text)]) }));

/** All of them in one set: most addresses are public, and one check says so. */
const ANY_BLOCKED = new CidrSet(BLOCKED_RANGES.map(({ cidr }) => parseCidr(cidr)));

/** A special-purpose range an address is in. */
export interface BlockedMatch {
  /** What kind of range it is ("loopback", "private (RFC 1918)", ...). */
  kind: string;
  /** The range, as CIDR. */
  cidr: string;
}

/**
 * The special-purpose range an address is in, or undefined for a public
 * address. An IPv6 form of an IPv4 address is judged by that IPv4 address.
 */
export function blockedRangeOf(address: IpAddress): BlockedMatch | undefined {
  const inner = embeddedIpv4(address);
  for (const candidate of inner ? [inner, address] : [address]) {
    if (!ANY_BLOCKED.has(candidate)) continue;
    const match = BLOCKED_RANGES.find((blocked) => blocked.set.has(candidate));
    if (match) return { kind: match.kind, cidr: match.cidr };
  }
  return undefined;
}
