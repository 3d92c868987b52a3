import {
  CidrSet,
  blockedRangeOf,
  embeddedIpv4,
  formatIp,
  parseCidr,
  parseIp,
  type BlockedMatch,
  type Cidr,
  type IpAddress,
} from "./ip-ranges.js";

/** The variable that holds the operator's allowlist; named in every refusal so the fix is obvious. */
export const ALLOWED_CIDRS_VARIABLE = "DELIVERY_ALLOWED_CIDRS";

export type AddressVerdict = { allowed: true } | { allowed: false; address: string; blocked: BlockedMatch };

const ALLOWED: AddressVerdict = { allowed: true };
const MAX_VERDICTS = 10_000;

/**
 * Which addresses webhooks may be sent to: every public address, plus the
 * special-purpose ones (private, loopback, link-local, metadata, ...) that the
 * operator's allowlist covers. Pure: DNS and sockets are elsewhere.
 */
export class AddressPolicy {
  private readonly allowedSet: CidrSet;
  /**
   * Verdicts by IP version and address. The policy never changes, and receivers are few: a
   * verdict costs a dozen range lookups (each a node:net BlockList check, which builds an address
   * object) for an address in a special-purpose range, at every new connection. Bounded.
   */
  private readonly verdicts = { 4: new Map<bigint, AddressVerdict>(), 6: new Map<bigint, AddressVerdict>() };

  constructor(private readonly allowed: readonly Cidr[] = []) {
    this.allowedSet = new CidrSet(allowed);
  }

  /** Parses a comma-separated CIDR list (empty entries ignored); throws naming the bad entry. */
  static fromList(list: string | undefined): AddressPolicy {
    const entries = (list ?? "")
      .split(",")
      .map((entry) => entry.trim())
      .filter(Boolean);
    return new AddressPolicy(entries.map((entry) => parseCidr(entry)));
  }

  get allowlist(): readonly string[] {
    return this.allowed.map((cidr) => cidr.text);
  }

  check(address: IpAddress): AddressVerdict {
    const verdicts = this.verdicts[address.version];
    let verdict = verdicts.get(address.value);
    if (!verdict) {
      const blocked = blockedRangeOf(address);
      verdict = !blocked || this.isAllowlisted(address) ? ALLOWED : { allowed: false, address: formatIp(address), blocked };
      if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
      verdicts.set(address.value, verdict);
    }
    return verdict;
  }

  /** Like check, for an address as text; text that is not an IP address is refused. */
  checkText(text: string): AddressVerdict {
    const address = parseIp(text);
    if (!address) return { allowed: false, address: text, blocked: { kind: "not an IP address", cidr: "-" } };
    return this.check(address);
  }

  /** Allowlisted as written, or through the IPv4 address it carries (127.0.0.0/8 also allows ::ffff:127.0.0.1). */
  private isAllowlisted(address: IpAddress): boolean {
    const inner = embeddedIpv4(address);
    return this.allowedSet.has(address) || (inner !== undefined && this.allowedSet.has(inner));
  }
}

/** The reason recorded for a refused target, e.g. `localhost resolves to 127.0.0.1: loopback (127.0.0.0/8), not in DELIVERY_ALLOWED_CIDRS`. */
export function refusalReason(host: string, verdict: Extract<AddressVerdict, { allowed: false }>): string {
  const target = host === verdict.address ? verdict.address : `${host} resolves to ${verdict.address}`;
  return `${target}: ${verdict.blocked.kind} (${verdict.blocked.cidr}), not in ${ALLOWED_CIDRS_VARIABLE}`;
}
