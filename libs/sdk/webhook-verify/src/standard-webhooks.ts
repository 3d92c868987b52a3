import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { bodyBytes, type RawBody } from "./bytes.js";
import { headerValue, type HeadersLike } from "./headers.js";

/**
 * Standard Webhooks symmetric signatures:
 * `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256>` entries
 * over `${webhook-id}.${webhook-timestamp}.${body}`, keyed with the base64
 * bytes of a `whsec_…` secret. Several entries appear while a rotated secret
 * is in its grace period; one match is enough.
 */

export const STANDARD_WEBHOOK_HEADERS = {
  id: "webhook-id",
  timestamp: "webhook-timestamp",
  signature: "webhook-signature",
} as const;

/** How far a webhook-timestamp may be from the receiver's clock (either way), as Standard Webhooks recommends. */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

export const SIGNING_SECRET_PREFIX = "whsec_";
/** Standard Webhooks asks for secrets of 24 to 64 random bytes. */
export const SIGNING_SECRET_MIN_BYTES = 24;
export const SIGNING_SECRET_MAX_BYTES = 64;
export const SIGNING_SECRET_RULE = `must be "${SIGNING_SECRET_PREFIX}" followed by the base64 of ${SIGNING_SECRET_MIN_BYTES} to ${SIGNING_SECRET_MAX_BYTES} bytes`;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const TIMESTAMP = /^\d{1,15}$/;
const SHA256_BYTES = 32;

/**
 * The HMAC key of a secret: the base64-decoded bytes after the `whsec_`
 * prefix (the prefix is optional here, as in the reference libraries).
 * Undefined when the secret is not valid base64 or decodes to nothing.
 */
export function signingKey(secret: string): Buffer | undefined {
  if (typeof secret !== "string") return undefined;
  const encoded = secret.startsWith(SIGNING_SECRET_PREFIX) ? secret.slice(SIGNING_SECRET_PREFIX.length) : secret;
  if (!BASE64.test(encoded) || encoded.length % 4 !== 0) return undefined;
  const key = Buffer.from(encoded, "base64");
  return key.length > 0 ? key : undefined;
}

/** True for a well-formed secret to hand out: `whsec_` + base64 of 24 to 64 bytes. */
export function isValidSigningSecret(secret: string): boolean {
  if (typeof secret !== "string" || !secret.startsWith(SIGNING_SECRET_PREFIX)) return false;
  const key = signingKey(secret);
  return key !== undefined && key.length >= SIGNING_SECRET_MIN_BYTES && key.length <= SIGNING_SECRET_MAX_BYTES;
}

/** A new random secret (32 bytes). */
export function generateSigningSecret(): string {
  return `${SIGNING_SECRET_PREFIX}${randomBytes(32).toString("base64")}`;
}

export interface StandardWebhookMessage {
  /** webhook-id: the message's id, the same on every retry (receivers de-duplicate with it). */
  id: string;
  /** webhook-timestamp: seconds since the Unix epoch of this attempt. */
  timestamp: number;
  body: RawBody;
}

function signature(key: Buffer, message: StandardWebhookMessage): Buffer {
  return createHmac("sha256", key).update(`${message.id}.${message.timestamp}.`, "utf8").update(bodyBytes(message.body)).digest();
}

/**
 * The webhook-signature header value: one `v1,<base64>` entry per secret, space-separated,
 * in the order given. Throws a TypeError when a secret is not usable (a sender's bug, not input).
 */
export function signStandardWebhook(message: StandardWebhookMessage, secrets: string | readonly string[]): string {
  const list = typeof secrets === "string" ? [secrets] : secrets;
  if (list.length === 0) throw new TypeError("secrets: at least one signing secret is needed");
  return list
    .map((secret, index) => {
      const key = signingKey(secret);
      if (!key) throw new TypeError(`secrets[${index}]: ${SIGNING_SECRET_RULE}`);
      return `v1,${signature(key, message).toString("base64")}`;
    })
    .join(" ");
}

export type StandardWebhookFailure =
  | "missing_id"
  | "missing_timestamp"
  | "missing_signature"
  | "invalid_timestamp"
  | "timestamp_too_old"
  | "timestamp_too_new"
  | "invalid_secret"
  | "no_matching_signature";

export type StandardWebhookResult =
  { valid: true; id: string; timestamp: number } | { valid: false; reason: StandardWebhookFailure; message: string };

export interface VerifyStandardWebhookOptions {
  /** Allowed distance between webhook-timestamp and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The receiver's clock (default Date.now()), for tests. */
  now?: Date | number;
}

/**
 * Checks a Standard Webhooks request: the three headers are present, the
 * timestamp is within the tolerance (replay protection), and at least one
 * `v1` signature matches one of `secrets` (pass several while you rotate).
 * Compares in constant time and never throws: every problem is a result
 * with a `reason` code and a message naming the header and the rule.
 */
export function verifyStandardWebhook(
  body: RawBody,
  headers: HeadersLike,
  secrets: string | readonly string[],
  options: VerifyStandardWebhookOptions = {},
): StandardWebhookResult {
  const fail = (reason: StandardWebhookFailure, message: string): StandardWebhookResult => ({ valid: false, reason, message });
  const { id: ID, timestamp: TS, signature: SIG } = STANDARD_WEBHOOK_HEADERS;
  let id: string | undefined, timestampText: string | undefined, signatureHeader: string | undefined;
  try {
    id = headerValue(headers, ID);
    timestampText = headerValue(headers, TS)?.trim();
    signatureHeader = headerValue(headers, SIG);
  } catch {
    return fail("missing_id", "headers: could not be read");
  }
  if (!id) return fail("missing_id", `${ID}: header is required`);
  if (!timestampText) return fail("missing_timestamp", `${TS}: header is required`);
  if (!signatureHeader) return fail("missing_signature", `${SIG}: header is required`);
  if (!TIMESTAMP.test(timestampText)) return fail("invalid_timestamp", `${TS}: must be whole seconds since the Unix epoch`);

  const timestamp = Number(timestampText);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowMs = options.now === undefined ? Date.now() : typeof options.now === "number" ? options.now : options.now.getTime();
  const nowSeconds = Math.floor(nowMs / 1000);
  if (timestamp < nowSeconds - tolerance) return fail("timestamp_too_old", `${TS}: more than ${tolerance} s in the past`);
  if (timestamp > nowSeconds + tolerance) return fail("timestamp_too_new", `${TS}: more than ${tolerance} s in the future`);

  const keys = (typeof secrets === "string" ? [secrets] : Array.isArray(secrets) ? secrets : []).map((secret) => signingKey(secret));
  if (keys.length === 0 || keys.some((key) => key === undefined))
    return fail("invalid_secret", `secret: ${SIGNING_SECRET_RULE} (the prefix may be left out)`);

  const given: Buffer[] = [];
  for (const entry of signatureHeader.split(/\s+/)) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== "v1") continue; // other schemes (v1a, …) are not ours to check
    const encoded = entry.slice(comma + 1);
    if (!BASE64.test(encoded)) continue;
    const bytes = Buffer.from(encoded, "base64");
    if (bytes.length === SHA256_BYTES) given.push(bytes);
  }

  let matched = false;
  for (const key of keys as Buffer[]) {
    const expected = signature(key, { id, timestamp, body });
    // Every candidate is compared (no early exit), each in constant time on equal lengths.
    for (const candidate of given) if (timingSafeEqual(expected, candidate)) matched = true;
  }
  if (!matched) return fail("no_matching_signature", `${SIG}: no v1 signature matches the secret`);
  return { valid: true, id, timestamp };
}
