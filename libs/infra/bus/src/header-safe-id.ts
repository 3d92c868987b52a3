import { createHash } from "node:crypto";

/** Longest id passed through as it is; ingest refuses longer messageIds anyway. */
const MAX_PLAIN_LENGTH = 128;
/** Visible ASCII only: what survives a NATS or HTTP header unchanged (no spaces, which NATS trims). */
const PLAIN = /^[\x21-\x7e]+$/;

/**
 * An id as it may enter a NATS header (`Nats-Msg-Id`) or an HTTP header
 * (`webhook-id`): the id itself when it is visible ASCII, otherwise `h_` and
 * the base64url SHA-256 of its UTF-8 bytes. Calls are accepted with ids of any
 * printable Unicode (and older versions accepted control characters); a line
 * break in a header makes the publish or the request throw, and the message
 * carrying it would come back forever. The same id always gives the same
 * header value, so de-duplication by id keeps working.
 */
export function headerSafeId(id: string): string {
  if (id.length <= MAX_PLAIN_LENGTH && PLAIN.test(id) && !id.startsWith("h_")) return id;
  return `h_${createHash("sha256").update(id, "utf8").digest("base64url")}`;
}
