import { hasControlCharacter, MAX_ID_LENGTH } from "@switchyard/calls";
import type { CallType } from "./messages.js";
import { simpleIsoMillis } from "./iso-millis.js";

/**
 * A shortcut past the call rules (@switchyard/calls, zod) for the common
 * case, since every call is checked when it is made: true only when the
 * message is certainly valid under those rules, with nothing for them to
 * change. It is not a second rulebook: anything it is unsure of returns false
 * and goes through the rules themselves, which then accept it or say which
 * field and rule it breaks.
 *
 * It reads the caller's message as it is, before any copy: `fields` is what
 * prepareCall turns into the call (see rawCall) by adding `type`, a messageId
 * when there is none, and the ISO text of a Date timestamp. So a Date
 * timestamp passes here when that text would, and `fields` must be a plain
 * object, whose properties are the ones the copy would take. A property test
 * (quick-accept.test.ts) holds it to "quickAccept(type, x) implies checkCall
 * accepts rawCall(type, x)" for free-form values without NaN, ±Infinity or
 * lone surrogates: those it does not look for, as the encoder meets every
 * value anyway and refuses them there (prepareCall names the field as the
 * rules do).
 */
export function quickAccept(type: CallType, fields: Record<string, unknown>): boolean {
  if (!plainObject(fields)) return false;
  if (!optionalId(fields.messageId) || !optionalId(fields.userId) || !optionalId(fields.anonymousId)) return false;
  // The messageId goes into NATS and HTTP headers: the rules refuse control characters in it.
  if (typeof fields.messageId === "string" && hasControlCharacter(fields.messageId)) return false;
  if (fields.timestamp !== undefined && !timestamp(fields.timestamp)) return false;
  if (fields.context !== undefined && !plainObject(fields.context)) return false;
  if (fields.integrations !== undefined && !integrations(fields.integrations)) return false;
  switch (type) {
    case "identify":
      return hasIdentity(fields) && optionalObject(fields.traits);
    case "track":
      return hasIdentity(fields) && typeof fields.event === "string" && fields.event.length > 0 && optionalObject(fields.properties);
    case "page":
    case "screen":
      return hasIdentity(fields) && optionalText(fields.name) && optionalText(fields.category) && optionalObject(fields.properties);
    case "group":
      return hasIdentity(fields) && id(fields.groupId) && optionalObject(fields.traits);
    case "alias":
      return id(fields.userId) && id(fields.previousId);
    default:
      return false;
  }
}

function id(value: unknown): boolean {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_ID_LENGTH;
}

function optionalId(value: unknown): boolean {
  return value === undefined || id(value);
}

function optionalText(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}

function hasIdentity(fields: Record<string, unknown>): boolean {
  return fields.userId !== undefined || fields.anonymousId !== undefined;
}

/** An object literal (or Object.create(null)): what the rules' records accept, and nothing that merely looks like one. */
function plainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object") return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

function optionalObject(value: unknown): boolean {
  return value === undefined || plainObject(value);
}

function integrations(value: unknown): boolean {
  if (!plainObject(value)) return false;
  for (const key in value) {
    const flag = value[key];
    if (typeof flag !== "boolean" && !plainObject(flag)) return false;
  }
  return true;
}

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the Dates whose ISO text has a four-digit year. */
const FIRST_FOUR_DIGIT_YEAR_MS = -62_167_219_200_000;
const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;

/**
 * The usual shape of text, "2026-11-21T10:00:00.000Z" or without milliseconds, holding a real date
 * (other ISO forms go to the rules), or a Date whose ISO text has that shape.
 */
function timestamp(value: unknown): boolean {
  if (typeof value === "string") return !Number.isNaN(simpleIsoMillis(value));
  if (!(value instanceof Date)) return false;
  const millis = value.getTime();
  return millis >= FIRST_FOUR_DIGIT_YEAR_MS && millis <= LAST_FOUR_DIGIT_YEAR_MS;
}
