import { CALL_KINDS, PAYLOAD_RULES, payloadTextsOf } from "./call-rules.js";
import { CLIENT_TEXT_KEYS } from "./common-fields.js";

/**
 * What a connection filter's path may name, from the Call model and the payload rules: a call's
 * type, any text field (the call's own, a field added to calls.proto included, and each payload's),
 * or a key under context or a payload's object. The workspace checks paths against these names and
 * delivery's call reader (libs/core/wire call-fields.ts) resolves them.
 */

/** The fields of a call a path can name directly. */
export const FILTER_FIELD_NAMES: readonly string[] = [
  ...new Set(["type", ...CLIENT_TEXT_KEYS, ...CALL_KINDS.flatMap((type) => payloadTextsOf(PAYLOAD_RULES[type]))]),
];

/** The objects of a call a path can name keys under. */
export const FILTER_OBJECT_NAMES: readonly string[] = [
  ...new Set([...CALL_KINDS.flatMap((type) => PAYLOAD_RULES[type].object ?? []), "context"]),
];
