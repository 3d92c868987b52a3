import { MAX_ID_LENGTH, type ValidCall } from "@switchyard/calls";

/**
 * A shortcut past the call rules (@switchyard/calls, zod) for the common
 * case, since every call is checked when it is made: true only when the
 * message is certainly valid under those rules, with nothing for them to
 * change. It is not a second rulebook: anything it is unsure of returns false
 * and goes through the rules themselves, which then accept it or say which
 * field and rule it breaks. A property test (quick-accept.test.ts) holds it
 * to "quickAccept(x) implies checkCall(x) accepts x".
 */
export function quickAccept(raw: Record<string, unknown>): raw is ValidCall & Record<string, unknown> {
  if (!optionalId(raw.messageId) || !optionalId(raw.userId) || !optionalId(raw.anonymousId)) return false;
  if (raw.timestamp !== undefined && !isoTimestamp(raw.timestamp)) return false;
  if (raw.context !== undefined && !plainObject(raw.context)) return false;
  if (raw.integrations !== undefined && !integrations(raw.integrations)) return false;
  switch (raw.type) {
    case "identify":
      return hasIdentity(raw) && optionalObject(raw.traits);
    case "track":
      return hasIdentity(raw) && typeof raw.event === "string" && raw.event.length > 0 && optionalObject(raw.properties);
    case "page":
    case "screen":
      return hasIdentity(raw) && optionalText(raw.name) && optionalText(raw.category) && optionalObject(raw.properties);
    case "group":
      return hasIdentity(raw) && id(raw.groupId) && optionalObject(raw.traits);
    case "alias":
      return id(raw.userId) && id(raw.previousId);
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

function hasIdentity(raw: Record<string, unknown>): boolean {
  return raw.userId !== undefined || raw.anonymousId !== undefined;
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

/** The usual shape, "2026-11-21T10:00:00.000Z" or without milliseconds; other ISO forms go to the rules. */
const SIMPLE_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?Z$/;

function isoTimestamp(value: unknown): boolean {
  return typeof value === "string" && SIMPLE_ISO.test(value) && !Number.isNaN(Date.parse(value));
}
