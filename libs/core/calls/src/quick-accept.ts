import { badIntegrationKey, isPlainObject, isValidId, isValidRequired, payloadRuleOf } from "./call-rules.js";
import { CLIENT_FIELDS, type CommonField } from "./common-fields.js";
import { isValidIsoDateTime } from "./iso-date.js";
import { simpleIsoMillis } from "./iso-millis.js";
import { isFourDigitYearTime } from "./iso-text.js";
import { hasControlCharacter } from "./text-rules.js";

/**
 * The call rules (call-schema.ts, call-rules.ts) for the common case of a
 * call as the client library's caller made it, since the client checks every
 * call when it is made: true only when the message is certainly valid under
 * those rules, with nothing for them to change. It is not a second rulebook:
 * anything it is unsure of returns false and goes through the rules
 * themselves, which then accept it or say which field and rule it breaks.
 *
 * It reads the caller's message as it is, before any copy: `fields` is what
 * the client turns into the call by adding `type`, a messageId when there is
 * none, and the ISO text of a Date timestamp. So a Date timestamp passes here
 * when that text would, and `fields` must be a plain object, whose properties
 * are the ones the copy would take. quick-accept.test.ts holds it to
 * "quickAccept(type, x) implies checkCall accepts that copy" for free-form
 * values without NaN, ±Infinity or lone surrogates: those it does not look
 * for, as the client's encoder meets every value anyway and refuses them there.
 */
export function quickAccept(type: string, fields: Record<string, unknown>): boolean {
  return fields.timestamp === undefined || usualTimestamp(fields.timestamp) ? acceptsAllButTimestamp(type, fields) : false;
}

/**
 * The same quick check for a call in Segment JSON shape as a front door parsed it (its type
 * inside), for ingest's HTTP fast path: true only when checkCall would accept it, given that its
 * free-form values carry no NaN, ±Infinity or lone surrogate and it is within the size and
 * nesting limits, which the fast encoder (@switchyard/wire) checks as it writes. Any timestamp
 * the rules accept passes (SDKs send offsets and microseconds): the rule itself is asked when the
 * text is not of the usual form.
 */
export function quickAcceptJson(call: Record<string, unknown>): boolean {
  const { type, timestamp } = call;
  if (typeof type !== "string") return false;
  if (
    timestamp !== undefined &&
    !(typeof timestamp === "string" && (!Number.isNaN(simpleIsoMillis(timestamp)) || isValidIsoDateTime(timestamp)))
  ) {
    return false;
  }
  return acceptsAllButTimestamp(type, call);
}

/** Every check of quickAccept but the timestamp's. */
function acceptsAllButTimestamp(type: string, fields: Record<string, unknown>): boolean {
  if (!isPlainObject(fields)) return false;
  for (let index = 0; index < CLIENT_FIELDS.length; index++) {
    const field = CLIENT_FIELDS[index]!;
    if (!commonFieldPasses(field, fields[field.key])) return false;
  }
  const rule = payloadRuleOf(type);
  if (!rule) return false;
  // The ids were checked above: one that is set is valid.
  const identity =
    rule.identity === "userId" ? fields.userId !== undefined : fields.userId !== undefined || fields.anonymousId !== undefined;
  if (!identity) return false;
  if (rule.required !== undefined && !isValidRequired(rule.required.kind, fields[rule.required.field])) return false;
  for (const text of rule.texts) if (!optionalText(fields[text])) return false;
  return rule.object === undefined || optionalObject(fields[rule.object]);
}

/** A common field's rule (common-fields.ts) on its value; the timestamp's is checked by the callers, another Timestamp's by the rules. */
function commonFieldPasses(field: CommonField, value: unknown): boolean {
  if (value === undefined) return true;
  switch (field.rule) {
    case "id":
      return isValidId(value);
    case "message_id":
      // The messageId goes into NATS and HTTP headers: the rules refuse control characters in it.
      return isValidId(value) && !hasControlCharacter(value);
    case "text":
      return typeof value === "string";
    case "object":
      return isPlainObject(value);
    case "integrations":
      return isPlainObject(value) && badIntegrationKey(value) === undefined;
    case "timestamp":
      return field.key === "timestamp";
    default:
      return true;
  }
}

function optionalText(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}

function optionalObject(value: unknown): boolean {
  return value === undefined || isPlainObject(value);
}

/**
 * The usual shape of text, "2026-11-21T10:00:00.000Z" or without milliseconds, holding a real date
 * (other ISO forms go to the rules), or a Date whose ISO text has a four-digit year.
 */
function usualTimestamp(value: unknown): boolean {
  if (typeof value === "string") return !Number.isNaN(simpleIsoMillis(value));
  return value instanceof Date && isFourDigitYearTime(value.getTime());
}
