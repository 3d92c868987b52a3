import { isIPv4, isIPv6 } from "node:net";

/**
 * IP addresses and CIDR ranges as numbers, and the ranges a webhook must not
 * reach (SSRF protection): pure functions, unit-tested without a network.
 *
 * An address is a 32-bit (IPv4) or 128-bit (IPv6) bigint. IPv6 forms that
 * carry an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d,
 * 6to4 2002:AABB:CCDD::) are judged by the IPv4 address inside, because that
 * is where the packets end up: ::ffff:127.0.0.1 is loopback.
 */

export interface IpAddress {
  version: 4 | 6;
  value: bigint;
}

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

/** Renders an address in its usual short form (for messages). */
export function formatIp(address: IpAddress): string {
  if (address.version === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => ((address.value >> shift) & 0xffn).toString()).join(".");
  }
  // IPv4-mapped addresses read best with the IPv4 part dotted, as URLs and sockets show them.
  if (address.value >> 32n === 0xffffn) return `::ffff:${formatIp({ version: 4, value: address.value & 0xffffffffn })}`;
  const groups = Array.from({ length: 8 }, (_, i) => Number((address.value >> BigInt(112 - 16 * i)) & 0xffffn));
  // Compress the longest run of two or more zero groups, as RFC 5952 says.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart === -1) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/**
 * Parses "a.b.c.d/n", "x:y::/n" or a bare address (a /32 or /128). Throws an
 * Error whose message says what is wrong with it.
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
  return { version: address.version, network: address.value & mask(address.version, prefix), prefix, text: trimmed };
}

function mask(version: 4 | 6, prefix: number): bigint {
  const bits = version === 4 ? 32 : 128;
  const all = (1n << BigInt(bits)) - 1n;
  return (all >> BigInt(bits - prefix)) << BigInt(bits - prefix);
}

export function cidrContains(cidr: Cidr, address: IpAddress): boolean {
  return cidr.version === address.version && (address.value & mask(cidr.version, cidr.prefix)) === cidr.network;
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

/** A range webhooks may not reach, and why. */
interface BlockedRange {
  cidr: Cidr;
  kind: string;
}

const range = (text: string, kind: string): BlockedRange => ({ cidr: parseCidr(text), kind });

/**
 * Most specific first: the first match names the kind. Besides the private,
 * loopback, link-local and multicast ranges, every other special-purpose range
 * (IANA registries) is refused too: none of them is a public receiver.
 */
const BLOCKED_RANGES: readonly BlockedRange[] = [
  range("169.254.169.254/32", "cloud metadata"),
  range("fd00:ec2::254/128", "cloud metadata"),
  range("0.0.0.0/8", "unspecified ('this network')"),
  range("10.0.0.0/8", "private (RFC 1918)"),
  range("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
  range("127.0.0.0/8", "loopback"),
  range("169.254.0.0/16", "link-local"),
  range("172.16.0.0/12", "private (RFC 1918)"),
  range("192.0.0.0/24", "IETF protocol assignments"),
  range("192.0.2.0/24", "documentation"),
  range("192.88.99.0/24", "6to4 relay anycast"),
  range("192.168.0.0/16", "private (RFC 1918)"),
  range("198.18.0.0/15", "benchmarking"),
  range("198.51.100.0/24", "documentation"),
  range("203.0.113.0/24", "documentation"),
  range("224.0.0.0/4", "multicast"),
  range("255.255.255.255/32", "broadcast"),
  range("240.0.0.0/4", "reserved"),
  range("::/128", "unspecified"),
  range("::1/128", "loopback"),
  range("::/96", "IPv4-compatible (deprecated)"),
  range("100::/64", "discard-only"),
  range("2001:db8::/32", "documentation"),
  range("2001::/23", "IETF protocol assignments"),
  range("fc00::/7", "unique local (private)"),
  range("fe80::/10", "link-local"),
  range("fec0::/10", "site-local (deprecated)"),
  range("ff00::/8", "multicast"),
];

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
  const candidates = inner ? [inner, address] : [address];
  for (const candidate of candidates) {
    const match = BLOCKED_RANGES.find((blocked) => cidrContains(blocked.cidr, candidate));
    if (match) return { kind: match.kind, cidr: match.cidr.text };
  }
  return undefined;
}
