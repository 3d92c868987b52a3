import {
  checkCall,
  FREE_FORM_FIELDS,
  isoMillis,
  MAX_CALL_BYTES,
  quickAccept,
  simpleIsoMillis,
  tooDeeplyNestedField,
  unfaithfulValue,
  type ValidCall,
} from "@switchyard/calls";
import { encodeCall, NestedTooDeeply, ProtoWriter, Unrepresentable, type CallFields } from "@switchyard/wire";
import { ValidationError } from "./errors.js";
import { newMessageId } from "./message-id.js";
import type { CallType } from "./messages.js";
import { LIBRARY } from "./version.js";

/** A call that passed the rules, encoded and ready to queue. */
export interface PreparedCall {
  messageId: string;
  /** The switchyard.v1.Call bytes: chunk[offset, offset + length). */
  chunk: Buffer;
  offset: number;
  length: number;
  /** The UTF-8 size of the call's JSON: what the 32 KB and 500 KB limits are measured on. */
  jsonBytes: number;
}

// One writer for every call, writing them one after the other into 256 KB chunks where they stay
// while queued: no buffer object per call. A chunk is freed once none of its calls is held.
const writer = new ProtoWriter(256 * 1024);

/**
 * Checks a message by the same rules ingest applies (@switchyard/calls), adds
 * messageId and context.library, and encodes it. Throws ValidationError
 * naming the field and the rule; the message is then not queued.
 */
export function prepareCall(type: CallType, message: unknown): PreparedCall {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    throw new ValidationError("", "type", `${type}: the message must be an object (rule: type)`);
  }
  const fields = message as Record<string, unknown>;
  if (quickAccept(type, fields)) {
    // The usual call, encoded from the caller's message as it is: no copy of it is made.
    const timestamp = fields.timestamp as string | Date | undefined;
    const millis = timestamp === undefined ? undefined : typeof timestamp === "string" ? simpleIsoMillis(timestamp) : timestamp.getTime();
    return encoded(type, (fields.messageId as string | undefined) ?? newMessageId(), fields as CallFields, millis);
  }
  const raw = rawCall(type, fields);
  const call = quickAccept(type, raw) ? raw : checkedCall(raw);
  return encoded(
    type,
    call.messageId as string,
    call as CallFields,
    call.timestamp === undefined ? undefined : isoMillis(call.timestamp as string),
  );
}

/**
 * The call the rules check, made from the caller's message: its own properties, with the type,
 * a messageId when it has none, and a Date timestamp as ISO 8601 text.
 */
export function rawCall(type: CallType, fields: Record<string, unknown>): Record<string, unknown> {
  const raw: Record<string, unknown> = { ...fields, type, messageId: fields.messageId ?? newMessageId() };
  if (fields.timestamp instanceof Date) raw.timestamp = isoTimestamp(fields.timestamp);
  return raw;
}

/** Encodes a call that passed the rules: the size last, as the encoder measures the JSON size as it writes. */
function encoded(type: CallType, messageId: string, call: CallFields, timestampMillis: number | undefined): PreparedCall {
  // The encoder checks the nesting of the free-form fields it writes, and these are all the rule
  // looks at, except a field the call's type does not have (traits on a track call), which the
  // rule still checks when the caller's message is taken as it is.
  if (hasFieldOfOtherType(type, call)) throwIfNestedTooDeeply(call);
  writer.discard(); // whatever a call that failed half-way (a BigInt) left behind
  let jsonBytes: number;
  try {
    // context.library is added by the encoder, so the caller's context is never copied.
    jsonBytes = encodeCall(writer, type, messageId, call, timestampMillis, LIBRARY);
  } catch (error) {
    writer.discard();
    // The nesting rule comes first, as it did when it was a walk of its own before encoding (a
    // BigInt in context and properties nested too deeply: max_depth), and names the field.
    throwIfNestedTooDeeply(call);
    // Nested too deeply only in what a toJSON() returned, which the rule does not see.
    if (error instanceof NestedTooDeeply) throw maxDepthError(error.field);
    if (error instanceof Unrepresentable && error.rule === "bigint") {
      throw new ValidationError("", "type", "call: cannot be written as JSON: BigInt values are not JSON (rule: type)");
    }
    if (error instanceof Unrepresentable) throw unrepresentableError(call, error);
    throw error;
  }
  if (jsonBytes > MAX_CALL_BYTES) {
    writer.discard();
    throw new ValidationError(
      "",
      "max_size",
      `call is ${jsonBytes} bytes of JSON; the limit is ${MAX_CALL_BYTES} bytes (${MAX_CALL_BYTES / 1024} KB) (rule: max_size)`,
    );
  }
  const { chunk, offset, length } = writer.take();
  return { messageId, chunk, offset, length, jsonBytes };
}

/** Whether the call carries properties or traits that its type does not have (and the encoder does not write). */
function hasFieldOfOtherType(type: CallType, call: CallFields): boolean {
  const hasProperties = type === "track" || type === "page" || type === "screen";
  const hasTraits = type === "identify" || type === "group";
  return (!hasProperties && call.properties !== undefined) || (!hasTraits && call.traits !== undefined);
}

function throwIfNestedTooDeeply(call: CallFields): void {
  // tooDeeplyNestedField reads only the free-form fields, which CallFields has.
  const field = tooDeeplyNestedField(call as ValidCall);
  if (field !== undefined) throw maxDepthError(field);
}

/**
 * The ValidationError for a value the encoder could not write as it is, naming its field as the
 * call rules do (`properties.price: must be a finite number`). Found by a walk over the call, only
 * now that there is one to find; one that came from a toJSON() result is named by the call.
 */
function unrepresentableError(call: CallFields, error: Unrepresentable): ValidationError {
  const fields = call as Record<string, unknown>;
  for (const key of FREE_FORM_FIELDS) {
    const problem = fields[key] === undefined ? undefined : unfaithfulValue(fields[key], [key]);
    if (problem) {
      const field = problem.path.join(".");
      return new ValidationError(field, problem.rule, `${field}: ${problem.message} (rule: ${problem.rule})`);
    }
  }
  const what = error.rule === "finite_number" ? "numbers must be finite" : "text must be valid Unicode (lone surrogate)";
  return new ValidationError("", error.rule, `call: ${what} (rule: ${error.rule})`);
}

function maxDepthError(field: string): ValidationError {
  return new ValidationError(field, "max_depth", `${field}: is nested too deeply to be stored (rule: max_depth)`);
}

/** The call as the rules return it, or the ValidationError naming the field and the rule it breaks. */
function checkedCall(raw: Record<string, unknown>): ValidCall {
  const check = checkCall(raw, 0, 0);
  if (check.ok) return check.call;
  const { field, rule, message } = check.rejection;
  throw new ValidationError(field, rule, `${message} (rule: ${rule})`);
}

function isoTimestamp(date: Date): string {
  if (Number.isNaN(date.getTime())) throw new ValidationError("timestamp", "format", "timestamp: must be a valid date (rule: format)");
  return date.toISOString();
}
