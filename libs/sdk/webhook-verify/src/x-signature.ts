import { createHmac, timingSafeEqual } from "node:crypto";
import { bodyBytes, type RawBody } from "./bytes.js";

/** The header Switchyard signs every request with when the destination has a shared secret. */
export const X_SIGNATURE_HEADER = "x-signature";

const SHA1_HEX = /^[0-9a-fA-F]{40}$/;

/**
 * X-Signature of a body: lowercase hex HMAC-SHA1 keyed with the destination's
 * shared secret (its UTF-8 bytes) over the exact body bytes.
 */
export function signXSignature(body: RawBody, sharedSecret: string): string {
  return createHmac("sha1", sharedSecret).update(bodyBytes(body)).digest("hex");
}

/**
 * True when `signature` is the X-Signature of `body` under `sharedSecret`.
 * Compares in constant time. Never throws: a missing, malformed or
 * wrong-length signature, or an empty secret, is simply not valid.
 * Hex digits are accepted in either case.
 */
export function verifyXSignature(body: RawBody, signature: string | readonly string[] | null | undefined, sharedSecret: string): boolean {
  if (typeof sharedSecret !== "string" || sharedSecret === "") return false;
  const given = Array.isArray(signature) ? signature[0] : signature;
  if (typeof given !== "string") return false;
  const trimmed = given.trim();
  if (!SHA1_HEX.test(trimmed)) return false;
  let expected: Buffer;
  try {
    expected = createHmac("sha1", sharedSecret).update(bodyBytes(body)).digest();
  } catch {
    return false; // a body of an unsupported type
  }
  // Both are 20 bytes here, as timingSafeEqual requires.
  return timingSafeEqual(expected, Buffer.from(trimmed, "hex"));
}
