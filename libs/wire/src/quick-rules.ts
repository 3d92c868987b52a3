import { hasControlCharacter, hasFourDigitYear, MAX_ID_LENGTH } from "@switchyard/calls";
import { TextFieldId, type ScannedCall } from "./call-scanner.js";

/**
 * The call rules of @switchyard/calls (call-schema.ts), written out for a
 * scanned call so that a valid one is accepted without building its Segment
 * JSON and running the zod schema over it, which was most of what checking a
 * call cost.
 *
 * It only ever says "valid" or "cannot tell": every call it does not pass is
 * checked by checkCall as before, so a refused call is refused with exactly
 * the field, rule and message it always had. It must never pass a call
 * checkCall refuses; quick-rules.test.ts holds it to that, and to passing
 * every valid call except those with an id over MAX_ID_LENGTH bytes.
 *
 * What the scan guarantees and the schema asks for anyway: the free-form
 * Structs are objects, the call is within 32 KB (a WireCall's size bound is),
 * text fields are strings, and a set text field is never empty (proto3 sends
 * "" as unset, and unset texts are left out of the JSON); every text is valid
 * UTF-8, so holds no lone surrogate, and every number is finite (a call with
 * other text is refused, one with other numbers takes the exact path).
 */
export function passesQuickly(call: ScannedCall): boolean {
  // An id's limit counts UTF-16 units, never more than its UTF-8 bytes: within the limit in bytes is within it.
  // A longer id may still be short enough in characters; checkCall decides those.
  if (call.messageId.length > MAX_ID_LENGTH || hasControlCharacter(call.messageId)) return false;
  const userIdBytes = call.textBytes(TextFieldId.USER_ID);
  const anonymousIdBytes = call.textBytes(TextFieldId.ANONYMOUS_ID);
  if (userIdBytes > MAX_ID_LENGTH || anonymousIdBytes > MAX_ID_LENGTH) return false;
  if (call.timestamp && !hasFourDigitYear(call.timestamp)) return false;
  if (call.integrations && !integrationsPass(call.integrations)) return false;
  const hasIdentity = userIdBytes > 0 || anonymousIdBytes > 0;
  switch (call.type) {
    case "identify":
    case "page":
    case "screen":
      return hasIdentity;
    case "track":
      return hasIdentity && call.textBytes(TextFieldId.PAYLOAD_TEXT_0) > 0; // event
    case "group":
      return hasIdentity && isRequiredId(call.textBytes(TextFieldId.PAYLOAD_TEXT_0)); // groupId
    case "alias":
      return userIdBytes > 0 && isRequiredId(call.textBytes(TextFieldId.PAYLOAD_TEXT_0)); // previousId
    case "delete":
    case undefined:
      return false;
  }
}

function isRequiredId(bytes: number): boolean {
  return bytes > 0 && bytes <= MAX_ID_LENGTH;
}

/** Every value true, false or a JSON object, as decoded from a Struct (plain objects, arrays for lists). */
function integrationsPass(integrations: Record<string, unknown>): boolean {
  for (const key in integrations) {
    const value = integrations[key];
    if (typeof value === "boolean") continue;
    if (typeof value !== "object" || value === null || Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype)
      return false;
  }
  return true;
}
