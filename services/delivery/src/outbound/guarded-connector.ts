import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import type { LookupFunction } from "node:net";
import { buildConnector } from "undici";
import { refusalReason, type AddressPolicy } from "./address-policy.js";
import { parseIp } from "./ip-ranges.js";

/** The code of a refused target, so failure classification can tell it from network errors. */
export const ADDRESS_REFUSED = "SWITCHYARD_ADDRESS_REFUSED";

export class AddressRefusedError extends Error {
  readonly code = ADDRESS_REFUSED;
  override readonly name = "AddressRefusedError";
}

/**
 * A DNS lookup that resolves every address of the name and refuses the name
 * when any of them is outside the policy. The socket then connects only to
 * addresses this lookup returned, so the address checked is the address
 * connected to: a name that resolves to a public address when a destination
 * is saved and to 169.254.169.254 when a webhook is sent (DNS rebinding)
 * gets nothing.
 */
export function guardedLookup(policy: AddressPolicy): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, "", 0);
      for (const { address } of addresses) {
        const verdict = policy.checkText(address);
        if (!verdict.allowed) return callback(new AddressRefusedError(refusalReason(hostname, verdict)), "", 0);
      }
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname}: no address`), { code: "ENOTFOUND" }), "", 0);
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

/**
 * undici's connector with the address policy in the connect path: IP-literal
 * hosts are checked before connecting (Node skips the lookup for them), names
 * go through the guarded lookup, and the connected socket's remote address is
 * checked once more before any byte of a request is written.
 */
export function guardedConnector(policy: AddressPolicy, options: buildConnector.BuildOptions): buildConnector.connector {
  const connect = buildConnector({ ...options, lookup: guardedLookup(policy) });
  return (target, callback) => {
    const literal = parseIp(target.hostname);
    if (literal) {
      const verdict = policy.check(literal);
      if (!verdict.allowed) return callback(new AddressRefusedError(refusalReason(target.hostname, verdict)), null);
    }
    connect(target, (...args) => {
      const [error, socket] = args;
      if (error) return callback(error, null);
      const verdict = policy.checkText(socket.remoteAddress ?? "");
      if (verdict.allowed) return callback(null, socket);
      socket.destroy();
      callback(new AddressRefusedError(refusalReason(target.hostname, verdict)), null);
    });
  };
}
