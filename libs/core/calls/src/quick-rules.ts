import { badIntegrationKey, idBytesSurelyValid, payloadRuleOf, requiredBytesSurelyValid } from "./call-rules.js";
import { CLIENT_TEXT_KEYS } from "./common-fields.js";
import { hasFourDigitYear } from "./iso-text.js";
import { MAX_ID_LENGTH } from "./limits.js";
import { hasControlCharacter } from "./text-rules.js";

/**
 * The text fields of a scanned call, by position: the call's own (the Call model's text fields,
 * in its order), then its payload's text fields in field order (event, name, groupId or
 * previousId first; category second).
 */
export const ScannedText = {
  MESSAGE_ID: CLIENT_TEXT_KEYS.indexOf("messageId"),
  USER_ID: CLIENT_TEXT_KEYS.indexOf("userId"),
  ANONYMOUS_ID: CLIENT_TEXT_KEYS.indexOf("anonymousId"),
  PAYLOAD_TEXT_0: CLIENT_TEXT_KEYS.length,
  PAYLOAD_TEXT_1: CLIENT_TEXT_KEYS.length + 1,
} as const;
/** A position in ScannedText's numbering. */
export type ScannedText = number;

/**
 * What the quick rules need to know of a call read from its protobuf bytes
 * without decoding it (ingest's call scan, which satisfies this shape).
 *
 * What such a scan guarantees and the schema asks for anyway: the free-form
 * Structs are objects, the call is within MAX_CALL_BYTES (the scan's size
 * bound is, or the call takes the exact path), text fields are strings, and a
 * set text field is never empty (proto3 sends "" as unset, and unset texts
 * are left out of the JSON); every text is valid UTF-8, so holds no lone
 * surrogate, and every number is finite (a call with other text is refused,
 * one with other numbers takes the exact path).
 */
export interface ScannedCallFacts {
  /** The payload's kind ("delete" included); undefined when the call has none. */
  readonly type: string | undefined;
  /** The messageId; "" when unset. */
  readonly messageId: string;
  readonly timestamp: Date | undefined;
  /** integrations, decoded. */
  readonly integrations: Record<string, unknown> | undefined;
  /** UTF-8 bytes of a text field; 0 when unset. */
  textBytes(field: ScannedText): number;
}

/**
 * The call rules (call-schema.ts, call-rules.ts) on what a scan found, so that
 * a valid gRPC call is accepted without building its Segment JSON and running
 * the zod schema over it, which was most of what checking a call cost.
 *
 * It only ever says "valid" or "cannot tell": every call it does not pass is
 * checked by checkCall, so a refused call is refused with exactly the field,
 * rule and message it always had. quick-rules.test.ts holds it to never
 * passing a call checkCall refuses, and to passing every valid call except
 * those with an id over MAX_ID_LENGTH bytes (see idBytesSurelyValid).
 */
export function passesQuickly(call: ScannedCallFacts): boolean {
  // The messageId is decoded: its length is known in characters.
  if (call.messageId.length > MAX_ID_LENGTH || hasControlCharacter(call.messageId)) return false;
  const userIdBytes = call.textBytes(ScannedText.USER_ID);
  const anonymousIdBytes = call.textBytes(ScannedText.ANONYMOUS_ID);
  // Unset ids (0 bytes) are left out of the JSON; set ones are non-empty, so only their length matters.
  if (userIdBytes > MAX_ID_LENGTH || anonymousIdBytes > MAX_ID_LENGTH) return false;
  if (call.timestamp && !hasFourDigitYear(call.timestamp)) return false;
  if (call.integrations && badIntegrationKey(call.integrations) !== undefined) return false;
  const rule = payloadRuleOf(call.type);
  if (!rule) return false;
  const identity = rule.identity === "userId" ? idBytesSurelyValid(userIdBytes) : userIdBytes > 0 || anonymousIdBytes > 0;
  if (!identity) return false;
  // A required field is the payload's first text field (call-rules.ts).
  return rule.required === undefined || requiredBytesSurelyValid(rule.required.kind, call.textBytes(ScannedText.PAYLOAD_TEXT_0));
}
