import { createHash, timingSafeEqual } from "node:crypto";

/** Write keys are stored and compared only as SHA-256 digests. */
export function hashWriteKey(writeKey: string): string {
  return `sha256:${createHash("sha256").update(writeKey, "utf8").digest("hex")}`;
}

/** Compares two write-key digests in constant time. */
export function writeKeyHashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Reads the write key from HTTP Basic credentials (user = write key, empty
 * password). Returns undefined for anything else.
 */
export function writeKeyFromAuthorization(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  const user = colon === -1 ? decoded : decoded.slice(0, colon);
  return user.length > 0 ? user : undefined;
}

/** The Authorization value carrying a write key (HTTP Basic, key as user name, empty password). */
export function basicAuthorization(writeKey: string): string {
  return `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;
}
