import { describe, expect, it } from "vitest";
import { loadConsoleConfig } from "../config.js";
import { parseProxyRange, TrustedProxies } from "./client-address.js";

const proxies = (...entries: string[]) => new TrustedProxies(entries.map(parseProxyRange));

describe("the client address behind trusted proxies", () => {
  it("is the peer when no proxy is trusted, whatever X-Forwarded-For says", () => {
    expect(proxies().clientAddress("127.0.0.1", "203.0.113.7")).toBe("127.0.0.1");
    expect(proxies().clientAddress("::ffff:127.0.0.1", undefined)).toBe("127.0.0.1");
  });

  it("is the peer when the peer is not a trusted proxy", () => {
    expect(proxies("10.0.0.0/8").clientAddress("192.0.2.1", "203.0.113.7")).toBe("192.0.2.1");
  });

  it("is the right-most forwarded address that is not a trusted proxy", () => {
    const trusted = proxies("10.0.0.0/8", "fd00::/8");
    expect(trusted.clientAddress("10.0.0.1", "203.0.113.7")).toBe("203.0.113.7");
    // What the client wrote itself is left of the hop the proxy appended, and not believed.
    expect(trusted.clientAddress("10.0.0.1", "198.51.100.1, 203.0.113.7")).toBe("203.0.113.7");
    // Proxies in a chain are skipped.
    expect(trusted.clientAddress("::ffff:10.0.0.1", "198.51.100.1, 203.0.113.7, 10.2.3.4")).toBe("203.0.113.7");
    expect(trusted.clientAddress("fd00::1", ["2001:db8::5", "fd00::2"])).toBe("2001:db8::5");
    // Ports and brackets are dropped; an IPv4-mapped address is the IPv4 address.
    expect(trusted.clientAddress("10.0.0.1", "203.0.113.7:4711")).toBe("203.0.113.7");
    expect(trusted.clientAddress("10.0.0.1", "[2001:db8::5]:4711")).toBe("2001:db8::5");
    expect(trusted.clientAddress("10.0.0.1", "::ffff:203.0.113.7")).toBe("203.0.113.7");
  });

  it("stops at the last trusted hop on an entry that is no address, or when every hop is a proxy", () => {
    const trusted = proxies("10.0.0.0/8");
    expect(trusted.clientAddress("10.0.0.1", "not-an-address")).toBe("10.0.0.1");
    expect(trusted.clientAddress("10.0.0.1", "evil, 10.0.0.2")).toBe("10.0.0.2");
    expect(trusted.clientAddress("10.0.0.1", "10.0.0.3, 10.0.0.2")).toBe("10.0.0.3");
    expect(trusted.clientAddress("10.0.0.1", undefined)).toBe("10.0.0.1");
  });

  it("matches an IPv6 range against IPv6 addresses only", () => {
    expect(proxies("::/0").has("10.0.0.1")).toBe(false);
    expect(proxies("::/0").has("2001:db8::1")).toBe(true);
  });
});

describe("CONSOLE_TRUSTED_PROXIES", () => {
  const env = { SWITCHYARD_ADMIN_TOKEN: "console-test-admin-token-0123456789" };

  it("is empty by default, and takes addresses and CIDR ranges separated by commas", () => {
    expect(loadConsoleConfig(env).CONSOLE_TRUSTED_PROXIES).toEqual([]);
    expect(loadConsoleConfig({ ...env, CONSOLE_TRUSTED_PROXIES: " 10.0.0.1, 172.16.0.0/12 ,fd00::/8," }).CONSOLE_TRUSTED_PROXIES).toEqual([
      { family: 4, address: "10.0.0.1", prefix: 32 },
      { family: 4, address: "172.16.0.0", prefix: 12 },
      { family: 6, address: "fd00::", prefix: 8 },
    ]);
  });

  it("refuses an entry that is not an address or range, naming the variable, the entry and the rule", () => {
    expect(() => loadConsoleConfig({ ...env, CONSOLE_TRUSTED_PROXIES: "10.0.0.1, proxy.internal" })).toThrow(
      'CONSOLE_TRUSTED_PROXIES: "proxy.internal" is not an IP address or CIDR range (e.g. 10.0.0.1, 10.0.0.0/8 or fd00::/8)',
    );
    expect(() => loadConsoleConfig({ ...env, CONSOLE_TRUSTED_PROXIES: "10.0.0.0/33" })).toThrow(
      'CONSOLE_TRUSTED_PROXIES: "10.0.0.0/33": the prefix length must be 0-32 for IPv4',
    );
    expect(() => loadConsoleConfig({ ...env, CONSOLE_TRUSTED_PROXIES: "10.0.0.256" })).toThrow(
      /CONSOLE_TRUSTED_PROXIES: "10\.0\.0\.256" is not/,
    );
  });
});
