import { createHmac, createSecretKey, type KeyObject } from "node:crypto";

/**
 * Each shared secret as a KeyObject, made once: createHmac takes one for less
 * than the string (which it turns into a key every call), and every webhook
 * is signed. Bounded, as secrets change.
 */
const keys = new Map<string, KeyObject>();
const MAX_KEYS = 10_000;

/** X-Signature: lowercase hex HMAC-SHA1 keyed with the shared secret, over the exact body bytes sent. */
export function webhookSignature(body: Uint8Array, sharedSecret: string): string {
  let key = keys.get(sharedSecret);
  if (!key) {
    if (keys.size >= MAX_KEYS) keys.clear();
    key = createSecretKey(Buffer.from(sharedSecret, "utf8"));
    keys.set(sharedSecret, key);
  }
  return createHmac("sha1", key).update(body).digest("hex");
}
