import { MAX_ID_LENGTH } from "./limits.js";

/**
 * The rules of a valid call that the zod schema (call-schema.ts) and the fast
 * checks (quick-rules.ts for ingest's scanned gRPC calls, quick-accept.ts for
 * the client library) share, each written once here. The schema is the
 * definition; the fast checks only ever say "certainly valid" or "cannot
 * tell", and quick-rules.test.ts and quick-accept.test.ts hold them to never
 * passing a call the schema refuses.
 */

/** The kinds of call the rules accept (a delete request is not a call any front door takes). */
export type CallKind = "identify" | "track" | "page" | "screen" | "group" | "alias";

/** Whose id a call must carry: userId or anonymousId, or (alias) userId itself. */
export type IdentityRule = "userId_or_anonymousId" | "userId";

/**
 * A field a kind of call cannot do without: "text" is any non-empty string,
 * "id" one of at most MAX_ID_LENGTH characters. It is always the first text
 * field of the payload message (field 1 of Track, Group, Alias; a test holds
 * the table to that, as the scan's quick rules read it there).
 */
export interface RequiredField {
  readonly field: string;
  readonly kind: "text" | "id";
}

/**
 * What one kind of call asks for beyond the fields every call has. Fields are
 * named by their property name in the generated type (also their JSON key);
 * payload-fields.ts finds their generated numbers by that name.
 */
export interface PayloadRule {
  readonly identity: IdentityRule;
  readonly required: RequiredField | undefined;
  /** Optional text fields (strings, may be empty). */
  readonly texts: readonly string[];
  /** The optional free-form object (a google.protobuf.Struct), if the kind has one. */
  readonly object: string | undefined;
}

const EITHER_ID: IdentityRule = "userId_or_anonymousId";

/**
 * Every kind of call and what it asks for: the one hand-written table of a
 * call's payload fields. The zod schema (call-schema.ts), the JSON <-> protobuf
 * conversion (proto-json.ts) and libs/core/wire's shapes (call-shape.ts) are built
 * from it; payload-fields.test.ts fails when it and proto/ disagree. A text or
 * object field added to a payload in the .proto is added here once.
 */
export const PAYLOAD_RULES = {
  identify: { identity: EITHER_ID, required: undefined, texts: [], object: "traits" },
  track: { identity: EITHER_ID, required: { field: "event", kind: "text" }, texts: [], object: "properties" },
  page: { identity: EITHER_ID, required: undefined, texts: ["name", "category"], object: "properties" },
  screen: { identity: EITHER_ID, required: undefined, texts: ["name", "category"], object: "properties" },
  group: { identity: EITHER_ID, required: { field: "groupId", kind: "id" }, texts: [], object: "traits" },
  alias: { identity: "userId", required: { field: "previousId", kind: "id" }, texts: [], object: undefined },
} as const satisfies Record<CallKind, PayloadRule>;

/** The kinds of call, in the table's order. */
export const CALL_KINDS = Object.keys(PAYLOAD_RULES) as readonly CallKind[];

/** A kind's text fields: its required field first (when it has one), then its optional texts. */
export function payloadTextsOf(rule: PayloadRule): readonly string[] {
  return rule.required === undefined ? rule.texts : [rule.required.field, ...rule.texts];
}

/** The rule of a kind of call; undefined for anything else ("delete", no type, a type the rules do not know). */
export function payloadRuleOf(type: unknown): PayloadRule | undefined {
  switch (type) {
    case "identify":
    case "track":
    case "page":
    case "screen":
    case "group":
    case "alias":
      return PAYLOAD_RULES[type];
    default:
      return undefined;
  }
}

/** The id rule: a non-empty string of at most MAX_ID_LENGTH characters (UTF-16 units). */
export function isValidId(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_ID_LENGTH;
}

/**
 * The id rule on an id known only by its UTF-8 size: true when it certainly
 * holds. An id's length in UTF-16 units is never more than its UTF-8 bytes, so
 * within the limit in bytes is within it in characters; a longer one may still
 * be within it in characters, which only the schema can tell.
 */
export function idBytesSurelyValid(bytes: number): boolean {
  return bytes > 0 && bytes <= MAX_ID_LENGTH;
}

/** Whether a required field of `kind` holds, for a text known only by its UTF-8 size (see idBytesSurelyValid). */
export function requiredBytesSurelyValid(kind: RequiredField["kind"], bytes: number): boolean {
  return kind === "id" ? idBytesSurelyValid(bytes) : bytes > 0;
}

/** The required-field rule on a value: a non-empty string, or a valid id. */
export function isValidRequired(kind: RequiredField["kind"], value: unknown): boolean {
  return kind === "id" ? isValidId(value) : typeof value === "string" && value.length > 0;
}

/**
 * The free-form object rule: an object literal (or Object.create(null)) as
 * JSON.parse and the protobuf decoder make them; not an array, Date, Map or
 * class instance.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/** The integrations rule, value by value: true, false or an object (counts as on). */
export function isIntegrationValue(value: unknown): boolean {
  return typeof value === "boolean" || isPlainObject(value);
}

/** The first key of integrations whose value breaks the rule; undefined when none does. */
export function badIntegrationKey(integrations: Record<string, unknown>): string | undefined {
  for (const key in integrations) if (!isIntegrationValue(integrations[key])) return key;
  return undefined;
}

/** Why a call without the id its kind asks for is refused, after "userId: ". */
export const IDENTITY_REQUIRED_MESSAGE = "one of userId or anonymousId is required";
