import { createHmac } from "node:crypto";

/** X-Signature: lowercase hex HMAC-SHA1 keyed with the shared secret, over the exact body bytes sent. */
export function webhookSignature(body: Uint8Array, sharedSecret: string): string {
  return createHmac("sha1", sharedSecret).update(body).digest("hex");
}
