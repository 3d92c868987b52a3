import { BlockList, isIP } from "node:net";

/** One entry of CONSOLE_TRUSTED_PROXIES: an address, or a CIDR range. */
export interface ProxyRange {
  family: 4 | 6;
  address: string;
  prefix: number;
}

const FAMILY = { 4: "ipv4", 6: "ipv6" } as const;

/**
 * Parses one entry of CONSOLE_TRUSTED_PROXIES ("10.0.0.1", "10.0.0.0/8", "fd00::/8"); throws an
 * Error naming the entry and the rule.
 */
export function parseProxyRange(text: string): ProxyRange {
  const slash = text.indexOf("/");
  const address = unmapped(slash === -1 ? text : text.slice(0, slash));
  const family = isIP(address);
  if (family !== 4 && family !== 6) {
    throw new Error(`"${text}" is not an IP address or CIDR range (e.g. 10.0.0.1, 10.0.0.0/8 or fd00::/8)`);
  }
  const bits = family === 4 ? 32 : 128;
  const prefixText = slash === -1 ? String(bits) : text.slice(slash + 1);
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= bits)) throw new Error(`"${text}": the prefix length must be 0-${bits} for IPv${family}`);
  return { family, address, prefix };
}

/**
 * The proxies whose X-Forwarded-For is believed. One list per IP version, so an IPv6 range
 * matches IPv6 addresses only (a single BlockList would match IPv4 through the mapped form).
 */
export class TrustedProxies {
  private readonly lists = { 4: new BlockList(), 6: new BlockList() };
  readonly empty: boolean;

  constructor(ranges: readonly ProxyRange[]) {
    for (const { family, address, prefix } of ranges) this.lists[family].addSubnet(address, prefix, FAMILY[family]);
    this.empty = ranges.length === 0;
  }

  has(address: string): boolean {
    const family = isIP(address);
    return (family === 4 || family === 6) && this.lists[family].check(address, FAMILY[family]);
  }

  /**
   * The address of the client behind a request: the connecting peer, unless the peer is a
   * trusted proxy; then the right-most X-Forwarded-For address that is not itself a trusted
   * proxy. Each proxy appends the address it was reached from, so everything left of the first
   * untrusted hop is what a client wrote and is not believed. An entry that is no address stops
   * the walk at the last trusted hop, so no client-chosen text becomes the key.
   */
  clientAddress(peer: string | undefined, forwardedFor: string | string[] | undefined): string {
    let client = unmapped(peer ?? "unknown");
    if (this.empty || !this.has(client) || forwardedFor === undefined) return client;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor).split(",");
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = forwardedAddress(hops[i]!);
      if (hop === undefined) return client;
      client = hop;
      if (!this.has(hop)) return hop;
    }
    return client;
  }
}

/** An X-Forwarded-For entry as an address: spaces, brackets and a port dropped; undefined if it is none. */
function forwardedAddress(entry: string): string | undefined {
  let text = entry.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) text = bracketed[1]!;
  else if (/^[\d.]+:\d+$/.test(text)) text = text.slice(0, text.indexOf(":"));
  text = unmapped(text);
  return isIP(text) === 0 ? undefined : text;
}

/** An IPv4-mapped IPv6 address (a dual-stack socket's view of an IPv4 peer) as the IPv4 address. */
function unmapped(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}
